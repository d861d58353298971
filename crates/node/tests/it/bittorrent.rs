//! "No torrents" on a node: a routing rule `protocol = ["bittorrent"]` to `block`.
//! Through the real sing-box client and the node's VLESS inbound: the peer wire
//! handshake never reaches a local peer, a tracker announce never reaches the
//! tracker, a DHT query through a UDP association never reaches its destination,
//! while an HTTP download and ordinary datagrams through the same inbound pass; the
//! blocked TCP connections and the blocked datagram are counted. The real BitTorrent client aria2, through the
//! same proxy, gets no answer from its tracker (which hears nothing) and fetches an
//! HTTP file all the same.

use crate::common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use common::control::call;
use common::*;
use switchyard_testkit::config::vless_outbound;
use switchyard_testkit::socks5::{self, UdpAssociation};
use switchyard_testkit::{SingBox, pattern};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A TCP listener on 127.0.0.1 that counts the bytes anyone sends it.
pub(crate) async fn listener_counting() -> (SocketAddr, Arc<AtomicU64>, Arc<AtomicU64>) {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let (accepted, bytes) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (a, b) = (accepted.clone(), bytes.clone());
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            a.fetch_add(1, Ordering::Relaxed);
            let b = b.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                while let Ok(n) = s.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    b.fetch_add(n as u64, Ordering::Relaxed);
                }
            });
        }
    });
    (addr, accepted, bytes)
}

/// Sends `data` through `proxy` to `to` and reads what comes back within 2 s.
pub(crate) async fn exchange(proxy: SocketAddr, to: SocketAddr, data: &[u8]) -> Vec<u8> {
    let Ok(mut s) = socks5::connect(proxy, to).await else {
        return Vec::new();
    };
    let _ = s.write_all(data).await;
    let mut got = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(2), s.read_to_end(&mut got)).await;
    got
}

/// A bencoded single-file torrent announcing to `tracker`.
fn torrent(tracker: SocketAddr) -> Vec<u8> {
    let announce = format!("http://{tracker}/announce");
    let mut t = format!("d8:announce{}:{announce}4:infod", announce.len()).into_bytes();
    t.extend_from_slice(b"6:lengthi16384e4:name8:file.bin12:piece lengthi16384e6:pieces20:");
    t.extend_from_slice(&[7u8; 20]);
    t.extend_from_slice(b"ee");
    t
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bittorrent_is_blocked_and_everything_else_passes() {
    let f = start_with(
        "protocol = \"vless\"",
        "[[route.rules]]\nprotocol = [\"bittorrent\"]\noutbound = \"block\"\n",
    )
    .await;
    let client = SingBox::client(vless_outbound(f.addr(), ALICE_UUID))
        .await
        .unwrap();
    let proxy = client.proxy_addr().unwrap();

    // HTTP passes.
    f.http.download_via_socks(proxy, 100_000).await.unwrap();

    // The peer handshake reaches no peer.
    let (peer, accepted, heard) = listener_counting().await;
    let mut handshake = b"\x13BitTorrent protocol".to_vec();
    handshake.extend_from_slice(&[0u8; 8]);
    handshake.extend_from_slice(&[0xab; 40]);
    assert_eq!(exchange(proxy, peer, &handshake).await, Vec::<u8>::new());
    // A tracker's announce reaches no tracker.
    let (tracker, _, tracker_heard) = listener_counting().await;
    let announce = format!(
        "GET /announce?info_hash=%12%34%56&peer_id=-AR1360-abcdefghijkl&port=6881 HTTP/1.1\r\nHost: {tracker}\r\n\r\n"
    );
    assert_eq!(
        exchange(proxy, tracker, announce.as_bytes()).await,
        Vec::<u8>::new()
    );
    // Not-BitTorrent bytes to the same peer go through.
    let before = f.http.requests();
    let got = exchange(
        proxy,
        f.http.addr(),
        format!("GET /bytes/100 HTTP/1.1\r\nHost: {}\r\n\r\n", f.http.addr()).as_bytes(),
    )
    .await;
    assert!(String::from_utf8_lossy(&got).starts_with("HTTP/1.1 200"));
    assert_eq!(f.http.requests(), before + 1);

    // A DHT query through a UDP association reaches nothing; a plain datagram does.
    let association = UdpAssociation::open(proxy).await.unwrap();
    let echo = socks5::Dest::from(f.udp.addr());
    let ping = b"d1:ad2:id20:abcdefghij0123456789e1:q4:ping1:t2:aa1:y1:qe";
    association.send_to(ping, &echo).await.unwrap();
    let plain = pattern::bytes(100);
    association.send_to(&plain, &echo).await.unwrap();
    let (_, back) = tokio::time::timeout(Duration::from_secs(5), association.recv_from())
        .await
        .expect("the plain datagram's echo")
        .unwrap();
    assert_eq!(
        back, plain,
        "the echo is the plain datagram's, not the ping's"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(f.udp.datagrams(), 1, "the DHT query never reached the echo");

    assert_eq!(
        accepted.load(Ordering::Relaxed),
        0,
        "no connection to the peer"
    );
    assert_eq!(heard.load(Ordering::Relaxed), 0);
    assert_eq!(tracker_heard.load(Ordering::Relaxed), 0);
    // The peer's and the tracker's connections, and the DHT query.
    let (_, metrics) = call(&f, "GET", "/metrics", None).await;
    assert!(
        metrics.contains("switchyard_inbound_blocked_total{inbound=\"main\"} 3\n"),
        "{metrics}"
    );

    // The real aria2 through the same proxy: its tracker hears nothing, an HTTP file
    // comes all the same.
    let dir = tempfile::tempdir().unwrap();
    let (tracker, _, tracker_heard) = listener_counting().await;
    std::fs::write(dir.path().join("t.torrent"), torrent(tracker)).unwrap();
    let aria2 = std::env::var("SWITCHYARD_ARIA2").unwrap_or_else(|_| "/usr/bin/aria2c".into());
    assert!(
        std::path::Path::new(&aria2).is_file(),
        "aria2c is not at {aria2}: run `cargo xtask peers` (Debian's aria2) or set SWITCHYARD_ARIA2"
    );
    let run = |args: Vec<String>| {
        let mut c = tokio::process::Command::new(&aria2);
        c.args([
            format!("--all-proxy=http://{proxy}"),
            "--enable-dht=false".into(),
            "--bt-enable-lpd=false".into(),
            "--enable-peer-exchange=false".into(),
            "--bt-stop-timeout=4".into(),
            "--bt-tracker-connect-timeout=3".into(),
            "--bt-tracker-timeout=3".into(),
            "--max-tries=1".into(),
            "--console-log-level=warn".into(),
            "--summary-interval=0".into(),
            format!("--dir={}", dir.path().display()),
        ])
        .args(args)
        .kill_on_drop(true);
        c
    };
    let torrent_run = run(vec![dir.path().join("t.torrent").display().to_string()])
        .output()
        .await
        .unwrap();
    assert!(
        !torrent_run.status.success(),
        "aria2 found no peer: {}",
        String::from_utf8_lossy(&torrent_run.stdout)
    );
    assert_eq!(
        tracker_heard.load(Ordering::Relaxed),
        0,
        "the tracker heard nothing"
    );
    let http = run(vec![format!("http://{}/bytes/5000", f.http.addr())])
        .output()
        .await
        .unwrap();
    assert!(
        http.status.success(),
        "aria2's HTTP download: {}",
        String::from_utf8_lossy(&http.stdout)
    );
    let file = std::fs::read(dir.path().join("5000")).unwrap();
    assert_eq!(file, pattern::bytes(5000));
}
