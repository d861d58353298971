//! The XHTTP dialing side ([`Layer::Xhttp`]) against the real Xray 24.11.21 as the
//! server (a VLESS inbound on `network: "xhttp"`, a `freedom` outbound), our client
//! speaking VLESS through it to a local HTTP target: packet-up and stream-up over
//! plain HTTP/1.1, stream-up over TLS with HTTP/2, packet-up over TLS with
//! HTTP/1.1, several MiB each way with every byte checked; 32 parallel streams over
//! HTTP/2 on at most 2 TCP connections (XMUX's defaults), counted by a relay in
//! front of Xray; a path Xray does not serve names the step and the status. And
//! against our own server ([`switchyard_transport::xhttp::Server`]): stream-one,
//! stream-up and packet-up over TLS with HTTP/2, packet-up and stream-up over plain
//! HTTP/1.1, echoed bytes checked.

#![allow(
    clippy::disallowed_types,
    clippy::disallowed_methods,
    reason = "tests time real processes by the wall clock"
)]

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use rustls::pki_types::ServerName;
use serde_json::json;
use switchyard_proto::address::Address;
use switchyard_proto::vless::{self, Command, Flow};
use switchyard_proto::xhttp::{Mode, Settings};
use switchyard_testkit::http::{get_bytes, get_bytes_by_length, post_sink};
use switchyard_testkit::pattern;
use switchyard_testkit::{HttpTarget, TestCert, Xray, free_port, local};
use switchyard_transport::BoxIo;
use switchyard_transport::dial::{Connector, Layer, Stack, Step};
use switchyard_transport::xhttp::client::ClientError;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

const UUID: &str = "b831381d-6324-4d53-ad4f-8cda48b30811";
const PATH: &str = "/xh";
/// Bytes down (from the target) and up (to its sink) through each stream checked.
const DOWN: u64 = 6 << 20;
const UP: u64 = 3 << 20;

/// A real Xray with a VLESS inbound on XHTTP in `mode` (TLS with `alpn` when
/// `cert` is given).
async fn xray(mode: &str, tls: Option<(&TestCert, &[&str])>) -> (Xray, u16) {
    let port = free_port().unwrap();
    let mut stream = json!({
        "network": "xhttp",
        "xhttpSettings": { "path": PATH, "mode": mode },
    });
    if let Some((cert, alpn)) = tls {
        stream["security"] = json!("tls");
        stream["tlsSettings"] = json!({
            "alpn": alpn,
            "certificates": [{
                "certificateFile": cert.cert_path(),
                "keyFile": cert.key_path(),
            }],
        });
    }
    let config = json!({
        "log": { "loglevel": "warning" },
        "inbounds": [{
            "listen": "127.0.0.1", "port": port, "protocol": "vless",
            "settings": { "clients": [{ "id": UUID }], "decryption": "none" },
            "streamSettings": stream,
        }],
        "outbounds": [{ "protocol": "freedom" }],
    });
    (Xray::start(config).await.unwrap(), port)
}

fn settings(mode: Mode) -> Settings {
    Settings {
        mode,
        ..Settings::new(PATH)
    }
}

/// The stack to `port`: XHTTP in `mode`, over TLS offering `alpn` when `cert` is given.
fn stack(port: u16, mode: Mode, tls: Option<(&TestCert, &[&str])>) -> Stack {
    let mut layers = Vec::new();
    if let Some((cert, alpn)) = tls {
        let mut config = cert.client_config().unwrap();
        config.alpn_protocols = alpn.iter().map(|p| p.as_bytes().to_vec()).collect();
        layers.push(Layer::Tls {
            config: Arc::new(config),
            server_name: ServerName::try_from(cert.name().to_owned()).unwrap(),
        });
    }
    layers.push(Layer::xhttp(settings(mode), "node.test"));
    Stack::to("127.0.0.1", port, layers)
}

/// A VLESS stream to `to` over `io`: the request header goes with the first write,
/// the response header (version, addons) is read off before the first byte.
struct Vless {
    io: BoxIo,
    header: Vec<u8>,
    skip: Option<usize>,
    got: Vec<u8>,
}

