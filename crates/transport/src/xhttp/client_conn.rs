//! The client's HTTP connections: HTTP/2 ones shared by streams as XMUX says, and
//! HTTP/1.1 ones (a download's own, and kept-alive ones for uploads).

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use switchyard_proto::xhttp::{Range, Xmux};
use tokio::sync::{OnceCell, mpsc};
use tokio::time::Instant;

use crate::io::BoxIo;

/// What the layers below XHTTP gave: a connected stream, and whether it speaks
/// HTTP/2 (REALITY, or TLS that agreed on ALPN `h2`).
pub struct Dialed {
    /// The stream.
    pub io: BoxIo,
    /// HTTP/2 on it (else HTTP/1.1).
    pub h2: bool,
}

/// Xray's XMUX defaults when nothing is set: 16–32 streams at once on a connection.
const DEFAULT_CONCURRENCY: Range = Range { from: 16, to: 32 };
/// Xray's XMUX defaults when nothing is set: a connection carries 64–128 streams.
const DEFAULT_REUSE: Range = Range { from: 64, to: 128 };
/// HTTP/1.1 connections kept idle for uploads, at most.
const MAX_IDLE_H1: usize = 8;
/// HTTP/2 keep-alive pings (Chrome's, as Xray's client sends them).
const H2_KEEPALIVE: Duration = Duration::from_secs(45);

/// A request's body: none, a whole packet, or a stream fed through a channel.
pub(crate) enum ReqBody {
    /// No body (the download's GET).
    Empty,
    /// A packet-up POST's packet.
    Full(Option<Bytes>),
    /// A stream-up or stream-one POST: what the stream writes, until it shuts down.
    Channel(mpsc::Receiver<Bytes>),
}

impl Body for ReqBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match &mut *self {
            Self::Empty => Poll::Ready(None),
            Self::Full(data) => Poll::Ready(data.take().map(|d| Ok(Frame::data(d)))),
            Self::Channel(rx) => rx.poll_recv(cx).map(|d| d.map(|d| Ok(Frame::data(d)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Self::Empty => true,
            Self::Full(data) => data.is_none(),
            Self::Channel(_) => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Self::Empty => SizeHint::with_exact(0),
            Self::Full(data) => SizeHint::with_exact(data.as_ref().map_or(0, |d| d.len() as u64)),
            Self::Channel(_) => SizeHint::default(),
        }
    }
}

/// An HTTP/2 connection's request handle.
pub(crate) type H2Send = http2::SendRequest<ReqBody>;
/// An HTTP/1.1 connection's request handle.
pub(crate) type H1Send = http1::SendRequest<ReqBody>;

/// Starts HTTP/2 over `io`, its connection task spawned.
pub(crate) async fn handshake_h2(io: BoxIo) -> hyper::Result<H2Send> {
    let (send, connection) = http2::Builder::new(TokioExecutor::new())
        .timer(TokioTimer::new())
        .initial_stream_window_size(2 * 1024 * 1024)
        .initial_connection_window_size(8 * 1024 * 1024)
        .max_header_list_size(64 * 1024)
        .keep_alive_interval(H2_KEEPALIVE)
        .handshake(TokioIo::new(io))
        .await?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!("XHTTP HTTP/2 connection: {e}");
        }
    });
    Ok(send)
}

/// Starts HTTP/1.1 over `io`, its connection task spawned.
pub(crate) async fn handshake_h1(io: BoxIo) -> hyper::Result<H1Send> {
    let (send, connection) = http1::Builder::new()
        .max_buf_size(256 * 1024)
        .handshake(TokioIo::new(io))
        .await?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!("XHTTP HTTP/1.1 connection: {e}");
        }
    });
    Ok(send)
}

/// One HTTP/2 connection in XMUX's list: made once (by the first stream that picks
/// it; the others wait for it), counted while streams use it.
pub(crate) struct H2Entry {
    /// The connection, once dialed.
    pub(crate) cell: OnceCell<H2Send>,
    /// Streams open on it.
    open: Arc<AtomicUsize>,
    /// Streams it may still be given; `None` without a limit.
    left: Mutex<Option<u32>>,
    /// When it stops taking new streams.
    expires: Option<Instant>,
}

/// A stream's place on an HTTP/2 connection: counted until dropped.
pub(crate) struct OpenGuard(Arc<AtomicUsize>);

impl OpenGuard {
    /// A guard counting on no pool's connection.
    pub(crate) fn alone() -> Self {
        Self(Arc::new(AtomicUsize::new(1)))
    }
}

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// XMUX's numbers, picked once per pool as Xray picks them per client.
#[derive(Debug, Clone, Copy)]
struct Rolled {
    /// Streams at once per connection; 0 for no limit.
    concurrency: u32,
    /// Connections to open before reusing any; 0 for no limit.
    connections: u32,
}

/// What a pool keeps: XMUX's HTTP/2 connections, idle HTTP/1.1 ones, and which of
/// the two the server speaks.
#[derive(Default)]
pub(crate) struct State {
    rolled: Option<Rolled>,
    h2: Vec<Arc<H2Entry>>,
    h1_idle: Vec<H1Send>,
    /// Learned from the last connection dialed: `Some(false)` for HTTP/1.1.
    pub(crate) h2_known: Option<bool>,
}

