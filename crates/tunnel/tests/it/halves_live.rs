//! Halves under change (reverse and direct mode, real pinned TLS on 127.0.0.1): links
//! are counted per profile and spread over its addresses; a user reaches their own
//! origin even when another connected first; reset starts the dialing side over with
//! no back-off; a pin rotation drops no link; a direct-mode origin frees its ports
//! when it stops.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use switchyard_tunnel::half::{OriginHalf, Profile, RelayHalf};
use switchyard_tunnel::link::cert::issue;
use switchyard_tunnel::placement::rendezvous;
use tokio::io::AsyncReadExt;

use crate::half_support as support;
use support::*;

#[tokio::test]
async fn links_are_counted_per_profile_and_spread_over_its_addresses() {
    let cert = issue("eu").unwrap();
    let mut profile = tls_profile();
    let relay = relay(std::slice::from_ref(&profile), &cert, &["fi"]).await;
    let second = forwarder(SocketAddr::from(([127, 0, 0, 1], profile.port))).await;
    profile.addresses.push(second.to_string());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let spec = origin_spec("fi", &[profile], vec![cert.pin], 4);
    let fi = OriginHalf::start(spec, handler("fi", seen));
    wait_until(|| relay.links() == 4).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let wanted: Vec<usize> = fi.status().iter().map(|a| a.wanted).collect();
    assert_eq!(wanted, [2, 2]);
    assert_eq!(relay.links(), 4);
    assert_eq!(
        relay.origins()["fi"].links_per_profile,
        [(0, 4)].into_iter().collect()
    );
}

#[tokio::test]
async fn a_user_reaches_their_own_origin_though_another_connected_first() {
    let cert = issue("eu").unwrap();
    let profile = tls_profile();
    let profiles = [profile];
    let relay = relay(&profiles, &cert, &["fi", "de"]).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let _fi = origin("fi", &profiles, cert.pin, seen.clone());
    wait_until(|| relay.links() == 2).await;
    let target = echo().await;
    let users: Vec<String> = (0..20).map(|i| format!("user-{i}")).collect();
    for u in &users {
        assert_eq!(round_trip(&relay, u, target, &seen).await.1, "fi");
    }
    // de comes up a moment later, as after a relay restart.
    let _de = origin("de", &profiles, cert.pin, seen.clone());
    wait_until(|| relay.links() == 4).await;
    let mut on_de = 0;
    for u in &users {
        let own = rendezvous(u, &["fi", "de"]).unwrap();
        assert_eq!(round_trip(&relay, u, target, &seen).await.1, own, "{u}");
        on_de += usize::from(own == "de");
    }
    assert!(on_de > 0);
}

#[tokio::test]
async fn reset_drops_the_links_and_the_dialing_side_starts_over_with_no_back_off() {
    let cert = issue("eu").unwrap();
    let (relay, fi, target, seen) = reverse_pair(&cert).await;
    let (mut before, _) = round_trip(&relay, "alice", target, &seen).await;
    // Reverse mode, the origin (the dialing side) is reset: its links drop.
    fi.reset();
    let mut b = [0u8; 1];
    let ended = tokio::time::timeout(Duration::from_secs(5), before.read(&mut b))
        .await
        .expect("the stream ends with its link");
    assert!(!matches!(ended, Ok(n) if n > 0));
    wait_until(|| relay.links() == 2 && fi.links() == 2).await;
    assert_eq!(fi.status()[0].failures, 0, "{:?}", fi.status());
    round_trip(&relay, "alice", target, &seen).await;

    // Direct mode, the relay (the dialing side) is reset: young links dropping is no
    // flap to back off from.
    let (fi_listen, relay_direct) = direct_pair(&cert, "fi").await;
    wait_until(|| relay_direct.links() == 2).await;
    relay_direct.reset();
    wait_until(|| relay_direct.links() == 2).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let status = relay_direct.dial_status();
    assert_eq!(status["fi"][0].failures, 0, "{status:?}");
    assert_eq!(relay_direct.links(), 2);
    drop(fi_listen);
}

type Seen = Arc<Mutex<Vec<String>>>;

