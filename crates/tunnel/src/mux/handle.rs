//! The link's handles: [`MuxHandle`] to open streams and watch the link, [`Incoming`]
//! to accept the streams the peer opens.

use std::future::poll_fn;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use tokio::time::Instant;

use super::MuxStream;
use super::driver::Shared;
use super::error::MuxError;
use crate::frame::Open;

/// A link's handle: opens streams, reports load, closes. Cheap to clone; the link
/// closes when every handle and its [`Incoming`] are dropped.
#[derive(Debug)]
pub struct MuxHandle {
    pub(super) shared: Arc<Shared>,
}

impl Clone for MuxHandle {
    fn clone(&self) -> Self {
        self.shared.lock().handles += 1;
        Self {
            shared: self.shared.clone(),
        }
    }
}

impl Drop for MuxHandle {
    fn drop(&mut self) {
        let mut core = self.shared.lock();
        core.handles -= 1;
        if core.unused() {
            core.close(MuxError::Closed);
        }
        self.shared.unlock(core);
    }
}

impl MuxHandle {
    /// Opens a stream. Fails at once if the link is closed, going away, or at its
    /// stream limit, so the caller can pick another link. Data may be written at once:
    /// the `Open` goes out first.
    pub fn open(&self, open: Open) -> Result<MuxStream, MuxError> {
        let network = open.network;
        let id = self.shared.lock().open(&open, Instant::now())?;
        Ok(MuxStream::new(self.shared.clone(), id, network))
    }

    /// How many streams the link holds now (for choosing the least-loaded link).
    pub fn open_streams(&self) -> usize {
        self.shared.lock().open_streams()
    }

    /// Stream payload bytes carried so far, both directions.
    pub fn bytes_carried(&self) -> u64 {
        self.shared.lock().bytes
    }

    /// The latest round-trip sample, if any.
    pub fn rtt(&self) -> Option<Duration> {
        self.shared.lock().rtt.map(|(rtt, _)| rtt)
    }

    /// Whether the link has ended.
    pub fn is_closed(&self) -> bool {
        self.shared.lock().closed().is_some()
    }

    /// Waits for the link to end; returns why.
    pub async fn closed(&self) -> MuxError {
        self.shared.closed().await
    }

    /// Whether the link takes no new streams: either side sent `GoAway`.
    pub fn is_going_away(&self) -> bool {
        self.shared.lock().going_away()
    }

    /// Waits until the peer sent `GoAway` (its process hands over to another), or the
    /// link closed: the dialing side then makes a replacement link.
    pub async fn peer_going_away(&self) {
        self.shared.peer_going_away().await;
    }

    /// Takes no new streams on this link and tells the peer to open none; the streams
    /// already open carry on.
    pub fn go_away(&self) {
        self.shared.lock().go_away();
    }

    /// Closes the link now: every stream fails with [`MuxError::Closed`].
    pub fn close(&self) {
        self.shared.close(MuxError::Closed);
    }
}

/// The streams the peer opens, in order.
#[derive(Debug)]
pub struct Incoming {
    pub(super) shared: Arc<Shared>,
}

impl Incoming {
    /// The next stream the peer opened and what it asks for; `None` once the link is
    /// closed. Cancel-safe: a stream is taken only when this returns it.
    pub async fn next(&mut self) -> Option<(Open, MuxStream)> {
        let (id, open) = poll_fn(|cx| match self.shared.lock().poll_accept(cx.waker()) {
            Some(next) => Poll::Ready(next),
            None => Poll::Pending,
        })
        .await?;
        let stream = MuxStream::new(self.shared.clone(), id, open.network);
        Some((open, stream))
    }
}

impl Drop for Incoming {
    fn drop(&mut self) {
        let mut core = self.shared.lock();
        core.drop_incoming();
        if core.unused() {
            core.close(MuxError::Closed);
        }
        self.shared.unlock(core);
    }
}
