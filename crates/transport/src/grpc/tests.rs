//! Our gRPC client and server together, over plain TCP and TLS.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use switchyard_proto::grpc::{Mode, encode_header};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::time::Instant;

use super::*;
use crate::dial::{Connector, Layer, Stack, Step};
use crate::io::BoxIo;

fn deadline() -> Instant {
    Instant::now() + Duration::from_secs(5)
}

/// A server on 127.0.0.1 for service `svc`: each stream echoes what it reads,
/// prefixed with one byte naming its mode (`g`, `m`). Counts TCP accepts.
async fn echo_server(tls: Option<tokio_rustls::TlsAcceptor>) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepts = Arc::new(AtomicUsize::new(0));
    let counted = accepts.clone();
    tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            counted.fetch_add(1, Ordering::SeqCst);
            let tls = tls.clone();
            tokio::spawn(async move {
                let io: BoxIo = match tls {
                    Some(acceptor) => Box::new(acceptor.accept(tcp).await.unwrap()),
                    None => Box::new(tcp),
                };
                let Ok(io) = read_preface(io, deadline()).await else {
                    return;
                };
                let _ = serve(io, "svc", &Settings::default(), deadline(), |mut s| {
                    tokio::spawn(async move {
                        let tag = if s.mode() == Mode::Multi { b"m" } else { b"g" };
                        s.write_all(tag).await.unwrap();
                        let mut buf = vec![0u8; 40_000];
                        loop {
                            let n = s.read(&mut buf).await.unwrap();
                            if n == 0 {
                                break;
                            }
                            s.write_all(&buf[..n]).await.unwrap();
                        }
                        s.shutdown().await.unwrap();
                    });
                })
                .await;
            });
        }
    });
    (port, accepts)
}

/// Sends `data` and reads it back, after the stream's mode byte when `tag` is
/// given (a stream's first round).
async fn round_trip(io: &mut BoxIo, data: &[u8], tag: Option<u8>) {
    let (mut r, mut w) = tokio::io::split(io);
    let send = async {
        w.write_all(data).await.unwrap();
        w.flush().await.unwrap();
    };
    let recv = async {
        let mut back = vec![0u8; data.len() + usize::from(tag.is_some())];
        r.read_exact(&mut back).await.unwrap();
        back
    };
    let ((), back) = tokio::join!(send, recv);
    let back = match tag {
        Some(tag) => {
            assert_eq!(back[0], tag);
            &back[1..]
        }
        None => &back[..],
    };
    assert!(back == data, "the bytes came back changed");
}