/// A relay with one TLS profile, origin fi dialing it (links up), an echo server.
async fn reverse_pair(
    cert: &switchyard_tunnel::link::IssuedCert,
) -> (RelayHalf, OriginHalf, SocketAddr, Seen) {
    let profiles = [tls_profile()];
    let relay = relay(&profiles, cert, &["fi"]).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let fi = origin("fi", &profiles, cert.pin, seen.clone());
    wait_until(|| relay.links() == 2).await;
    (relay, fi, echo().await, seen)
}

/// A listening origin `name` with one TLS profile and a relay dialing it.
async fn direct_pair(
    cert: &switchyard_tunnel::link::IssuedCert,
    name: &str,
) -> (OriginHalf, RelayHalf) {
    let profile = Profile {
        addresses: vec![],
        links: None,
        ..tls_profile()
    };
    let seen = Arc::new(Mutex::new(Vec::new()));
    let listening = OriginHalf::listen(
        listen_spec(cert, name, std::slice::from_ref(&profile)),
        handler(name, seen),
    )
    .await
    .unwrap();
    let relay = RelayHalf::start_direct(dial_spec(&[profile], cert.pin, name, &["127.0.0.1"], 2));
    (listening, relay)
}

#[tokio::test]
async fn a_direct_origin_dialed_at_every_host_and_its_ports_free_once_stopped() {
    let cert = issue("eu").unwrap();
    let profile = Profile {
        addresses: vec![],
        links: None,
        ..tls_profile()
    };
    let seen = Arc::new(Mutex::new(Vec::new()));
    let fi = OriginHalf::listen(
        listen_spec(&cert, "fi", std::slice::from_ref(&profile)),
        handler("fi", seen.clone()),
    )
    .await
    .unwrap();
    // Two hosts for one origin (here both 127.0.0.1).
    let hosts = ["127.0.0.1", "127.0.0.1"];
    let relay = RelayHalf::start_direct(dial_spec(
        std::slice::from_ref(&profile),
        cert.pin,
        "fi",
        &hosts,
        4,
    ));
    wait_until(|| relay.links() == 4).await;
    let status = relay.dial_status();
    let per_address: Vec<(usize, usize)> = status["fi"]
        .iter()
        .map(|a| (a.wanted, a.connected))
        .collect();
    assert_eq!(per_address, [(2, 2), (2, 2)]);
    // Stopped, it frees its port at once: a rebuild binds it again.
    fi.stop().await;
    drop(fi);
    let again = OriginHalf::listen(
        listen_spec(&cert, "fi", std::slice::from_ref(&profile)),
        handler("fi", seen),
    )
    .await
    .expect("the port is free again");
    wait_until(|| relay.links() == 4).await;
    drop(again);
}

#[tokio::test]
async fn a_new_certificate_rolls_out_with_two_pins_and_drops_no_link() {
    let cert = issue("eu").unwrap();
    let next = issue("eu").unwrap();
    assert_ne!(cert.key_pin, next.key_pin);
    let (relay, fi, target, seen) = reverse_pair(&cert).await;
    let (mut before, _) = round_trip(&relay, "alice", target, &seen).await;
    // 1. The origin accepts both; 2. the relay switches; 3. the old pin goes.
    fi.set_pins(vec![cert.pin, next.pin]);
    relay
        .set_certificate(&next.cert_pem, &next.key_pem)
        .unwrap();
    fi.set_pins(vec![next.pin]);
    assert_eq!((relay.links(), fi.links()), (2, 2));
    tokio::io::AsyncWriteExt::write_all(&mut before, b"x")
        .await
        .unwrap();
    let mut b = [0u8; 1];
    before.read_exact(&mut b).await.unwrap();
    // New links (after the relay's reset) accept the new certificate.
    relay.reset();
    wait_until(|| relay.links() == 2).await;
    round_trip(&relay, "alice", target, &seen).await;

    // Direct mode: a relay takes a re-issued origin certificate by its new pin.
    let (fi_listen, relay_direct) = direct_pair(&cert, "fi").await;
    wait_until(|| relay_direct.links() == 2).await;
    relay_direct.set_direct_pins(vec![cert.pin, next.pin]);
    fi_listen
        .set_certificate(&next.cert_pem, &next.key_pem)
        .unwrap();
    relay_direct.set_direct_pins(vec![next.pin]);
    assert_eq!(relay_direct.links(), 2);
    relay_direct.reset();
    wait_until(|| relay_direct.links() == 2).await;
    assert!(relay_direct.dial_status()["fi"][0].last_error.is_none());
}

