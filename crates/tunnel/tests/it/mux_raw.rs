//! The link protocol seen from a hand-driven peer that speaks raw frames: windows are
//! respected to the byte, streams share the link fairly, bad peers lose their link,
//! silent ones time out.

use std::net::SocketAddr;
use std::time::Duration;

use switchyard_proto::Address;
use switchyard_tunnel::frame::{FrameError, Kind, Network, Open, ResetReason};
use switchyard_tunnel::mux::{INITIAL_WINDOW, Mux, MuxConfig, MuxError, ProtocolError, Side};
use tokio::io::AsyncWriteExt;

use crate::raw_support;
use raw_support::link;

fn open(port: u16) -> Open {
    Open {
        network: Network::Tcp,
        user: "bob".into(),
        destination: Address::Ip(SocketAddr::from(([192, 0, 2, 1], port))),
    }
}

#[tokio::test]
async fn a_sender_stops_at_exactly_the_window_while_other_streams_flow() {
    let (h, _i, mut raw) = link(Side::Opener, MuxConfig::default());
    let mut stuck = h.open(open(1)).unwrap();
    let writer = tokio::spawn(async move {
        stuck.write_all(&vec![1u8; 1024 * 1024]).await.unwrap();
        stuck
    });
    let (mut stuck_bytes, mut granted) = (0usize, INITIAL_WINDOW as usize);
    while stuck_bytes < granted {
        let (kind, stream, payload) = raw.next().await.unwrap();
        if kind == Kind::Data && stream == 1 {
            stuck_bytes += payload.len();
        }
    }
    assert_eq!(stuck_bytes, granted);
    // The window is used up; another stream still carries all of its data.
    let mut free = h.open(open(2)).unwrap();
    free.write_all(&[2u8; 100_000]).await.unwrap();
    free.shutdown().await.unwrap();
    let mut free_bytes = 0;
    loop {
        let (kind, stream, payload) = raw.next().await.unwrap();
        match (kind, stream) {
            (Kind::Data, 1) => stuck_bytes += payload.len(),
            (Kind::Data, 3) => free_bytes += payload.len(),
            (Kind::Fin, 3) => break,
            _ => {}
        }
    }
    assert_eq!((stuck_bytes, free_bytes), (granted, 100_000));
    // Each grant releases exactly its size.
    for grant in [1u32, 1000, 65_536] {
        raw.send(Kind::Window, 1, &grant.to_be_bytes()).await;
        granted += grant as usize;
        while stuck_bytes < granted {
            let (kind, stream, payload) = raw.next().await.unwrap();
            if kind == Kind::Data && stream == 1 {
                stuck_bytes += payload.len();
                assert!(
                    stuck_bytes <= granted,
                    "sent {stuck_bytes} of {granted} granted"
                );
            }
        }
    }
    assert!(!writer.is_finished());
    raw.send(Kind::Window, 1, &(1u32 << 20).to_be_bytes()).await;
    while stuck_bytes < 1024 * 1024 {
        let (kind, stream, payload) = raw.next().await.unwrap();
        if kind == Kind::Data && stream == 1 {
            stuck_bytes += payload.len();
        }
    }
    writer.await.unwrap();
}

#[tokio::test]
async fn two_bulk_streams_share_the_link_evenly() {
    let (h, _i, mut raw) = link(Side::Opener, MuxConfig::default());
    const LEN: usize = 4 * 1024 * 1024;
    let mut writers = Vec::new();
    for port in [1, 2] {
        let mut s = h.open(open(port)).unwrap();
        writers.push(tokio::spawn(async move {
            s.write_all(&vec![port as u8; LEN]).await.unwrap();
            s.shutdown().await.unwrap();
            s
        }));
    }
    for id in [1u32, 3] {
        raw.send(Kind::Window, id, &(16u32 << 20).to_be_bytes())
            .await;
    }
    // Count frames (not time) until the first stream is done.
    let (mut frames, mut bytes) = ([0usize; 2], [0usize; 2]);
    loop {
        let (kind, stream, payload) = raw.next().await.unwrap();
        if kind != Kind::Data {
            continue;
        }
        let k = (stream / 2) as usize;
        frames[k] += 1;
        bytes[k] += payload.len();
        if bytes[k] == LEN {
            break;
        }
        tokio::task::yield_now().await;
    }
    let (lo, hi) = (frames[0].min(frames[1]), frames[0].max(frames[1]));
    assert!(lo * 10 >= hi * 8, "frames per stream {frames:?}");
}

