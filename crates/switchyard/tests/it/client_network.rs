//! A real network loss: `switchyard client run` in a network namespace of the test's
//! own (`switchyard_testkit::netns`), joined by a veth to a namespace where the
//! servers' addresses are. Each server is a bridge there (10.77.0.1:port) to the node
//! `switchyard up` runs on 127.0.0.1: A and B in the client's own subscription, C in a
//! neighbour subscription, both served from the servers' side too. A request loop runs
//! inside the client's namespace through its proxy. Then the test takes the client's
//! link down, as a phone in an elevator: every server and the neighbours' go silent
//! at once. The client must stay on its server, record nothing, back off, and resume
//! without penalties as soon as the link is back (its netlink watch sees it return).

use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use switchyard_testkit::{HttpTarget, free_port, netns};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use crate::up::up;

/// Serves `(path, body)` pairs over HTTP/1.1 on `listener` (bound in the servers'
/// namespace); any other path is a 404.
fn serve(listener: std::net::TcpListener, bodies: Vec<(String, String)>) {
    listener.set_nonblocking(true).unwrap();
    let listener = tokio::net::TcpListener::from_std(listener).unwrap();
    let bodies = Arc::new(bodies);
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let bodies = bodies.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut b = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut b).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&b[..n]),
                    }
                }
                let line = String::from_utf8_lossy(&head);
                let path = line.split_whitespace().nth(1).unwrap_or("");
                let answer = match bodies.iter().find(|(p, _)| p == path) {
                    Some((_, body)) => format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    ),
                    None => "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_owned(),
                };
                let _ = s.write_all(answer.as_bytes()).await;
            });
        }
    });
}

/// `switchyard client status --json` for the client with its data in `data`.
async fn status(data: &std::path::Path) -> Value {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["client", "status", "--json", "--data"])
        .arg(data)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Each server's (measurements, failures) in `status`, by name.
