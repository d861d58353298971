//! The client side: each stream a session of requests, on connections a [`Pool`]
//! shares among a stack's connects.
//!
//! - The mode: `auto` is Xray 24.11.21's rule, `stream-up` when the layers below
//!   are REALITY or TLS offering ALPN `h2`, `packet-up` otherwise.
//! - HTTP/2 (REALITY, or TLS that agreed on `h2`): a stream's download and uploads
//!   go on one connection, and streams share connections as XMUX says
//!   (`max_concurrency`, `max_connections`, `c_max_reuse_times`,
//!   `c_max_lifetime_ms`; unset, Xray's defaults: 16–32 streams at once, 64–128
//!   streams in a connection's life), so parallel streams do not look like
//!   parallel connections.
//! - HTTP/1.1 (plain TCP, or TLS that agreed on `http/1.1`): the download's GET
//!   holds a connection of its own; POSTs go on kept-alive connections.
//! - packet-up: the upload in POSTs `{path}{session}/{seq}` of at most a picked
//!   `sc_max_each_post_bytes`, at least a picked `sc_min_posts_interval_ms` apart,
//!   at most [`MAX_POSTS_IN_FLIGHT`] unanswered.
//! - Every request carries `x_padding` of a length picked in `x_padding_bytes`,
//!   after the configured path's own query.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use switchyard_proto::xhttp::{Mode, Settings, normalize_path, padding_param, path_query};
use tokio::sync::{Semaphore, mpsc};
use tokio::time::Instant;

use super::client_conn::{
    Dialed, H1Send, H2Send, OpenGuard, ReqBody, State, handshake_h1, handshake_h2, random_u32,
    session_id,
};
use super::client_stream::{Keep, UploadError, XhttpStream};
use crate::io::BoxIo;

/// Unanswered packet-up POSTs of one stream, at most (the server keeps up to its
/// `sc_max_buffered_posts` out of order; over HTTP/1.1 each is a connection).
pub const MAX_POSTS_IN_FLIGHT: usize = 4;
/// How long one packet-up POST (its connection included), or the connection for a
/// stream-up POST over HTTP/1.1, may take.
pub const POST_TIMEOUT: Duration = Duration::from_secs(30);
/// Chunks a stream's writes queue for its upload (each at most
/// [`MAX_WRITE`](super::client_stream::MAX_WRITE) bytes).
const UPLOAD_QUEUE: usize = 16;
/// What a response to a POST may carry (Xray's are empty); more is not read.
const MAX_POST_RESPONSE: usize = 64 * 1024;

/// Dials the layers below XHTTP: a new connection each call.
pub type Dial<E> =
    Arc<dyn Fn() -> Pin<Box<dyn Future<Output = Result<Dialed, E>> + Send>> + Send + Sync>;

/// Why a stream could not be opened, or its upload stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The server answered a request with other than `200`.
    #[error("server answered {status} to the {request}")]
    Status {
        /// The status.
        status: StatusCode,
        /// Which request: `download GET`, `stream-up POST`, `packet-up POST`, `stream-one POST`.
        request: &'static str,
    },
    /// The HTTP/1.1 or HTTP/2 handshake on a new connection failed.
    #[error("{version} connection: {source}")]
    Handshake {
        /// `HTTP/1.1` or `HTTP/2`.
        version: &'static str,
        /// hyper's error.
        #[source]
        source: hyper::Error,
    },
    /// A request failed before its answer.
    #[error("{request}: {source}")]
    Request {
        /// Which request.
        request: &'static str,
        /// hyper's error.
        #[source]
        source: hyper::Error,
    },
    /// stream-one asked of a server that speaks HTTP/1.1 here.
    #[error("stream-one needs HTTP/2 (TLS with ALPN h2, or REALITY); this connection is HTTP/1.1")]
    StreamOneNeedsH2,
    /// The request could not be made from the settings (a path or host that is not
    /// valid in a URI).
    #[error("the request {0}")]
    Build(#[from] http::Error),
    /// A packet-up POST took longer than [`POST_TIMEOUT`].
    #[error("a packet-up POST took longer than {}s", POST_TIMEOUT.as_secs())]
    Timeout,
}

/// The connections an XHTTP layer's streams share, kept by every clone of its
/// [`Stack`](crate::dial::Stack).
#[derive(Clone, Default)]
pub struct Pool(Arc<Mutex<State>>);

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("xhttp::Pool")
    }
}