#[tokio::test]
async fn garbage_and_oversized_frames_close_only_their_link() {
    let cases: [(&[u8], MuxError); 3] = [
        (
            &[0xff; 16],
            ProtocolError::Frame(FrameError::UnknownKind(0xff)).into(),
        ),
        (
            &[2, 0, 0, 0, 0, 1, 0xff, 0xff],
            ProtocolError::Frame(FrameError::TooLong(0xffff)).into(),
        ),
        (
            &[2, 0, 0, 0, 0, 9, 0, 1, 0],
            ProtocolError::UnknownStream {
                stream: 9,
                kind: Kind::Data,
            }
            .into(),
        ),
    ];
    let (good, _gi, mut good_raw) = link(Side::Acceptor, MuxConfig::default());
    for (bytes, want) in cases {
        let (h, _i, mut raw) = link(Side::Acceptor, MuxConfig::default());
        raw.io.write_all(bytes).await.unwrap();
        assert_eq!(h.closed().await, want);
        assert!(h.open(open(1)).is_err());
        // The link is gone: the transport was shut down.
        while raw.next().await.is_some() {}
    }
    // A link next to them still answers.
    good_raw.send(Kind::Ping, 0, &42u64.to_be_bytes()).await;
    loop {
        let (kind, _, payload) = good_raw.next().await.unwrap();
        if kind == Kind::Pong && payload == 42u64.to_be_bytes() {
            break;
        }
    }
    assert!(!good.is_closed());
}

#[tokio::test]
async fn a_peer_sending_beyond_the_window_loses_the_link() {
    let (h, mut incoming, mut raw) = link(Side::Acceptor, MuxConfig::default());
    let mut payload = Vec::new();
    open(1).encode(&mut payload);
    raw.send(Kind::Open, 1, &payload).await;
    let chunk = vec![0u8; 16 * 1024];
    for _ in 0..(INITIAL_WINDOW as usize / chunk.len()) {
        raw.send(Kind::Data, 1, &chunk).await;
    }
    // The application never reads; the window is full. One byte more:
    raw.send(Kind::Data, 1, &[0]).await;
    assert_eq!(
        h.closed().await,
        ProtocolError::WindowExceeded {
            stream: 1,
            excess: 1
        }
        .into()
    );
    assert!(incoming.next().await.is_none());
}

#[tokio::test]
async fn an_open_beyond_the_stream_limit_is_answered_with_reset() {
    let config = MuxConfig {
        max_streams: 2,
        ..MuxConfig::default()
    };
    let (_h, mut incoming, mut raw) = link(Side::Acceptor, config);
    for id in [1u32, 3, 5] {
        let mut payload = Vec::new();
        open(id as u16).encode(&mut payload);
        raw.send(Kind::Open, id, &payload).await;
    }
    loop {
        let (kind, stream, payload) = raw.next().await.unwrap();
        if kind == Kind::Reset {
            assert_eq!((stream, payload), (5, vec![ResetReason::Refused.to_byte()]));
            break;
        }
    }
    assert_eq!(incoming.next().await.unwrap().1.id(), 1);
    assert_eq!(incoming.next().await.unwrap().1.id(), 3);
    // Reusing an id breaks the protocol.
    let mut payload = Vec::new();
    open(1).encode(&mut payload);
    raw.send(Kind::Open, 3, &payload).await;
    assert!(incoming.next().await.is_none());
}

#[tokio::test(start_paused = true)]
async fn a_silent_peer_is_pinged_then_declared_dead() {
    let (h, _i, mut raw) = link(Side::Opener, MuxConfig::default());
    let pings = tokio::spawn(async move {
        let mut pings = 0;
        while let Some((kind, _, _)) = raw.next().await {
            pings += usize::from(kind == Kind::Ping);
        }
        pings
    });
    assert_eq!(h.closed().await, MuxError::Timeout(Duration::from_secs(10)));
    // One to measure the round trip, then keepalives at 4 s and 8 s.
    assert_eq!(pings.await.unwrap(), 3);
}

#[tokio::test(start_paused = true)]
async fn an_idle_link_with_a_live_peer_stays_up() {
    let (a, b) = tokio::io::duplex(64 * 1024);
    let (ha, _ia) = Mux::start(a, Side::Opener, MuxConfig::default());
    let (hb, _ib) = Mux::start(b, Side::Acceptor, MuxConfig::default());
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert!(!ha.is_closed() && !hb.is_closed());
    assert!(ha.rtt().is_some());
}
