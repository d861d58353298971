//! One user's bad input costs that user's stream, never the link: a malformed `Open`
//! or datagram from the peer resets only its stream; a destination that is not an
//! address is refused before it reaches the link; a datagram that cannot be sent
//! closes its stream (and so the task reading replies on it); a blackholed link is
//! found dead by keepalive within 10 s and its transport is let go.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use switchyard_proto::Address;
use switchyard_tunnel::frame::{Kind, Network, Open, ResetReason};
use switchyard_tunnel::mux::{Mux, MuxConfig, MuxError, ProtocolError, Side};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, DuplexStream, ReadBuf};
use tokio::time::Instant;

use crate::raw_support;
use raw_support::link;

fn open(network: Network, destination: Address) -> Open {
    Open {
        network,
        user: "mallory".into(),
        destination,
    }
}

fn ip(port: u16) -> Address {
    Address::Ip(SocketAddr::from(([192, 0, 2, 1], port)))
}

fn payload(o: &Open) -> Vec<u8> {
    let mut p = Vec::new();
    o.encode(&mut p);
    p
}

#[tokio::test]
async fn a_bad_open_resets_only_its_stream() {
    let (h, mut incoming, mut raw) = link(Side::Acceptor, MuxConfig::default());
    raw.send(Kind::Open, 1, &payload(&open(Network::Tcp, ip(1))))
        .await;
    let bad: [&[u8]; 4] = [
        // A domain with a space in it.
        &[1, 1, b'u', 3, 3, b'a', b' ', b'b', 0, 80],
        // An address cut short.
        &[1, 1, b'u', 3, 9, b'a'],
        // An unknown network.
        &[7, 0, 1, 192, 0, 2, 1, 0, 80],
        // A user name that is not UTF-8.
        &[1, 1, 0xff, 1, 192, 0, 2, 1, 0, 80],
    ];
    for (i, p) in bad.iter().enumerate() {
        raw.send(Kind::Open, 3 + 2 * i as u32, p).await;
    }
    raw.send(Kind::Data, 1, b"still here").await;
    // A late frame for a refused stream is harmless.
    raw.send(Kind::Data, 3, b"late").await;
    raw.send(Kind::Ping, 0, &7u64.to_be_bytes()).await;
    let mut resets = Vec::new();
    loop {
        let (kind, stream, payload) = raw.next().await.expect("the link stays up");
        match kind {
            Kind::Reset => resets.push((stream, payload)),
            Kind::Pong if payload == 7u64.to_be_bytes() => break,
            _ => {}
        }
    }
    let malformed = vec![ResetReason::Malformed.to_byte()];
    assert_eq!(
        resets,
        [3, 5, 7, 9].map(|s| (s, malformed.clone())).to_vec()
    );
    let (_, mut s) = incoming.next().await.unwrap();
    assert_eq!(s.id(), 1);
    let mut buf = [0u8; 10];
    s.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"still here");
    // The next good Open is taken.
    raw.send(Kind::Open, 11, &payload(&open(Network::Tcp, ip(2))))
        .await;
    assert_eq!(incoming.next().await.unwrap().1.id(), 11);
    assert!(!h.is_closed());
}

#[tokio::test]
async fn a_bad_datagram_resets_only_its_stream() {
    let (h, mut incoming, mut raw) = link(Side::Acceptor, MuxConfig::default());
    raw.send(Kind::Open, 1, &payload(&open(Network::Udp, ip(53))))
        .await;
    raw.send(Kind::Open, 3, &payload(&open(Network::Tcp, ip(80))))
        .await;
    let (_, udp) = incoming.next().await.unwrap();
    let (_, mut tcp) = incoming.next().await.unwrap();
    // Address type 9 does not exist.
    raw.send(Kind::Data, 1, &[9, 9, 9]).await;
    raw.send(Kind::Data, 3, b"tcp ok").await;
    loop {
        let (kind, stream, payload) = raw.next().await.expect("the link stays up");
        if kind == Kind::Reset {
            assert_eq!(
                (stream, payload),
                (1, vec![ResetReason::Malformed.to_byte()])
            );
            break;
        }
    }
    assert_eq!(
        udp.recv_from().await.unwrap_err(),
        MuxError::StreamAborted(1)
    );
    let mut buf = [0u8; 6];
    tcp.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"tcp ok");
    assert_eq!((h.is_closed(), h.open_streams()), (false, 1));
}

#[tokio::test]
async fn a_destination_that_is_not_an_address_never_reaches_the_link() {
    let (a, b) = tokio::io::duplex(1 << 16);
    let (ha, _ia) = Mux::start(a, Side::Opener, MuxConfig::default());
    let (hb, mut ib) = Mux::start(b, Side::Acceptor, MuxConfig::default());
    let spaced = Address::Domain("bad name".into(), 80);
    let long = Address::Domain("a".repeat(300), 80);
    for bad in [&spaced, &long] {
        assert!(matches!(
            ha.open(open(Network::Tcp, bad.clone())).unwrap_err(),
            MuxError::Destination(_)
        ));
    }
    let udp = ha.open(open(Network::Udp, ip(53))).unwrap();
    assert!(matches!(
        udp.send_to(&spaced, b"x").unwrap_err(),
        MuxError::Destination(_)
    ));
    // The link carries on.
    let mut s = ha.open(open(Network::Tcp, ip(80))).unwrap();
    s.write_all(b"ok").await.unwrap();
    let (_, _udp) = ib.next().await.unwrap();
    let (_, mut peer) = ib.next().await.unwrap();
    let mut buf = [0u8; 2];
    peer.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"ok");
    assert!(!ha.is_closed() && !hb.is_closed());
}