/// Where a stream's requests go.
#[derive(Debug, Clone)]
pub struct Target<'a> {
    /// The layer's settings.
    pub settings: &'a Settings,
    /// The `Host` (HTTP/1.1) or `:authority` (HTTP/2).
    pub host: &'a str,
    /// Whether the layers below are TLS or REALITY (the scheme `https`).
    pub tls: bool,
    /// Whether `auto` picks `stream-up`: REALITY below, or TLS offering `h2`.
    pub stream_up_auto: bool,
}

impl Target<'_> {
    /// The mode this target's streams use (`auto` resolved).
    pub fn mode(&self) -> Mode {
        match self.settings.mode {
            Mode::Auto if self.stream_up_auto => Mode::StreamUp,
            Mode::Auto => Mode::PacketUp,
            mode => mode,
        }
    }
}

/// A request's parts that every request of a stream shares.
#[derive(Clone)]
struct Requests {
    scheme: &'static str,
    host: String,
    /// `{path}{session}` (stream-one: `{path}`).
    base: String,
    query: Option<String>,
    x_padding: switchyard_proto::xhttp::Range,
    grpc_header: bool,
}

impl Requests {
    fn new(target: &Target<'_>, session: &str) -> Self {
        Self {
            scheme: if target.tls { "https" } else { "http" },
            host: target.host.to_owned(),
            base: format!("{}{session}", normalize_path(&target.settings.path)),
            query: path_query(&target.settings.path).map(str::to_owned),
            x_padding: target.settings.x_padding_bytes,
            grpc_header: !target.settings.no_grpc_header,
        }
    }

    /// A request to `{base}{suffix}` with fresh padding.
    fn build(
        &self,
        method: Method,
        suffix: &str,
        h2: bool,
        body: ReqBody,
    ) -> Result<Request<ReqBody>, ClientError> {
        let mut query = self.query.clone().unwrap_or_default();
        let padding = padding_param(self.x_padding.pick(random_u32()));
        if !padding.is_empty() {
            if !query.is_empty() {
                query.push('&');
            }
            query.push_str(&padding);
        }
        let path = if query.is_empty() {
            format!("{}{suffix}", self.base)
        } else {
            format!("{}{suffix}?{query}", self.base)
        };
        let mut request = Request::builder().method(method);
        request = if h2 {
            request
                .uri(format!("{}://{}{path}", self.scheme, self.host))
                .header(header::USER_AGENT, "Go-http-client/2.0")
        } else {
            request
                .uri(path)
                .header(header::HOST, &self.host)
                .header(header::USER_AGENT, "Go-http-client/1.1")
        };
        if let ReqBody::Full(Some(data)) = &body {
            request = request.header(header::CONTENT_LENGTH, data.len());
        }
        if matches!(body, ReqBody::Channel(_)) && self.grpc_header {
            request = request.header(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/grpc"),
            );
        }
        Ok(request.body(body)?)
    }
}

/// The connection a stream's download went on, and how its uploads reach the server.
enum Via<E> {
    H2(H2Send),
    H1 { pool: Pool, dial: Dial<E> },
}

impl<E> Clone for Via<E> {
    fn clone(&self) -> Self {
        match self {
            Self::H2(s) => Self::H2(s.clone()),
            Self::H1 { pool, dial } => Self::H1 {
                pool: pool.clone(),
                dial: dial.clone(),
            },
        }
    }
}

/// What the download's connection turned out to be.
enum Down {
    H2(H2Send, OpenGuard),
    H1(H1Send),
}

