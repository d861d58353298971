//! Streams multiplexed over one link.
//!
//! A **link** is one transport connection (TLS over TCP, WebSocket over TLS: any
//! `AsyncRead + AsyncWrite`) carrying many **streams**, one per user connection, in the
//! frames of [`crate::frame`]. [`Mux::start`] runs a link and returns a [`MuxHandle`]
//! (open streams, watch load and liveness) and an [`Incoming`] (accept the streams the
//! peer opens). The relay opens; the origin accepts (either side may open: the opener
//! uses odd stream ids, the acceptor even ones).
//!
//! - **Flow control**: each direction of each stream has a receive window, first
//!   [`INITIAL_WINDOW`]; a sender never sends beyond it, and a peer that does breaks
//!   the protocol and loses the link. The receiver grants what the application read
//!   once half the window is read, and doubles the window (up to
//!   [`MuxConfig::max_window`]) when a window's worth is read in under two round trips,
//!   measured with `Ping`/`Pong`, so one stream can fill a fast, long link while a
//!   stream nobody reads holds at most its window. See [`flow`](self::flow).
//! - **Scheduling**: one writer task; control frames (`Open`, `Window`, `Reset`,
//!   `Ping`, `Pong`, `GoAway`) go first, then one frame (at most 16 KiB) per stream with
//!   data, round-robin, so bulk streams share a link evenly and a blocked stream blocks
//!   nobody else.
//! - **Bounds**: [`MuxConfig::max_streams`] (an `Open` beyond it is answered with
//!   `Reset`), receive buffers bounded by windows, frames bounded by
//!   [`MAX_PAYLOAD`](crate::frame::MAX_PAYLOAD), a stream's send queue bounded (writes
//!   wait), and a peer that does not read makes our writes wait on the transport. An
//!   idle stream holds no buffers.
//! - **Hostile peers**: a malformed `Open` or datagram resets its stream only; small
//!   frames are gathered into the stream's last receive chunk, and a UDP stream
//!   queues at most 1024 unread datagrams, so memory follows the windows whatever the
//!   frame sizes; a peer whose frames make us queue over 4 MiB of control frames
//!   while it reads none of them loses the link.
//! - **Liveness**: a link is pinged after [`MuxConfig::keepalive`] without a frame and
//!   closed after [`MuxConfig::idle_timeout`].
//! - **UDP** streams carry one datagram per `Data` frame, under the same window; a
//!   datagram that does not fit the window is dropped, never waited for.
//!
//! The state machine is [`core`](self::core) (no I/O, time passed in); the
//! [`driver`](self::driver) tasks only move bytes and time.

mod core;
mod driver;
mod error;
mod flow;
mod handle;
mod liveness;
mod stream;
mod stream_ops;
mod stream_state;
mod transmit;

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;

pub use error::{MuxError, ProtocolError};
pub use flow::INITIAL_WINDOW;
pub use handle::{Incoming, MuxHandle};
pub use stream::MuxStream;

/// Which end of the link this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// Opens streams (the relay): odd stream ids.
    Opener,
    /// Accepts streams (the origin): even stream ids if it opens any.
    Acceptor,
}

/// A link's tunables. Every default is here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MuxConfig {
    /// Most streams on one link, both directions together. Default 4096: a link's
    /// worth of users' connections; more belong on another link.
    pub max_streams: usize,
    /// Largest receive window a stream may grow to. Default 16 MiB: fills 1 Gbit/s at
    /// 130 ms; a stream that reads that fast buffers at most this much.
    pub max_window: u32,
    /// A `Ping` after this long without a frame. Default 4 s: an idle link costs a
    /// 16-byte ping and pong every 4 s, and a silent peer gets two pings before
    /// [`idle_timeout`](Self::idle_timeout).
    pub keepalive: Duration,
    /// The link is dead after this long without a frame, pongs included. Default
    /// 10 s: a blackholed link (packets vanish, the socket stays open) is dropped
    /// within 10 s and its streams move to the other links; a live peer answers a
    /// ping within a round trip, so only a link stalled for 6 s past a ping is lost.
    pub idle_timeout: Duration,
}

impl Default for MuxConfig {
    fn default() -> Self {
        Self {
            max_streams: 4096,
            max_window: 16 * 1024 * 1024,
            keepalive: Duration::from_secs(4),
            idle_timeout: Duration::from_secs(10),
        }
    }
}

/// Runs links.
#[derive(Debug)]
pub struct Mux;

impl Mux {
    /// Runs a link over `io` (after its handshake) on the current tokio runtime.
    /// Returns the handle and the incoming streams; the link's tasks end when it
    /// closes.
    pub fn start<IO>(io: IO, side: Side, mut config: MuxConfig) -> (MuxHandle, Incoming)
    where
        IO: AsyncRead + AsyncWrite + Send + Unpin + 'static,
    {
        config.max_window = config.max_window.max(INITIAL_WINDOW);
        let core = core::Core::new(side, config, Instant::now());
        let shared = Arc::new(driver::Shared::new(core));
        driver::spawn(io, &shared);
        (
            MuxHandle {
                shared: shared.clone(),
            },
            Incoming { shared },
        )
    }
}
