//! The server side: the HTTP/2 preface checked (anything else goes back to the
//! caller, every byte of it), then one HTTP/2 connection served, each gun request a
//! [`GrpcStream`] handed to the caller.

use bytes::Bytes;
use http::{HeaderValue, Method, Response, StatusCode};
use switchyard_proto::grpc::match_path;
use switchyard_proto::h2_settings::{self, FRAME_HEAD};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::time::{Instant, timeout_at};

use super::GrpcStream;
use crate::header::Refused;
use crate::io::{Io, Prefixed};

/// The client's connection preface (RFC 9113, section 3.4).
pub const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// How a node serves one HTTP/2 connection.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Streams open at once on one connection (1024). Each is one proxied
    /// connection, and Xray's client puts all of a user's on one HTTP/2 connection
    /// (it waits at the cap rather than opening another), so the cap is a user's
    /// connections at once, not a memory bound: the connection window bounds the
    /// data held.
    pub max_streams: u32,
    /// Each stream's receive window (1 MiB): one stream reaches full speed on a
    /// path of 100 ms at 80 Mbit/s.
    pub stream_window: u32,
    /// The connection's receive window (4 MiB): a few busy streams at once; memory
    /// held per connection is bounded by it.
    pub connection_window: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            max_streams: 1024,
            stream_window: 1024 * 1024,
            connection_window: 4 * 1024 * 1024,
        }
    }
}

/// Why a served connection ended in error (a clean close is `Ok`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The HTTP/2 handshake did not finish by the deadline.
    #[error("HTTP/2 handshake timed out")]
    Timeout,
    /// HTTP/2 failed (the peer's protocol error, a reset connection).
    #[error("HTTP/2: {0}")]
    Http2(#[from] h2::Error),
}

/// Reads the HTTP/2 preface by `deadline`. Gives back the stream with the preface
/// in front of it (for [`serve`]), or, when the bytes are not the preface (an
/// HTTP/1.1 probe, anything else) or stop coming, the stream and every byte read,
/// for a fallback. Reading stops at the first byte that differs.
pub async fn read_preface<S: AsyncRead + Unpin>(
    mut stream: S,
    deadline: Instant,
) -> Result<Prefixed<S>, Refused<S>> {
    let mut read = Vec::with_capacity(PREFACE.len());
    let mut buf = [0u8; 24];
    while read.len() < PREFACE.len() {
        let want = PREFACE.len() - read.len();
        let n = match timeout_at(deadline, stream.read(&mut buf[..want])).await {
            Ok(Ok(n)) if n > 0 => n,
            _ => {
                return Err(Refused {
                    stream,
                    read,
                    why: None,
                });
            }
        };
        let at = read.len();
        read.extend_from_slice(&buf[..n]);
        if read[..] != PREFACE[..at + n] {
            return Err(Refused {
                stream,
                read,
                why: Some("not an HTTP/2 connection preface".into()),
            });
        }
    }
    Ok(Prefixed::new(read, stream))
}

/// What h2 holds of a stream's messages until its connection writes them: two
/// whole messages of [`super::MAX_WRITE`], so that while one goes out the next is
/// taken whole where the pump read it (h2's default, 400 KiB, left room for 1.5 and
/// cut every other message, its rest copied behind a header of its own).
const SEND_BUFFER: usize = 2 * (super::MAX_WRITE + switchyard_proto::grpc::MAX_HEADER_LEN);

