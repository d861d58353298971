//! WebSocket as a byte stream: each write is one binary message, reads concatenate the
//! binary messages received. The client's upgrade is tungstenite's
//! ([`crate::dial::Layer::WebSocket`]); the server's is read here with
//! [`switchyard_proto::websocket`] ([`read_upgrade`], [`answer`], [`accept`]), so a
//! refused request keeps every byte it sent, for a fallback. Used by the tunnel's
//! WebSocket profiles, the node's WebSocket inbounds and the client's outbounds.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use futures_util::{Sink, Stream};
use switchyard_proto::websocket::{self, UpgradeConfig, UpgradeRequest};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::time::Instant;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::frame::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Bytes, Message};

use crate::header::read_request;
use crate::io::Prefixed;

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
    /// Our side is done: since when the Close frame waits ([`LINGER`]).
    linger: Option<Pin<Box<tokio::time::Sleep>>>,
    /// Our Close frame is queued.
    closing: bool,
    /// The peer's side is done (its Close frame, or the end of the connection).
    peer_done: bool,
    /// The shutdown waiting out its linger, woken when the peer is done.
    shutdown_waker: Option<std::task::Waker>,
}

/// How long our Close frame waits, once our side is done, for the peer to finish
/// first. WebSocket has no half-close: a Close ends both ways, and Xray's client drops
/// what it has read but not passed on yet when one arrives (a 1000 close included), so
/// the end of a download would be lost. Xray's own server waits 2 s (its policy's
/// `uplinkOnly`) before closing after the downlink; so do we.
pub const LINGER: std::time::Duration = std::time::Duration::from_secs(2);

impl<S> WsStream<S> {
    /// Wraps an upgraded connection (either side).
    pub fn new(inner: WebSocketStream<S>) -> Self {
        Self {
            inner,
            pending: Bytes::new(),
            linger: None,
            closing: false,
            peer_done: false,
            shutdown_waker: None,
        }
    }

    fn peer_is_done(&mut self) {
        self.peer_done = true;
        if let Some(waker) = self.shutdown_waker.take() {
            waker.wake();
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
                None | Some(Ok(Message::Close(_))) => {
                    self.peer_is_done();
                    return Poll::Ready(Ok(()));
                }
                Some(Ok(Message::Binary(b))) => self.pending = b,
                Some(Ok(Message::Text(_))) => {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "a text message on a tunnel link",
                    )));
                }
                // Pings are answered by tungstenite on the next write or flush.
                Some(Ok(_)) => {}
                Some(Err(e)) => {
                    self.peer_is_done();
                    return Poll::Ready(Err(ws_err(e)));
                }
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

    /// Ends our side: what is written goes out, then, once the peer is done or after
    /// [`LINGER`], a Close frame saying 1000 (normal closure).
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if !self.closing && !self.peer_done {
            ready!(Pin::new(&mut self.inner).poll_flush(cx)).map_err(ws_err)?;
            let linger = self
                .linger
                .get_or_insert_with(|| Box::pin(tokio::time::sleep(LINGER)));
            if linger.as_mut().poll(cx).is_pending() {
                self.shutdown_waker = Some(cx.waker().clone());
                return Poll::Pending;
            }
        }
        if !self.closing {
            match ready!(Pin::new(&mut self.inner).poll_ready(cx)) {
                Ok(()) => {
                    let normal = CloseFrame {
                        code: CloseCode::Normal,
                        reason: "".into(),
                    };
                    match Pin::new(&mut self.inner).start_send(Message::Close(Some(normal))) {
                        Ok(()) | Err(tokio_tungstenite::tungstenite::Error::ConnectionClosed) => {}
                        Err(e) => return Poll::Ready(Err(ws_err(e))),
                    }
                }
                Err(tokio_tungstenite::tungstenite::Error::ConnectionClosed) => {}
                Err(e) => return Poll::Ready(Err(ws_err(e))),
            }
            self.closing = true;
        }
        match ready!(Pin::new(&mut self.inner).poll_close(cx)) {
            Ok(()) | Err(tokio_tungstenite::tungstenite::Error::ConnectionClosed) => {
                Poll::Ready(Ok(()))
            }
            Err(e) => Poll::Ready(Err(ws_err(e))),
        }
    }
}

/// Bytes a server-side WebSocket reads per call. 16 KiB, one TLS record, instead of
/// tungstenite's 128 KiB, which every connection, authenticated or not, would hold.
pub const SERVER_READ_BUFFER: usize = 16 * 1024;

/// A server's WebSocket after the upgrade: the early data that came with the
/// request is read first.
pub type ServerStream<S> = Prefixed<WsStream<S>>;

/// An upgrade request read whole: the request, the stream, and what the client sent
/// behind the request's head (its first frames).
pub type Upgrade<S> = crate::header::Upgrade<S, UpgradeRequest>;

pub use crate::header::Refused;

/// Reads an upgrade request from `stream` until `deadline`, at most
/// [`websocket::MAX_HEAD_LEN`] bytes, checked against `config`.
pub async fn read_upgrade<S: AsyncRead + Unpin>(
    stream: S,
    config: &UpgradeConfig,
    deadline: Instant,
) -> Result<Upgrade<S>, Refused<S>> {
    read_request(stream, websocket::MAX_HEAD_LEN, deadline, |b| {
        websocket::parse_upgrade(b, config)
    })
    .await
}

/// Answers `request` with `101 Switching Protocols` on `stream`.
pub async fn answer<S: AsyncWrite + Unpin>(
    request: &UpgradeRequest,
    stream: &mut S,
) -> io::Result<()> {
    let mut response = Vec::with_capacity(256);
    request.encode_response(&mut response);
    stream.write_all(&response).await?;
    stream.flush().await
}

/// The server's side of an answered upgrade: `early` (data that came with the
/// request) is read first.
pub async fn server<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    early: Vec<u8>,
) -> ServerStream<S> {
    let mut config = config();
    config.read_buffer_size = SERVER_READ_BUFFER;
    let inner = WebSocketStream::from_raw_socket(stream, Role::Server, Some(config)).await;
    Prefixed::new(early, WsStream::new(inner))
}

/// Reads, checks and answers an upgrade on `stream`: [`read_upgrade`], [`answer`] and
/// [`server`] in one, for a server that needs nothing in between.
pub async fn accept<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    config: &UpgradeConfig,
    deadline: Instant,
) -> Result<ServerStream<Prefixed<S>>, Refused<S>> {
    let Upgrade {
        request,
        mut stream,
        rest,
        ..
    } = read_upgrade(stream, config, deadline).await?;
    if let Err(e) = answer(&request, &mut stream).await {
        return Err(Refused {
            stream,
            read: Vec::new(),
            why: Some(format!("answering the upgrade: {e}")),
        });
    }
    let early = request.early_data.unwrap_or_default();
    Ok(server(Prefixed::new(rest, stream), early).await)
}

/// Answers a refused request `404 Not Found` and closes: what a server with no
/// fallback says.
pub async fn refuse<S: AsyncWrite + Unpin>(mut stream: S) {
    let _ = stream
        .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        .await;
    let _ = stream.shutdown().await;
}
