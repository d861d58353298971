//! [`GrpcStream`]: one gun stream (an HTTP/2 request and its response) as a byte
//! stream.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, ready};

use bytes::{Buf, Bytes, BytesMut};
use h2::{RecvStream, SendStream};
use http::HeaderMap;
use switchyard_proto::grpc::{self, Decoder, Mode};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::io::ChunkWrite;

/// The most payload one write frames in one gRPC message: 261,964 bytes (about
/// 256 KiB). To a peer that takes large frames (Go's HTTP/2 client: sing-box, mihomo)
/// the message goes in one frame; to one at the default size (grpc-go's: Xray) in
/// sixteen frames of [`FRAME_PAYLOAD`], the last 27 bytes short, so no frame of a few
/// bytes takes a TLS record and a flush of its own. Each message costs the peer a
/// buffer and a decode: messages of four frames (65,491 bytes) gave Xray's client a
/// quarter of the bytes per message, and our node 0.88 of the throughput it has with
/// sixteen (measured in `cargo xtask bench node`, see `docs/benchmarks.md`). A longer
/// write is taken in parts, as `AsyncWrite` allows.
pub const MAX_WRITE: usize = 16 * FRAME_PAYLOAD - 36;

/// The most of a message one HTTP/2 DATA frame carries to a peer that takes frames of
/// the default size (grpc-go's client, Xray's): 16,375 bytes, so that the frame with
/// its 9-byte header is 16,384 bytes, one whole TLS record. A message is sent in
/// frames of this size (HTTP/2 lets a message span frames); frames of the default
/// largest size, 16,384 bytes, would each spill 9 bytes into a TLS record of their
/// own. A server's stream whose client takes larger frames (Go's HTTP/2 client:
/// 1 MiB) sends each message in one.
pub const FRAME_PAYLOAD: usize = 16_384 - 9;

/// The side of the request a stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// Answered a request: ends with trailers `grpc-status: 0`.
    Server,
    /// Made the request: ends with an empty DATA frame flagged END_STREAM.
    Client,
}

/// Where the response of a client's request is.
enum Recv {
    /// The response head has not come yet (a gRPC server may send it with its first
    /// message, after the client's first one).
    Waiting(h2::client::ResponseFuture),
    /// The body.
    Open(RecvStream),
    /// The body ended; its trailers are being read.
    Trailers(RecvStream),
    /// Ended cleanly.
    Done,
}

