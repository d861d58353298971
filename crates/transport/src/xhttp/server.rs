//! The server side: an inbound's [`Server`] (its settings and the sessions all its
//! connections share), [`Server::read_first`] telling a client of ours from a probe
//! on a connection's first request, and [`Server::serve`] running the connection as
//! HTTP/1.1 or HTTP/2 (hyper), each stream a [`ServerStream`] handed to the caller
//! when its download GET (or stream-one POST) arrives.
//!
//! Every request is checked in order: the host (when one is configured), the path
//! under the configured one, the padding's length in `x_padding_bytes`, the request's
//! kind ([`classify`]) and the mode's ([`Mode::accepts`]). The first request of an
//! HTTP/1.1 connection that fails goes back to the caller with every byte read (for
//! the fallback); on HTTP/2, or on a later request, the answer is `404` with no body.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Request as HttpRequest, Response, StatusCode, header};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use switchyard_proto::xhttp::{
    Mode, Request, Settings, XhttpError, check_padding, classify, host_matches, normalize_path,
};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::time::{Instant, timeout_at};

use super::session::{Active, Limits, Pipe, ResponseBody, ServerStream, Session, Sessions};
use crate::header::{Refused, forwarded_for_map};
use crate::io::{Io, Prefixed};

/// The client's HTTP/2 connection preface (RFC 9113, section 3.4).
pub const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The longest first request head read before a connection is handed to HTTP
/// (24 KiB: room for the longest padding validation allows, 16 KiB, and the usual
/// headers); a longer one goes to the fallback.
pub const MAX_HEAD_LEN: usize = 24 * 1024;

/// Why a request is not one of ours.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The host is not the configured one (`None`: the request named none).
    #[error("host {0:?} is not the configured XHTTP host")]
    Host(Option<String>),
    /// The path, method, session, seq or padding is wrong.
    #[error(transparent)]
    Request(#[from] XhttpError),
    /// The request is XHTTP, but of a mode this inbound does not serve.
    #[error("a {kind} request on an inbound in mode {mode}")]
    Mode {
        /// The inbound's mode.
        mode: Mode,
        /// What the request was.
        kind: &'static str,
    },
}

/// Why a served connection ended in error (a clean close is `Ok`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// HTTP failed (the peer's protocol error, a reset connection).
    #[error("HTTP: {0}")]
    Http(#[from] hyper::Error),
}

/// A connection whose first request is ours (or HTTP/2, whose requests are checked
/// one by one): the stream with the bytes read put back in front.
pub struct First<S> {
    /// The stream, its first bytes to be read again.
    pub io: Prefixed<S>,
    /// It began with HTTP/2's preface (h2 after ALPN, or h2c with prior knowledge).
    pub http2: bool,
}

/// How many streams one HTTP/2 connection carries at once (1024, as gRPC's: a
/// client may put all its streams on one connection), and its windows.
const MAX_STREAMS: u32 = 1024;
const STREAM_WINDOW: u32 = 1024 * 1024;
const CONNECTION_WINDOW: u32 = 4 * 1024 * 1024;

/// An XHTTP inbound's server: its settings and the session table every one of its
/// connections shares.
pub struct Server {
    settings: Settings,
    base: String,
    sessions: Arc<Sessions>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("path", &self.base)
            .field("mode", &self.settings.mode)
            .finish_non_exhaustive()
    }
}

/// A request's kind with its session id owned (the request's body is taken later).
enum Kind {
    Download(String),
    StreamUp(String),
    Packet(String, u64),
    StreamOne,
}

impl Server {
    /// A server for `settings` with the default [`Limits`].
    pub fn new(settings: Settings) -> Self {
        Self::with_limits(settings, Limits::default())
    }

    /// A server for `settings` within `limits`.
    pub fn with_limits(settings: Settings, limits: Limits) -> Self {
        Self {
            base: normalize_path(&settings.path),
            sessions: Arc::new(Sessions::new(settings.sc_max_buffered_posts, limits)),
            settings,
        }
    }

    /// The settings served.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// How many sessions are open (waiting for their GET, or streaming).
    pub fn sessions(&self) -> usize {
        self.sessions.len()
    }

