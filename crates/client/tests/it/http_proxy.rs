//! Plain HTTP proxy requests through the proxy's one port and a real node, with the
//! real curl (`-x http://127.0.0.1:PORT`) and raw sockets: GET and POST, what the
//! origin receives (origin form, no `Proxy-*` or hop-by-hop headers, nothing added),
//! two requests to two origins on one connection, and a bad request answered 400.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use switchyard_client::{Outbound, Proxy};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::auto_live::{entry, node};

/// An origin that answers every request on a connection (keep-alive) with what it
/// received: the request line, the headers in order, the body's length and sum.
async fn echo_origin() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = Vec::new();
                loop {
                    let end = loop {
                        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            break i + 4;
                        }
                        let mut chunk = [0u8; 4096];
                        match s.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    };
                    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
                    buf.drain(..end);
                    let mut lines = head.split("\r\n").filter(|l| !l.is_empty());
                    let line = lines.next().unwrap_or_default().to_owned();
                    let headers: Vec<Value> = lines
                        .map(|l| {
                            let (n, v) = l.split_once(':').unwrap_or((l, ""));
                            json!([n, v.trim()])
                        })
                        .collect();
                    let len: usize = headers
                        .iter()
                        .find(|h| {
                            h[0].as_str()
                                .unwrap()
                                .eq_ignore_ascii_case("content-length")
                        })
                        .map_or(0, |h| h[1].as_str().unwrap().parse().unwrap());
                    while buf.len() < len {
                        let mut chunk = [0u8; 65536];
                        match s.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let body: Vec<u8> = buf.drain(..len).collect();
                    let sum: u64 = body.iter().map(|&b| u64::from(b)).sum();
                    let answer = json!({
                        "line": line, "headers": headers, "len": len, "sum": sum,
                        "origin": addr.port(),
                    })
                    .to_string();
                    let out = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{answer}",
                        answer.len()
                    );
                    if s.write_all(out.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// A proxy whose server is a real node with a plain VLESS inbound.
async fn proxy_through_a_node(dir: &std::path::Path) -> (Proxy, Arc<switchyard_node::Node>) {
    let (node, port) = node(dir).await;
    let proxy = Proxy::start("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let server = entry("N", SocketAddr::from(([127, 0, 0, 1], port)));
    proxy.set_server(Some(Arc::new(Outbound::new(server).unwrap())));
    (proxy, node)
}

async fn curl(args: &[&str]) -> (bool, String, String) {
    let out = tokio::process::Command::new("curl")
        .args(["-sS", "--max-time", "20"])
        .args(args)
        .output()
        .await
        .expect("curl is on the machine");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn header<'a>(answer: &'a Value, name: &str) -> Option<&'a str> {
    answer["headers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h[0].as_str().unwrap().eq_ignore_ascii_case(name))
        .and_then(|h| h[1].as_str())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curl_gets_and_posts_through_the_proxy_and_the_origin_sees_a_clean_request() {
    let dir = tempfile::tempdir().unwrap();
    let (proxy, _node) = proxy_through_a_node(dir.path()).await;
    let origin = echo_origin().await;
    let via = format!("http://{}", proxy.addr());

    // GET with a header of the app's own and a proxy credential that must not pass.
    let url = format!("http://{origin}/a/b?x=1");
    let (ok, out, err) = curl(&["-x", &via, "-U", "user:secret", "-H", "X-App: 7", &url]).await;
    assert!(ok, "{err}");
    let answer: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(answer["line"], "GET /a/b?x=1 HTTP/1.1");
    assert_eq!(header(&answer, "host"), Some(origin.to_string().as_str()));
    assert_eq!(header(&answer, "x-app"), Some("7"));
    let names: Vec<String> = answer["headers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h[0].as_str().unwrap().to_ascii_lowercase())
        .collect();
    assert_eq!(names, ["host", "user-agent", "accept", "x-app"], "{answer}");

    // POST with a 300 KiB body.
    let body: Vec<u8> = (0..300 * 1024u32).map(|i| (i % 251) as u8).collect();
    let file = dir.path().join("body");
    std::fs::write(&file, &body).unwrap();
    let data = format!("@{}", file.display());
    let (ok, out, err) = curl(&[
        "-x",
        &via,
        "--data-binary",
        &data,
        &format!("http://{origin}/post"),
    ])
    .await;
    assert!(ok, "{err}");
    let answer: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(answer["line"], "POST /post HTTP/1.1");
    assert_eq!(answer["len"], body.len());
    assert_eq!(
        answer["sum"],
        body.iter().map(|&b| u64::from(b)).sum::<u64>()
    );

    // Two origins in one curl run: one proxy connection (the second transfer makes
    // no new one), each request dialled to its own origin.
    let other = echo_origin().await;
    let (ok, out, err) = curl(&[
        "-x",
        &via,
        "-w",
        "\nconnects=%{num_connects}\n",
        &format!("http://{origin}/one"),
        &format!("http://{other}/two"),
    ])
    .await;
    assert!(ok, "{err}");
    assert!(
        out.contains("GET /one HTTP/1.1") && out.contains("GET /two HTTP/1.1"),
        "{out}"
    );
    assert!(
        out.contains(&format!("\"origin\":{}", origin.port())),
        "{out}"
    );
    assert!(
        out.contains(&format!("\"origin\":{}", other.port())),
        "{out}"
    );
    let connects: Vec<&str> = out.lines().filter(|l| l.starts_with("connects=")).collect();
    assert_eq!(connects, ["connects=1", "connects=0"], "{out}\n{err}");

    // A 1 MiB download from an origin that closes after each answer.
    let target = switchyard_testkit::HttpTarget::start().await.unwrap();
    let (ok, out, err) = curl(&[
        "-x",
        &via,
        "-o",
        "/dev/null",
        "-w",
        "%{size_download}",
        &format!("http://{}/bytes/1048576", target.addr()),
    ])
    .await;
    assert!(ok, "{err}");
    assert_eq!(out, "1048576");
}

/// Reads one response (its head and a `Content-Length` body) from `s`.
async fn response(s: &mut TcpStream, buf: &mut Vec<u8>) -> (String, Vec<u8>) {
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let mut chunk = [0u8; 4096];
        let n = s.read(&mut chunk).await.unwrap();
        assert!(n > 0, "closed before a response: {buf:?}");
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8(buf.drain(..end).collect()).unwrap();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .map_or(0, |v| v.parse().unwrap());
    while buf.len() < len {
        let mut chunk = [0u8; 4096];
        let n = s.read(&mut chunk).await.unwrap();
        assert!(n > 0);
        buf.extend_from_slice(&chunk[..n]);
    }
    (head, buf.drain(..len).collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_requests_to_two_origins_on_one_connection_and_a_bad_one_answered_400() {
    let dir = tempfile::tempdir().unwrap();
    let (proxy, _node) = proxy_through_a_node(dir.path()).await;
    let (one, two) = (echo_origin().await, echo_origin().await);

    // Both requests written at once (pipelined), the second with a body.
    let mut s = TcpStream::connect(proxy.addr()).await.unwrap();
    let requests = format!(
        "GET http://{one}/first HTTP/1.1\r\nHost: {one}\r\nProxy-Connection: keep-alive\r\n\r\n\
         PUT http://{two}/second HTTP/1.1\r\nHost: {two}\r\nContent-Length: 5\r\n\r\nhello"
    );
    s.write_all(requests.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    let (head, body) = response(&mut s, &mut buf).await;
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["line"], "GET /first HTTP/1.1");
    assert_eq!(answer["origin"], one.port());
    assert_eq!(header(&answer, "proxy-connection"), None);
    let (head, body) = response(&mut s, &mut buf).await;
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["line"], "PUT /second HTTP/1.1");
    assert_eq!(answer["origin"], two.port());
    assert_eq!(answer["len"], 5);

    // A third, malformed, on the same connection: 400, and the connection ends.
    s.write_all(b"GET /not-absolute HTTP/1.1\r\n\r\n")
        .await
        .unwrap();
    let mut rest = String::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_string(&mut rest))
        .await
        .unwrap()
        .unwrap();
    assert!(rest.starts_with("HTTP/1.1 400 "), "{rest}");
    assert!(rest.contains("absolute http:// URL"), "{rest}");

    // As a first request, and from curl: 400 too.
    let mut s = TcpStream::connect(proxy.addr()).await.unwrap();
    s.write_all(b"POST http://example.com/ HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 400 "), "{answer}");
    let (_, out, _) = curl(&[
        "--proxy",
        &format!("http://{}", proxy.addr()),
        "--request-target",
        "/relative",
        "-w",
        "%{http_code}",
        "-o",
        "/dev/null",
        &format!("http://{one}/"),
    ])
    .await;
    assert_eq!(out, "400");
}
