//! A link's stream that tells the dialer when it is dropped, so the pool owns links
//! outright and the dialer still knows when to redial; or earlier, when the peer
//! says it hands over ([`Release::retire`]).

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::mpsc;

use super::transport::LinkStream;

/// How a link left the dialer's count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ended {
    /// It ended (a short life counts as a failure).
    Ended,
    /// Its peer hands over to another process: it carries its streams to their end,
    /// and a replacement is dialed at once, without back-off.
    Retired,
}

/// Tells the dialer how a link left its count when dropped.
pub(super) struct Lease {
    pub(super) id: u64,
    pub(super) ended: mpsc::UnboundedSender<(u64, Ended)>,
    pub(super) how: Ended,
}

impl Drop for Lease {
    fn drop(&mut self) {
        let _ = self.ended.send((self.id, self.how));
    }
}

/// A link's place in its dialer's count, given up once: when the link's stream is
/// dropped, or by [`Release::retire`].
#[derive(Clone)]
pub struct Release(Arc<Mutex<Option<Lease>>>);

impl std::fmt::Debug for Release {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Release").finish_non_exhaustive()
    }
}

impl Release {
    pub(super) fn new(lease: Lease) -> Self {
        Self(Arc::new(Mutex::new(Some(lease))))
    }

    /// The peer hands over: the link keeps its streams, the dialer dials a
    /// replacement at once.
    pub fn retire(&self) {
        let lease = self.0.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(mut lease) = lease {
            lease.how = Ended::Retired;
        }
    }
}

pub(super) struct Tracked {
    pub(super) inner: LinkStream,
    /// Dropped with the stream: the link ended, unless it was retired before.
    pub(super) _release: Release,
}

impl AsyncRead for Tracked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}
