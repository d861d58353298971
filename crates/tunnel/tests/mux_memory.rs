//! What streams cost: heap bytes counted by a wrapping allocator. An idle stream holds
//! no buffers; a window's worth of one-byte frames costs about the window.
#![allow(unsafe_code)] // The counting allocator only forwards to the system one.

use std::alloc::{GlobalAlloc, Layout, System};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicIsize, Ordering};

use switchyard_proto::Address;
use switchyard_tunnel::frame::{Frame, Kind, Network, Open};
use switchyard_tunnel::mux::{INITIAL_WINDOW, Mux, MuxConfig, Side};
use tokio::io::AsyncWriteExt;

#[path = "it/raw_support.rs"]
mod raw_support;
use raw_support::link;

/// The tests measure the one heap: one at a time.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call forwards to `System` with the caller's arguments.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded as is.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

#[tokio::test]
async fn ten_thousand_idle_streams_cost_little() {
    let _one = ONE_AT_A_TIME.lock().await;
    const STREAMS: usize = 10_000;
    let config = MuxConfig {
        max_streams: STREAMS,
        ..MuxConfig::default()
    };
    let (a, b) = tokio::io::duplex(256 * 1024);
    let (ha, _ia) = Mux::start(a, Side::Opener, config.clone());
    let (_hb, mut ib) = Mux::start(b, Side::Acceptor, config);
    let before = LIVE.load(Ordering::Relaxed);
    let mut opened = Vec::with_capacity(STREAMS);
    let mut accepted = Vec::with_capacity(STREAMS);
    let vecs = LIVE.load(Ordering::Relaxed) - before;
    for i in 0..STREAMS {
        let open = Open {
            network: Network::Tcp,
            user: format!("user{i}"),
            destination: Address::Ip(SocketAddr::from(([192, 0, 2, 1], 443))),
        };
        opened.push(ha.open(open).unwrap());
    }
    for _ in 0..STREAMS {
        accepted.push(ib.next().await.unwrap());
    }
    let per_stream = (LIVE.load(Ordering::Relaxed) - before - vecs) / STREAMS as isize;
    println!("{per_stream} bytes per idle stream (both ends, Open payloads included)");
    assert!(
        per_stream <= 16 * 1024,
        "{per_stream} bytes per idle stream"
    );
    assert_eq!(ha.open_streams(), STREAMS);
}

#[tokio::test]
async fn a_window_of_one_byte_frames_costs_about_the_window() {
    let _one = ONE_AT_A_TIME.lock().await;
    let (_h, mut incoming, mut raw) = link(Side::Acceptor, MuxConfig::default());
    let mut p = Vec::new();
    Open {
        network: Network::Tcp,
        user: "u".into(),
        destination: Address::Ip(SocketAddr::from(([192, 0, 2, 1], 80))),
    }
    .encode(&mut p);
    raw.send(Kind::Open, 1, &p).await;
    // Nobody reads the stream.
    let (_, _unread) = incoming.next().await.unwrap();
    let mut frames = Vec::new();
    for _ in 0..INITIAL_WINDOW {
        Frame {
            kind: Kind::Data,
            flags: 0,
            stream: 1,
            payload: &[7],
        }
        .encode(&mut frames);
    }
    let before = LIVE.load(Ordering::Relaxed);
    raw.io.write_all(&frames).await.unwrap();
    // A Ping behind them: its Pong says every frame was handled.
    raw.send(Kind::Ping, 0, &9u64.to_be_bytes()).await;
    while let Some((kind, _, payload)) = raw.next().await {
        if kind == Kind::Pong && payload == 9u64.to_be_bytes() {
            break;
        }
    }
    let held = LIVE.load(Ordering::Relaxed) - before;
    println!("{held} bytes held for {INITIAL_WINDOW} unread one-byte frames");
    assert!(held <= 2 * INITIAL_WINDOW as isize, "{held} bytes");
    drop(frames);
}