    /// Checks a request: `host` is its `Host` (or `:authority`), `target` its path
    /// and query as sent.
    pub fn check<'a>(
        &self,
        method: &str,
        target: &'a str,
        host: Option<&str>,
    ) -> Result<Request<'a>, Refusal> {
        if let Some(want) = &self.settings.host
            && !host.is_some_and(|h| host_matches(h, want))
        {
            return Err(Refusal::Host(host.map(|h| h.chars().take(64).collect())));
        }
        let kind = classify(&self.base, method, target)?;
        check_padding(target, self.settings.x_padding_bytes)?;
        if !self.settings.mode.accepts(&kind) {
            let kind = match kind {
                Request::Download { .. } => "download",
                Request::StreamUp { .. } => "stream-up",
                Request::Packet { .. } => "packet-up",
                Request::StreamOne => "stream-one",
            };
            return Err(Refusal::Mode {
                mode: self.settings.mode,
                kind,
            });
        }
        Ok(kind)
    }

    /// Reads a connection's first bytes by `deadline`: HTTP/2's preface, or an
    /// HTTP/1.1 request head (at most [`MAX_HEAD_LEN`]) that [`Server::check`]
    /// accepts. Anything else (another path or host, bad padding, another method, not
    /// HTTP, cut short) comes back with every byte read, for the fallback.
    pub async fn read_first<S: AsyncRead + Unpin>(
        &self,
        mut stream: S,
        deadline: Instant,
    ) -> Result<First<S>, Refused<S>> {
        let mut buf = Vec::with_capacity(1024);
        loop {
            if buf.len() >= PREFACE.len() && buf[..PREFACE.len()] == PREFACE[..] {
                return Ok(First {
                    io: Prefixed::new(buf, stream),
                    http2: true,
                });
            }
            let maybe_preface = buf.len() < PREFACE.len() && PREFACE.starts_with(&buf);
            if !maybe_preface {
                match self.first_head(&buf) {
                    Ok(true) => {
                        return Ok(First {
                            io: Prefixed::new(buf, stream),
                            http2: false,
                        });
                    }
                    Ok(false) => {}
                    Err(why) => {
                        return Err(Refused {
                            stream,
                            read: buf,
                            why: Some(why),
                        });
                    }
                }
            }
            if buf.len() >= MAX_HEAD_LEN {
                return Err(Refused {
                    stream,
                    read: buf,
                    why: Some(format!("request head longer than {MAX_HEAD_LEN} bytes")),
                });
            }
            let want = 2048.min(MAX_HEAD_LEN - buf.len());
            buf.reserve(want);
            let mut limited = (&mut stream).take(want as u64);
            match timeout_at(deadline, limited.read_buf(&mut buf)).await {
                Ok(Ok(n)) if n > 0 => {}
                _ => {
                    return Err(Refused {
                        stream,
                        read: buf,
                        why: None,
                    });
                }
            }
        }
    }

    /// Whether `buf` holds a whole request head of ours (`Ok(false)`: not whole yet).
    fn first_head(&self, buf: &[u8]) -> Result<bool, String> {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut request = httparse::Request::new(&mut headers);
        match request.parse(buf) {
            Ok(httparse::Status::Partial) => Ok(false),
            Err(e) => Err(format!("not an HTTP/1.1 request: {e}")),
            Ok(httparse::Status::Complete(_)) => {
                let host = request
                    .headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case("host"))
                    .and_then(|h| std::str::from_utf8(h.value).ok());
                let method = request.method.unwrap_or("");
                let target = request.path.unwrap_or("");
                self.check(method, target, host)
                    .map(|_| true)
                    .map_err(|e| e.to_string())
            }
        }
    }

    /// Serves one connection (as [`Server::read_first`] gave it back) until it closes,
    /// has had no request of ours by `deadline` (HTTP/2: its preface alone proves
    /// nothing), or has had no request in progress for `idle`. Each stream goes to
    /// `each` when its download GET (or stream-one POST) arrives; `each` must not wait
    /// (spawn the stream's work).
    pub async fn serve<S: Io + 'static>(
        self: &Arc<Self>,
        first: First<S>,
        deadline: Instant,
        idle: Duration,
        each: impl Fn(ServerStream) + Send + Sync + 'static,
    ) -> Result<(), ServeError> {
        let count = Arc::new(AtomicUsize::new(0));
        // Set once a request of ours came (an HTTP/1.1 connection's first did).
        let ours = Arc::new(AtomicBool::new(!first.http2));
        let each: Arc<dyn Fn(ServerStream) + Send + Sync> = Arc::new(each);
        let (server, counted, proved) = (self.clone(), count.clone(), ours.clone());
        let service = service_fn(move |request: HttpRequest<Incoming>| {
            let active = Active::new(&counted);
            let (server, each, proved) = (server.clone(), each.clone(), proved.clone());
            async move { Ok::<_, Infallible>(server.answer(request, &*each, &proved, active).await) }
        });
        let io = TokioIo::new(first.io);
        let watch = async {
            tokio::time::sleep_until(deadline).await;
            if ours.load(Ordering::Relaxed) {
                watch_idle(&count, idle).await;
            }
        };
        if first.http2 {
            let connection = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                .max_concurrent_streams(MAX_STREAMS)
                .initial_stream_window_size(STREAM_WINDOW)
                .initial_connection_window_size(CONNECTION_WINDOW)
                .max_header_list_size(MAX_HEAD_LEN as u32)
                .serve_connection(io, service);
            tokio::select! {
                served = connection => served?,
                () = watch => {}
            }
        } else {
            let connection = hyper::server::conn::http1::Builder::new()
                // Idle connections are the caller's `idle`'s: Xray's HTTP/1.1 client
                // keeps its upload connections pooled between POSTs.
                .header_read_timeout(None)
                .max_buf_size(64 * 1024)
                .serve_connection(io, service);
            tokio::select! {
                served = connection => served?,
                () = watch => {}
            }
        }
        Ok(())
    }

    /// Answers one request.
    async fn answer(
        self: Arc<Self>,
        request: HttpRequest<Incoming>,
        each: &(dyn Fn(ServerStream) + Send + Sync),
        ours: &AtomicBool,
        active: Active,
    ) -> Response<ResponseBody> {
        let kind = {
            let target = request.uri().path_and_query().map_or("/", |p| p.as_str());
            let host = request
                .headers()
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .or_else(|| request.uri().authority().map(|a| a.as_str()));
            match self.check(request.method().as_str(), target, host) {
                Ok(Request::Download { session }) => Kind::Download(session.to_owned()),
                Ok(Request::StreamUp { session }) => Kind::StreamUp(session.to_owned()),
                Ok(Request::Packet { session, seq }) => Kind::Packet(session.to_owned(), seq),
                Ok(Request::StreamOne) => Kind::StreamOne,
                Err(why) => {
                    tracing::debug!(path = request.uri().path(), "XHTTP request refused: {why}");
                    return status(StatusCode::NOT_FOUND);
                }
            }
        };
        ours.store(true, Ordering::Relaxed);
        let limits_pipe = || Pipe::new(self.sessions_limits().download_buffer);
        match kind {
            Kind::Download(id) => {
                let Ok(session) = self.sessions.upsert(&id) else {
                    return status(StatusCode::SERVICE_UNAVAILABLE);
                };
                if !session.start_download() {
                    return self.padded(StatusCode::CONFLICT, ResponseBody::Empty);
                }
                let pipe = limits_pipe();
                let forwarded = forwarded_for_map(request.headers());
                each(
                    ServerStream::session(
                        session.clone(),
                        pipe.clone(),
                        self.sessions.clone(),
                        &id,
                    )
                    .with_forwarded_for(forwarded),
                );
                self.download(pipe, Some(session), active)
            }
            Kind::StreamOne => {
                let pipe = limits_pipe();
                let forwarded = forwarded_for_map(request.headers());
                each(
                    ServerStream::one(request.into_body(), pipe.clone())
                        .with_forwarded_for(forwarded),
                );
                self.download(pipe, None, active)
            }
            Kind::StreamUp(id) => {
                let Ok(session) = self.sessions.upsert(&id) else {
                    return status(StatusCode::SERVICE_UNAVAILABLE);
                };
                if !session.set_body(request.into_body()) {
                    return self.padded(StatusCode::CONFLICT, ResponseBody::Empty);
                }
                self.padded(StatusCode::OK, ResponseBody::hold(&session, active))
            }
            Kind::Packet(id, seq) => self.packet(request, &id, seq).await,
        }
    }

    fn sessions_limits(&self) -> Limits {
        self.sessions.limits()
    }

    /// A packet-up POST: its body read whole (at most the top of
    /// `sc_max_each_post_bytes`, `413` past it, as Xray), then put in its place.
    async fn packet(
        &self,
        request: HttpRequest<Incoming>,
        id: &str,
        seq: u64,
    ) -> Response<ResponseBody> {
        let max = self.settings.sc_max_each_post_bytes.to as usize;
        let declared = request
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > max as u64) {
            return self.padded(StatusCode::PAYLOAD_TOO_LARGE, ResponseBody::Empty);
        }
        let Ok(session) = self.sessions.upsert(id) else {
            return status(StatusCode::SERVICE_UNAVAILABLE);
        };
        let payload = match Limited::new(request.into_body(), max).collect().await {
            Ok(body) => body.to_bytes(),
            Err(e) if e.is::<http_body_util::LengthLimitError>() => {
                return self.padded(StatusCode::PAYLOAD_TOO_LARGE, ResponseBody::Empty);
            }
            Err(_) => return status(StatusCode::BAD_REQUEST),
        };
        match session.push(seq, payload).await {
            Ok(()) => self.padded(StatusCode::OK, ResponseBody::Empty),
            Err(e) => {
                tracing::debug!(session = id, "XHTTP packet refused: {e}");
                self.padded(StatusCode::INTERNAL_SERVER_ERROR, ResponseBody::Empty)
            }
        }
    }

    /// A download's answer: `200`, its headers, the stream's bytes as they come.
    fn download(
        &self,
        pipe: Arc<Pipe>,
        session: Option<Arc<Session>>,
        active: Active,
    ) -> Response<ResponseBody> {
        let mut response = self.padded(
            StatusCode::OK,
            ResponseBody::Download {
                pipe,
                session,
                _active: active,
            },
        );
        let headers = response.headers_mut();
        // nginx and Apache do not buffer it; no cache keeps a copy.
        headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        if !self.settings.no_sse_header {
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream"),
            );
        }
        response
    }

    /// An answer with Xray's response headers: `X-Padding` of a length picked from
    /// `x_padding_bytes`, and the CORS headers of its browser dialer.
    fn padded(&self, code: StatusCode, body: ResponseBody) -> Response<ResponseBody> {
        let mut response = Response::new(body);
        *response.status_mut() = code;
        let headers = response.headers_mut();
        headers.insert("access-control-allow-origin", HeaderValue::from_static("*"));
        headers.insert(
            "access-control-allow-methods",
            HeaderValue::from_static("GET, POST"),
        );
        let len = self.settings.x_padding_bytes.pick(random_u32()) as usize;
        if len > 0
            && let Ok(value) = HeaderValue::from_maybe_shared(Bytes::from(vec![b'0'; len]))
        {
            headers.insert("x-padding", value);
        }
        response
    }
}

/// A bare answer: the status, no body, no header of ours.
fn status(code: StatusCode) -> Response<ResponseBody> {
    let mut response = Response::new(ResponseBody::Empty);
    *response.status_mut() = code;
    response
}

fn random_u32() -> u32 {
    use ring::rand::SecureRandom;
    let mut b = [0u8; 4];
    let _ = ring::rand::SystemRandom::new().fill(&mut b);
    u32::from_le_bytes(b)
}

/// Returns when no request has been in progress for `idle`.
async fn watch_idle(count: &AtomicUsize, idle: Duration) {
    let step = (idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(5));
    let mut idle_since = None;
    loop {
        let now = Instant::now();
        if count.load(Ordering::Relaxed) > 0 {
            idle_since = None;
        } else if now.duration_since(*idle_since.get_or_insert(now)) >= idle {
            return;
        }
        tokio::time::sleep(step).await;
    }
}