#[tokio::test]
async fn a_rotated_credential_rolls_out_with_the_previous_one_accepted_and_drops_no_link() {
    use switchyard_tunnel::credentials::{origin_credential, origin_credential_at};
    use switchyard_tunnel::half::DirectOrigin;

    let cert = issue("eu").unwrap();
    let old = origin_credential(&SECRET, "eu", "fi");
    let new = origin_credential_at(&SECRET, "eu", "fi", 1);
    // After a reset, long enough for the old links' ends to be seen on both sides.
    let settle = || tokio::time::sleep(Duration::from_millis(300));
    let bad = |r: &[switchyard_tunnel::link::Refusals]| -> u64 {
        r.iter().map(|r| r.bad_credential).sum()
    };

    // Reverse: the relay admits both, the origin switches, the previous one goes.
    let (relay, fi, target, seen) = reverse_pair(&cert).await;
    relay.set_origins(vec![("fi".into(), new)]);
    relay.set_previous_credentials(vec![("fi".into(), old)]);
    assert_eq!((relay.links(), fi.links()), (2, 2), "nothing dropped");
    fi.reset(); // new links with the previous credential still pass
    settle().await;
    wait_until(|| relay.links() == 2).await;
    fi.set_credential(new, None);
    assert_eq!(relay.links(), 2);
    fi.reset(); // and with the new one
    settle().await;
    wait_until(|| relay.links() == 2).await;
    relay.set_previous_credentials(Vec::new());
    assert_eq!(relay.links(), 2, "ending the overlap drops nothing");
    round_trip(&relay, "alice", target, &seen).await;
    assert_eq!(bad(&relay.refusals()), 0);
    // The thief dials where fi does.
    let at = fi.status()[0].target.clone();
    let addr = at.trim_start_matches("tls://").to_owned();
    let port = addr.rsplit(':').next().unwrap().parse().unwrap();
    let relay_profile = Profile {
        port,
        transport: switchyard_tunnel::link::Transport::Tls,
        addresses: vec![addr],
        links: None,
    };
    let mut spec = origin_spec("fi", &[relay_profile], vec![cert.pin], 1);
    spec.credential = old;
    let thief = OriginHalf::start(spec, handler("fi", seen.clone()));
    wait_until(|| bad(&relay.refusals()) > 0).await;
    assert_eq!(
        thief.links(),
        0,
        "the previous credential opens nothing now"
    );
    assert_eq!(relay.links(), 2);
    thief.stop().await;

    // Direct: the origin (listening) admits both, the relay switches without
    // redialing, the previous one goes.
    let (fi_listen, relay_direct) = direct_pair(&cert, "fi").await;
    wait_until(|| relay_direct.links() == 2).await;
    fi_listen.set_credential(new, Some(old));
    relay_direct.reset();
    settle().await;
    wait_until(|| relay_direct.links() == 2).await;
    // The origin's port, where the relay dials it (and a thief would).
    let at = relay_direct.dial_status()["fi"][0].target.clone();
    let profile = Profile {
        port: at.rsplit(':').next().unwrap().parse().unwrap(),
        addresses: vec![],
        links: None,
        ..tls_profile()
    };
    let dialed = |credential| DirectOrigin {
        name: "fi".into(),
        credential,
        hosts: vec!["127.0.0.1".into()],
    };
    relay_direct.set_direct_origins(vec![dialed(new)]);
    assert_eq!(relay_direct.links(), 2, "no second dialer");
    relay_direct.reset();
    settle().await;
    wait_until(|| relay_direct.links() == 2).await;
    fi_listen.set_credential(new, None);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(relay_direct.links(), 2, "ending the overlap drops nothing");
    let mut spec = dial_spec(
        std::slice::from_ref(&profile),
        cert.pin,
        "fi",
        &["127.0.0.1"],
        1,
    );
    spec.origins = vec![dialed(old)];
    let thief = RelayHalf::start_direct(spec);
    wait_until(|| bad(&fi_listen.refusals()) > 0).await;
    assert_eq!(
        thief.links(),
        0,
        "the previous credential opens nothing now"
    );
    thief.stop().await;
}