/// Serves one HTTP/2 connection on `io` (its preface unread, as [`read_preface`]
/// gives it back) until it closes: each `POST /{service_name}/Tun` (or `TunMulti`)
/// with a gRPC content type is answered `200` and handed to `each` with its mode;
/// `each` must not wait (spawn the stream's work). Another gRPC request is answered
/// as a gRPC server does, `grpc-status: 12` (UNIMPLEMENTED) in a trailers-only
/// answer; anything else `404`. The handshake must be done by `deadline`.
pub async fn serve<S: Io + 'static>(
    io: S,
    service_name: &str,
    settings: &Settings,
    deadline: Instant,
    mut each: impl FnMut(GrpcStream),
) -> Result<(), ServeError> {
    let (io, peer_max_frame) = read_settings(io, deadline).await;
    let frame = frame_payload(peer_max_frame);
    let handshake = h2::server::Builder::new()
        .max_concurrent_streams(settings.max_streams)
        .initial_window_size(settings.stream_window)
        .initial_connection_window_size(settings.connection_window)
        .max_header_list_size(16 * 1024)
        .max_send_buffer_size(SEND_BUFFER)
        .handshake::<_, Bytes>(io);
    let mut connection = timeout_at(deadline, handshake)
        .await
        .map_err(|_| ServeError::Timeout)??;
    while let Some(accepted) = connection.accept().await {
        let (request, mut respond) = accepted?;
        let grpc = request
            .headers()
            .get(http::header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"));
        let mode = match_path(request.uri().path(), service_name)
            .filter(|_| request.method() == Method::POST && grpc);
        let Some(mode) = mode else {
            tracing::debug!(
                path = request.uri().path(),
                "gRPC request for another service"
            );
            let _ = respond.send_response(refusal(grpc), true);
            continue;
        };
        let answer = Response::builder()
            .status(StatusCode::OK)
            .header(http::header::CONTENT_TYPE, "application/grpc")
            .body(())
            .unwrap_or_default();
        let Ok(send) = respond.send_response(answer, false) else {
            continue;
        };
        let forwarded = crate::header::forwarded_for_map(request.headers());
        each(
            GrpcStream::server(send, request.into_body(), mode)
                .with_forwarded_for(forwarded)
                .with_frame_payload(frame),
        );
    }
    Ok(())
}

/// Reads the client's preface and first frame ahead by `deadline`, and gives them back
/// in front of the stream with the largest frame the client takes
/// ([`h2_settings`]): the h2 crate keeps that value to itself. Bytes that are not a
/// SETTINGS frame worth reading ahead are handed on with the default; the h2 crate
/// then judges them.
async fn read_settings<S: AsyncRead + Unpin>(mut io: S, deadline: Instant) -> (Prefixed<S>, u32) {
    let mut read = Vec::with_capacity(PREFACE.len() + FRAME_HEAD);
    let default = h2_settings::DEFAULT_MAX_FRAME_SIZE;
    if !read_up_to(&mut io, &mut read, PREFACE.len() + FRAME_HEAD, deadline).await {
        return (Prefixed::new(read, io), default);
    }
    let mut head = [0u8; FRAME_HEAD];
    head.copy_from_slice(&read[PREFACE.len()..]);
    let Some(len) = h2_settings::settings_len(&head) else {
        return (Prefixed::new(read, io), default);
    };
    let whole = read.len() + len;
    if !read_up_to(&mut io, &mut read, whole, deadline).await {
        return (Prefixed::new(read, io), default);
    }
    let max = h2_settings::max_frame_size(&read[PREFACE.len() + FRAME_HEAD..]);
    (Prefixed::new(read, io), max)
}

/// Reads into `read` until it holds `want` bytes; false when the stream ends, fails
/// or `deadline` passes first (`read` keeps what came).
async fn read_up_to<S: AsyncRead + Unpin>(
    io: &mut S,
    read: &mut Vec<u8>,
    want: usize,
    deadline: Instant,
) -> bool {
    let mut buf = [0u8; 256];
    while read.len() < want {
        let room = (want - read.len()).min(buf.len());
        match timeout_at(deadline, io.read(&mut buf[..room])).await {
            Ok(Ok(n)) if n > 0 => read.extend_from_slice(&buf[..n]),
            _ => return false,
        }
    }
    true
}

/// The most of a message one DATA frame carries, for a client that takes frames of up
/// to `peer_max_frame` bytes: a whole message when it takes larger frames than the
/// default; else [`super::stream::FRAME_PAYLOAD`], so that each frame is one whole TLS
/// record.
fn frame_payload(peer_max_frame: u32) -> usize {
    if peer_max_frame > h2_settings::DEFAULT_MAX_FRAME_SIZE {
        usize::try_from(peer_max_frame).unwrap_or(super::stream::FRAME_PAYLOAD)
    } else {
        super::stream::FRAME_PAYLOAD
    }
}

/// What a gRPC server answers a request it does not serve: a gRPC one gets
/// trailers-only `grpc-status: 12`, anything else `404`.
fn refusal(grpc: bool) -> Response<()> {
    let mut response = Response::new(());
    if grpc {
        let headers = response.headers_mut();
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/grpc"),
        );
        headers.insert("grpc-status", HeaderValue::from_static("12"));
        headers.insert(
            "grpc-message",
            HeaderValue::from_static("unknown service or method"),
        );
    } else {
        *response.status_mut() = StatusCode::NOT_FOUND;
    }
    response
}