#[tokio::test(start_paused = true)]
async fn a_failed_datagram_send_closes_the_stream_and_its_reply_task() {
    let (a, b) = tokio::io::duplex(1 << 16);
    let (ha, _ia) = Mux::start(a, Side::Opener, MuxConfig::default());
    let (_hb, mut ib) = Mux::start(b, Side::Acceptor, MuxConfig::default());
    let to = ip(53);
    let client = Arc::new(ha.open(open(Network::Udp, to.clone())).unwrap());
    assert!(client.send_to(&to, b"first").unwrap());
    let (_, server) = ib.next().await.unwrap();
    assert_eq!(server.recv_from().await.unwrap().1, b"first");
    // The association's reply task, as the node runs one.
    let replies = {
        let client = client.clone();
        tokio::spawn(async move {
            let mut n = 0;
            while client.recv_from().await.is_ok() {
                n += 1;
            }
            n
        })
    };
    assert!(matches!(
        client.send_to(&to, &[0; 16 * 1024]).unwrap_err(),
        MuxError::DatagramTooLarge(_)
    ));
    let n = tokio::time::timeout(Duration::from_secs(1), replies)
        .await
        .expect("the reply task ends")
        .unwrap();
    assert_eq!(n, 0);
    // The slot is free at once, and the peer is told.
    assert_eq!(ha.open_streams(), 0);
    assert_eq!(
        server.recv_from().await.unwrap_err(),
        MuxError::StreamReset {
            stream: server.id(),
            reason: ResetReason::Abort
        }
    );
    assert_eq!(
        client.send_to(&to, b"x").unwrap_err(),
        MuxError::StreamAborted(client.id())
    );
}

/// A transport that can be blackholed: then nothing arrives, writes never complete
/// (the socket stays open), and it records when it is let go.
struct Hole {
    inner: DuplexStream,
    on: Arc<AtomicBool>,
    dropped: Arc<AtomicBool>,
}

impl AsyncRead for Hole {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.on.load(Ordering::SeqCst) {
            return Poll::Pending;
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Hole {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        if self.on.load(Ordering::SeqCst) {
            return Poll::Pending;
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        if self.on.load(Ordering::SeqCst) {
            return Poll::Pending;
        }
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        if self.on.load(Ordering::SeqCst) {
            return Poll::Pending;
        }
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl Drop for Hole {
    fn drop(&mut self) {
        self.dropped.store(true, Ordering::SeqCst);
    }
}

#[tokio::test(start_paused = true)]
async fn a_blackholed_link_is_dropped_within_ten_seconds() {
    let (a, b) = tokio::io::duplex(1 << 16);
    let (on, dropped) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let hole = Hole {
        inner: a,
        on: on.clone(),
        dropped: dropped.clone(),
    };
    let (ha, _ia) = Mux::start(hole, Side::Opener, MuxConfig::default());
    let (hb, mut ib) = Mux::start(b, Side::Acceptor, MuxConfig::default());
    let mut s = ha.open(open(Network::Tcp, ip(80))).unwrap();
    s.write_all(b"hello").await.unwrap();
    let (_, mut peer) = ib.next().await.unwrap();
    let mut buf = [0u8; 5];
    peer.read_exact(&mut buf).await.unwrap();
    // An idle but live link stays up.
    tokio::time::sleep(Duration::from_secs(100)).await;
    assert!(!ha.is_closed() && !hb.is_closed());
    on.store(true, Ordering::SeqCst);
    let t0 = Instant::now();
    let (why_a, why_b) = tokio::join!(ha.closed(), hb.closed());
    let dead = MuxError::Timeout(Duration::from_secs(10));
    assert_eq!((why_a, why_b), (dead.clone(), dead));
    assert!(
        t0.elapsed() <= Duration::from_secs(10),
        "{:?}",
        t0.elapsed()
    );
    // The stuck transport is let go soon after, though its writes never finish.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(dropped.load(Ordering::SeqCst));
}

#[tokio::test]
async fn a_udp_stream_queues_at_most_1024_unread_datagrams() {
    let (_h, mut incoming, mut raw) = link(Side::Acceptor, MuxConfig::default());
    raw.send(Kind::Open, 1, &payload(&open(Network::Udp, ip(53))))
        .await;
    let (_, udp) = incoming.next().await.unwrap();
    // 3000 empty datagrams: 7 bytes of address each, far inside the window.
    let mut datagram = Vec::new();
    ip(53).encode_socks(&mut datagram);
    for _ in 0..3000 {
        raw.send(Kind::Data, 1, &datagram).await;
    }
    raw.send(Kind::Fin, 1, &[]).await;
    // Its Pong says every frame before it was handled.
    raw.send(Kind::Ping, 0, &5u64.to_be_bytes()).await;
    while let Some((kind, _, payload)) = raw.next().await {
        if kind == Kind::Pong && payload == 5u64.to_be_bytes() {
            break;
        }
    }
    let mut n = 0;
    while udp.recv_from().await.is_ok() {
        n += 1;
    }
    assert_eq!(n, 1024);
}

#[tokio::test]
async fn a_peer_that_sends_and_never_reads_loses_its_link() {
    let (h, _incoming, raw) = link(Side::Acceptor, MuxConfig::default());
    // Each bad Open makes us queue a 9-byte Reset the peer never reads.
    let mut flood = Vec::new();
    for id in 0..600_000u32 {
        switchyard_tunnel::frame::Frame {
            kind: Kind::Open,
            flags: 0,
            stream: 2 * id + 1,
            payload: &[9],
        }
        .encode(&mut flood);
    }
    let mut io = raw.io;
    let writer = tokio::spawn(async move {
        let _ = io.write_all(&flood).await;
        io
    });
    assert!(matches!(
        h.closed().await,
        MuxError::Protocol(ProtocolError::NotReading(_))
    ));
    drop(writer);
}
