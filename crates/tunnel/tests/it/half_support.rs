//! Shared by the half tests (`#[path]`-included); on its own it tests nothing.
#![allow(dead_code, unreachable_pub)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use switchyard_proto::Address;
use switchyard_tunnel::credentials::{TunnelSecret, origin_credential};
use switchyard_tunnel::frame::Open;
use switchyard_tunnel::half::{OriginHalf, OriginSpec, Profile, StreamHandler};
use switchyard_tunnel::link::Pin;
use tokio::net::{TcpListener, TcpStream};

pub const SECRET: TunnelSecret = TunnelSecret([42; 32]);

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A TCP echo server.
pub async fn echo() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                let (mut r, mut w) = s.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    addr
}

/// A handler that connects to the destination and records the origin's name.
pub fn handler(name: &str, seen: Arc<Mutex<Vec<String>>>) -> StreamHandler {
    let me = name.to_owned();
    Arc::new(
        move |open: Open, mut stream: switchyard_tunnel::mux::MuxStream| {
            seen.lock().unwrap().push(me.clone());
            tokio::spawn(async move {
                let Address::Ip(dest) = open.destination else {
                    return;
                };
                let Ok(mut tcp) = TcpStream::connect(dest).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut stream, &mut tcp).await;
            });
        },
    )
}

/// An origin's spec for the tunnel "eu".
pub fn origin_spec(name: &str, profiles: &[Profile], pins: Vec<Pin>, links: usize) -> OriginSpec {
    OriginSpec {
        tunnel: "eu".into(),
        origin: name.into(),
        credential: origin_credential(&SECRET, "eu", name),
        pins,
        profiles: profiles.to_vec(),
        links,
        window: switchyard_tunnel::half::DEFAULT_WINDOW,
    }
}

/// An origin half with 2 links per profile whose handler connects to the destination
/// and records its name.
pub fn origin(
    name: &str,
    profiles: &[Profile],
    pin: Pin,
    seen: Arc<Mutex<Vec<String>>>,
) -> OriginHalf {
    OriginHalf::start(
        origin_spec(name, profiles, vec![pin], 2),
        handler(name, seen),
    )
}

pub async fn wait_until(mut f: impl FnMut() -> bool) {
    for _ in 0..200 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("condition not reached in 5 s");
}

/// A relay half in reverse mode on 127.0.0.1 admitting `origins`.
pub async fn relay(
    profiles: &[Profile],
    cert: &switchyard_tunnel::link::IssuedCert,
    origins: &[&str],
) -> switchyard_tunnel::half::RelayHalf {
    switchyard_tunnel::half::RelayHalf::start(switchyard_tunnel::half::RelaySpec {
        tunnel: "eu".into(),
        listen: std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
        profiles: profiles.to_vec(),
        balancing: switchyard_tunnel::pool::Balancing::Distribute,
        cert_pem: cert.cert_pem.clone(),
        key_pem: cert.key_pem.clone(),
        origins: origins
            .iter()
            .map(|o| (o.to_string(), origin_credential(&SECRET, "eu", o)))
            .collect(),
        limits: Default::default(),
        window: switchyard_tunnel::half::DEFAULT_WINDOW,
        // No REALITY profile here: private targets stay refused.
        site: switchyard_transport::reality::SiteDialer::checked(false),
    })
    .await
    .unwrap()
}

/// One TLS profile on a free port, reached at its own address.
pub fn tls_profile() -> Profile {
    let port = free_port();
    Profile {
        port,
        transport: switchyard_tunnel::link::Transport::Tls,
        addresses: vec![format!("127.0.0.1:{port}")],
        links: None,
    }
}

/// A plain TCP forwarder to `to`: a second address for the same listener.
pub async fn forwarder(to: SocketAddr) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                if let Ok(mut t) = TcpStream::connect(to).await {
                    let _ = tokio::io::copy_bidirectional(&mut s, &mut t).await;
                }
            });
        }
    });
    addr
}

/// Opens a stream for `user` to the echo server `target`, checks a round trip, and
/// returns the stream and the origin that carried it.
pub async fn round_trip(
    relay: &switchyard_tunnel::half::RelayHalf,
    user: &str,
    target: SocketAddr,
    seen: &Arc<Mutex<Vec<String>>>,
) -> (switchyard_tunnel::mux::MuxStream, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let open = Open {
        network: switchyard_tunnel::frame::Network::Tcp,
        user: user.into(),
        destination: Address::Ip(target),
    };
    let mut s = relay.open(open, 0).unwrap();
    s.write_all(b"ping").await.unwrap();
    let mut b = [0u8; 4];
    s.read_exact(&mut b).await.unwrap();
    assert_eq!(&b, b"ping");
    let by = seen.lock().unwrap().last().cloned().unwrap();
    (s, by)
}

/// A direct-mode relay's spec dialing origin `name` at `hosts`, `links` per profile.
pub fn dial_spec(
    profiles: &[Profile],
    pin: Pin,
    name: &str,
    hosts: &[&str],
    links: usize,
) -> switchyard_tunnel::half::RelayDialSpec {
    switchyard_tunnel::half::RelayDialSpec {
        tunnel: "eu".into(),
        profiles: profiles.to_vec(),
        balancing: switchyard_tunnel::pool::Balancing::Distribute,
        links,
        pins: vec![pin],
        origins: vec![switchyard_tunnel::half::DirectOrigin {
            name: name.into(),
            credential: origin_credential(&SECRET, "eu", name),
            hosts: hosts.iter().map(|h| h.to_string()).collect(),
        }],
        limits: Default::default(),
        window: switchyard_tunnel::half::DEFAULT_WINDOW,
    }
}

/// A direct-mode origin's spec listening on 127.0.0.1.
pub fn listen_spec(
    cert: &switchyard_tunnel::link::IssuedCert,
    name: &str,
    profiles: &[Profile],
) -> switchyard_tunnel::half::OriginListenSpec {
    switchyard_tunnel::half::OriginListenSpec {
        tunnel: "eu".into(),
        origin: name.into(),
        credential: origin_credential(&SECRET, "eu", name),
        cert_pem: cert.cert_pem.clone(),
        key_pem: cert.key_pem.clone(),
        listen: std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
        profiles: profiles.to_vec(),
        window: switchyard_tunnel::half::DEFAULT_WINDOW,
        // No REALITY profile here: private targets stay refused.
        site: switchyard_transport::reality::SiteDialer::checked(false),
    }
}
