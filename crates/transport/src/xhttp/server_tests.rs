//! The XHTTP server with an `h2` client written here (Xray 24.11.21, the node's
//! tests' peer, has no stream-one): stream-one, packets put back in order, the
//! caps (413, too many held, sessions reaped after 30 s), probes.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use switchyard_proto::xhttp::{Mode, Range, Settings};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

use super::*;

const PAD: &str = "x_padding=0000000000";

fn settings(mode: Mode) -> Settings {
    let mut s = Settings::new("/xh");
    s.mode = mode;
    s.x_padding_bytes = Range::new(10, 20).unwrap();
    s.sc_max_each_post_bytes = Range::fixed(1000);
    s.sc_max_buffered_posts = 3;
    s
}

fn deadline() -> Instant {
    Instant::now() + Duration::from_secs(5)
}

/// Serves one in-memory connection with `server`; each stream echoes what it reads
/// until its upload ends, then ends its download.
fn connect(server: &Arc<Server>) -> tokio::io::DuplexStream {
    connect_with(server, |mut s| {
        tokio::spawn(async move {
            let mut buf = vec![0u8; 4096];
            loop {
                match s.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if s.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                }
            }
            let _ = s.shutdown().await;
        });
    })
}

/// Serves one in-memory connection with `server`, each stream handed to `each`.
fn connect_with(
    server: &Arc<Server>,
    each: impl Fn(ServerStream) + Send + Sync + 'static,
) -> tokio::io::DuplexStream {
    let (client, io) = tokio::io::duplex(256 * 1024);
    let server = server.clone();
    tokio::spawn(async move {
        let Ok(first) = server.read_first(io, deadline()).await else {
            return;
        };
        let _ = server
            .serve(first, deadline(), Duration::from_secs(60), each)
            .await;
    });
    client
}

/// An HTTP/2 client (prior knowledge) of `server`.
async fn h2(server: &Arc<Server>) -> h2::client::SendRequest<Bytes> {
    h2_over(connect(server)).await
}

async fn h2_over(io: tokio::io::DuplexStream) -> h2::client::SendRequest<Bytes> {
    let (send, connection) = h2::client::handshake(io).await.unwrap();
    tokio::spawn(connection);
    send
}

fn request(method: Method, path: &str) -> Request<()> {
    Request::builder()
        .method(method)
        .uri(format!("http://node.test{path}?{PAD}"))
        .body(())
        .unwrap()
}

/// Sends `body` with a request; the response.
async fn send(
    client: &mut h2::client::SendRequest<Bytes>,
    method: Method,
    path: &str,
    body: &[u8],
) -> http::Response<h2::RecvStream> {
    let mut client = client.clone().ready().await.unwrap();
    let (response, mut stream) = client
        .send_request(request(method, path), body.is_empty())
        .unwrap();
    if !body.is_empty() {
        stream
            .send_data(Bytes::copy_from_slice(body), true)
            .unwrap();
    }
    response.await.unwrap()
}

/// Reads a response body to its end (or `n` bytes).
async fn read_body(body: &mut h2::RecvStream, n: usize) -> Vec<u8> {
    let mut got = Vec::new();
    while got.len() < n {
        match body.data().await {
            Some(Ok(data)) => {
                let _ = body.flow_control().release_capacity(data.len());
                got.extend_from_slice(&data);
            }
            _ => break,
        }
    }
    got
}

#[tokio::test]
async fn stream_one_carries_bytes_both_ways_in_one_request() {
    let server = Arc::new(Server::new(settings(Mode::StreamOne)));
    let mut client = h2(&server).await.ready().await.unwrap();
    let (response, mut up) = client
        .send_request(request(Method::POST, "/xh/"), false)
        .unwrap();
    up.send_data(Bytes::from_static(b"hello "), false).unwrap();
    let response = response.await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let headers = response.headers();
    assert_eq!(headers["content-type"], "text/event-stream");
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(headers["x-accel-buffering"], "no");
    let padding = headers["x-padding"].as_bytes();
    assert!((10..=20).contains(&padding.len()) && padding.iter().all(|b| *b == b'0'));
    let mut down = response.into_body();
    assert_eq!(read_body(&mut down, 6).await, b"hello ");
    up.send_data(Bytes::from_static(b"world"), true).unwrap();
    assert_eq!(read_body(&mut down, usize::MAX).await, b"world");
    // A download GET is another mode's: 404, no body.
    let refused = send(&mut client, Method::GET, "/xh/abc", b"").await;
    assert_eq!(refused.status(), StatusCode::NOT_FOUND);
    assert!(refused.headers().get("x-padding").is_none());
}

