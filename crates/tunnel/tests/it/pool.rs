//! The relay's pool over real multiplexed links (in-memory pipes): origin by user,
//! profile by balancing, link by load; losing a profile moves nobody.

use switchyard_proto::Address;
use switchyard_tunnel::frame::{Network, Open};
use switchyard_tunnel::mux::{Incoming, Mux, MuxConfig, MuxHandle, Side};
use switchyard_tunnel::pool::{Balancing, Pool, PoolError};

/// A link: the relay's handle and the origin's incoming streams (kept alive).
fn link() -> (MuxHandle, Incoming, MuxHandle) {
    let (a, b) = tokio::io::duplex(1 << 16);
    let (relay, _) = Mux::start(a, Side::Opener, MuxConfig::default());
    let (origin, incoming) = Mux::start(b, Side::Acceptor, MuxConfig::default());
    (relay, incoming, origin)
}

fn open(user: &str) -> Open {
    Open {
        network: Network::Tcp,
        user: user.into(),
        destination: Address::Domain("example.org".into(), 443),
    }
}

struct Links(Vec<(MuxHandle, Incoming, MuxHandle)>);

fn add(pool: &Pool, links: &mut Links, origin: &str, profile: usize) -> (u64, MuxHandle) {
    let (relay, incoming, far) = link();
    let id = pool.add(origin, profile, relay.clone());
    links.0.push((relay.clone(), incoming, far));
    (id, relay)
}

#[tokio::test]
async fn distribute_takes_the_least_loaded_link_across_profiles() {
    let pool = Pool::new(Balancing::Distribute);
    let mut keep = Links(vec![]);
    let (_, a) = add(&pool, &mut keep, "fi", 0);
    let (_, b) = add(&pool, &mut keep, "fi", 1);
    let mut streams = vec![];
    for i in 0..10 {
        streams.push(pool.open(open(&format!("u{i}")), 0).unwrap());
    }
    assert_eq!((a.open_streams(), b.open_streams()), (5, 5));
    let status = pool.status();
    assert_eq!(status["fi"].open_streams, 10);
    assert_eq!(status["fi"].links_per_profile.values().sum::<usize>(), 2);
}

#[tokio::test]
async fn priority_uses_the_first_connected_profile_then_the_next() {
    let pool = Pool::new(Balancing::Priority);
    let mut keep = Links(vec![]);
    let (first_id, first) = add(&pool, &mut keep, "fi", 0);
    let (_, second) = add(&pool, &mut keep, "fi", 1);
    let s1 = pool.open(open("a"), 0).unwrap();
    let s2 = pool.open(open("b"), 0).unwrap();
    assert_eq!((first.open_streams(), second.open_streams()), (2, 0));
    // Profile 0 is lost: profile 1 carries on, for the same users on the same origin.
    first.close();
    pool.remove("fi", first_id);
    drop((s1, s2));
    let _s3 = pool.open(open("a"), 1).unwrap();
    assert_eq!(second.open_streams(), 1);
}

#[tokio::test]
async fn losing_a_profile_moves_nobody_losing_an_origin_moves_only_its_users() {
    let pool = Pool::new(Balancing::Distribute);
    let mut keep = Links(vec![]);
    let mut ids = vec![];
    for origin in ["fi", "de", "nl"] {
        for profile in 0..2 {
            ids.push((origin, add(&pool, &mut keep, origin, profile)));
        }
    }
    let where_is = |pool: &Pool, user: &str| -> String {
        let before: Vec<(String, usize)> = pool
            .status()
            .iter()
            .map(|(o, s)| (o.clone(), s.open_streams))
            .collect();
        let s = pool.open(open(user), 0).unwrap();
        let after = pool.status();
        let origin = before
            .iter()
            .find(|(o, n)| after[o].open_streams > *n)
            .map(|(o, _)| o.clone())
            .unwrap();
        drop(s);
        origin
    };
    let users: Vec<String> = (0..60).map(|i| format!("user-{i}")).collect();
    let before: Vec<String> = users.iter().map(|u| where_is(&pool, u)).collect();
    // Lose de's profile 0: nobody moves.
    let (_, (id, handle)) = ids
        .iter()
        .find(|(o, (_, h))| *o == "de" && h.open_streams() == 0)
        .unwrap();
    handle.close();
    pool.remove("de", *id);
    let same: Vec<String> = users.iter().map(|u| where_is(&pool, u)).collect();
    assert_eq!(same, before);
    // Lose all of de: only de's users move.
    pool.drop_origin("de");
    let after: Vec<String> = users.iter().map(|u| where_is(&pool, u)).collect();
    for (b, a) in before.iter().zip(&after) {
        if b == "de" {
            assert_ne!(a, "de")
        } else {
            assert_eq!(a, b)
        }
    }
    pool.close_all();
    assert!(matches!(pool.open(open("x"), 0), Err(PoolError::NoOrigin)));
}