#[tokio::test]
async fn streams_share_one_connection_and_carry_bytes_both_ways() {
    let (port, accepts) = echo_server(None).await;
    let stack = Stack::to(
        "127.0.0.1",
        port,
        vec![Layer::grpc("example.test".into(), "svc".into(), false)],
    );
    let mut a = stack.connect().await.unwrap();
    let mut b = stack.clone().connect().await.unwrap();
    round_trip(&mut a, b"hello", Some(b'g')).await;
    round_trip(&mut b, b"world", Some(b'g')).await;
    // 1 MiB, in writes of every size.
    let big: Vec<u8> = (0..1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    round_trip(&mut a, &big, None).await;
    assert_eq!(accepts.load(Ordering::SeqCst), 1, "one TCP connection");
    // The stream ends cleanly: the server's trailers say grpc-status 0.
    a.shutdown().await.unwrap();
    let mut rest = Vec::new();
    a.read_to_end(&mut rest).await.unwrap();
    assert!(rest.is_empty());
}

#[tokio::test]
async fn multi_mode_is_the_tunmulti_path() {
    let (port, _) = echo_server(None).await;
    let stack = Stack::to(
        "127.0.0.1",
        port,
        vec![Layer::grpc("example.test".into(), "svc".into(), true)],
    );
    let mut io = stack.connect().await.unwrap();
    round_trip(&mut io, b"multi", Some(b'm')).await;
}

#[tokio::test]
async fn another_service_gets_grpc_status_12() {
    let (port, _) = echo_server(None).await;
    let stack = Stack::to(
        "127.0.0.1",
        port,
        vec![Layer::grpc("example.test".into(), "other".into(), false)],
    );
    let mut io = stack.connect().await.unwrap();
    let _ = io.write_all(b"x").await;
    let mut buf = [0u8; 8];
    let e = io.read(&mut buf).await.unwrap_err();
    assert_eq!(e.to_string(), "grpc-status 12");
}

#[tokio::test]
async fn an_http1_probe_comes_back_with_its_bytes() {
    let (client, server) = tokio::io::duplex(1024);
    let probe = b"GET / HTTP/1.1\r\nHost: example.test\r\n\r\n";
    let mut client = client;
    client.write_all(probe).await.unwrap();
    let Err(refused) = read_preface(server, deadline()).await else {
        panic!("an HTTP/1.1 request taken for HTTP/2")
    };
    assert!(refused.why.is_some());
    let mut all = refused.read;
    let mut stream = refused.stream;
    drop(client);
    stream.read_to_end(&mut all).await.unwrap();
    assert_eq!(all, probe);
    // A peer that stops in the middle of the preface: what it sent, no reason.
    let (mut client, server) = tokio::io::duplex(1024);
    client.write_all(b"PRI * HTTP/2").await.unwrap();
    drop(client);
    let Err(refused) = read_preface(server, deadline()).await else {
        panic!("half a preface taken")
    };
    assert_eq!(refused.read, b"PRI * HTTP/2");
    assert!(refused.why.is_none());
}

#[tokio::test]
async fn messages_split_across_frames_and_frames_of_several_messages() {
    let (port, _) = echo_server(None).await;
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let (send, connection) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(connection);
    let mut send = send.ready().await.unwrap();
    let request = http::Request::builder()
        .method("POST")
        .uri("http://example.test/svc/Tun")
        .header("content-type", "application/grpc+proto")
        .body(())
        .unwrap();
    let (response, mut body) = send.send_request(request, false).unwrap();
    let mut wire = Vec::new();
    for part in [&b"abc"[..], b"defgh", b"ij"] {
        encode_header(part.len(), &mut wire);
        wire.extend_from_slice(part);
    }
    // One message cut in two frames, then two messages and a half, then the rest.
    for cut in [&wire[..4], &wire[4..20], &wire[20..]] {
        body.send_data(Bytes::copy_from_slice(cut), false).unwrap();
    }
    body.send_data(Bytes::new(), true).unwrap();
    let response = response.await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/grpc");
    let mut recv = response.into_body();
    let mut got = Vec::new();
    while let Some(data) = recv.data().await {
        let data = data.unwrap();
        recv.flow_control().release_capacity(data.len()).unwrap();
        got.extend_from_slice(&data);
    }
    let mut decoder = switchyard_proto::grpc::Decoder::new();
    let mut payload = Vec::new();
    let mut rest = &got[..];
    while !rest.is_empty() {
        let (taken, p) = decoder.feed(rest).unwrap();
        payload.extend_from_slice(p);
        rest = &rest[taken..];
    }
    assert_eq!(payload, b"gabcdefghij");
    let trailers = recv.trailers().await.unwrap().unwrap();
    assert_eq!(trailers["grpc-status"], "0");
}

#[tokio::test]
async fn a_request_that_is_not_grpc_gets_404() {
    let (port, _) = echo_server(None).await;
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let (send, connection) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(connection);
    let mut send = send.ready().await.unwrap();
    let request = http::Request::builder()
        .uri("http://example.test/")
        .body(())
        .unwrap();
    let (response, _) = send.send_request(request, true).unwrap();
    assert_eq!(response.await.unwrap().status(), 404);
}

#[tokio::test]
async fn over_tls_with_alpn_h2() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cert = rcgen::generate_simple_self_signed(vec!["example.test".into()]).unwrap();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.signing_key.serialize_der()));
    let mut server = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(vec![cert.cert.der().clone()], key)
        .unwrap();
    server.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let (port, accepts) =
        echo_server(Some(tokio_rustls::TlsAcceptor::from(Arc::new(server)))).await;
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.cert.der().clone()).unwrap();
    let mut client = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    client.alpn_protocols = vec![b"h2".to_vec()];
    let stack = Stack::to(
        "127.0.0.1",
        port,
        vec![
            Layer::Tls {
                config: Arc::new(client),
                server_name: ServerName::try_from("example.test").unwrap(),
            },
            Layer::grpc("example.test".into(), "svc".into(), false),
        ],
    );
    let mut a = stack.connect().await.unwrap();
    let mut b = stack.connect().await.unwrap();
    round_trip(&mut b, b"second", Some(b'g')).await;
    let big = vec![7u8; 1024 * 1024];
    round_trip(&mut a, &big, Some(b'g')).await;
    assert_eq!(accepts.load(Ordering::SeqCst), 1, "one TCP connection");
}