/// A random `u32` from the system's generator.
pub(crate) fn random_u32() -> u32 {
    let mut b = [0u8; 4];
    // The system generator does not fail on Linux; a zero value is still valid.
    let _ = ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut b);
    u32::from_le_bytes(b)
}

/// A random version 4 UUID, as Xray's client makes a session id.
pub(crate) fn session_id() -> String {
    let mut b = [0u8; 16];
    let _ = ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut b);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

fn roll(range: Range) -> u32 {
    range.pick(random_u32())
}

impl State {
    /// The HTTP/2 connection the next stream goes on (Xray 24.11.21's XMUX: a new
    /// one while fewer than `max_connections`, else a random one below
    /// `max_concurrency`, else a new one), counted as open on it.
    pub(crate) fn pick_h2(&mut self, xmux: &Xmux) -> (Arc<H2Entry>, OpenGuard) {
        let defaults = xmux.is_unset();
        let rolled = *self.rolled.get_or_insert_with(|| Rolled {
            concurrency: match xmux.max_concurrency {
                Some(r) => roll(r),
                None if defaults => roll(DEFAULT_CONCURRENCY),
                None => 0,
            },
            connections: xmux.max_connections.map_or(0, roll),
        });
        let now = Instant::now();
        self.h2.retain(|e| {
            let closed = e.cell.get().is_some_and(|s| s.is_closed());
            let used_up = *e.left.lock().unwrap_or_else(|p| p.into_inner()) == Some(0);
            let expired = e.expires.is_some_and(|t| now >= t);
            !(closed || used_up || expired)
        });
        let reuse = !(rolled.connections > 0 && self.h2.len() < rolled.connections as usize);
        let candidates: Vec<&Arc<H2Entry>> = if reuse {
            self.h2
                .iter()
                .filter(|e| {
                    rolled.concurrency == 0
                        || e.open.load(Ordering::Relaxed) < rolled.concurrency as usize
                })
                .collect()
        } else {
            Vec::new()
        };
        let entry = if candidates.is_empty() {
            let reuse_times = match xmux.c_max_reuse_times {
                Some(r) => roll(r),
                None if defaults => roll(DEFAULT_REUSE),
                None => 0,
            };
            let lifetime = xmux.c_max_lifetime_ms.map_or(0, roll);
            let entry = Arc::new(H2Entry {
                cell: OnceCell::new(),
                open: Arc::default(),
                // Xray counts the first use as one of them.
                left: Mutex::new((reuse_times > 0).then(|| reuse_times - 1)),
                expires: (lifetime > 0).then(|| now + Duration::from_millis(u64::from(lifetime))),
            });
            self.h2.push(entry.clone());
            entry
        } else {
            let entry = candidates[random_u32() as usize % candidates.len()].clone();
            if let Some(left) = entry
                .left
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_mut()
            {
                *left = left.saturating_sub(1);
            }
            entry
        };
        entry.open.fetch_add(1, Ordering::Relaxed);
        let guard = OpenGuard(entry.open.clone());
        (entry, guard)
    }

    /// Forgets an entry whose connection turned out not to be HTTP/2 or failed.
    pub(crate) fn drop_h2(&mut self, entry: &Arc<H2Entry>) {
        self.h2.retain(|e| !Arc::ptr_eq(e, entry));
    }

    /// How many HTTP/2 connections XMUX holds (for tests and logs).
    pub(crate) fn h2_count(&self) -> usize {
        self.h2.len()
    }

    /// An idle HTTP/1.1 connection for an upload, if one is still open.
    pub(crate) fn take_h1(&mut self) -> Option<H1Send> {
        while let Some(send) = self.h1_idle.pop() {
            if !send.is_closed() {
                return Some(send);
            }
        }
        None
    }

    /// Keeps an HTTP/1.1 connection whose last response was read for the next upload.
    pub(crate) fn put_h1(&mut self, send: H1Send) {
        if self.h1_idle.len() < MAX_IDLE_H1 && !send.is_closed() {
            self.h1_idle.push(send);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_are_uuids_v4() {
        let id = session_id();
        assert_eq!(id.len(), 36);
        assert_eq!(&id[14..15], "4");
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-'));
        assert_ne!(id, session_id());
    }

    #[test]
    fn xmux_defaults_put_many_streams_on_few_connections() {
        let mut state = State::default();
        let xmux = Xmux::default();
        let guards: Vec<_> = (0..32).map(|_| state.pick_h2(&xmux).1).collect();
        assert!(state.h2_count() <= 2, "{}", state.h2_count());
        drop(guards);
    }

    #[test]
    fn max_connections_opens_that_many_first() {
        let mut state = State::default();
        let xmux = Xmux {
            max_connections: Some(Range::fixed(4)),
            ..Xmux::default()
        };
        let guards: Vec<_> = (0..10).map(|_| state.pick_h2(&xmux).1).collect();
        assert_eq!(state.h2_count(), 4);
        drop(guards);
    }

    #[test]
    fn reuse_times_retire_a_connection() {
        let mut state = State::default();
        let xmux = Xmux {
            c_max_reuse_times: Some(Range::fixed(2)),
            ..Xmux::default()
        };
        let (a, _g1) = state.pick_h2(&xmux);
        let (b, _g2) = state.pick_h2(&xmux);
        assert!(Arc::ptr_eq(&a, &b));
        let (c, _g3) = state.pick_h2(&xmux);
        assert!(!Arc::ptr_eq(&a, &c));
    }
}
