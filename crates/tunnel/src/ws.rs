//! WebSocket as a byte stream: each write is one binary message, reads concatenate the
//! binary messages received. Used by the tunnel's WebSocket profiles and by the node's
//! WebSocket inbounds (after their own upgrade handling).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use futures_util::{Sink, Stream};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Bytes, Message};

/// Largest message accepted from the peer. 1 MiB: a link writes at most one TLS
/// record (about 16 KiB) per message, so this only bounds what a hostile peer can make
/// us buffer.
pub const MAX_MESSAGE: usize = 1 << 20;

/// The WebSocket settings of both sides.
pub fn config() -> WebSocketConfig {
    let mut config = WebSocketConfig::default();
    config.max_message_size = Some(MAX_MESSAGE);
    config.max_frame_size = Some(MAX_MESSAGE);
    config
}

/// A WebSocket connection read and written as bytes.
pub struct WsStream<S> {
    inner: WebSocketStream<S>,
    pending: Bytes,
}

impl<S> WsStream<S> {
    /// Wraps an upgraded connection (either side).
    pub fn new(inner: WebSocketStream<S>) -> Self {
        Self {
            inner,
            pending: Bytes::new(),
        }
    }
}

fn ws_err(e: tokio_tungstenite::tungstenite::Error) -> io::Error {
    io::Error::other(e)
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for WsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            if !self.pending.is_empty() {
                let n = self.pending.len().min(buf.remaining());
                let chunk = self.pending.split_to(n);
                buf.put_slice(&chunk);
                return Poll::Ready(Ok(()));
            }
            match ready!(Pin::new(&mut self.inner).poll_next(cx)) {
                None | Some(Ok(Message::Close(_))) => return Poll::Ready(Ok(())),
                Some(Ok(Message::Binary(b))) => self.pending = b,
                Some(Ok(Message::Text(_))) => {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "a text message on a tunnel link",
                    )));
                }
                // Pings are answered by tungstenite on the next write or flush.
                Some(Ok(_)) => {}
                Some(Err(e)) => return Poll::Ready(Err(ws_err(e))),
            }
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for WsStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        ready!(Pin::new(&mut self.inner).poll_ready(cx)).map_err(ws_err)?;
        Pin::new(&mut self.inner)
            .start_send(Message::Binary(Bytes::copy_from_slice(data)))
            .map_err(ws_err)?;
        Poll::Ready(Ok(data.len()))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx).map_err(ws_err)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match ready!(Pin::new(&mut self.inner).poll_close(cx)) {
            Ok(()) | Err(tokio_tungstenite::tungstenite::Error::ConnectionClosed) => {
                Poll::Ready(Ok(()))
            }
            Err(e) => Poll::Ready(Err(ws_err(e))),
        }
    }
}
