//! The panel over HTTPS with its own certificate (`tls`): the API answers over TLS,
//! the default public URL and the install script say `https://`, plain HTTP and a
//! handshake that never comes are closed, a certificate renewed in place is served to
//! new connections within `reload_s`, a broken renewal keeps the old certificate, and
//! a bad file stops the start naming it.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rustls::pki_types::CertificateDer;
use switchyard_panel::Panel;
use switchyard_panel::config::{ChannelSettings, HttpSettings, PanelConfig, TlsFiles};
use switchyard_testkit::{TestCert, cert};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// Far longer than any timeout configured here: only a hung test reaches it.
const GUARD: Duration = Duration::from_secs(30);

fn write(cert: &TestCert, dir: &std::path::Path) {
    std::fs::write(dir.join("cert.pem"), cert.cert_pem()).unwrap();
    std::fs::write(dir.join("key.pem"), cert.key_pem()).unwrap();
}

fn config(dir: &std::path::Path) -> PanelConfig {
    let free = || SocketAddr::from(([127, 0, 0, 1], switchyard_testkit::free_port().unwrap()));
    PanelConfig {
        listen: free(),
        data_dir: dir.join("panel"),
        channel: ChannelSettings {
            listen: free(),
            ..ChannelSettings::default()
        },
        http: HttpSettings {
            header_read_timeout_s: 1,
            ..HttpSettings::default()
        },
        tls: Some(TlsFiles {
            certificate: dir.join("cert.pem"),
            key: dir.join("key.pem"),
            reload_s: 1,
        }),
        ..PanelConfig::default()
    }
}

/// A TLS connection to `addr` trusting only `trusted`.
async fn connect(addr: SocketAddr, trusted: &[&TestCert]) -> TlsStream<TcpStream> {
    cert::connect_trusting(addr, "panel.test", trusted)
        .await
        .unwrap()
}

fn served(s: &TlsStream<TcpStream>) -> CertificateDer<'static> {
    cert::served(s).unwrap()
}

fn der(c: &TestCert) -> CertificateDer<'static> {
    c.der().unwrap()
}

/// `GET path` on a kept-alive connection: the whole answer once `end` arrived.
async fn get(s: &mut TlsStream<TcpStream>, path: &str, end: &str) -> String {
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: panel.test\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut got = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    while !String::from_utf8_lossy(&got).contains(end) {
        let n = tokio::time::timeout(GUARD, s.read(&mut buf))
            .await
            .expect("an answer")
            .unwrap();
        assert!(n > 0, "closed: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&got).into_owned()
}

/// Whether the server closed `s` (EOF or reset) rather than answering.
async fn closed(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 64];
    loop {
        match tokio::time::timeout(GUARD, s.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0) | Err(_)) => return true,
            // A TLS alert may come first.
            Ok(Ok(_)) => {}
        }
    }
}

#[tokio::test]
async fn the_panel_serves_https_and_a_certificate_renewed_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let first = TestCert::new("panel.test").unwrap();
    write(&first, dir.path());
    let config = config(dir.path());
    let at = config.listen;
    let panel = Panel::start(config).await.unwrap();
    assert_eq!(
        panel.state.config().public_base(),
        format!("https://{at}"),
        "the default public URL is https"
    );

    let mut open = connect(at, &[&first]).await;
    assert_eq!(served(&open), der(&first));
    let answer = get(&mut open, "/healthz", "ok\n").await;
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
    let script = get(&mut open, "/install.sh", "exec \"$DEST\" node install").await;
    assert!(
        script.contains(&format!("\nPANEL='https://{at}'\n")),
        "{script}"
    );

    // Plain HTTP, and a client that never starts its handshake, are closed.
    let mut plain = TcpStream::connect(at).await.unwrap();
    plain
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    assert!(closed(&mut plain).await, "plain HTTP is closed");
    let mut silent = TcpStream::connect(at).await.unwrap();
    assert!(closed(&mut silent).await, "a silent client is closed");
    assert!(
        panel
            .listener_stats
            .tls_failed
            .load(std::sync::atomic::Ordering::Relaxed)
            >= 2
    );

    // Renewed in place: new connections get it within reload_s.
    let second = TestCert::new("panel.test").unwrap();
    write(&second, dir.path());
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let s = connect(at, &[&first, &second]).await;
        if served(&s) == der(&second) {
            break;
        }
        assert!(Instant::now() < deadline, "the renewal is served");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // A broken renewal keeps the certificate read before.
    std::fs::write(dir.path().join("key.pem"), "not a key").unwrap();
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let mut s = connect(at, &[&second]).await;
    assert_eq!(served(&s), der(&second));
    let answer = get(&mut s, "/healthz", "ok\n").await;
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
    panel.shutdown().await;
}

#[tokio::test]
async fn a_bad_certificate_file_stops_the_start_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path());
    let e = Panel::start(config).await.unwrap_err().to_string();
    assert!(
        e.starts_with("tls: ") && e.contains(&dir.path().join("cert.pem").display().to_string()),
        "{e}"
    );
}
