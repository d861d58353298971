//! `switchyard client run` end to end: `switchyard up` (a panel, a node enrolled
//! through the real join flow, a VLESS+TLS inbound and a demo user), then the client on
//! the demo user's subscription URL (sing-box JSON for this client, the inbound's
//! self-signed certificate pinned). A download through the client's SOCKS5 port and
//! one through its HTTP CONNECT port (the same port) cross the node to a local target,
//! every byte checked, and a plain HTTP proxy request too (one not in absolute form
//! gets 400); a subscription URL that answers
//! 404 is a clear error.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::json;
use switchyard_testkit::http::get_bytes;
use switchyard_testkit::{HttpTarget, free_port};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

use crate::up::up;

const MIB: u64 = 1 << 20;

/// Starts the client on `subscription` with its state in `data`; the proxy's address
/// once it prints it.
async fn client(
    subscription: &str,
    data: &std::path::Path,
    speedtest_url: &str,
) -> (Child, std::net::SocketAddr) {
    let listen = format!("127.0.0.1:{}", free_port().unwrap());
    let mut child = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args([
            "client",
            "run",
            "--subscription",
            subscription,
            "--listen",
            &listen,
            "--speedtest-url",
            speedtest_url,
        ])
        .arg("--data")
        .arg(data)
        .env("RUST_LOG", crate::test_log())
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
    // The panel answers this client with sing-box JSON, which pins the inbound's
    // self-signed certificate (share links could only say "insecure").
    let sub = switchyard_client::fetch(&up.subscription).await.unwrap();
    let tls = sub.entries[0].tls.clone().expect("the demo inbound is TLS");
    assert!(!tls.insecure && tls.certificate_pem.is_some(), "{tls:?}");
    let data = dir.path().join("client");
    let speedtest = format!("http://{}/bytes/{}", target.addr(), 8 * MIB);
    let (_client, proxy) = client(&up.subscription, &data, &speedtest).await;

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

    // A plain HTTP proxy request on the same port: 1 MiB, every byte checked; then
    // one that is not in absolute form: 400, and the connection closes.
    let mut s = TcpStream::connect(proxy).await.unwrap();
    s.write_all(
        format!("GET http://{t}/bytes/{MIB} HTTP/1.1\r\nHost: {t}\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    )
    .await
    .unwrap();
    let mut answer = Vec::new();
    s.read_to_end(&mut answer).await.unwrap();
    let end = answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let head = String::from_utf8_lossy(&answer[..end]).into_owned();
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    assert_eq!(answer.len() - end, MIB as usize);
    assert_eq!(
        switchyard_testkit::pattern::first_mismatch(0, &answer[end..]),
        None
    );
    let mut s = TcpStream::connect(proxy).await.unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: example.com\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 400 "), "{answer}");

    // The control socket: status, marks refused as they must be, an update.
    let control = async |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_switchyard"))
            .arg("client")
            .args(args)
            .arg("--data")
            .arg(&data)
            .output()
            .await
            .unwrap();
        let answer: serde_json::Value =
            serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
        (
            out.status.success(),
            answer,
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, status, err) = control(&["status", "--json"]).await;
    assert!(ok, "{err}");
    let server = status["subscriptions"][0]["servers"][0].clone();
    let name = server["name"].as_str().unwrap().to_owned();
    assert_eq!(status["current"], name, "{status}");
    assert_eq!(
        (&server["current"], &server["marked"]),
        (&json!(true), &json!(false))
    );
    assert!(
        status["log"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l.as_str().unwrap().starts_with("connected to")),
        "{status}"
    );
    // Auto refuses to mark the last unmarked server of its subscription (the spec's
    // rule), and says so; the mark is not taken.
    let (ok, answer, _) = control(&["mark", &name]).await;
    assert!(!ok);
    assert!(
        answer["error"]
            .as_str()
            .unwrap()
            .contains("is the last unmarked server"),
        "{answer}"
    );
    let (_, status, _) = control(&["status", "--json"]).await;
    assert_eq!(
        status["subscriptions"][0]["servers"][0]["marked"], false,
        "{status}"
    );
    // For people: the current server, and the queue with each server's parts.
    let out = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["client", "status", "--data"])
        .arg(&data)
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains(&format!("current server: {name}\n")),
        "{text}"
    );
    assert!(text.contains("back-off:       none"), "{text}");
    assert!(
        text.contains(&format!("subscription 1: {} (Auto is on)", up.subscription)),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.contains(&name) && l.ends_with("current, unchecked")),
        "{text}"
    );
    let (ok, answer, err) = control(&["mark", "nope"]).await;
    assert!(!ok);
    assert_eq!(answer["error"], "no server named \"nope\"", "{err}");
    let (ok, answer, err) = control(&["update"]).await;
    assert!(ok, "{err}");
    assert_eq!(answer["updating"], 1);

    // A speed test through the current server: a result, and Auto has it.
    let out = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["client", "speedtest", "--data"])
        .arg(&data)
        .output()
        .await
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.starts_with(&format!("{name}: ")) && said.contains(" Mbit/s ("),
        "{said}"
    );
    let (_, status, _) = control(&["status", "--json"]).await;
    let mbps = status["subscriptions"][0]["servers"][0]["speed_mbps"]
        .as_f64()
        .unwrap_or_else(|| panic!("{status}"));
    assert!(mbps > 0.0, "{status}");
    let (ok, _, err) = control(&["speedtest", "nope"]).await;
    assert!(!ok);
    assert!(err.contains("no server named \"nope\""), "{err}");

    // A second subscription (the same user's, as share links), added while the client
    // runs: fetched at once, kept in the data directory, second in the list; Auto
    // moves into it on `auto on 2`.
    let second = format!("{}?format=links", up.subscription);
    let out = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["client", "add", &second, "--data"])
        .arg(&data)
        .output()
        .await
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(said.trim(), format!("added {second}: 1 server(s)"));
    let saved: Vec<String> =
        serde_json::from_str(&std::fs::read_to_string(data.join("subscriptions.json")).unwrap())
            .unwrap();
    assert_eq!(saved, std::slice::from_ref(&second));
    let (ok, answer, _) = control(&["add", &second]).await;
    assert!(!ok, "{answer}");
    let (ok, answer, err) = control(&["auto", "on", "2"]).await;
    assert!(ok, "{answer} {err}");
    let (_, status, _) = control(&["status", "--json"]).await;
    let subs = status["subscriptions"].as_array().unwrap();
    assert_eq!(
        subs.iter()
            .map(|s| (s["name"].as_str().unwrap(), s["auto"].as_bool().unwrap()))
            .collect::<Vec<_>>(),
        [(up.subscription.as_str(), false), (second.as_str(), true)],
        "{status}"
    );
    let (ok, answer, _) = control(&["auto", "on", "3"]).await;
    assert!(!ok);
    assert!(
        answer["error"].as_str().unwrap().contains("1 to 2"),
        "{answer}"
    );

    // A subscription that answers 404 is an error naming the URL and the status.
    let bad = format!("http://{}/sub/no-such-token", up.api);
    let out = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["client", "run", "--subscription", &bad])
        .env("RUST_LOG", crate::test_log())
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&bad) && err.contains("HTTP 404"), "{err}");
}