/// Counts a connection's open streams while alive (the client's pool opens
/// another connection at its cap).
pub(crate) struct Counted(pub(crate) Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One gun (or multi) stream as bytes: what is written goes out as gRPC messages,
/// what comes is decoded from them. Flow control is HTTP/2's: a write waits for
/// send capacity (so nothing queues beyond one message), and the receive window is
/// released as the bytes are read, so a slow reader slows its peer. Shutting down
/// ends the request (a client) or answers trailers `grpc-status: 0` (a server).
/// [`into_split`](Self::into_split) parts its two directions.
pub struct GrpcStream {
    read: GrpcReader,
    write: GrpcWriter,
    mode: Mode,
    /// A server's stream: its request's `X-Forwarded-For` lines.
    forwarded_for: Vec<String>,
}

/// A [`GrpcStream`]'s reading half: the messages that come, decoded.
pub struct GrpcReader {
    recv: Recv,
    decoder: Decoder,
    /// Received bytes not yet decoded (the rest of one DATA frame).
    chunk: Bytes,
}

/// A [`GrpcStream`]'s writing half: an [`AsyncWrite`] that copies what it is given
/// into each message, and a [`ChunkWrite`] that frames a chunk where it lies.
pub struct GrpcWriter {
    send: SendStream<Bytes>,
    side: Side,
    shut: bool,
    /// The most of a message one DATA frame carries.
    frame_payload: usize,
    _counted: Option<Counted>,
}

impl std::fmt::Debug for GrpcStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrpcStream")
            .field("side", &self.write.side)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl GrpcStream {
    /// A server's stream: the request's body and the answer's.
    pub(crate) fn server(send: SendStream<Bytes>, recv: RecvStream, mode: Mode) -> Self {
        Self::new(send, Recv::Open(recv), Side::Server, mode, None)
    }

    /// A client's stream: the answer is read when it comes.
    pub(crate) fn client(
        send: SendStream<Bytes>,
        response: h2::client::ResponseFuture,
        mode: Mode,
        counted: Option<Counted>,
    ) -> Self {
        Self::new(send, Recv::Waiting(response), Side::Client, mode, counted)
    }

    fn new(
        send: SendStream<Bytes>,
        recv: Recv,
        side: Side,
        mode: Mode,
        counted: Option<Counted>,
    ) -> Self {
        Self {
            read: GrpcReader {
                recv,
                decoder: Decoder::new(),
                chunk: Bytes::new(),
            },
            write: GrpcWriter {
                send,
                side,
                shut: false,
                frame_payload: FRAME_PAYLOAD,
                _counted: counted,
            },
            mode,
            forwarded_for: Vec::new(),
        }
    }

    /// Plain gun or multi mode, as the request's path said.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// A server's stream: the `X-Forwarded-For` lines of its request, in order (none
    /// on a client's).
    pub fn forwarded_for(&self) -> &[String] {
        &self.forwarded_for
    }

    /// The stream sending messages in DATA frames of at most `payload` bytes (at
    /// least one byte; [`FRAME_PAYLOAD`] unless the peer takes larger frames).
    pub(crate) fn with_frame_payload(mut self, payload: usize) -> Self {
        self.write.frame_payload = payload.max(1);
        self
    }

    /// The stream with its request's `X-Forwarded-For` lines.
    pub(crate) fn with_forwarded_for(mut self, lines: Vec<String>) -> Self {
        self.forwarded_for = lines;
        self
    }

    /// The two directions apart, each driven on its own.
    pub fn into_split(self) -> (GrpcReader, GrpcWriter) {
        (self.read, self.write)
    }
}

fn h2_io(e: h2::Error) -> std::io::Error {
    if e.is_io() {
        return e
            .into_io()
            .unwrap_or_else(|| std::io::Error::other("HTTP/2 I/O"));
    }
    let kind = if e.is_reset() || e.is_go_away() {
        std::io::ErrorKind::ConnectionReset
    } else {
        std::io::ErrorKind::Other
    };
    std::io::Error::new(kind, e)
}

/// A `grpc-status` other than 0 in `headers`, as an error.
fn status_error(headers: &HeaderMap) -> Option<std::io::Error> {
    let status = headers.get("grpc-status")?;
    if status.as_bytes() == b"0" {
        return None;
    }
    let status = String::from_utf8_lossy(status.as_bytes()).into_owned();
    Some(std::io::Error::new(
        std::io::ErrorKind::ConnectionRefused,
        format!("grpc-status {status}"),
    ))
}

impl AsyncRead for GrpcStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.read).poll_read(cx, buf)
    }
}

impl AsyncWrite for GrpcStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.write).poll_write(cx, data)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.write).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.write).poll_shutdown(cx)
    }
}

impl AsyncRead for GrpcReader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        loop {
            if !this.chunk.is_empty() {
                let limit = this.chunk.len().min(buf.remaining());
                let (taken, payload) = this
                    .decoder
                    .feed(&this.chunk[..limit])
                    .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
                buf.put_slice(payload);
                let got = !payload.is_empty();
                this.chunk.advance(taken);
                if let Recv::Open(recv) = &mut this.recv {
                    // The window opens again as the bytes are read.
                    let _ = recv.flow_control().release_capacity(taken);
                }
                if got {
                    return Poll::Ready(Ok(()));
                }
                continue;
            }
            match &mut this.recv {
                Recv::Waiting(response) => {
                    let response = ready!(Pin::new(response).poll(cx)).map_err(h2_io)?;
                    let status = response.status();
                    if let Some(e) = status_error(response.headers()) {
                        this.recv = Recv::Done;
                        return Poll::Ready(Err(e));
                    }
                    if status != http::StatusCode::OK {
                        this.recv = Recv::Done;
                        return Poll::Ready(Err(std::io::Error::new(
                            std::io::ErrorKind::ConnectionRefused,
                            format!("server answered {status}"),
                        )));
                    }
                    this.recv = Recv::Open(response.into_body());
                }
                Recv::Open(recv) => match ready!(recv.poll_data(cx)) {
                    Some(Ok(data)) => this.chunk = data,
                    Some(Err(e)) => return Poll::Ready(Err(h2_io(e))),
                    None => {
                        let Recv::Open(recv) = std::mem::replace(&mut this.recv, Recv::Done) else {
                            unreachable!("matched above")
                        };
                        this.recv = Recv::Trailers(recv);
                    }
                },
                Recv::Trailers(recv) => {
                    let trailers = ready!(recv.poll_trailers(cx));
                    this.recv = Recv::Done;
                    if let Ok(Some(trailers)) = trailers
                        && let Some(e) = status_error(&trailers)
                    {
                        return Poll::Ready(Err(e));
                    }
                    if !this.decoder.at_boundary() {
                        return Poll::Ready(Err(std::io::ErrorKind::UnexpectedEof.into()));
                    }
                    return Poll::Ready(Ok(()));
                }
                Recv::Done => return Poll::Ready(Ok(())),
            }
        }
    }
}