#[tokio::test]
async fn links_set_the_weight_six_links_take_three_times_what_two_take() {
    let pool = Pool::new(Balancing::Distribute);
    let mut keep = Links(vec![]);
    let six: Vec<MuxHandle> = (0..6).map(|_| add(&pool, &mut keep, "fi", 0).1).collect();
    let two: Vec<MuxHandle> = (0..2).map(|_| add(&pool, &mut keep, "fi", 1).1).collect();
    let streams: Vec<_> = (0..80)
        .map(|i| pool.open(open(&format!("u{i}")), 0).unwrap())
        .collect();
    let count = |hs: &[MuxHandle]| hs.iter().map(MuxHandle::open_streams).sum::<usize>();
    assert_eq!((count(&six), count(&two)), (60, 20));
    drop(streams);
}

fn udp(user: &str) -> Open {
    Open {
        network: Network::Udp,
        ..open(user)
    }
}

#[tokio::test]
async fn one_user_holds_at_most_1024_streams_and_256_udp_associations() {
    let pool = Pool::new(Balancing::Distribute);
    let mut keep = Links(vec![]);
    let (_, link) = add(&pool, &mut keep, "fi", 0);
    let mut udps: Vec<_> = (0..256)
        .map(|_| pool.open(udp("mallory"), 0).unwrap())
        .collect();
    let refused = pool.open(udp("mallory"), 0).unwrap_err().to_string();
    assert_eq!(
        refused,
        "user \"mallory\" is at the tunnel's limit of 256 UDP associations; close some first"
    );
    let mut tcps: Vec<_> = (0..768)
        .map(|_| pool.open(open("mallory"), 0).unwrap())
        .collect();
    let refused = pool.open(open("mallory"), 0).unwrap_err().to_string();
    assert_eq!(
        refused,
        "user \"mallory\" is at the tunnel's limit of 1024 streams; close some first"
    );
    assert_eq!(
        (pool.user_streams("mallory"), link.open_streams()),
        ((1024, 256), 1024)
    );
    // Everyone else is untouched; a closed stream gives its slot back.
    let _alice = pool.open(udp("alice"), 0).unwrap();
    udps.pop();
    tcps.pop();
    let _again = pool.open(udp("mallory"), 0).unwrap();
    assert_eq!(pool.user_streams("mallory"), (1023, 256));
    drop((udps, tcps));
}

#[tokio::test]
async fn links_whose_origin_says_go_away_take_no_new_streams_and_the_peer_hears_it() {
    let pool = Pool::new(Balancing::Distribute);
    let mut keep = Links(vec![]);
    let (_, old) = add(&pool, &mut keep, "fi", 0);
    let before = pool.open(open("u0"), 0).unwrap();
    // The old origin process hands over: its link says GoAway; the new one's is up.
    let far = keep.0[0].2.clone();
    far.go_away();
    tokio::time::timeout(std::time::Duration::from_secs(5), old.peer_going_away())
        .await
        .expect("the relay hears the GoAway");
    assert!(old.is_going_away() && !old.is_closed());
    let (_, new) = add(&pool, &mut keep, "fi", 0);
    for i in 1..=6 {
        drop(pool.open(open(&format!("u{i}")), 0).unwrap());
    }
    let mut held = vec![];
    for i in 1..=3 {
        held.push(pool.open(open(&format!("u{i}")), 0).unwrap());
    }
    assert_eq!(
        (old.open_streams(), new.open_streams()),
        (1, 3),
        "only the new link"
    );
    drop(before);
    // With only going-away links, a stream finds no link, and says why.
    far.go_away();
    keep.0[1].2.go_away();
    tokio::time::timeout(std::time::Duration::from_secs(5), new.peer_going_away())
        .await
        .unwrap();
    assert!(matches!(
        pool.open(open("u9"), 0),
        Err(PoolError::NoLink { .. })
    ));
}
