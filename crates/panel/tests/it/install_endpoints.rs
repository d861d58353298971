//! What the panel hands out to new servers, over real sockets: the script for its
//! public URL, its binary under its own architecture's name only, and no more
//! downloads at once than `install.max_downloads` (the next one gets 503 with
//! `Retry-After` while the first still runs).

use std::net::SocketAddr;
use std::time::Duration;

use switchyard_panel::Panel;
use switchyard_panel::config::{ChannelSettings, InstallSettings, PanelConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Sends a GET and reads until the head is complete: the head.
async fn head(s: &mut TcpStream, path: &str) -> String {
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: p\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tokio::time::timeout(Duration::from_secs(30), s.read(&mut buf))
            .await
            .expect("an answer")
            .unwrap();
        assert!(n > 0, "closed: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&got).into_owned();
    text.split("\r\n\r\n").next().unwrap().to_owned()
}

#[tokio::test]
async fn the_script_the_binary_and_the_bound_on_downloads() {
    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("switchyard");
    // A large file, so a download that is not read stays running.
    std::fs::write(&binary, vec![7u8; 64 << 20]).unwrap();
    let listen = SocketAddr::from(([127, 0, 0, 1], switchyard_testkit::free_port().unwrap()));
    let panel = Panel::start(PanelConfig {
        listen,
        public_url: Some("https://panel.example.org/".into()),
        data_dir: dir.path().join("panel"),
        channel: ChannelSettings {
            listen: SocketAddr::from(([127, 0, 0, 1], switchyard_testkit::free_port().unwrap())),
            ..ChannelSettings::default()
        },
        install: InstallSettings {
            binary: Some(binary),
            max_downloads: 1,
        },
        ..PanelConfig::default()
    })
    .await
    .unwrap();

    let mut s = TcpStream::connect(listen).await.unwrap();
    let h = head(&mut s, "/install.sh").await;
    assert!(h.starts_with("HTTP/1.1 200 OK\r\n"), "{h}");
    assert!(
        h.contains("content-type: text/x-shellscript; charset=utf-8"),
        "{h}"
    );

    let arch = std::env::consts::ARCH;
    let mut other = TcpStream::connect(listen).await.unwrap();
    let h = head(&mut other, "/install/switchyard-linux-sparc64").await;
    assert!(h.starts_with("HTTP/1.1 404"), "{h}");

    // One download runs (its body unread); the next is told to come back.
    let mut first = TcpStream::connect(listen).await.unwrap();
    let h = head(&mut first, &format!("/install/switchyard-linux-{arch}")).await;
    assert!(h.starts_with("HTTP/1.1 200 OK\r\n"), "{h}");
    assert!(h.contains(&format!("content-length: {}", 64 << 20)), "{h}");
    let mut second = TcpStream::connect(listen).await.unwrap();
    let h = head(&mut second, &format!("/install/switchyard-linux-{arch}")).await;
    assert!(h.starts_with("HTTP/1.1 503"), "{h}");
    assert!(h.contains("retry-after: 10"), "{h}");

    // The first ends: the slot is free again.
    drop(first);
    let mut third = TcpStream::connect(listen).await.unwrap();
    let mut status = String::new();
    for _ in 0..100 {
        status = head(&mut third, &format!("/install/switchyard-linux-{arch}")).await;
        if status.starts_with("HTTP/1.1 200") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        third = TcpStream::connect(listen).await.unwrap();
    }
    assert!(status.starts_with("HTTP/1.1 200 OK\r\n"), "{status}");
    panel.shutdown().await;
}