impl GrpcWriter {
    /// Waits for send capacity: the payload bytes one message may carry now, from 1
    /// to `want`. Exactly a whole message's room is asked for, so none is left over
    /// after it (a few bytes left over would make the next message one byte long).
    fn poll_room(&mut self, cx: &mut Context<'_>, want: usize) -> Poll<std::io::Result<usize>> {
        if self.shut {
            return Poll::Ready(Err(std::io::ErrorKind::BrokenPipe.into()));
        }
        self.send.reserve_capacity(grpc::header(want).1 + want);
        while self.send.capacity() == 0 {
            match ready!(self.send.poll_capacity(cx)) {
                Some(Ok(_)) => {}
                Some(Err(e)) => return Poll::Ready(Err(h2_io(e))),
                None => return Poll::Ready(Err(std::io::ErrorKind::BrokenPipe.into())),
            }
        }
        // The header goes with its payload; it may pass the capacity by at most its
        // own few bytes, which h2 holds until the window opens.
        let room = self.send.capacity();
        if room >= grpc::header(want).1 + want {
            return Poll::Ready(Ok(want));
        }
        // The header of a payload shorter than `room` is no longer than its own.
        Poll::Ready(Ok(room.saturating_sub(grpc::header(room).1).clamp(1, want)))
    }

    /// Sends one whole message (header and payload) in frames of `frame_payload`.
    fn send_message(&mut self, mut message: Bytes) -> std::io::Result<()> {
        while !message.is_empty() {
            let frame = message.split_to(message.len().min(self.frame_payload));
            self.send.send_data(frame, false).map_err(h2_io)?;
        }
        Ok(())
    }
}

impl ChunkWrite for GrpcWriter {
    fn headroom(&self) -> usize {
        grpc::MAX_HEADER_LEN
    }

    /// The first message's header goes in the room in front of its payload, and the
    /// message to h2 as it lies: no copy. A window too short for the whole chunk
    /// takes it in several messages, each what fits; after the first, each header
    /// goes in a frame of its own ahead of its payload, still a part of the same
    /// buffer (a reader slower than the sender).
    async fn write_chunk(&mut self, mut chunk: BytesMut) -> std::io::Result<()> {
        const ROOM: usize = grpc::MAX_HEADER_LEN;
        let Some(left) = chunk.len().checked_sub(ROOM) else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "a chunk shorter than its headroom",
            ));
        };
        if left == 0 {
            return Ok(());
        }
        let n = std::future::poll_fn(|cx| self.poll_room(cx, left.min(MAX_WRITE))).await?;
        let (header, len) = grpc::header(n);
        chunk[ROOM - len..ROOM].copy_from_slice(&header[..len]);
        chunk.advance(ROOM - len);
        let mut rest = chunk.freeze();
        self.send_message(rest.split_to(len + n))?;
        while !rest.is_empty() {
            let want = rest.len().min(MAX_WRITE);
            let n = std::future::poll_fn(|cx| self.poll_room(cx, want)).await?;
            let (header, len) = grpc::header(n);
            self.send
                .send_data(Bytes::copy_from_slice(&header[..len]), false)
                .map_err(h2_io)?;
            self.send_message(rest.split_to(n))?;
        }
        Ok(())
    }

    async fn shutdown(&mut self) -> std::io::Result<()> {
        std::future::poll_fn(|cx| Pin::new(&mut *self).poll_shutdown(cx)).await
    }
}

impl AsyncWrite for GrpcWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        if data.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let n = ready!(this.poll_room(cx, data.len().min(MAX_WRITE)))?;
        let mut message = Vec::with_capacity(grpc::MAX_HEADER_LEN + n);
        grpc::encode_header(n, &mut message);
        message.extend_from_slice(&data[..n]);
        this.send_message(Bytes::from(message))?;
        Poll::Ready(Ok(n))
    }
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        // The connection's task writes what was sent.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if this.shut {
            return Poll::Ready(Ok(()));
        }
        this.shut = true;
        let ended = match this.side {
            Side::Server => {
                let mut trailers = HeaderMap::new();
                trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
                this.send.send_trailers(trailers)
            }
            Side::Client => this.send.send_data(Bytes::new(), true),
        };
        // A stream the peer reset already has nothing to end.
        let _ = ended;
        Poll::Ready(Ok(()))
    }
}
