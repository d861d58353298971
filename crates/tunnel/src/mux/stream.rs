//! [`MuxStream`]: one user connection on a link.

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use switchyard_proto::Address;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

use super::driver::Shared;
use super::error::MuxError;
use crate::frame::{Network, ResetReason, parse_datagram};
use crate::user_limits::Lease;

/// One stream on a link.
///
/// A TCP stream is an [`AsyncRead`] + [`AsyncWrite`] byte stream: `poll_shutdown`
/// sends `Fin` (half-close; reading goes on until the peer's `Fin`), and dropping it
/// before shutting down resets it. A UDP stream carries datagrams with
/// [`send_to`](Self::send_to) and [`recv_from`](Self::recv_from); the byte-stream
/// API fails on it with [`MuxError::WrongNetwork`], and vice versa.
#[derive(Debug)]
pub struct MuxStream {
    shared: Arc<Shared>,
    id: u32,
    network: Network,
    /// Lives as long as the handle: the pool's per-user slot.
    _lease: Option<Lease>,
}

impl MuxStream {
    pub(super) fn new(shared: Arc<Shared>, id: u32, network: Network) -> Self {
        Self {
            shared,
            id,
            network,
            _lease: None,
        }
    }

    /// Ties `lease` to this handle: it is given back when the handle is dropped.
    pub(crate) fn with_lease(mut self, lease: Lease) -> Self {
        self._lease = Some(lease);
        self
    }

    /// The stream's id on its link.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// What the stream carries.
    pub fn network(&self) -> Network {
        self.network
    }

    /// Aborts the stream, telling the peer why (for example
    /// [`ResetReason::ConnectFailed`] when the destination cannot be reached).
    pub fn reset(self, reason: ResetReason) {
        self.shared.lock().reset(self.id, reason);
    }

    /// Sends one datagram to `to` on a UDP stream. Datagrams never wait: `Ok(false)`
    /// means it was dropped because the peer's window or our send queue is full, as a
    /// full socket buffer would drop it.
    pub fn send_to(&self, to: &Address, data: &[u8]) -> Result<bool, MuxError> {
        self.shared.lock().send_datagram(self.id, to, data)
    }

    /// Receives the next datagram on a UDP stream and its peer address.
    pub async fn recv_from(&self) -> Result<(Address, Vec<u8>), MuxError> {
        let mut payload = poll_fn(|cx| {
            self.shared
                .lock()
                .poll_recv_datagram(self.id, cx.waker(), Instant::now())
        })
        .await?;
        // Checked when it arrived.
        let (addr, data) = parse_datagram(&payload).map_err(|error| {
            MuxError::Protocol(super::ProtocolError::BadDatagram {
                stream: self.id,
                error,
            })
        })?;
        let at = payload.len() - data.len();
        payload.drain(..at);
        Ok((addr, payload))
    }

    /// Finishes sending on a UDP stream (the peer's `recv_from` then reports
    /// [`MuxError::EndOfDatagrams`]).
    pub fn finish(&self) -> Result<(), MuxError> {
        self.shared.lock().shutdown(self.id)
    }
}

impl AsyncRead for MuxStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let dst = buf.initialize_unfilled();
        let read = self
            .shared
            .lock()
            .poll_read(self.id, cx.waker(), dst, Instant::now());
        match read {
            Poll::Ready(Ok(n)) => {
                buf.advance(n);
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e.into_io())),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncWrite for MuxStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.shared
            .lock()
            .poll_write(self.id, cx.waker(), buf)
            .map_err(MuxError::into_io)
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // The link's writer sends queued frames as soon as it can.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(
            self.shared
                .lock()
                .shutdown(self.id)
                .map_err(MuxError::into_io),
        )
    }
}

impl Drop for MuxStream {
    fn drop(&mut self) {
        self.shared.lock().drop_stream(self.id);
    }
}
