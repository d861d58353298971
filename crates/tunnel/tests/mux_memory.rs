//! What an idle stream costs: heap bytes counted by a wrapping allocator.
#![allow(unsafe_code)] // The counting allocator only forwards to the system one.

use std::alloc::{GlobalAlloc, Layout, System};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicIsize, Ordering};

use switchyard_proto::Address;
use switchyard_tunnel::frame::{Network, Open};
use switchyard_tunnel::mux::{Mux, MuxConfig, Side};

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