impl Vless {
    fn new(io: BoxIo, to: SocketAddr) -> Self {
        let mut header = Vec::new();
        vless::Request {
            uuid: vless::parse_uuid(UUID).unwrap(),
            flow: Flow::None,
            command: Command::Tcp(Address::Ip(to)),
        }
        .encode(&mut header);
        Self {
            io,
            header,
            skip: None,
            got: Vec::new(),
        }
    }
}

impl AsyncRead for Vless {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        // The response header: version 0, then the addons' length and the addons.
        while this.skip != Some(0) {
            let mut one = [0u8; 1];
            let mut rb = ReadBuf::new(&mut one);
            std::task::ready!(Pin::new(&mut this.io).poll_read(cx, &mut rb))?;
            if rb.filled().is_empty() {
                return Poll::Ready(Err(std::io::ErrorKind::UnexpectedEof.into()));
            }
            this.got.push(one[0]);
            this.skip = match this.got.len() {
                1 => None,
                2 => Some(one[0] as usize),
                _ => this.skip.map(|n| n - 1),
            };
        }
        Pin::new(&mut this.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Vless {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        if !this.header.is_empty() {
            let mut first = std::mem::take(&mut this.header);
            let n = data.len().min(16 * 1024);
            first.extend_from_slice(&data[..n]);
            let head = first.len() - n;
            // The channel behind an XHTTP stream takes a write whole up to 64 KiB.
            match Pin::new(&mut this.io).poll_write(cx, &first) {
                Poll::Ready(Ok(w)) if w == first.len() => return Poll::Ready(Ok(n)),
                Poll::Ready(Ok(w)) => {
                    return Poll::Ready(Err(std::io::Error::other(format!(
                        "short first write: {w} of {} ({head} header)",
                        first.len()
                    ))));
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => {
                    this.header = first[..head].to_vec();
                    return Poll::Pending;
                }
            }
        }
        Pin::new(&mut this.io).poll_write(cx, data)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// How a check knows the target's answer is whole.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    /// The stream closes after it: the server passes the target's close on.
    Close,
    /// Its `Content-Length` is in: Xray 24.11.21 holds a stream-up download over
    /// HTTP/1.1 open until the client ends its upload (closing the session drains
    /// the chunked POST body first), so the close comes only after the stream's own.
    Length,
}

/// `DOWN` bytes down and `UP` up through two streams of `stack`, every byte checked.
async fn carry(stack: &Stack, http: &HttpTarget, what: &str, end: End) {
    let io = stack
        .connect()
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut down = Vless::new(io, http.addr());
    match end {
        End::Close => assert_eq!(
            get_bytes(down, DOWN).await.ok(),
            Some(DOWN),
            "{what}: download"
        ),
        End::Length => {
            let got = get_bytes_by_length(&mut down, DOWN).await;
            assert!(got.is_ok(), "{what}: download: {got:?}");
        }
    }
    let before = http.bytes_in();
    let io = stack
        .connect()
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let up = match end {
        End::Close => post_sink(Vless::new(io, http.addr()), UP)
            .await
            .map_err(|e| format!("{e:#}")),
        End::Length => post_sink_by_length(Vless::new(io, http.addr()), UP).await,
    };
    assert!(up.is_ok(), "{what}: upload: {up:?}");
    assert_eq!(
        http.bytes_in() - before,
        UP,
        "{what}: the sink read every byte"
    );
}

/// `POST /sink` with `n` pattern bytes; the sink's reply (read by its
/// `Content-Length`) names that length and their checksum.
async fn post_sink_by_length(mut s: Vless, n: u64) -> Result<(), String> {
    let head = format!("POST /sink HTTP/1.1\r\nHost: target\r\nContent-Length: {n}\r\n\r\n");
    s.write_all(head.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let body = pattern::bytes(n as usize);
    s.write_all(&body).await.map_err(|e| e.to_string())?;
    s.flush().await.map_err(|e| e.to_string())?;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let (head, length) = loop {
        let read = s.read(&mut buf).await.map_err(|e| e.to_string())?;
        if read == 0 {
            return Err(format!("closed before the reply's head: {got:?}"));
        }
        got.extend_from_slice(&buf[..read]);
        if let Some(at) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&got[..at]).into_owned();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("Content-Length: "))
                .and_then(|v| v.trim().parse().ok())
                .ok_or_else(|| format!("no Content-Length: {head}"))?;
            got.drain(..at + 4);
            break (head, length);
        }
    };
    while got.len() < length {
        let read = s.read(&mut buf).await.map_err(|e| e.to_string())?;
        if read == 0 {
            return Err(format!("closed inside the reply: {head}"));
        }
        got.extend_from_slice(&buf[..read]);
    }
    let reply: serde_json::Value = serde_json::from_slice(&got).map_err(|e| e.to_string())?;
    let want = json!({ "len": n, "checksum": pattern::checksum(&body) });
    if !head.starts_with("HTTP/1.1 200") || reply != want {
        return Err(format!("{head}: the sink read {reply}, sent {want}"));
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packet_up_and_stream_up_over_plain_http1() {
    let http = HttpTarget::start().await.unwrap();
    let (_xray, port) = xray("auto", None).await;
    carry(
        &stack(port, Mode::PacketUp, None),
        &http,
        "plain, packet-up",
        End::Close,
    )
    .await;
    // auto over plain TCP: packet-up.
    carry(
        &stack(port, Mode::Auto, None),
        &http,
        "plain, auto",
        End::Close,
    )
    .await;
    carry(
        &stack(port, Mode::StreamUp, None),
        &http,
        "plain, stream-up",
        End::Length,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_up_over_tls_h2_and_packet_up_over_tls_http1() {
    let cert = TestCert::new("node.test").unwrap();
    let http = HttpTarget::start().await.unwrap();
    let both: &[&str] = &["h2", "http/1.1"];
    let (_xray, port) = xray("auto", Some((&cert, both))).await;
    // auto over TLS offering h2: stream-up on HTTP/2.
    let tls = Some((&cert, both));
    carry(
        &stack(port, Mode::Auto, tls),
        &http,
        "tls h2, auto",
        End::Close,
    )
    .await;
    carry(
        &stack(port, Mode::PacketUp, tls),
        &http,
        "tls h2, packet-up",
        End::Close,
    )
    .await;
    // auto over TLS offering only http/1.1: packet-up on HTTP/1.1.
    let h1: &[&str] = &["http/1.1"];
    let tls = Some((&cert, h1));
    carry(
        &stack(port, Mode::Auto, tls),
        &http,
        "tls http/1.1, auto",
        End::Close,
    )
    .await;
    carry(
        &stack(port, Mode::StreamUp, tls),
        &http,
        "tls http/1.1, stream-up",
        End::Length,
    )
    .await;
}

/// A TCP relay on a free port to `to`, counting the connections it accepts.
async fn counting_relay(to: u16) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let counted = count.clone();
    tokio::spawn(async move {
        while let Ok((mut a, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                if let Ok(mut b) = TcpStream::connect(local(to)).await {
                    let _ = tokio::io::copy_bidirectional(&mut a, &mut b).await;
                }
            });
        }
    });
    (port, count)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_streams_over_h2_share_at_most_two_connections() {
    let cert = TestCert::new("node.test").unwrap();
    let http = HttpTarget::start().await.unwrap();
    let h2: &[&str] = &["h2"];
    let (_xray, port) = xray("auto", Some((&cert, h2))).await;
    let (relay, accepted) = counting_relay(port).await;
    let stack = stack(relay, Mode::StreamUp, Some((&cert, h2)));
    let mut streams = Vec::new();
    for _ in 0..32 {
        streams.push(stack.connect().await.unwrap());
    }
    let tasks: Vec<_> = streams
        .into_iter()
        .map(|io| {
            let to = http.addr();
            tokio::spawn(async move { get_bytes(Vless::new(io, to), 256 * 1024).await })
        })
        .collect();
    for task in tasks {
        assert_eq!(task.await.unwrap().ok(), Some(256 * 1024));
    }
    let n = accepted.load(Ordering::SeqCst);
    assert!((1..=2).contains(&n), "32 streams took {n} TCP connections");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_xray_does_not_serve_names_the_step_and_the_status() {
    let (_xray, port) = xray("auto", None).await;
    let mut wrong = settings(Mode::PacketUp);
    wrong.path = "/other".into();
    let stack = Stack::to("127.0.0.1", port, vec![Layer::xhttp(wrong, "node.test")]);
    // The answer is read lazily (a CDN may hold its head until the body's first
    // byte): the stream opens, and its first read names the request and the status.
    let mut io = stack.connect().await.unwrap();
    io.write_all(b"hello").await.unwrap();
    let mut buf = [0u8; 16];
    let e = io.read(&mut buf).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "server answered 404 Not Found to the download GET"
    );
    let inner = e.get_ref().and_then(|e| e.downcast_ref::<ClientError>());
    assert!(
        matches!(inner, Some(ClientError::Status { status, .. }) if status.as_u16() == 404),
        "{e:?}"
    );
}

/// Our own XHTTP server ([`switchyard_transport::xhttp::Server`]) on a free port,
/// over TLS (ALPN `h2` and `http/1.1`) when `cert` is given; each stream echoes what
/// it reads until its upload ends, then ends its download.
async fn our_server(mode: Mode, cert: Option<&TestCert>) -> u16 {
    use switchyard_transport::xhttp::Server;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = Arc::new(Server::new(settings(mode)));
    let tls = cert.map(|cert| {
        let mut config = cert.server_config().unwrap();
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        tokio_rustls::TlsAcceptor::from(Arc::new(config))
    });
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (server, tls) = (server.clone(), tls.clone());
            tokio::spawn(async move {
                let io: BoxIo = match tls {
                    Some(tls) => match tls.accept(tcp).await {
                        Ok(tls) => Box::new(tls),
                        Err(_) => return,
                    },
                    None => Box::new(tcp),
                };
                let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
                let Ok(first) = server.read_first(io, deadline).await else {
                    return;
                };
                let idle = std::time::Duration::from_secs(60);
                let _ = server
                    .serve(first, deadline, idle, |s| {
                        tokio::spawn(async move {
                            let (mut r, mut w) = tokio::io::split(s);
                            let _ = tokio::io::copy(&mut r, &mut w).await;
                            let _ = w.shutdown().await;
                        });
                    })
                    .await;
            });
        }
    });
    port
}

/// `n` pattern bytes through an echoing stream of `stack` in `mode`, written while
/// they are read back, every byte checked, then (streaming modes) the echo's end
/// after the upload's.
async fn echo(stack: &Stack, mode: Mode, n: usize, what: &str) {
    let io = stack
        .connect()
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let (mut r, mut w) = tokio::io::split(io);
    let sent = pattern::bytes(n);
    let writer = tokio::spawn(async move {
        w.write_all(&sent).await?;
        w.shutdown().await
    });
    let mut back = vec![0u8; n];
    // A guard against a hang, not a measure: loopback moves this in well under a second.
    let guard = std::time::Duration::from_secs(60);
    tokio::time::timeout(guard, r.read_exact(&mut back))
        .await
        .unwrap_or_else(|_| panic!("{what}: not all {n} bytes back"))
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    // packet-up has no end of upload on the wire (Xray's neither): its session ends
    // when the client drops the download. The streaming modes end theirs.
    if mode != Mode::PacketUp {
        let mut rest = Vec::new();
        tokio::time::timeout(guard, r.read_to_end(&mut rest))
            .await
            .unwrap_or_else(|_| panic!("{what}: no end after the echo"))
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(rest.is_empty(), "{what}: {} bytes more", rest.len());
    }
    writer.await.unwrap().unwrap();
    assert_eq!(back.len(), n, "{what}: bytes back");
    assert_eq!(pattern::first_mismatch(0, &back), None, "{what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_mode_through_our_own_server() {
    let cert = TestCert::new("node.test").unwrap();
    let h2: &[&str] = &["h2"];
    let port = our_server(Mode::Auto, Some(&cert)).await;
    for mode in [Mode::StreamOne, Mode::StreamUp, Mode::PacketUp] {
        let stack = stack(port, mode, Some((&cert, h2)));
        echo(&stack, mode, 3 << 20, &format!("ours, tls h2, {mode}")).await;
    }
    let port = our_server(Mode::Auto, None).await;
    for mode in [Mode::PacketUp, Mode::StreamUp] {
        let stack = stack(port, mode, None);
        echo(
            &stack,
            mode,
            3 << 20,
            &format!("ours, plain http/1.1, {mode}"),
        )
        .await;
    }
    // stream-one needs HTTP/2: over HTTP/1.1 the connect says so.
    let Err(e) = stack(port, Mode::StreamOne, None).connect().await else {
        panic!("stream-one over HTTP/1.1")
    };
    assert_eq!(e.step, Step::Xhttp);
    assert!(e.to_string().contains("stream-one needs HTTP/2"), "{e}");
}
