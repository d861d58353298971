//! A certificate renewed in place (same files, new content, as ACME tools do) is
//! served to new connections after a reload; connections already up carry on.

use crate::common;

use std::net::SocketAddr;
use std::time::Duration;

use common::*;
use rustls::pki_types::CertificateDer;
use switchyard_testkit::{TestCert, cert, pattern};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

fn der(cert: &TestCert) -> CertificateDer<'static> {
    cert.der().unwrap()
}

/// A TLS connection to the inbound trusting either certificate.
async fn connect(port: u16, trusted: &[&TestCert]) -> TlsStream<TcpStream> {
    cert::connect_trusting(
        SocketAddr::from(([127, 0, 0, 1], port)),
        "node.test",
        trusted,
    )
    .await
    .unwrap()
}

fn served(s: &TlsStream<TcpStream>) -> CertificateDer<'static> {
    cert::served(s).unwrap()
}

/// Asks for `n` bytes from the HTTP target through VLESS and reads past the HTTP head.
async fn request(s: &mut TlsStream<TcpStream>, target: std::net::SocketAddr, n: u64) {
    s.write_all(&vless_get(ALICE_UUID, target, n))
        .await
        .unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        head.push(s.read_u8().await.unwrap());
    }
}

/// Reads the body to its end, checking every byte; returns how many arrived.
async fn read_body(s: &mut TlsStream<TcpStream>, mut at: u64, pace: Duration) -> u64 {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match s.read(&mut buf).await {
            Ok(0) | Err(_) => return at,
            Ok(n) => n,
        };
        assert_eq!(pattern::first_mismatch(at, &buf[..n]), None, "at {at}");
        at += n as u64;
        tokio::time::sleep(pace).await;
    }
}

const TLS_INBOUND: &str =
    "protocol = \"vless\"\nsecurity = { type = \"tls\", cert = \"@CERT@\", key = \"@KEY@\" }";

#[tokio::test]
async fn a_renewal_caught_half_written_keeps_the_old_certificate_and_the_change_applies() {
    let f = start(TLS_INBOUND).await;
    let renewed = TestCert::new("node.test").unwrap();
    std::fs::write(f.cert.cert_path(), renewed.cert_pem()).unwrap();
    std::fs::write(f.cert.key_path(), "-----BEGIN PRIVATE KEY-----\nMIG").unwrap();
    let mut c = f.node.config().await;
    c.version = 2;
    c.users[1].enabled = false;
    f.node
        .apply(c.clone())
        .await
        .expect("disabling a user always applies");
    assert_eq!(f.node.config().await.version, 2);
    let s = connect(f.port, &[&f.cert, &renewed]).await;
    assert_eq!(served(&s), der(&f.cert), "the certificate it had");
    // The renewal finishes: the next reload serves it.
    std::fs::write(f.cert.key_path(), renewed.key_pem()).unwrap();
    c.version = 3;
    f.node.apply(c).await.unwrap();
    let s = connect(f.port, &[&f.cert, &renewed]).await;
    assert_eq!(served(&s), der(&renewed));
}

#[tokio::test]
async fn a_certificate_renewed_in_place_is_served_to_new_connections_and_old_ones_carry_on() {
    let f = start(TLS_INBOUND).await;
    let renewed = TestCert::new("node.test").unwrap();
    const N: u64 = 32 << 20;
    let mut old = connect(f.port, &[&f.cert, &renewed]).await;
    assert_eq!(served(&old), der(&f.cert));
    request(&mut old, f.http.addr(), N).await;
    let reader =
        tokio::spawn(async move { read_body(&mut old, 0, Duration::from_millis(5)).await });
    tokio::time::sleep(Duration::from_millis(200)).await;

    // The ACME tool writes new content to the same files; the node reloads.
    std::fs::write(f.cert.cert_path(), renewed.cert_pem()).unwrap();
    std::fs::write(f.cert.key_path(), renewed.key_pem()).unwrap();
    let mut c = f.node.config().await;
    c.version = 2;
    f.node.apply(c).await.unwrap();

    let mut new = connect(f.port, &[&f.cert, &renewed]).await;
    assert_eq!(
        served(&new),
        der(&renewed),
        "a new connection sees the new certificate"
    );
    request(&mut new, f.http.addr(), 1000).await;
    assert_eq!(read_body(&mut new, 0, Duration::ZERO).await, 1000);
    assert_eq!(
        reader.await.unwrap(),
        N,
        "the connection open across the renewal carried on"
    );
}