impl Pool {
    /// How many HTTP/2 connections XMUX keeps now.
    pub fn connections(&self) -> usize {
        self.state().h2_count()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Opens a stream to `target`: a new session whose download GET (stream-one: its
    /// POST) is sent, on a pooled connection or one from `dial` (the TCP connection
    /// and the layers below XHTTP). `fail` turns an HTTP failure into the caller's
    /// error. The answer is read lazily, as Xray's client does (a CDN may hold its
    /// head until the first byte of the body): the stream's first read waits for it,
    /// and fails with a [`ClientError`] inside the `io::Error` when it is not `200`.
    pub async fn open<E>(
        &self,
        target: &Target<'_>,
        dial: Dial<E>,
        fail: impl Fn(ClientError) -> E,
    ) -> Result<XhttpStream, E>
    where
        E: std::fmt::Display + Send + 'static,
    {
        let mode = target.mode();
        let session = if mode == Mode::StreamOne {
            String::new()
        } else {
            session_id()
        };
        let requests = Requests::new(target, &session);
        let down = self.connection(target, &dial, &fail).await?;
        let up_error: UploadError = Arc::default();
        let (tx, rx) = mpsc::channel::<Bytes>(UPLOAD_QUEUE);
        if mode == Mode::StreamOne {
            let Down::H2(send, guard) = down else {
                return Err(fail(ClientError::StreamOneNeedsH2));
            };
            let request = requests
                .build(Method::POST, "", true, ReqBody::Channel(rx))
                .map_err(&fail)?;
            let answer = send.clone().send_request(request);
            let pending = Box::pin(async move {
                let response = answer.await.map_err(|source| {
                    std::io::Error::other(ClientError::Request {
                        request: "stream-one POST",
                        source,
                    })
                })?;
                ok(response, "stream-one POST").map_err(std::io::Error::other)
            });
            return Ok(XhttpStream::pending(
                pending,
                tx,
                up_error,
                Keep::H2 {
                    _send: send,
                    _guard: guard,
                },
            ));
        }
        let get = requests
            .build(
                Method::GET,
                "",
                matches!(down, Down::H2(..)),
                ReqBody::Empty,
            )
            .map_err(&fail)?;
        // The download's answer is read lazily, as Xray's client does: a CDN may hold
        // the answer's head until its first byte, and the server sends none before
        // the upload brings something to answer.
        let (answer, via, keep): (Answer, _, _) = match down {
            Down::H2(send, guard) => {
                let answer = send.clone().send_request(get);
                (
                    Box::pin(answer),
                    Via::H2(send.clone()),
                    Keep::H2 {
                        _send: send,
                        _guard: guard,
                    },
                )
            }
            Down::H1(mut send) => {
                let answer = send.send_request(get);
                let via = Via::H1 {
                    pool: self.clone(),
                    dial: dial.clone(),
                };
                (Box::pin(answer), via, Keep::H1 { _send: send })
            }
        };
        let pending = Box::pin(async move {
            let response = answer.await.map_err(|source| {
                std::io::Error::other(ClientError::Request {
                    request: "download GET",
                    source,
                })
            })?;
            ok(response, "download GET").map_err(std::io::Error::other)
        });
        match mode {
            Mode::StreamUp => {
                tokio::spawn(stream_up(via, requests, rx, up_error.clone()));
            }
            _ => {
                let max_post = target.settings.sc_max_each_post_bytes.pick(random_u32());
                let interval = target.settings.sc_min_posts_interval_ms;
                let packets = Packets {
                    via,
                    requests,
                    max_post: (max_post as usize).max(1),
                    interval,
                    error: up_error.clone(),
                };
                tokio::spawn(packets.run(rx));
            }
        }
        Ok(XhttpStream::pending(pending, tx, up_error, keep))
    }

    /// The connection for a stream's download: XMUX's pick when the server speaks
    /// HTTP/2 (or it is not known yet), a new one for HTTP/1.1.
    async fn connection<E>(
        &self,
        target: &Target<'_>,
        dial: &Dial<E>,
        fail: &impl Fn(ClientError) -> E,
    ) -> Result<Down, E> {
        if self.state().h2_known == Some(false) {
            let dialed = dial().await?;
            return self.handshake(dialed, fail).await;
        }
        let (entry, guard) = self.state().pick_h2(&target.settings.xmux);
        let made = entry
            .cell
            .get_or_try_init(|| async {
                let dialed = dial().await.map_err(Made::Dial)?;
                if !dialed.h2 {
                    return Err(Made::H1(dialed.io));
                }
                handshake_h2(dialed.io).await.map_err(Made::Handshake)
            })
            .await;
        match made {
            Ok(send) => {
                self.state().h2_known = Some(true);
                Ok(Down::H2(send.clone(), guard))
            }
            Err(made) => {
                self.state().drop_h2(&entry);
                match made {
                    Made::H1(io) => {
                        self.state().h2_known = Some(false);
                        self.handshake(Dialed { io, h2: false }, fail).await
                    }
                    Made::Dial(e) => Err(e),
                    Made::Handshake(source) => Err(fail(ClientError::Handshake {
                        version: "HTTP/2",
                        source,
                    })),
                }
            }
        }
    }

    /// HTTP/1.1 or HTTP/2 on a connection just dialed.
    async fn handshake<E>(
        &self,
        dialed: Dialed,
        fail: &impl Fn(ClientError) -> E,
    ) -> Result<Down, E> {
        if dialed.h2 {
            // A server that agreed on h2 after all: a connection of its own.
            let send = handshake_h2(dialed.io).await.map_err(|source| {
                fail(ClientError::Handshake {
                    version: "HTTP/2",
                    source,
                })
            })?;
            return Ok(Down::H2(send, OpenGuard::alone()));
        }
        let send = handshake_h1(dialed.io).await.map_err(|source| {
            fail(ClientError::Handshake {
                version: "HTTP/1.1",
                source,
            })
        })?;
        Ok(Down::H1(send))
    }
}

/// A request's answer, not yet read.
type Answer = Pin<Box<dyn Future<Output = hyper::Result<Response<Incoming>>> + Send>>;

/// Why the first stream on an XMUX entry did not make its connection.
enum Made<E> {
    Dial(E),
    Handshake(hyper::Error),
    /// The server agreed on HTTP/1.1: the connection, for the download.
    H1(BoxIo),
}

/// The body of a `200` response, or the status as the error.
fn ok(response: Response<Incoming>, request: &'static str) -> Result<Incoming, ClientError> {
    if response.status() != StatusCode::OK {
        return Err(ClientError::Status {
            status: response.status(),
            request,
        });
    }
    Ok(response.into_body())
}

/// Records the first reason the upload stopped.
fn record(error: &UploadError, why: String) {
    tracing::debug!("XHTTP upload: {why}");
    let mut slot = error.lock().unwrap_or_else(|p| p.into_inner());
    slot.get_or_insert(why);
}

/// stream-up: one POST whose body is what the stream writes.
async fn stream_up<E: std::fmt::Display>(
    via: Via<E>,
    requests: Requests,
    rx: mpsc::Receiver<Bytes>,
    error: UploadError,
) {
    let result = match via {
        Via::H2(send) => {
            match requests.build(Method::POST, "", true, ReqBody::Channel(rx)) {
                Ok(request) => send.clone().send_request(request).await.map_err(|source| {
                    ClientError::Request {
                        request: "stream-up POST",
                        source,
                    }
                }),
                Err(e) => Err(e),
            }
        }
        Via::H1 { pool, dial } => {
            let connection = tokio::time::timeout(POST_TIMEOUT, h1_connection(&pool, &dial, false));
            let mut send = match connection.await {
                Ok(Ok((send, _))) => send,
                Ok(Err(why)) => return record(&error, why),
                Err(_) => {
                    return record(
                        &error,
                        format!(
                            "no connection for the stream-up POST within {}s",
                            POST_TIMEOUT.as_secs()
                        ),
                    );
                }
            };
            match requests.build(Method::POST, "", false, ReqBody::Channel(rx)) {
                Ok(request) => {
                    send.send_request(request)
                        .await
                        .map_err(|source| ClientError::Request {
                            request: "stream-up POST",
                            source,
                        })
                }
                Err(e) => Err(e),
            }
        }
    };
    match result.and_then(|r| ok(r, "stream-up POST")) {
        // A server may answer at once (ours) or at the session's end (Xray): the
        // answer is held, read and discarded, until it ends, since dropping it
        // would cancel the request whose body is still the upload.
        Ok(mut body) => {
            while let Some(frame) = body.frame().await {
                if frame.is_err() {
                    break;
                }
            }
        }
        Err(e) => record(&error, e.to_string()),
    }
}

/// An idle HTTP/1.1 connection of the pool (unless `fresh`), or a new one; whether
/// it was idle.
async fn h1_connection<E: std::fmt::Display>(
    pool: &Pool,
    dial: &Dial<E>,
    fresh: bool,
) -> Result<(H1Send, bool), String> {
    let idle = if fresh { None } else { pool.state().take_h1() };
    if let Some(mut send) = idle
        && send.ready().await.is_ok()
    {
        return Ok((send, true));
    }
    let dialed = dial().await.map_err(|e| e.to_string())?;
    let send = handshake_h1(dialed.io).await.map_err(|source| {
        ClientError::Handshake {
            version: "HTTP/1.1",
            source,
        }
        .to_string()
    })?;
    Ok((send, false))
}

/// packet-up's sender: batches what the stream writes into numbered POSTs.
struct Packets<E> {
    via: Via<E>,
    requests: Requests,
    max_post: usize,
    interval: switchyard_proto::xhttp::Range,
    error: UploadError,
}

impl<E: std::fmt::Display + Send + 'static> Packets<E> {
    async fn run(self, mut rx: mpsc::Receiver<Bytes>) {
        let in_flight = Arc::new(Semaphore::new(MAX_POSTS_IN_FLIGHT));
        let mut pending = BytesMut::new();
        let mut seq: u64 = 0;
        let mut last: Option<Instant> = None;
        loop {
            if pending.is_empty() {
                match rx.recv().await {
                    Some(data) => pending.extend_from_slice(&data),
                    None => break,
                }
            }
            if let Some(last) = last {
                let gap = Duration::from_millis(u64::from(self.interval.pick(random_u32())));
                tokio::time::sleep_until(last + gap).await;
            }
            // What came meanwhile goes in the same POST.
            while pending.len() < self.max_post {
                match rx.try_recv() {
                    Ok(data) => pending.extend_from_slice(&data),
                    Err(_) => break,
                }
            }
            let take = pending.len().min(self.max_post);
            let packet = pending.split_to(take).freeze();
            let Ok(permit) = in_flight.clone().acquire_owned().await else {
                break;
            };
            if self
                .error
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .is_some()
            {
                break;
            }
            let post = self.post(seq, packet);
            let error = self.error.clone();
            tokio::spawn(async move {
                let result = tokio::time::timeout(POST_TIMEOUT, post).await;
                drop(permit);
                match result {
                    Ok(Ok(())) => {}
                    Ok(Err(why)) => record(&error, why),
                    Err(_) => record(&error, ClientError::Timeout.to_string()),
                }
            });
            seq += 1;
            last = Some(Instant::now());
        }
        // The stream's writes fail from here on; the POSTs in flight finish.
        drop(rx);
    }

    /// One POST `{base}/{seq}`.
    fn post(
        &self,
        seq: u64,
        packet: Bytes,
    ) -> impl Future<Output = Result<(), String>> + Send + 'static {
        let via = self.via.clone();
        let requests = self.requests.clone();
        async move {
            let suffix = format!("/{seq}");
            let body = ReqBody::Full(Some(packet));
            let (response, h1) = match via {
                Via::H2(send) => {
                    let request = requests
                        .build(Method::POST, &suffix, true, body)
                        .map_err(|e| e.to_string())?;
                    (send.clone().send_request(request).await, None)
                }
                Via::H1 { pool, dial } => {
                    let ReqBody::Full(Some(packet)) = body else {
                        unreachable!("made above")
                    };
                    let (mut send, reused) = h1_connection(&pool, &dial, false).await?;
                    let request = requests
                        .build(
                            Method::POST,
                            &suffix,
                            false,
                            ReqBody::Full(Some(packet.clone())),
                        )
                        .map_err(|e| e.to_string())?;
                    let mut response = send.send_request(request).await;
                    if response.is_err() && reused {
                        // A kept-alive connection the server closed meanwhile: once
                        // more on a new one, as Xray's client does.
                        (send, _) = h1_connection(&pool, &dial, true).await?;
                        let request = requests
                            .build(Method::POST, &suffix, false, ReqBody::Full(Some(packet)))
                            .map_err(|e| e.to_string())?;
                        response = send.send_request(request).await;
                    }
                    (response, Some((pool, send)))
                }
            };
            let response = response.map_err(|source| {
                ClientError::Request {
                    request: "packet-up POST",
                    source,
                }
                .to_string()
            })?;
            let body = ok(response, "packet-up POST").map_err(|e| e.to_string())?;
            // Read the answer to its end so the connection can carry the next POST.
            let limited = http_body_util::Limited::new(body, MAX_POST_RESPONSE);
            limited.collect().await.map_err(|e| e.to_string())?;
            if let Some((pool, send)) = h1 {
                pool.state().put_h1(send);
            }
            Ok(())
        }
    }
}
