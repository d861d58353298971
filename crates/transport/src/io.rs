//! Byte streams as every layer sees them.

use std::any::Any;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// A bidirectional byte stream: TCP, or any layer over it.
pub trait Io: AsyncRead + AsyncWrite + Send + Unpin + Any {
    /// The TCP socket itself when this stream is one, with no layer of ours between
    /// (nothing buffered, nothing encrypted): two such can be relayed inside the
    /// kernel (`switchyard_tunnel::splice`).
    fn as_tcp(&self) -> Option<&TcpStream>;
}

impl<T: AsyncRead + AsyncWrite + Send + Unpin + Any> Io for T {
    fn as_tcp(&self) -> Option<&TcpStream> {
        let any = self as &dyn Any;
        // A boxed stream boxed again (a generic layer over a `BoxIo`) is looked into.
        any.downcast_ref::<TcpStream>().or_else(|| {
            any.downcast_ref::<BoxIo>()
                .and_then(|inner| (**inner).as_tcp())
        })
    }
}

/// A boxed [`Io`]: what a stack of layers ends in.
pub type BoxIo = Box<dyn Io>;

/// The writing half of a stream that takes what it writes by value: each chunk comes
/// with [`headroom`](Self::headroom) bytes free in front of its payload, the writer
/// puts its framing there and sends the chunk as it is, where an [`AsyncWrite`] would
/// copy the payload into a buffer of its own (a gRPC stream's messages). Flow control
/// is the writer's: a write returns once the chunk is taken.
pub trait ChunkWrite: Send + Unpin {
    /// Bytes left free in front of each chunk's payload.
    fn headroom(&self) -> usize;

    /// Sends `chunk`, its payload after the first [`headroom`](Self::headroom) bytes
    /// (a chunk shorter than that is an `InvalidInput` error), whole.
    fn write_chunk(
        &mut self,
        chunk: bytes::BytesMut,
    ) -> impl std::future::Future<Output = std::io::Result<()>> + Send;

    /// Ends this direction: the peer reads the end of the stream.
    fn shutdown(&mut self) -> impl std::future::Future<Output = std::io::Result<()>> + Send;
}

/// A stream that first replays bytes already read from it (a ClientHello, a header's
/// tail, data that came with a handshake).
pub struct Prefixed<S> {
    prefix: Vec<u8>,
    at: usize,
    inner: S,
}

impl<S> Prefixed<S> {
    /// `inner` with `prefix` to be read first.
    pub fn new(prefix: Vec<u8>, inner: S) -> Self {
        Self {
            prefix,
            at: 0,
            inner,
        }
    }

    /// Bytes of the prefix not yet read.
    pub fn buffered(&self) -> usize {
        self.prefix.len() - self.at
    }

    /// The stream behind the prefix.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Prefixed<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.at < self.prefix.len() {
            let n = (self.prefix.len() - self.at).min(buf.remaining());
            let at = self.at;
            buf.put_slice(&self.prefix[at..at + n]);
            self.at += n;
            if self.at == self.prefix.len() {
                self.prefix = Vec::new();
                self.at = 0;
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Prefixed<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, data)
    }
    // Vectored writes pass through: HTTP/2 (h2) and hyper write a frame's header and
    // its payload in one call when the stream takes them, one TLS record instead of
    // two.
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
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
    async fn only_a_bare_tcp_socket_is_one() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let tcp = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let bare: BoxIo = Box::new(tcp);
        assert!(bare.as_tcp().is_some());
        let tcp = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let layered: BoxIo = Box::new(Prefixed::new(Vec::new(), tcp));
        assert!(layered.as_tcp().is_none());
        let (a, _b) = tokio::io::duplex(64);
        let other: BoxIo = Box::new(a);
        assert!(other.as_tcp().is_none());
        let twice: BoxIo = Box::new(bare);
        assert!(twice.as_tcp().is_some(), "a box in a box is looked into");
    }

    #[tokio::test]
    async fn the_prefix_is_read_first_then_the_stream() {
        let (a, mut b) = tokio::io::duplex(64);
        b.write_all(b" world").await.unwrap();
        drop(b);
        let mut p = Prefixed::new(b"hello".to_vec(), a);
        let mut s = String::new();
        p.read_to_string(&mut s).await.unwrap();
        assert_eq!(s, "hello world");
    }

    #[tokio::test]
    async fn a_small_read_takes_the_prefix_a_piece_at_a_time() {
        let (a, _b) = tokio::io::duplex(64);
        let mut p = Prefixed::new(b"abcdef".to_vec(), a);
        let mut two = [0u8; 2];
        p.read_exact(&mut two).await.unwrap();
        assert_eq!(&two, b"ab");
        p.read_exact(&mut two).await.unwrap();
        assert_eq!(&two, b"cd");
    }
}
