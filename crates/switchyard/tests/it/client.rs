//! `switchyard client run` end to end: `switchyard up` (a panel, a node enrolled
//! through the real join flow, a VLESS+TLS inbound and a demo user), then the client on
//! the demo user's subscription URL. A download through the client's SOCKS5 port and
//! one through its HTTP CONNECT port (the same port) cross the node to a local target,
//! every byte checked; a plain HTTP request gets 405; a subscription URL that answers
//! 404 is a clear error.

use std::process::Stdio;
use std::time::{Duration, Instant};

use switchyard_testkit::http::get_bytes;
use switchyard_testkit::{HttpTarget, free_port};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

use crate::up::up;

const MIB: u64 = 1 << 20;

/// Starts the client on `subscription`; the proxy's address once it prints it.
async fn client(subscription: &str) -> (Child, std::net::SocketAddr) {
    let listen = format!("127.0.0.1:{}", free_port().unwrap());
    let mut child = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args([
            "client",
            "run",
            "--subscription",
            subscription,
            "--listen",
            &listen,
        ])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("switchyard client starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let line = tokio::time::timeout_at(deadline.into(), lines.next_line())
            .await
            .expect("the client prints its proxy within 30 s")
            .unwrap()
            .expect("the client exited before printing its proxy");
        if let Some(rest) = line.strip_prefix("proxy: ") {
            let addr = rest.split_whitespace().next().unwrap().parse().unwrap();
            tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
            return (child, addr);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_carries_socks5_and_http_connect_through_the_subscription_s_server() {
    let dir = tempfile::tempdir().unwrap();
    let target = HttpTarget::start().await.unwrap();
    let up = up(&dir.path().join("data")).await;
    let (_client, proxy) = client(&up.subscription).await;

    // SOCKS5, retried while the node takes its first config.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match target.download_via_socks(proxy, 2 * MIB).await {
            Ok(()) => break,
            Err(e) if Instant::now() > deadline => panic!("SOCKS5 download: {e:#}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(300)).await,
        }
    }

    // HTTP CONNECT on the same port.
    let mut s = TcpStream::connect(proxy).await.unwrap();
    let t = target.addr();
    s.write_all(format!("CONNECT {t} HTTP/1.1\r\nHost: {t}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut b = [0u8; 1];
        s.read_exact(&mut b).await.unwrap();
        head.push(b[0]);
    }
    let head = String::from_utf8(head).unwrap();
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    assert_eq!(get_bytes(s, MIB).await.unwrap(), MIB);
    assert!(target.bytes_out() >= 3 * MIB);

    // Not CONNECT: 405, and the connection closes.
    let mut s = TcpStream::connect(proxy).await.unwrap();
    s.write_all(b"GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 405 "), "{answer}");

    // A subscription that answers 404 is an error naming the URL and the status.
    let bad = format!("http://{}/sub/no-such-token", up.api);
    let out = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["client", "run", "--subscription", &bad])
        .env("RUST_LOG", "warn")
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&bad) && err.contains("HTTP 404"), "{err}");
}
