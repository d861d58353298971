//! `loadgen` as its own process against a keep-alive server of the test's own
//! (Content-Length and chunked bodies, a 404) and against testkit's HTTP target,
//! which closes every connection.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;
use switchyard_testkit::HttpTarget;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::Command;

/// Runs the loadgen binary with `args` and parses its JSON line.
async fn loadgen(args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .args(args)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "loadgen {args:?} failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    for field in [
        "requests", "seconds", "rps", "p50_ms", "p90_ms", "p99_ms", "max_ms", "errors", "non_2xx",
    ] {
        assert!(report[field].is_number(), "no {field} in {stdout}");
    }
    report
}

/// A keep-alive server: `/length` answers with a Content-Length body, `/chunked`
/// with a chunked one written in pieces, anything else 404. Counts connections and
/// requests.
async fn keep_alive_server() -> (u16, Arc<AtomicU64>, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (conns, reqs) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (c, r) = (Arc::clone(&conns), Arc::clone(&reqs));
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            c.fetch_add(1, Ordering::Relaxed);
            tokio::spawn(serve(stream, Arc::clone(&r)));
        }
    });
    (port, conns, reqs)
}

async fn serve(mut stream: TcpStream, requests: Arc<AtomicU64>) {
    let mut buf = Vec::new();
    let mut chunk = [0; 4096];
    loop {
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        buf.drain(..end + 4);
        requests.fetch_add(1, Ordering::Relaxed);
        let path = head.split(' ').nth(1).unwrap_or_default();
        let written = match path {
            "/length" => {
                stream
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world")
                    .await
            }
            "/chunked" => {
                let pieces: [&[u8]; 4] = [
                    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
                    b"lo\r\n6\r\n world\r",
                    b"\n0\r\n",
                    b"\r\n",
                ];
                let mut result = Ok(());
                for piece in pieces {
                    result = stream.write_all(piece).await;
                    if result.is_err() {
                        break;
                    }
                    tokio::task::yield_now().await;
                }
                result
            }
            _ => {
                stream
                    .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nno\n")
                    .await
            }
        };
        if written.is_err() {
            return;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alive_connections_rotate_through_the_url_file() {
    let (port, connections, served) = keep_alive_server().await;
    let dir = tempfile::tempdir().unwrap();
    let urls = dir.path().join("urls");
    std::fs::write(
        &urls,
        format!("/length\n/chunked\n\nhttp://127.0.0.1:{port}/missing\n"),
    )
    .unwrap();
    let url = format!("http://127.0.0.1:{port}/length");
    let report = loadgen(&[
        "--url",
        &url,
        "--url-file",
        urls.to_str().unwrap(),
        "--connections",
        "4",
        "--duration",
        "1s",
        "--warmup",
        "200ms",
        "--threads",
        "1",
    ])
    .await;
    let requests = report["requests"].as_u64().unwrap();
    assert!(requests >= 30, "{report}");
    assert_eq!(report["errors"], 0, "{report}");
    // Every third request is the 404, give or take the ones in flight.
    let non_2xx = report["non_2xx"].as_u64().unwrap();
    assert!(
        non_2xx.abs_diff(requests / 3) <= 4 + requests / 50,
        "{report}"
    );
    assert!(
        (report["seconds"].as_f64().unwrap() - 1.0).abs() < 1e-9,
        "{report}"
    );
    let (p50, p99, max) = (
        report["p50_ms"].as_f64().unwrap(),
        report["p99_ms"].as_f64().unwrap(),
        report["max_ms"].as_f64().unwrap(),
    );
    assert!(0.0 < p50 && p50 <= p99 && p99 <= max, "{report}");
    // Keep-alive: one connection each, and the warm-up's requests were served too.
    assert_eq!(connections.load(Ordering::Relaxed), 4, "{report}");
    assert!(served.load(Ordering::Relaxed) > requests, "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_closes_each_connection_gets_new_ones() {
    let target = HttpTarget::start().await.unwrap();
    let url = format!("http://{}/bytes/1000", target.addr());
    let report = loadgen(&["--url", &url, "--connections", "2", "--duration", "500ms"]).await;
    let requests = report["requests"].as_u64().unwrap();
    assert!(requests >= 10, "{report}");
    assert_eq!(report["errors"], 0, "{report}");
    assert_eq!(report["non_2xx"], 0, "{report}");
    assert!(target.requests() >= requests);
}

#[tokio::test]
async fn a_server_that_is_not_there_is_errors_not_requests() {
    let port = switchyard_testkit::free_port().unwrap();
    let url = format!("http://127.0.0.1:{port}/");
    let report = loadgen(&["--url", &url, "--connections", "1", "--duration", "300ms"]).await;
    assert_eq!(report["requests"], 0, "{report}");
    assert!(report["errors"].as_u64().unwrap() > 0, "{report}");
}