#[tokio::test]
async fn packets_are_put_back_in_order_and_a_duplicate_is_refused() {
    let server = Arc::new(Server::new(settings(Mode::Auto)));
    let mut client = h2(&server).await;
    for (seq, data) in [(2, "c"), (0, "a")] {
        let answer = send(
            &mut client,
            Method::POST,
            &format!("/xh/s1/{seq}"),
            data.as_bytes(),
        )
        .await;
        assert_eq!(answer.status(), StatusCode::OK);
    }
    let download = send(&mut client, Method::GET, "/xh/s1", b"").await;
    assert_eq!(download.status(), StatusCode::OK);
    let mut down = download.into_body();
    assert_eq!(read_body(&mut down, 1).await, b"a");
    let answer = send(&mut client, Method::POST, "/xh/s1/1", b"b").await;
    assert_eq!(answer.status(), StatusCode::OK);
    assert_eq!(read_body(&mut down, 2).await, b"bc");
    let again = send(&mut client, Method::POST, "/xh/s1/0", b"a").await;
    assert_eq!(again.status(), StatusCode::INTERNAL_SERVER_ERROR);
    // A second GET of the session is refused.
    let second = send(&mut client, Method::GET, "/xh/s1", b"").await;
    assert_eq!(second.status(), StatusCode::CONFLICT);
}

