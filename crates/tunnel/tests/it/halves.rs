//! A relay half and origin halves on 127.0.0.1 (reverse mode, real pinned TLS):
//! streams reach the destination through the origin chosen for the user; a removed
//! origin's links drop within a second and it is refused from then on.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use switchyard_proto::Address;
use switchyard_tunnel::credentials::{TunnelSecret, origin_credential};
use switchyard_tunnel::frame::{Network, Open};
use switchyard_tunnel::half::{OriginHalf, OriginSpec, Profile, RelayHalf, RelaySpec};
use switchyard_tunnel::link::cert::issue;
use switchyard_tunnel::link::transport::Transport;
use switchyard_tunnel::pool::Balancing;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::half_support as support;
use support::*;

#[tokio::test]
async fn streams_go_through_the_users_origin_and_a_removed_origin_drops_at_once() {
    let cert = issue("eu").unwrap();
    let profiles = vec![
        Profile {
            port: free_port(),
            transport: Transport::Tls,
            addresses: vec![],
            links: None,
        },
        Profile {
            port: free_port(),
            transport: Transport::WebSocket {
                path: "/t".into(),
                host: "cdn.test".into(),
                outer: None,
            },
            addresses: vec![],
            links: None,
        },
    ];
    let profiles: Vec<Profile> = profiles
        .into_iter()
        .map(|mut p| {
            p.addresses = vec![format!("127.0.0.1:{}", p.port)];
            p
        })
        .collect();
    let relay = RelayHalf::start(RelaySpec {
        tunnel: "eu".into(),
        listen: IpAddr::V4(Ipv4Addr::LOCALHOST),
        profiles: profiles.clone(),
        balancing: Balancing::Distribute,
        cert_pem: cert.cert_pem.clone(),
        key_pem: cert.key_pem.clone(),
        origins: ["fi", "de"]
            .iter()
            .map(|o| (o.to_string(), origin_credential(&SECRET, "eu", o)))
            .collect(),
        limits: Default::default(),
        window: switchyard_tunnel::half::DEFAULT_WINDOW,
        // No REALITY profile here: private targets stay refused.
        site: switchyard_transport::reality::SiteDialer::checked(false),
    })
    .await
    .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let _fi = origin("fi", &profiles, cert.pin, seen.clone());
    let _de = origin("de", &profiles, cert.pin, seen.clone());
    // An impostor with a wrong credential is refused and visible.
    let mut bad = OriginSpec {
        tunnel: "eu".into(),
        origin: "fi".into(),
        credential: origin_credential(&TunnelSecret([1; 32]), "eu", "fi"),
        pins: vec![cert.pin],
        profiles: profiles.clone(),
        links: 1,
        window: switchyard_tunnel::half::DEFAULT_WINDOW,
    };
    bad.profiles.truncate(1);
    let _impostor = OriginHalf::start(bad, Arc::new(|_, _| {}));
    // 2 origins × 2 profiles × 1 address × 2 links.
    wait_until(|| relay.links() == 8).await;
    wait_until(|| {
        relay
            .refusals()
            .iter()
            .map(|r| r.bad_credential)
            .sum::<u64>()
            >= 1
    })
    .await;

    let target = echo().await;
    let mut origins_of = std::collections::HashMap::new();
    for user in ["alice", "bob", "carol", "dave", "erin", "frank"] {
        for _ in 0..3 {
            let open = Open {
                network: Network::Tcp,
                user: user.into(),
                destination: Address::Ip(target),
            };
            let mut s = relay.open(open, 0).unwrap();
            let payload = vec![7u8; 100_000];
            s.write_all(&payload).await.unwrap();
            let mut back = vec![0u8; payload.len()];
            s.read_exact(&mut back).await.unwrap();
            assert_eq!(back, payload);
            let last = seen.lock().unwrap().last().cloned().unwrap();
            let first = origins_of.entry(user).or_insert(last.clone());
            assert_eq!(*first, last, "{user} stays on one origin");
        }
    }
    assert!(relay.bytes() >= 6 * 3 * 200_000);
    let on_de: Vec<&str> = origins_of
        .iter()
        .filter(|(_, o)| *o == "de")
        .map(|(u, _)| *u)
        .collect();

    // Remove de: its links drop within a second; its users move, the others don't.
    relay.set_origins(vec![("fi".into(), origin_credential(&SECRET, "eu", "fi"))]);
    tokio::time::timeout(Duration::from_secs(1), async {
        while relay.origins().contains_key("de") {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("de's links dropped within a second");
    for (user, before) in &origins_of {
        let open = Open {
            network: Network::Tcp,
            user: (*user).into(),
            destination: Address::Ip(target),
        };
        let mut s = relay.open(open, 0).unwrap();
        s.write_all(b"x").await.unwrap();
        let mut b = [0u8; 1];
        s.read_exact(&mut b).await.unwrap();
        let now = seen.lock().unwrap().last().cloned().unwrap();
        if on_de.contains(user) {
            assert_eq!(now, "fi")
        } else {
            assert_eq!(&now, before)
        }
    }
    // de keeps trying and is refused from now on.
    wait_until(|| {
        relay
            .refusals()
            .iter()
            .map(|r| r.unknown_origin)
            .sum::<u64>()
            >= 1
    })
    .await;
    assert!(!relay.origins().contains_key("de"));
}

#[tokio::test]
async fn direct_mode_the_relay_dials_listening_origins() {
    use switchyard_tunnel::half::{DirectOrigin, RelayDialSpec};
    let cert = issue("eu").unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut origins = Vec::new();
    let mut halves = Vec::new();
    // Each origin listens on its own ports (one TLS, one WebSocket profile); on one
    // machine the origins need different ports, so each gets its own "host" below by
    // port offset: the relay dials 127.0.0.1 with the profile's port, so give each
    // origin its own relay-side profile list.
    for name in ["fi", "de"] {
        let profiles = vec![
            Profile {
                port: free_port(),
                transport: Transport::Tls,
                addresses: vec![],
                links: None,
            },
            Profile {
                port: free_port(),
                transport: Transport::WebSocket {
                    path: "/t".into(),
                    host: "x".into(),
                    outer: None,
                },
                addresses: vec![],
                links: None,
            },
        ];
        let half = OriginHalf::listen(
            listen_spec(&cert, name, &profiles),
            handler(name, seen.clone()),
        )
        .await
        .unwrap();
        halves.push(half);
        origins.push((name, profiles));
    }
    // One relay half per origin here, since each origin has its own ports on this one
    // host (a real deployment shares the profiles' ports across origin hosts).
    let relays: Vec<RelayHalf> = origins
        .iter()
        .map(|(name, profiles)| {
            RelayHalf::start_direct(RelayDialSpec {
                balancing: Balancing::Priority,
                ..dial_spec(profiles, cert.pin, name, &["127.0.0.1"], 2)
            })
        })
        .collect();
    for r in &relays {
        wait_until(|| r.links() == 4).await;
    }
    let target = echo().await;
    for (r, (name, _)) in relays.iter().zip(&origins) {
        let open = Open {
            network: Network::Tcp,
            user: "alice".into(),
            destination: Address::Ip(target),
        };
        let mut s = r.open(open, 0).unwrap();
        s.write_all(b"ping").await.unwrap();
        let mut b = [0u8; 4];
        s.read_exact(&mut b).await.unwrap();
        assert_eq!(&b, b"ping");
        assert_eq!(seen.lock().unwrap().last().unwrap(), name);
        assert_eq!(
            r.dial_status()[*name]
                .iter()
                .map(|a| a.connected)
                .sum::<usize>(),
            4
        );
    }
    // A wrong credential is refused by the origin and visible on both sides.
    let impostor = RelayHalf::start_direct(RelayDialSpec {
        tunnel: "eu".into(),
        profiles: origins[0].1.clone(),
        balancing: Balancing::Distribute,
        links: 1,
        pins: vec![cert.pin],
        limits: Default::default(),
        origins: vec![DirectOrigin {
            name: "fi".into(),
            credential: origin_credential(&TunnelSecret([3; 32]), "eu", "fi"),
            hosts: vec!["127.0.0.1".into()],
        }],
        window: switchyard_tunnel::half::DEFAULT_WINDOW,
    });
    wait_until(|| {
        halves[0]
            .refusals()
            .iter()
            .map(|r| r.bad_credential)
            .sum::<u64>()
            >= 1
    })
    .await;
    assert_eq!(impostor.links(), 0);
    // Removing the origin drops its links at once.
    relays[0].set_direct_origins(vec![]);
    assert_eq!(relays[0].links(), 0);
}

#[tokio::test]
async fn a_reissued_certificate_applies_live_and_key_pins_keep_working() {
    use switchyard_tunnel::link::cert::reissue;
    let cert = issue("eu").unwrap();
    let port = free_port();
    let profiles = vec![Profile {
        port,
        transport: Transport::Tls,
        addresses: vec![format!("127.0.0.1:{port}")],
        links: None,
    }];
    let relay = RelayHalf::start(RelaySpec {
        tunnel: "eu".into(),
        listen: IpAddr::V4(Ipv4Addr::LOCALHOST),
        profiles: profiles.clone(),
        balancing: Balancing::Distribute,
        cert_pem: cert.cert_pem.clone(),
        key_pem: cert.key_pem.clone(),
        origins: vec![("fi".into(), origin_credential(&SECRET, "eu", "fi"))],
        limits: Default::default(),
        window: switchyard_tunnel::half::DEFAULT_WINDOW,
        // No REALITY profile here: private targets stay refused.
        site: switchyard_transport::reality::SiteDialer::checked(false),
    })
    .await
    .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let _fi = origin("fi", &profiles, cert.key_pin, seen.clone());
    wait_until(|| relay.links() == 2).await;
    let target = echo().await;
    let open = || Open {
        network: Network::Tcp,
        user: "alice".into(),
        destination: Address::Ip(target),
    };
    let mut before = relay.open(open(), 0).unwrap();
    // Re-issue with the same key; the relay serves it from now on.
    let again = reissue("eu", &cert.key_pem).unwrap();
    assert_ne!(again.cert_pem, cert.cert_pem);
    relay
        .set_certificate(&again.cert_pem, &again.key_pem)
        .unwrap();
    // Links and streams already up carry on.
    assert_eq!(relay.links(), 2);
    before.write_all(b"still").await.unwrap();
    let mut b = [0u8; 5];
    before.read_exact(&mut b).await.unwrap();
    assert_eq!(&b, b"still");
    // New links see the new certificate, and the key pin accepts it.
    relay.reset();
    wait_until(|| relay.links() == 2).await;
    let mut after = relay.open(open(), 0).unwrap();
    after.write_all(b"new").await.unwrap();
    let mut b = [0u8; 3];
    after.read_exact(&mut b).await.unwrap();
    assert_eq!(&b, b"new");
    // An origin pinning exactly the new certificate connects: it is what is served.
    let _exact = origin("fi", &profiles, again.pin, seen.clone());
    wait_until(|| relay.links() == 4).await;
}
