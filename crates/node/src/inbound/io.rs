//! Byte streams as the inbound sees them, whatever carries them: [`Io`], [`BoxIo`]
//! and [`Prefixed`] are the transport layer's; [`Gate`] and [`Gated`] are the node's
//! pre-authentication policy over them.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};

use futures_util::task::AtomicWaker;

use tokio::io::{AsyncRead, ReadBuf};

pub(crate) use switchyard_transport::{BoxIo, Io, Prefixed};

/// Writes go straight to the inner stream: the wrappers here only change reads.
macro_rules! write_through {
    ($wrapper:ident) => {
        impl<S: ::tokio::io::AsyncWrite + Unpin> ::tokio::io::AsyncWrite for $wrapper<S> {
            fn poll_write(
                mut self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
                data: &[u8],
            ) -> ::std::task::Poll<::std::io::Result<usize>> {
                ::std::pin::Pin::new(&mut self.inner).poll_write(cx, data)
            }
            fn poll_write_vectored(
                mut self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
                bufs: &[::std::io::IoSlice<'_>],
            ) -> ::std::task::Poll<::std::io::Result<usize>> {
                ::std::pin::Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
            }
            fn is_write_vectored(&self) -> bool {
                self.inner.is_write_vectored()
            }
            fn poll_flush(
                mut self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
            ) -> ::std::task::Poll<::std::io::Result<()>> {
                ::std::pin::Pin::new(&mut self.inner).poll_flush(cx)
            }
            fn poll_shutdown(
                mut self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
            ) -> ::std::task::Poll<::std::io::Result<()>> {
                ::std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
            }
        }
    };
}

/// Opens when a connection has authenticated; until then a [`Gated`] stream reads
/// only a little.
#[derive(Default)]
pub(crate) struct Gate {
    open: AtomicBool,
    waker: AtomicWaker,
}

impl Gate {
    /// Lets every gated reader read freely from now on.
    pub(crate) fn open(&self) {
        self.open.store(true, Ordering::Release);
        self.waker.wake();
    }

    fn is_open(&self) -> bool {
        self.open.load(Ordering::Acquire)
    }
}

/// A stream that reads at most `limit` bytes before its [`Gate`] opens, then waits:
/// what an unauthenticated client can make a layer above (a WebSocket message being
/// assembled) hold stays small.
pub(crate) struct Gated<S> {
    inner: S,
    gate: Arc<Gate>,
    left: usize,
}

impl<S> Gated<S> {
    /// `inner`, reading at most `limit` bytes until `gate` opens.
    pub(crate) fn new(inner: S, gate: Arc<Gate>, limit: usize) -> Self {
        Self {
            inner,
            gate,
            left: limit,
        }
    }

    /// The stream itself once its gate is open (nothing left to limit), or this.
    pub(crate) fn into_open(self) -> Result<S, Self> {
        if self.gate.is_open() {
            Ok(self.inner)
        } else {
            Err(self)
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Gated<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.gate.is_open() {
            return Pin::new(&mut self.inner).poll_read(cx, buf);
        }
        if self.left == 0 {
            self.gate.waker.register(cx.waker());
            // Opened between the check and the registration: read now.
            if !self.gate.is_open() {
                return Poll::Pending;
            }
            return Pin::new(&mut self.inner).poll_read(cx, buf);
        }
        let room = buf.remaining().min(self.left);
        // Initialised room (no unsafe): only while unauthenticated, and small.
        let mut limited = ReadBuf::new(buf.initialize_unfilled_to(room));
        ready!(Pin::new(&mut self.inner).poll_read(cx, &mut limited))?;
        let n = limited.filled().len();
        buf.advance(n);
        self.left -= n;
        Poll::Ready(Ok(()))
    }
}

write_through!(Gated);

pub(crate) use write_through;

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn a_gated_stream_reads_its_limit_then_waits_for_the_gate() {
        let (a, mut b) = tokio::io::duplex(64);
        tokio::io::AsyncWriteExt::write_all(&mut b, b"0123456789")
            .await
            .unwrap();
        let gate = Arc::new(Gate::default());
        let mut g = Gated::new(a, gate.clone(), 4);
        let mut got = [0u8; 10];
        let n = g.read(&mut got).await.unwrap();
        assert_eq!(&got[..n], b"0123");
        let more =
            tokio::time::timeout(std::time::Duration::from_millis(50), g.read(&mut got)).await;
        assert!(more.is_err(), "waits at the limit");
        let opener = tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            gate.open();
        });
        let n = g.read(&mut got).await.unwrap();
        assert_eq!(&got[..n], b"456789");
        opener.await.unwrap();
    }

    #[tokio::test]
    async fn prefix_is_read_first() {
        let (a, mut b) = tokio::io::duplex(64);
        tokio::io::AsyncWriteExt::write_all(&mut b, b" world")
            .await
            .unwrap();
        drop(b);
        let mut p = Prefixed::new(b"hello".to_vec(), a);
        let mut s = String::new();
        p.read_to_string(&mut s).await.unwrap();
        assert_eq!(s, "hello world");
    }
}
