//! The link's tasks: one reader, one writer, one timer. They move bytes and time
//! into and out of the [`Core`] and decide nothing.

use std::future::poll_fn;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::Poll;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::watch;
use tokio::time::{Instant, sleep_until};

use super::core::Core;
use super::error::MuxError;
use crate::frame::{HEADER, MAX_PAYLOAD};

/// Bytes the writer gathers before one transport write.
const WRITE_BATCH: usize = 128 * 1024;
/// Bytes the reader asks the transport for at a time.
const READ_CHUNK: usize = 64 * 1024;
/// How long a closing link may take to shut its transport down (TLS close_notify)
/// before the transport is simply dropped.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

/// What the link's tasks and handles share.
#[derive(Debug)]
pub(crate) struct Shared {
    core: Mutex<Core>,
    /// Turns true once, when the link closes.
    closed: watch::Sender<bool>,
    /// Turns true once, when the peer sends `GoAway` or the link closes.
    peer_going_away: watch::Sender<bool>,
}

impl Shared {
    pub(crate) fn new(core: Core) -> Self {
        Self {
            core: Mutex::new(core),
            closed: watch::channel(false).0,
            peer_going_away: watch::channel(false).0,
        }
    }

    /// The core. Every path that may close the link ends with [`Self::unlock`].
    pub(crate) fn lock(&self) -> MutexGuard<'_, Core> {
        self.core.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Releases the core, announcing the link's end if it just closed.
    pub(crate) fn unlock(&self, core: MutexGuard<'_, Core>) {
        let closed = core.closed().is_some();
        let going = core.peer_going_away || closed;
        drop(core);
        if closed {
            self.closed
                .send_if_modified(|c| !std::mem::replace(c, true));
        }
        if going {
            self.peer_going_away
                .send_if_modified(|c| !std::mem::replace(c, true));
        }
    }

    /// Waits until the peer sent `GoAway`, or the link closed.
    pub(crate) async fn peer_going_away(&self) {
        let mut rx = self.peer_going_away.subscribe();
        let _ = rx.wait_for(|g| *g).await;
    }

    /// Closes the link.
    pub(crate) fn close(&self, why: MuxError) {
        let mut core = self.lock();
        core.close(why);
        self.unlock(core);
    }

    /// Waits until the link is closed; returns why.
    pub(crate) async fn closed(&self) -> MuxError {
        let mut rx = self.closed.subscribe();
        // The sender lives in `self`, so this only ends when the flag turns true.
        let _ = rx.wait_for(|c| *c).await;
        self.lock().closed().cloned().unwrap_or(MuxError::Closed)
    }
}

/// Starts the link's tasks on the current runtime.
pub(crate) fn spawn<IO>(io: IO, shared: &Arc<Shared>)
where
    IO: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let (r, w) = tokio::io::split(io);
    tokio::spawn(reader(r, shared.clone()));
    tokio::spawn(writer(w, shared.clone()));
    tokio::spawn(timer(shared.clone()));
}

async fn reader<R: AsyncRead + Unpin>(mut r: R, shared: Arc<Shared>) {
    let mut buf: Vec<u8> = Vec::with_capacity(READ_CHUNK + HEADER + MAX_PAYLOAD);
    loop {
        buf.reserve(READ_CHUNK);
        let read = tokio::select! {
            read = r.read_buf(&mut buf) => read,
            _ = shared.closed() => return,
        };
        match read {
            Ok(0) => return shared.close(MuxError::PeerClosed),
            Ok(_) => {}
            Err(e) => return shared.close(MuxError::io(&e)),
        }
        let mut core = shared.lock();
        let used = core.handle_bytes(&buf, Instant::now());
        let closed = core.closed().is_some();
        shared.unlock(core);
        if closed {
            return;
        }
        // At most one partial frame stays.
        buf.drain(..used);
    }
}

async fn writer<W: AsyncWrite + Unpin>(mut w: W, shared: Arc<Shared>) {
    let mut out = Vec::with_capacity(WRITE_BATCH + HEADER + MAX_PAYLOAD);
    loop {
        out.clear();
        let closed = poll_fn(|cx| {
            let mut core = shared.lock();
            if core.closed().is_some() {
                return Poll::Ready(true);
            }
            core.poll_transmit(&mut out, WRITE_BATCH);
            if out.is_empty() {
                core.set_writer(cx.waker());
                Poll::Pending
            } else {
                Poll::Ready(false)
            }
        })
        .await;
        if closed {
            // A peer that stopped reading (a blackholed link) must not keep the
            // transport open through a shutdown that never completes.
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, w.shutdown()).await;
            return;
        }
        let wrote = tokio::select! {
            wrote = async {
                w.write_all(&out).await?;
                // Flush (a TLS record, a WebSocket message) once nothing else waits.
                if !shared.lock().has_transmit() {
                    w.flush().await?;
                }
                Ok::<(), std::io::Error>(())
            } => wrote,
            _ = shared.closed() => return,
        };
        if let Err(e) = wrote {
            return shared.close(MuxError::io(&e));
        }
    }
}

async fn timer(shared: Arc<Shared>) {
    loop {
        let Some(deadline) = shared.lock().poll_timeout() else {
            return;
        };
        tokio::select! {
            () = sleep_until(deadline) => {}
            _ = shared.closed() => return,
        }
        let mut core = shared.lock();
        core.handle_timeout(Instant::now());
        shared.unlock(core);
    }
}
