//! The traffic meter Auto watches: bytes the device sent through the proxy and bytes
//! it got back, counted on every connection's server side as they pass (TCP streams
//! through [`Metered`], UDP datagrams' payloads through [`Meter::add_sent`] and
//! [`Meter::add_received`]).

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Cumulative counters over the client's whole run.
#[derive(Debug, Default)]
pub struct Meter {
    sent: AtomicU64,
    received: AtomicU64,
}

impl Meter {
    /// Counts `n` bytes out that never reached a server: an app's request the proxy
    /// could not carry. The device was in use, as a VPN interface's counter would
    /// show, and nothing came back.
    pub fn add_unsent(&self, n: u64) {
        self.sent.fetch_add(n, Ordering::Relaxed);
    }

    /// Counts `n` bytes sent through a server (a UDP datagram's payload).
    pub fn add_sent(&self, n: u64) {
        self.sent.fetch_add(n, Ordering::Relaxed);
    }

    /// Counts `n` bytes received through a server (a UDP datagram's payload).
    pub fn add_received(&self, n: u64) {
        self.received.fetch_add(n, Ordering::Relaxed);
    }

    /// `(sent, received)` so far.
    pub fn totals(&self) -> (u64, u64) {
        (
            self.sent.load(Ordering::Relaxed),
            self.received.load(Ordering::Relaxed),
        )
    }
}

/// A stream to a server whose bytes are counted on `meter`: writes as sent, reads as
/// received.
pub struct Metered<S> {
    inner: S,
    meter: Arc<Meter>,
}

impl<S> Metered<S> {
    /// Counts `inner`'s bytes on `meter`.
    pub fn new(inner: S, meter: Arc<Meter>) -> Self {
        Self { inner, meter }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Metered<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        let n = buf.filled().len() - before;
        self.meter.received.fetch_add(n as u64, Ordering::Relaxed);
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Metered<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = &r {
            self.meter.sent.fetch_add(*n as u64, Ordering::Relaxed);
        }
        r
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn bytes_each_way_are_counted_once() {
        let meter = Arc::new(Meter::default());
        let (a, mut b) = tokio::io::duplex(1024);
        let mut m = Metered::new(a, meter.clone());
        m.write_all(b"hello").await.unwrap();
        b.write_all(b"abc").await.unwrap();
        let mut got = [0u8; 3];
        m.read_exact(&mut got).await.unwrap();
        let mut echo = [0u8; 5];
        b.read_exact(&mut echo).await.unwrap();
        assert_eq!(meter.totals(), (5, 3));
    }
}
