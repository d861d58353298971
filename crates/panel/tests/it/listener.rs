//! The API listener over real sockets on 127.0.0.1: a client that sends half a
//! request head is closed once `http.header_read_timeout_s` passes (slowloris), and
//! connections past `http.max_connections` are closed at once while the open ones go
//! on working. Times are not asserted: the guards below only stop a hung test.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::Duration;

use switchyard_panel::Panel;
use switchyard_panel::config::{ChannelSettings, HttpSettings, PanelConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Far longer than any timeout configured here: only a hung test reaches it.
const GUARD: Duration = Duration::from_secs(30);

async fn panel(dir: &std::path::Path, http: HttpSettings) -> (Panel, SocketAddr) {
    let free = || SocketAddr::from(([127, 0, 0, 1], switchyard_testkit::free_port().unwrap()));
    let listen = free();
    let panel = Panel::start(PanelConfig {
        listen,
        data_dir: dir.join("panel"),
        channel: ChannelSettings {
            listen: free(),
            ..ChannelSettings::default()
        },
        http,
        ..PanelConfig::default()
    })
    .await
    .unwrap();
    (panel, listen)
}

/// One request on a kept-alive connection; the status line.
async fn ask(s: &mut TcpStream) -> String {
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = vec![0u8; 1024];
    let mut got = Vec::new();
    // `/healthz` answers "ok\n": read until the body is in.
    while !got.ends_with(b"ok\n") {
        let n = tokio::time::timeout(GUARD, s.read(&mut buf))
            .await
            .expect("an answer")
            .unwrap();
        assert!(n > 0, "closed: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&got)
        .lines()
        .next()
        .unwrap()
        .to_owned()
}

/// Whether the server closed `s` (EOF or reset) rather than answering.
async fn closed(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 256];
    match tokio::time::timeout(GUARD, s.read(&mut buf)).await {
        Err(_) => false,
        Ok(Ok(0) | Err(_)) => true,
        Ok(Ok(_)) => false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_trickles_its_headers_is_closed() {
    let dir = tempfile::tempdir().unwrap();
    let (panel, addr) = panel(
        dir.path(),
        HttpSettings {
            header_read_timeout_s: 1,
            ..HttpSettings::default()
        },
    )
    .await;
    let mut slow = TcpStream::connect(addr).await.unwrap();
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        .await
        .unwrap();
    assert!(closed(&mut slow).await, "half a head kept the connection");
    // An idle kept-alive connection goes the same way after its answer.
    let mut idle = TcpStream::connect(addr).await.unwrap();
    assert_eq!(ask(&mut idle).await, "HTTP/1.1 200 OK");
    assert!(closed(&mut idle).await, "an idle connection stayed");
    // Honest clients are served as before.
    let mut fresh = TcpStream::connect(addr).await.unwrap();
    assert_eq!(ask(&mut fresh).await, "HTTP/1.1 200 OK");
    panel.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_cap_are_closed_and_the_open_ones_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let (panel, addr) = panel(
        dir.path(),
        HttpSettings {
            max_connections: 3,
            header_read_timeout_s: 120,
            ..HttpSettings::default()
        },
    )
    .await;
    let stats = panel.listener_stats.clone();
    let mut open = Vec::new();
    for _ in 0..3 {
        let mut s = TcpStream::connect(addr).await.unwrap();
        assert_eq!(ask(&mut s).await, "HTTP/1.1 200 OK");
        open.push(s);
    }
    // The fourth is accepted by the kernel, then closed by the panel unanswered.
    let mut extra = TcpStream::connect(addr).await.unwrap();
    let _ = extra
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await;
    assert!(closed(&mut extra).await, "a fourth connection was served");
    assert!(stats.refused.load(Ordering::Relaxed) >= 1);
    // The three still work.
    for s in &mut open {
        assert_eq!(ask(s).await, "HTTP/1.1 200 OK");
    }
    // One leaves; its place is free again once the panel sees it go.
    drop(open.pop());
    let deadline = std::time::Instant::now() + GUARD;
    loop {
        let mut s = TcpStream::connect(addr).await.unwrap();
        let _ = s
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await;
        let mut got = String::new();
        let _ = tokio::time::timeout(GUARD, s.read_to_string(&mut got)).await;
        if got.starts_with("HTTP/1.1 200 OK") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no place came free");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panel.shutdown().await;
}