#[tokio::test]
async fn a_post_over_the_size_cap_gets_413() {
    let server = Arc::new(Server::new(settings(Mode::PacketUp)));
    let mut client = h2(&server).await;
    let answer = send(&mut client, Method::POST, "/xh/s1/0", &[7u8; 1001]).await;
    assert_eq!(answer.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let answer = send(&mut client, Method::POST, "/xh/s1/0", &[7u8; 1000]).await;
    assert_eq!(answer.status(), StatusCode::OK);
    // Stream-up is another mode's.
    let answer = send(&mut client, Method::POST, "/xh/s2", b"x").await;
    assert_eq!(answer.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn too_many_packets_held_fail_the_session() {
    let server = Arc::new(Server::new(settings(Mode::PacketUp)));
    let mut client = h2(&server).await;
    let download = send(&mut client, Method::GET, "/xh/s1", b"").await;
    let mut down = download.into_body();
    // Three out of order (sc_max_buffered_posts = 3) are held; the fourth fails it.
    for seq in 1..=3 {
        let answer = send(&mut client, Method::POST, &format!("/xh/s1/{seq}"), b"x").await;
        assert_eq!(answer.status(), StatusCode::OK, "seq {seq}");
    }
    let answer = send(&mut client, Method::POST, "/xh/s1/4", b"x").await;
    assert_eq!(answer.status(), StatusCode::INTERNAL_SERVER_ERROR);
    // The stream read an error: its download ends with nothing.
    assert_eq!(read_body(&mut down, usize::MAX).await, b"");
    // Too far ahead (twice the cap) fails a session at once.
    let answer = send(&mut client, Method::POST, "/xh/s2/6", b"x").await;
    assert_eq!(answer.status(), StatusCode::INTERNAL_SERVER_ERROR);
}

#[tokio::test(start_paused = true)]
async fn a_session_waits_30_s_for_its_get_then_is_reaped() {
    let server = Arc::new(Server::new(settings(Mode::Auto)));
    let mut client = h2(&server).await;
    let answer = send(&mut client, Method::POST, "/xh/early/0", b"kept").await;
    assert_eq!(answer.status(), StatusCode::OK);
    tokio::time::sleep(Duration::from_secs(20)).await;
    let download = send(&mut client, Method::GET, "/xh/early", b"").await;
    let mut down = download.into_body();
    assert_eq!(read_body(&mut down, 4).await, b"kept");
    // Streaming: not reaped.
    tokio::time::sleep(Duration::from_secs(31)).await;
    assert_eq!(server.sessions(), 1);
    let answer = send(&mut client, Method::POST, "/xh/late/0", b"lost").await;
    assert_eq!(answer.status(), StatusCode::OK);
    assert_eq!(server.sessions(), 2);
    tokio::time::sleep(Duration::from_secs(31)).await;
    assert_eq!(server.sessions(), 1, "the session with no GET was reaped");
    let download = send(&mut client, Method::GET, "/xh/late", b"").await;
    let mut down = download.into_body();
    let answer = send(&mut client, Method::POST, "/xh/late/0", b"new").await;
    assert_eq!(answer.status(), StatusCode::OK);
    assert_eq!(read_body(&mut down, 3).await, b"new", "a new session");
}

#[tokio::test]
async fn the_session_cap_refuses_one_more() {
    let limits = Limits {
        max_sessions: 2,
        ..Limits::default()
    };
    let server = Arc::new(Server::with_limits(settings(Mode::Auto), limits));
    let mut client = h2(&server).await;
    for (id, want) in [("a", 200), ("b", 200), ("c", 503)] {
        let answer = send(&mut client, Method::POST, &format!("/xh/{id}/0"), b"x").await;
        assert_eq!(answer.status().as_u16(), want, "{id}");
    }
}

#[tokio::test]
async fn stream_up_over_http1_reads_the_post_body_as_it_comes() {
    let server = Arc::new(Server::new(settings(Mode::StreamUp)));
    let mut up = connect(&server);
    up.write_all(
        format!("POST /xh/s9?{PAD} HTTP/1.1\r\nHost: node.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
            .as_bytes(),
    )
    .await
    .unwrap();
    let mut down = connect(&server);
    down.write_all(format!("GET /xh/s9?{PAD} HTTP/1.1\r\nHost: node.test\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while !got.ends_with(b"5\r\nhello\r\n") {
        let n = down.read(&mut buf).await.unwrap();
        assert!(n > 0, "{}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    assert!(text.contains("transfer-encoding: chunked"), "{text}");
    // The upload's end ends the stream: the echo shuts its download.
    up.write_all(b"0\r\n\r\n").await.unwrap();
    while !got.ends_with(b"0\r\n\r\n") {
        let n = down.read(&mut buf).await.unwrap();
        assert!(n > 0, "{}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    // The POST was answered 200 and held until then.
    let mut answer = vec![0u8; 1024];
    let n = up.read(&mut answer).await.unwrap();
    assert!(answer[..n].starts_with(b"HTTP/1.1 200 OK\r\n"));
}

#[tokio::test]
async fn a_first_request_not_ours_comes_back_with_every_byte() {
    let mut with_host = settings(Mode::Auto);
    with_host.host = Some("node.test".into());
    let server = Server::new(with_host);
    let probes: [&[u8]; 6] = [
        b"GET / HTTP/1.1\r\nHost: node.test\r\n\r\n",
        b"GET /xh/abc HTTP/1.1\r\nHost: node.test\r\n\r\n",
        b"GET /xh/abc?x_padding=0000000000 HTTP/1.1\r\nHost: other.test\r\n\r\n",
        b"DELETE /xh/abc?x_padding=0000000000 HTTP/1.1\r\nHost: node.test\r\n\r\n",
        b"\x16\x03\x01\x02\x00",
        b"GET /xh/abc?x_padding=0000000000 HTTP/1.1\r\n",
    ];
    for probe in probes {
        let (mut client, io) = tokio::io::duplex(64 * 1024);
        client.write_all(probe).await.unwrap();
        drop(client);
        let Err(refused) = server.read_first(io, deadline()).await else {
            panic!("accepted {}", String::from_utf8_lossy(probe))
        };
        assert_eq!(refused.read, probe);
    }
    let (mut client, io) = tokio::io::duplex(64 * 1024);
    client
        .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        .await
        .unwrap();
    let first = server.read_first(io, deadline()).await.ok().unwrap();
    assert!(first.http2);
}

/// A client that does not read its download: the stream's writer waits once the
/// download buffer and HTTP/2's windows are full; the server holds no more.
#[tokio::test(start_paused = true)]
async fn a_download_not_read_makes_the_writer_wait() {
    let server = Arc::new(Server::new(settings(Mode::Auto)));
    let written = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = written.clone();
    let io = connect_with(&server, move |mut s| {
        let counted = counted.clone();
        tokio::spawn(async move {
            let chunk = vec![1u8; 16 * 1024];
            while s.write_all(&chunk).await.is_ok() {
                counted.fetch_add(chunk.len(), std::sync::atomic::Ordering::SeqCst);
            }
        });
    });
    let mut client = h2_over(io).await;
    let download = send(&mut client, Method::GET, "/xh/slow", b"").await;
    assert_eq!(download.status(), StatusCode::OK);
    tokio::time::sleep(Duration::from_secs(10)).await;
    let held = written.load(std::sync::atomic::Ordering::SeqCst);
    // The download buffer (256 KiB), hyper's HTTP/2 send buffer (400 KiB), the
    // window the client gave (64 KiB) and the in-memory pipe (256 KiB) at most.
    assert!(
        held <= 1024 * 1024,
        "{held} bytes written with nobody reading"
    );
    assert!(held >= 256 * 1024, "{held}: the buffer fills first");
    // Reading lets it go on.
    let mut down = download.into_body();
    let got = read_body(&mut down, 2 * 1024 * 1024).await;
    assert!(got.len() >= 2 * 1024 * 1024);
    assert!(written.load(std::sync::atomic::Ordering::SeqCst) > held);
}

/// The longest padding validation allows (16 KiB) fits in a first request head.
#[tokio::test]
async fn the_longest_padding_fits_in_a_first_request() {
    let mut long = settings(Mode::Auto);
    long.x_padding_bytes = Range::new(16_000, 16_384).unwrap();
    let server = Server::new(long);
    let (mut client, io) = tokio::io::duplex(64 * 1024);
    let head = format!(
        "GET /xh/abc?x_padding={} HTTP/1.1\r\nHost: node.test\r\nUser-Agent: Go-http-client/1.1\r\n\r\n",
        "0".repeat(16_384)
    );
    client.write_all(head.as_bytes()).await.unwrap();
    let first = server.read_first(io, deadline()).await.ok().unwrap();
    assert!(!first.http2);
}

/// On HTTP/2 a request that is not ours gets `404` with no body, and a connection
/// with nothing of ours by its deadline is closed.
#[tokio::test(start_paused = true)]
async fn an_http2_prober_gets_404_and_is_closed_at_the_deadline() {
    let server = Arc::new(Server::new(settings(Mode::Auto)));
    let (send, connection) = h2::client::handshake(connect(&server)).await.unwrap();
    let connection = tokio::spawn(connection);
    let mut client = send.ready().await.unwrap();
    let (response, _) = client
        .send_request(
            Request::builder()
                .uri("http://node.test/")
                .body(())
                .unwrap(),
            true,
        )
        .unwrap();
    let response = response.await.unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert!(response.headers().get("x-padding").is_none());
    assert_eq!(read_body(&mut response.into_body(), usize::MAX).await, b"");
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert!(connection.is_finished(), "closed at the deadline");
}

#[tokio::test]
async fn a_download_goes_in_frames_of_one_tls_record_each() {
    let server = Arc::new(Server::new(settings(Mode::StreamOne)));
    let io = connect_with(&server, |mut s| {
        tokio::spawn(async move {
            s.write_all(&vec![7u8; 100_000]).await.unwrap();
            s.shutdown().await.unwrap();
        });
    });
    // Windows wide enough that flow control does not cut a frame.
    let (client, connection) = h2::client::Builder::new()
        .initial_window_size(1 << 20)
        .initial_connection_window_size(1 << 20)
        .handshake::<_, Bytes>(io)
        .await
        .unwrap();
    tokio::spawn(connection);
    let mut client = client.ready().await.unwrap();
    let (response, _up) = client
        .send_request(request(Method::POST, "/xh/"), false)
        .unwrap();
    let mut down = response.await.unwrap().into_body();
    let mut frames = Vec::new();
    while let Some(Ok(data)) = down.data().await {
        let _ = down.flow_control().release_capacity(data.len());
        // The end of the stream may come as an empty frame of its own.
        if !data.is_empty() {
            frames.push(data.len());
        }
    }
    // One write of 100,000 bytes: frames of 16,375 bytes, which with their 9-byte
    // header are 16 KiB, one TLS record (a frame of the protocol's default largest
    // size, 16 KiB, would spill 9 bytes into a record of its own), the last what is
    // left.
    let f = crate::grpc::FRAME_PAYLOAD;
    assert_eq!(frames, [f, f, f, f, f, f, 100_000 - 6 * f]);
}