#[tokio::test]
async fn a_dead_connection_is_replaced() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let stack = Stack::to(
        "127.0.0.1",
        port,
        vec![Layer::grpc("example.test".into(), "svc".into(), false)],
    );
    // The first server closes its connection after one stream.
    tokio::spawn(async move {
        for round in 0..2 {
            let (tcp, _) = listener.accept().await.unwrap();
            let io = read_preface(tcp, deadline()).await.unwrap();
            let (tx, mut rx) = tokio::sync::mpsc::channel(1);
            let settings = Settings::default();
            let serving = serve(io, "svc", &settings, deadline(), move |s| {
                let _ = tx.try_send(s);
            });
            let echo = async {
                while let Some(mut s) = rx.recv().await {
                    let mut b = [0u8; 1];
                    s.read_exact(&mut b).await.unwrap();
                    s.write_all(&b).await.unwrap();
                    if round == 0 {
                        // Time for the answer to go out, then the connection ends.
                        tokio::time::sleep(Duration::from_millis(300)).await;
                        return;
                    }
                    tokio::spawn(async move {
                        tokio::time::sleep(Duration::from_secs(5)).await;
                        drop(s);
                    });
                }
            };
            if round == 0 {
                tokio::select! { _ = serving => {}, () = echo => {} }
            } else {
                let _ = tokio::join!(serving, echo);
            }
        }
    });
    for _ in 0..2 {
        let mut io = stack.connect().await.unwrap();
        io.write_all(b"z").await.unwrap();
        let mut b = [0u8; 1];
        io.read_exact(&mut b).await.unwrap();
        assert_eq!(&b, b"z");
        drop(io);
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let Err(e) = Stack::to(
        "127.0.0.1",
        1,
        vec![Layer::grpc("x".into(), "svc".into(), false)],
    )
    .connect()
    .await
    else {
        panic!("connected to port 1")
    };
    assert_eq!(e.step, Step::Tcp);
}

/// A server on 127.0.0.1 whose one stream runs `write`, and a raw HTTP/2 client
/// (`builder`) that asks for it: the body of the answer, for the test to read, and the
/// request's body, which keeps the request open while it is held.
async fn one_stream<F>(
    write: impl Fn(GrpcStream) -> F + Send + 'static,
    builder: &h2::client::Builder,
) -> (h2::RecvStream, h2::SendStream<Bytes>)
where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let io = read_preface(tcp, deadline()).await.unwrap();
        let _ = serve(io, "svc", &Settings::default(), deadline(), move |s| {
            tokio::spawn(write(s));
        })
        .await;
    });
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let (mut client, connection) = builder.handshake::<_, Bytes>(tcp).await.unwrap();
    tokio::spawn(connection);
    let request = http::Request::post("http://example.test/svc/Tun")
        .header("content-type", "application/grpc")
        .body(())
        .unwrap();
    let (response, send) = client.send_request(request, false).unwrap();
    (response.await.unwrap().into_body(), send)
}

/// The DATA frames a raw HTTP/2 client that takes frames of up to `max_frame` bytes
/// (unset: the protocol's 16 KiB) gets for one write of `len` bytes from a stream: the
/// length of each, until the whole message is in.
async fn frames_of_one_write(max_frame: Option<u32>, len: usize) -> Vec<usize> {
    let mut builder = h2::client::Builder::new();
    // Windows wide enough that flow control does not cut the message.
    builder
        .initial_window_size(1 << 20)
        .initial_connection_window_size(1 << 20);
    if let Some(max) = max_frame {
        builder.max_frame_size(max);
    }
    let write = move |mut s: GrpcStream| async move {
        s.write_all(&vec![7u8; len]).await.unwrap();
        s.shutdown().await.unwrap();
    };
    let (mut body, _send) = one_stream(write, &builder).await;
    let mut header = Vec::new();
    encode_header(len, &mut header);
    let mut frames = Vec::new();
    while frames.iter().sum::<usize>() < header.len() + len {
        let data = body.data().await.unwrap().unwrap();
        let _ = body.flow_control().release_capacity(data.len());
        frames.push(data.len());
    }
    frames
}

