//! Shared by the link tests (`#[path]`-included); on its own it tests nothing.
#![allow(dead_code, unreachable_pub)]

use std::net::SocketAddr;

use switchyard_tunnel::credentials::{
    Credential, TunnelSecret, certificate_name, origin_credential, tunnel_tag,
};
use switchyard_tunnel::frame::Hello;
use switchyard_tunnel::link::cert::server_config;
use switchyard_tunnel::link::transport::Acceptor;
use switchyard_tunnel::link::{
    Accepted, Admitted, Gate, IssuedCert, Listener, Pin, Target, Transport,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

pub const TUNNEL: &str = "eu";
pub const SECRET: TunnelSecret = TunnelSecret([9; 32]);

pub fn credential(origin: &str) -> Credential {
    origin_credential(&SECRET, TUNNEL, origin)
}

pub fn hello(origin: &str) -> Hello {
    Hello {
        tag: tunnel_tag(TUNNEL),
        origin: origin.into(),
        credential: credential(origin).0,
    }
}

pub fn ws() -> Transport {
    Transport::WebSocket {
        path: "/t".into(),
        host: "cdn.example".into(),
        outer: None,
    }
}

pub fn httpupgrade() -> Transport {
    Transport::HttpUpgrade {
        path: "/t".into(),
        host: "cdn.example".into(),
        outer: None,
    }
}

pub fn target(addr: SocketAddr, pin: Pin, transport: Transport) -> Target {
    Target {
        addr: addr.to_string(),
        name: certificate_name(TUNNEL),
        pins: vec![pin],
        transport,
    }
}

/// A relay-side listener admitting `origins`, serving `cert`; admitted links echo.
pub async fn relay(
    cert: &IssuedCert,
    transport: Transport,
    admitted: Admitted,
) -> (SocketAddr, Listener, mpsc::Receiver<Accepted>) {
    relay_on(
        TcpListener::bind("127.0.0.1:0").await.unwrap(),
        cert,
        transport,
        admitted,
    )
}

/// [`relay`] on a bound listener.
pub fn relay_on(
    tcp: TcpListener,
    cert: &IssuedCert,
    transport: Transport,
    admitted: Admitted,
) -> (SocketAddr, Listener, mpsc::Receiver<Accepted>) {
    let addr = tcp.local_addr().unwrap();
    let acceptor = Acceptor::new(
        server_config(&cert.cert_pem, &cert.key_pem).unwrap(),
        transport,
    );
    let listener = Listener::new(acceptor, Gate::new(&tunnel_tag(TUNNEL), admitted));
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(listener.clone().serve(tcp, tx));
    (addr, listener, rx)
}

pub fn admit(origins: &[&str]) -> Admitted {
    Admitted::new(origins.iter().map(|o| (o.to_string(), credential(o))))
}

/// Echoes everything on an admitted link until it closes.
pub fn echo(link: Accepted) {
    tokio::spawn(async move {
        let (mut r, mut w) = tokio::io::split(link.stream);
        let _ = tokio::io::copy(&mut r, &mut w).await;
        let _ = w.shutdown().await;
    });
}

/// Writes `data` and reads the same number of bytes back.
pub async fn round_trip<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(
    s: &mut S,
    data: &[u8],
) -> Vec<u8> {
    s.write_all(data).await.unwrap();
    s.flush().await.unwrap();
    let mut back = vec![0; data.len()];
    s.read_exact(&mut back).await.unwrap();
    back
}

/// Waits (real time, generously) until `f` holds.
pub async fn eventually(mut f: impl FnMut() -> bool) {
    for _ in 0..400 {
        if f() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("condition not reached within 10 s");
}