fn memory(status: &Value) -> Vec<(String, u64, u64)> {
    let mut all: Vec<(String, u64, u64)> = status["subscriptions"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["servers"].as_array().unwrap().clone())
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_owned(),
                s["measurements"].as_u64().unwrap(),
                s["failures"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    all.sort();
    all
}

fn switched(status: &Value) -> Vec<String> {
    status["log"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l.as_str())
        .filter(|l| l.starts_with("switched") || l.starts_with("connected to"))
        .map(str::to_owned)
        .collect()
}

/// Waits up to `within` for `ok` on the client's status; the last status.
async fn until(
    data: &std::path::Path,
    within: Duration,
    what: &str,
    ok: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let s = status(data).await;
        if ok(&s) {
            return s;
        }
        assert!(Instant::now() < deadline, "{what} within {within:?}: {s:#}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_network_loss_moves_nothing_records_nothing_and_ends_when_the_link_is_back() {
    let dir = tempfile::tempdir().unwrap();
    let target = HttpTarget::start().await.unwrap();
    let up = up(&dir.path().join("up")).await;
    let fetched = switchyard_client::fetch(&up.subscription).await.unwrap();
    let demo = fetched.entries[0].clone();
    let node: SocketAddr = format!("{}:{}", demo.server, demo.port).parse().unwrap();

    let pair = netns::pair().unwrap();
    let mut bridges = Vec::new();
    let mut entries = Vec::new();
    for name in ["A", "B", "C"] {
        let bridge = pair.bridge(node).await.unwrap();
        let mut e = demo.clone();
        e.name = name.into();
        e.server = bridge.addr().ip().to_string();
        e.port = bridge.addr().port();
        // Share links cannot pin the node's certificate: verification is skipped (the
        // handshake still is TLS).
        if let Some(tls) = e.tls.as_mut() {
            tls.insecure = true;
            tls.certificate_pem = None;
            tls.certificate_sha256 = None;
        }
        entries.push(e);
        bridges.push(bridge);
    }
    let listener = pair
        .servers
        .tcp_listener(SocketAddr::from((pair.servers_addr(), 0)))
        .unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    serve(
        listener,
        vec![
            ("/own".into(), switchyard_proto::share::links(&entries[..2])),
            (
                "/neighbour".into(),
                switchyard_proto::share::links(&entries[2..]),
            ),
        ],
    );

    // The client, inside the client's namespace.
    let data = dir.path().join("client");
    let port = free_port().unwrap();
    let mut command = pair.client.command(env!("CARGO_BIN_EXE_switchyard"));
    command
        .args(["client", "run", "--subscription"])
        .arg(format!("{base}/own"))
        .arg("--subscription")
        .arg(format!("{base}/neighbour"))
        .arg("--listen")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--probe-url")
        .arg(format!("http://{}/bytes/0", target.addr()))
        .arg("--data")
        .arg(&data)
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut client = tokio::process::Command::from(command)
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(client.stdout.take().unwrap()).lines();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let line = tokio::time::timeout_at(deadline.into(), lines.next_line())
            .await
            .expect("the client connects within 30 s")
            .unwrap()
            .expect("the client exited");
        if line == "server: A (AutoOn)" {
            break;
        }
    }
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });

    // The request loop, in the client's namespace: three downloads at a time.
    let inside = pair.client.runtime_in().unwrap();
    let proxy = SocketAddr::from(([127, 0, 0, 1], port));
    let (t, ok) = (target.addr(), Arc::new(Mutex::new(Vec::<Instant>::new())));
    for i in 0..3u64 {
        let ok = ok.clone();
        inside.spawn(async move {
            tokio::time::sleep(Duration::from_millis(300 * i)).await;
            loop {
                let once = async {
                    let s = switchyard_testkit::socks5::connect(proxy, t).await?;
                    switchyard_testkit::http::get_bytes(s, 16 * 1024).await
                };
                if let Ok(Ok(n)) = tokio::time::timeout(Duration::from_secs(2), once).await
                    && n == 16 * 1024
                {
                    ok.lock().unwrap().push(Instant::now());
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
    }
    let passed_since = |at: Instant| ok.lock().unwrap().iter().filter(|t| **t > at).count();
    let start = Instant::now();
    while passed_since(start) < 3 {
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "requests pass through A"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let before = status(&data).await;
    assert_eq!(before["current"], "A", "{before:#}");
    assert_eq!(before["network"], "up", "{before:#}");
    let memory_before = memory(&before);

    // The elevator.
    let cut = Instant::now();
    pair.cut().unwrap();
    let lost = until(&data, Duration::from_secs(20), "the network is lost", |s| {
        s["back_off"].is_object()
    })
    .await;
    eprintln!("network loss seen after {:?}", cut.elapsed());
    assert_eq!(
        lost["network"], "down",
        "the netlink watch saw the link go: {lost:#}"
    );
    assert_eq!(lost["last_check"]["outcome"], "network_lost", "{lost:#}");
    assert_eq!(lost["back_off"]["attempts"], 1, "{lost:#}");
    // 15 s of back-off, then a retry: silent again, 30 s.
    let lost = until(&data, Duration::from_secs(25), "the second attempt", |s| {
        s["back_off"]["attempts"] == 2
    })
    .await;
    assert!(
        lost["back_off"]["retry_in_ms"].as_u64().unwrap() > 20_000,
        "{lost:#}"
    );
    // All along: on A, nothing switched, nothing recorded.
    assert_eq!(lost["current"], "A", "{lost:#}");
    assert_eq!(switched(&lost), switched(&before), "{lost:#}");
    assert_eq!(memory(&lost), memory_before, "nothing recorded: {lost:#}");

    // The link is back: the watch sees it, the pause ends, requests pass at once and
    // the retry finds A answering; no server carries a failure.
    let back = Instant::now();
    pair.restore().unwrap();
    while passed_since(back) < 3 {
        assert!(
            back.elapsed() < Duration::from_secs(10),
            "requests pass again within 10 s of the link's return"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let resumed = until(
        &data,
        Duration::from_secs(25),
        "the retry after the return",
        |s| s["network"] == "up" && s["back_off"].is_null() && s["last_check"]["outcome"] == "stay",
    )
    .await;
    eprintln!(
        "the retry came {:?} after the link's return",
        back.elapsed()
    );
    assert_eq!(resumed["current"], "A", "{resumed:#}");
    assert_eq!(switched(&resumed), switched(&before), "{resumed:#}");
    for (name, measurements, failures) in memory(&resumed) {
        assert_eq!(failures, 0, "{name} carries no penalty: {resumed:#}");
        if name == "A" {
            assert!(measurements >= 1, "A answered the retry: {resumed:#}");
        }
    }
    client.kill().await.unwrap();
    drop(inside);
    drop(bridges);
}