#[tokio::test]
async fn a_message_goes_in_one_frame_to_a_client_that_takes_large_ones() {
    // Go's HTTP/2 client (sing-box, mihomo) takes frames of 1 MiB: one frame for the
    // whole message (9 bytes of header, 100,000 of payload).
    assert_eq!(frames_of_one_write(Some(1 << 20), 100_000).await, [100_009]);
    // A client at the default (grpc-go, Xray): the same message in frames of one TLS
    // record each (16,375 bytes with their own 9-byte header), the last what is left.
    let f = FRAME_PAYLOAD;
    assert_eq!(
        frames_of_one_write(None, 100_000).await,
        [f, f, f, f, f, f, 100_009 - 6 * f]
    );
    // A write of 300,000 bytes: a first message of 261,964 bytes of payload, with
    // its 9-byte header sixteen frames, the last 27 bytes short of a whole one.
    let frames = frames_of_one_write(None, 300_000).await;
    assert_eq!(
        frames[..16],
        [f; 15].iter().copied().chain([f - 27]).collect::<Vec<_>>()[..]
    );
    assert_eq!(frames[..16].iter().sum::<usize>(), 261_964 + 9);
}

/// What a raw HTTP/2 client with a stream window of `window` bytes (frames up to
/// 1 MiB) gets when a server's stream writes one chunk of `len` payload bytes through
/// [`ChunkWrite`]: each message's payload length, and the payload.
async fn messages_of_one_chunk(window: u32, len: usize) -> (Vec<usize>, Vec<u8>) {
    use crate::io::ChunkWrite;
    let sent: Vec<u8> = (0..len).map(|i| (i % 249) as u8).collect();
    let payload = sent.clone();
    let write = move |s: GrpcStream| {
        let payload = payload.clone();
        async move {
            let (_read, mut write) = s.into_split();
            let mut chunk = bytes::BytesMut::zeroed(write.headroom());
            chunk.extend_from_slice(&payload);
            write.write_chunk(chunk).await.unwrap();
            ChunkWrite::shutdown(&mut write).await.unwrap();
        }
    };
    let mut builder = h2::client::Builder::new();
    builder
        .initial_window_size(window)
        .initial_connection_window_size(1 << 20)
        .max_frame_size(1 << 20);
    let (mut body, _send) = one_stream(write, &builder).await;
    let mut wire = Vec::new();
    while let Some(data) = body.data().await {
        let data = data.unwrap();
        let _ = body.flow_control().release_capacity(data.len());
        wire.extend_from_slice(&data);
    }
    // Each message: flag, length, the field's tag, its varint length, the payload.
    let (mut lens, mut got, mut rest) = (Vec::new(), Vec::new(), &wire[..]);
    while !rest.is_empty() {
        let message = u32::from_be_bytes(rest[1..5].try_into().unwrap()) as usize;
        assert_eq!(rest[5], 0x0A);
        let (mut n, mut at, mut shift) = (0usize, 6, 0);
        loop {
            n |= usize::from(rest[at] & 0x7f) << shift;
            at += 1;
            shift += 7;
            if rest[at - 1] & 0x80 == 0 {
                break;
            }
        }
        assert_eq!(at - 5 + n, message, "the message's length holds its field");
        lens.push(n);
        got.extend_from_slice(&rest[at..at + n]);
        rest = &rest[at + n..];
    }
    assert!(got == sent, "the payload came through changed");
    (lens, got)
}

#[tokio::test]
async fn a_chunk_goes_as_one_message_framed_where_it_lies() {
    // A window wider than the chunk: one message, whatever its varint's length.
    for len in [1, 127, 128, 100_000, MAX_WRITE] {
        assert_eq!(messages_of_one_chunk(1 << 20, len).await.0, [len]);
    }
    // A chunk longer than one message: MAX_WRITE, then the rest.
    let (lens, _) = messages_of_one_chunk(1 << 20, MAX_WRITE + 10).await;
    assert_eq!(lens, [MAX_WRITE, 10]);
}

#[tokio::test]
async fn a_short_window_takes_a_chunk_in_messages_of_what_fits() {
    // A 40,000-byte window: the first message is what fits with room for the
    // header of a payload that long (9 bytes), the rest as the client reads.
    let (lens, _) = messages_of_one_chunk(40_000, 100_000).await;
    assert_eq!(lens[0], 40_000 - 9);
    assert_eq!(lens.iter().sum::<usize>(), 100_000);
    assert!(lens.iter().all(|&n| n <= 40_000 - 9), "{lens:?}");
}
