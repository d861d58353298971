//! A REALITY profile's listening half never splices a prober into its own machine: a
//! `dest` name that resolves to loopback (here the machine's own host name, which
//! /etc/hosts maps to 127.0.0.1) is refused when the half dials it, and the private
//! service behind it never sees a connection. With private destinations allowed, the
//! same prober reaches the service (so the refusal is the guard's, not a broken path).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use switchyard_proto::reality::{PrivateKey, ShortId};
use switchyard_transport::reality::SiteDialer;
use switchyard_tunnel::half::{DEFAULT_WINDOW, Profile, RelayHalf, RelaySpec};
use switchyard_tunnel::link::cert::issue;
use switchyard_tunnel::link::transport::{RealityLink, Transport};
use switchyard_tunnel::pool::Balancing;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::half_support::free_port;

/// A service on 127.0.0.1 that counts its connections and answers each with a line.
async fn private_service() -> (SocketAddr, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(AtomicU64::new(0));
    let count = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            let _ = s.write_all(b"PRIVATE SERVICE\n").await;
        }
    });
    (addr, seen)
}

/// This machine's host name, which the system's resolver maps to loopback or a
/// private address of its own (from /etc/hosts).
async fn own_host_name() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_owned();
    let addrs: Vec<IpAddr> = tokio::net::lookup_host((name.as_str(), 1))
        .await
        .unwrap_or_else(|e| panic!("the host name {name:?} resolves: {e}"))
        .map(|a| a.ip())
        .collect();
    assert!(
        !addrs.is_empty()
            && addrs
                .iter()
                .all(|ip| switchyard_proto::dest::is_private(*ip)),
        "{name} resolves to private addresses only: {addrs:?}"
    );
    name
}

/// A relay half with one REALITY profile in front of `dest`, its target dialed by
/// `site`; its port.
async fn relay(dest: &str, site: SiteDialer) -> (RelayHalf, u16) {
    let cert = issue("eu").unwrap();
    let key = PrivateKey::from_random([9; 32]);
    let port = free_port();
    let profile = Profile {
        port,
        transport: Transport::Reality(RealityLink {
            server_name: "target.test".into(),
            public_key: key.public_key(),
            short_id: ShortId::parse("a1b2c3d4").unwrap(),
            dest: dest.into(),
            private_key: Some(key.encode()),
        }),
        addresses: vec![format!("127.0.0.1:{port}")],
        links: None,
    };
    let half = RelayHalf::start(RelaySpec {
        tunnel: "eu".into(),
        listen: IpAddr::V4(Ipv4Addr::LOCALHOST),
        profiles: vec![profile],
        balancing: Balancing::Distribute,
        cert_pem: cert.cert_pem,
        key_pem: cert.key_pem,
        origins: Vec::new(),
        limits: Default::default(),
        window: DEFAULT_WINDOW,
        site,
    })
    .await
    .unwrap();
    (half, port)
}

/// What a prober that sends an HTTP request to the port reads back (within 10 s).
async fn probe(port: u16) -> Vec<u8> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: target.test\r\n\r\n")
        .await
        .unwrap();
    let mut got = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut got)).await;
    got
}

#[tokio::test]
async fn a_dest_name_resolving_to_loopback_is_not_dialed_unless_allowed() {
    let (service, seen) = private_service().await;
    let dest = format!("{}:{}", own_host_name().await, service.port());

    let (guarded, port) = relay(&dest, SiteDialer::checked(false)).await;
    let got = probe(port).await;
    assert!(got.is_empty(), "{:?}", String::from_utf8_lossy(&got));
    assert_eq!(seen.load(Ordering::SeqCst), 0);
    guarded.stop().await;

    let (open, port) = relay(&dest, SiteDialer::checked(true)).await;
    assert_eq!(probe(port).await, b"PRIVATE SERVICE\n");
    assert_eq!(seen.load(Ordering::SeqCst), 1);
    open.stop().await;
}

#[tokio::test]
async fn the_guard_refuses_private_addresses_and_names_and_says_why() {
    for dest in ["127.0.0.1:9", "[::1]:9", "10.0.0.1:9", "localhost:9"] {
        let e = SiteDialer::checked(false).dial(dest).await.unwrap_err();
        assert!(
            matches!(e, switchyard_transport::reality::SiteError::Refused { .. }),
            "{dest}: {e}"
        );
        assert!(
            e.to_string()
                .starts_with(&format!("REALITY dest {dest}: refused: "))
        );
    }
}
