//! The panel's end: the channel listener ([`serve_panel`]) and the channels it holds
//! ([`NodeChannel`]).
//!
//! Every accepted connection gets a TLS handshake deadline, counted from its accept
//! (a silent socket is closed at it, as is one stuck in its handshake); connections
//! that have not yet shown a pinned node certificate (in their handshake, in
//! enrollment, or waiting for [`Enroller::authorize`]) are bounded in number, in all
//! ([`PanelOptions::max_pending`]) and per source address
//! ([`PanelOptions::max_pending_per_source`]), so one address holding its whole share
//! leaves room for every other node's enrollment and re-join; past either limit a new
//! connection is closed at once. An enrollment connection must send its request's
//! head within [`PanelOptions::first_request_timeout`] of its handshake and carries
//! one HTTP/1.1 request with a bounded body within a deadline, then closes.

use core::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::Pin;
use crate::enroll::{EnrollAnswer, EnrollRefused, EnrollRequest, Enroller, MAX_ENROLL_BODY};
use crate::identity::PanelIdentity;
use crate::pending::{Pending, Refused, Slot};

/// The panel listener's tunables; [`Default`] holds every default.
#[derive(Debug, Clone)]
pub struct PanelOptions {
    /// A connection must finish its TLS handshake within this. 10 s: a slow path
    /// finishes well inside it; a silent socket is dropped soon.
    pub handshake_timeout: Duration,
    /// An enrollment connection is closed this long after it was accepted, answered or
    /// not. 30 s: the enroller's database calls fit many times over.
    pub enroll_deadline: Duration,
    /// Connections accepted but not yet a node's channel (TLS handshake, enrollment,
    /// authorization) at once; more are closed at once. 256: enrollments are rare and
    /// brief, so only a flood reaches it, and it bounds the memory a flood takes.
    pub max_pending: usize,
    /// Of those, at most this many from one source (an IPv4 address, an IPv6 /64);
    /// more from it are closed at once. 8: a node needs one connection at a time, a
    /// few nodes behind one NAT re-joining after a panel restart fit (the rest retry
    /// after their back-off), and it takes 32 sources to fill [`Self::max_pending`].
    pub max_pending_per_source: usize,
    /// An enrollment connection (TLS without a client certificate) must send its
    /// request's head within this after its handshake. 10 s: a node sends it at once.
    pub first_request_timeout: Duration,
    /// HTTP/2 keepalive ping interval. 5 s, with the timeout below: a dead path is
    /// noticed within 15 s.
    pub keepalive_interval: Duration,
    /// A ping unanswered this long closes the channel. 10 s.
    pub keepalive_timeout: Duration,
    /// Deadline of one [`NodeChannel::request`], answer body included. 10 s.
    pub request_timeout: Duration,
    /// Most bytes of a node's answer. 16 MiB: a node's full stats page and config fit.
    pub max_answer: usize,
}

impl Default for PanelOptions {
    fn default() -> Self {
        Self {
            handshake_timeout: Duration::from_secs(10),
            enroll_deadline: Duration::from_secs(30),
            max_pending: 256,
            max_pending_per_source: 8,
            first_request_timeout: Duration::from_secs(10),
            keepalive_interval: Duration::from_secs(5),
            keepalive_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(10),
            max_answer: 16 << 20,
        }
    }
}

/// Why a request over a channel failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChannelError {
    /// The channel is closed (the node went away or the path died); the node dials
    /// again by itself.
    #[error("the channel to server {server_id} is closed; it reconnects by itself")]
    Closed {
        /// The server.
        server_id: String,
    },
    /// No complete answer within the deadline.
    #[error("server {server_id} did not answer within {after:?}")]
    Timeout {
        /// The server.
        server_id: String,
        /// The deadline.
        after: Duration,
    },
    /// `path_and_query` is not an absolute path (with an optional query).
    #[error("{0:?} is not a request path (it must start with '/')")]
    BadPath(String),
    /// The answer was larger than [`PanelOptions::max_answer`].
    #[error("server {server_id} answered more than {limit} bytes")]
    AnswerTooLarge {
        /// The server.
        server_id: String,
        /// The limit.
        limit: usize,
    },
    /// The HTTP/2 exchange failed.
    #[error("request to server {server_id} failed: {reason}")]
    Failed {
        /// The server.
        server_id: String,
        /// What hyper said.
        reason: String,
    },
}

/// The authority requests over a channel carry (the node's router ignores it).
const NODE_AUTHORITY: &str = "node.switchyard.invalid";

struct ChannelInner {
    server_id: String,
    remote: SocketAddr,
    send: hyper::client::conn::http2::SendRequest<Full<Bytes>>,
    /// Cancelled when the connection ends, or to end it.
    done: CancellationToken,
    timeout: Duration,
    max_answer: usize,
}

/// One node's control channel, held by the panel: send requests to the node's control
/// API over it. Cheap to clone; clones share the connection and may be used from many
/// tasks at once. A node that dials again (after a lost path, or a restart) arrives as
/// a new `NodeChannel` for the same [`server_id`](Self::server_id); the panel keeps the
/// newest and [`close`](Self::close)s the older one, which may not have noticed yet.
#[derive(Clone)]
pub struct NodeChannel {
    inner: Arc<ChannelInner>,
}

impl core::fmt::Debug for NodeChannel {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("NodeChannel")
            .field("server_id", &self.inner.server_id)
            .field("remote", &self.inner.remote)
            .field("closed", &self.is_closed())
            .finish()
    }
}

impl NodeChannel {
    /// The server this channel's certificate was pinned for.
    pub fn server_id(&self) -> &str {
        &self.inner.server_id
    }

    /// The node's address as the panel sees it.
    pub fn remote(&self) -> SocketAddr {
        self.inner.remote
    }

    /// One request to the node's control API (`path_and_query` like
    /// `/v1/stats?cursor=3`), with a JSON body or none; the answer's status and body.
    /// Bounded by [`PanelOptions::request_timeout`].
    pub async fn request(
        &self,
        method: Method,
        path_and_query: &str,
        json_body: Option<Vec<u8>>,
    ) -> Result<(StatusCode, Bytes), ChannelError> {
        self.request_within(method, path_and_query, json_body, self.inner.timeout)
            .await
    }

    /// Like [`Self::request`] with its own deadline.
    pub async fn request_within(
        &self,
        method: Method,
        path_and_query: &str,
        json_body: Option<Vec<u8>>,
        deadline: Duration,
    ) -> Result<(StatusCode, Bytes), ChannelError> {
        if !path_and_query.starts_with('/') {
            return Err(ChannelError::BadPath(path_and_query.to_owned()));
        }
        let uri: http::Uri = format!("https://{NODE_AUTHORITY}{path_and_query}")
            .parse()
            .map_err(|_| ChannelError::BadPath(path_and_query.to_owned()))?;
        let mut builder = Request::builder().method(method).uri(uri);
        if json_body.is_some() {
            builder = builder.header(header::CONTENT_TYPE, "application/json");
        }
        let request = builder
            .body(Full::new(Bytes::from(json_body.unwrap_or_default())))
            .map_err(|_| ChannelError::BadPath(path_and_query.to_owned()))?;
        let id = || self.inner.server_id.clone();
        if self.is_closed() {
            return Err(ChannelError::Closed { server_id: id() });
        }
        let exchange = async {
            let mut send = self.inner.send.clone();
            let response = send.send_request(request).await.map_err(|e| {
                if e.is_canceled() || e.is_closed() || self.is_closed() {
                    ChannelError::Closed { server_id: id() }
                } else {
                    ChannelError::Failed {
                        server_id: id(),
                        reason: e.to_string(),
                    }
                }
            })?;
            let status = response.status();
            let body = Limited::new(response.into_body(), self.inner.max_answer)
                .collect()
                .await
                .map_err(|e| {
                    if e.is::<http_body_util::LengthLimitError>() {
                        ChannelError::AnswerTooLarge {
                            server_id: id(),
                            limit: self.inner.max_answer,
                        }
                    } else {
                        ChannelError::Failed {
                            server_id: id(),
                            reason: e.to_string(),
                        }
                    }
                })?;
            Ok((status, body.to_bytes()))
        };
        tokio::select! {
            r = tokio::time::timeout(deadline, exchange) => r.unwrap_or_else(|_| Err(ChannelError::Timeout { server_id: id(), after: deadline })),
            () = self.inner.done.cancelled() => Err(ChannelError::Closed { server_id: id() }),
        }
    }

    /// Whether the channel is closed (requests fail with [`ChannelError::Closed`]).
    pub fn is_closed(&self) -> bool {
        self.inner.done.is_cancelled() || self.inner.send.is_closed()
    }

    /// Completes when the channel closes.
    pub async fn closed(&self) {
        self.inner.done.cancelled().await;
    }

    /// Closes the channel (for example when the same server dialed again, or was
    /// removed); the node dials again after its back-off.
    pub fn close(&self) {
        self.inner.done.cancel();
    }
}

/// Serves the panel's channel listener with [`PanelOptions::default`] until `shutdown`
/// completes; see [`serve_panel_with`].
pub async fn serve_panel(
    listener: TcpListener,
    identity: Arc<PanelIdentity>,
    enroller: Arc<dyn Enroller>,
    connected: mpsc::Sender<NodeChannel>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_panel_with(
        listener,
        identity,
        enroller,
        connected,
        shutdown,
        PanelOptions::default(),
    )
    .await
}

/// Serves the panel's channel listener until `shutdown` completes: enrolls nodes that
/// come with a join token's secret, and hands every node that comes with a pinned
/// certificate to `connected` as a [`NodeChannel`]. On shutdown every channel it made
/// closes. Fails only when the identity does not make a TLS config.
pub async fn serve_panel_with(
    listener: TcpListener,
    identity: Arc<PanelIdentity>,
    enroller: Arc<dyn Enroller>,
    connected: mpsc::Sender<NodeChannel>,
    shutdown: impl Future<Output = ()> + Send + 'static,
    options: PanelOptions,
) -> std::io::Result<()> {
    let config = crate::tls::panel_server_config(&identity).map_err(std::io::Error::other)?;
    let shared = Arc::new(Shared {
        acceptor: TlsAcceptor::from(config),
        identity,
        enroller,
        connected,
        pending: Pending::new(options.max_pending, options.max_pending_per_source),
        stop: CancellationToken::new(),
        options,
    });
    let tasks = TaskTracker::new();
    tokio::pin!(shutdown);
    loop {
        let (stream, remote) = tokio::select! {
            () = &mut shutdown => break,
            r = listener.accept() => match r {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: wait instead of spinning.
                    tracing::warn!("channel listener: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let permit = match shared.pending.enter(remote.ip()) {
            Ok(slot) => slot,
            Err(Refused::Total) => {
                tracing::debug!("channel listener: {remote} closed, too many pending connections");
                continue;
            }
            Err(Refused::Source) => {
                tracing::debug!(
                    "channel listener: {remote} closed, too many pending connections from its address"
                );
                continue;
            }
        };
        let shared = shared.clone();
        tasks.spawn(async move {
            let stop = shared.stop.clone();
            tokio::select! {
                () = handle(shared, stream, remote, permit) => {}
                () = stop.cancelled() => {}
            }
        });
    }
    shared.stop.cancel();
    tasks.close();
    tasks.wait().await;
    Ok(())
}

struct Shared {
    acceptor: TlsAcceptor,
    identity: Arc<PanelIdentity>,
    enroller: Arc<dyn Enroller>,
    connected: mpsc::Sender<NodeChannel>,
    pending: Pending,
    stop: CancellationToken,
    options: PanelOptions,
}

async fn handle(shared: Arc<Shared>, stream: TcpStream, remote: SocketAddr, permit: Slot) {
    let _ = stream.set_nodelay(true);
    let tls = match tokio::time::timeout(
        shared.options.handshake_timeout,
        shared.acceptor.accept(stream),
    )
    .await
    {
        Ok(Ok(tls)) => tls,
        Ok(Err(e)) => {
            tracing::debug!("channel listener: TLS with {remote} failed: {e}");
            return;
        }
        Err(_) => {
            tracing::debug!("channel listener: {remote} did not finish TLS in time");
            return;
        }
    };
    let node_cert = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
        .map(|c| c.to_vec());
    let Some(der) = node_cert else {
        let deadline = shared.options.enroll_deadline;
        if tokio::time::timeout(deadline, serve_enroll(&shared, tls, remote))
            .await
            .is_err()
        {
            tracing::debug!("channel listener: enrollment from {remote} cut at its deadline");
        }
        return;
    };
    let authorized = tokio::time::timeout(
        shared.options.handshake_timeout,
        shared.enroller.authorize(&der),
    )
    .await;
    let server_id = match authorized {
        Ok(Some(id)) => id,
        Ok(None) => {
            tracing::info!(
                "channel listener: refused {remote}: its certificate ({}) is pinned for no server",
                Pin::of_certificate(&der)
            );
            return;
        }
        Err(_) => {
            tracing::warn!("channel listener: authorizing {remote} took too long");
            return;
        }
    };
    let o = &shared.options;
    let handshake = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
        .timer(TokioTimer::new())
        .keep_alive_interval(o.keepalive_interval)
        .keep_alive_timeout(o.keepalive_timeout)
        .keep_alive_while_idle(true)
        .handshake::<_, Full<Bytes>>(TokioIo::new(tls));
    let (send, connection) = match tokio::time::timeout(o.handshake_timeout, handshake).await {
        Ok(Ok(pair)) => pair,
        Ok(Err(e)) => {
            tracing::info!("channel to {server_id} ({remote}): HTTP/2 failed: {e}");
            return;
        }
        Err(_) => {
            tracing::info!("channel to {server_id} ({remote}): HTTP/2 did not start in time");
            return;
        }
    };
    drop(permit);
    let done = CancellationToken::new();
    let channel = NodeChannel {
        inner: Arc::new(ChannelInner {
            server_id: server_id.clone(),
            remote,
            send,
            done: done.clone(),
            timeout: o.request_timeout,
            max_answer: o.max_answer,
        }),
    };
    // However this task ends (the connection, a close, the listener's shutdown), the
    // channel reads closed.
    let _closed = done.clone().drop_guard();
    tracing::info!("channel to {server_id} up ({remote})");
    // The connection is driven while the panel takes the channel (its keepalive must
    // not starve behind a busy receiver).
    tokio::pin!(connection);
    tokio::select! {
        sent = shared.connected.send(channel) => if sent.is_err() { return },
        r = &mut connection => {
            tracing::info!("channel to {server_id} ({remote}) ended before the panel took it: {r:?}");
            return;
        }
    }
    tokio::select! {
        r = connection => match r {
            Ok(()) => tracing::info!("channel to {server_id} ({remote}) closed"),
            Err(e) => tracing::info!("channel to {server_id} ({remote}) lost: {e}"),
        },
        () = done.cancelled() => tracing::info!("channel to {server_id} ({remote}) closed by the panel"),
    }
}

fn problem(status: StatusCode, detail: &str) -> Response<Full<Bytes>> {
    let body = json!({
        "type": "about:blank",
        "title": status.canonical_reason().unwrap_or(""),
        "status": status.as_u16(),
        "detail": detail,
    });
    let mut r = Response::new(Full::new(Bytes::from(body.to_string())));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/problem+json"),
    );
    r
}

fn refused(e: &EnrollRefused, remote: SocketAddr) -> Response<Full<Bytes>> {
    match e {
        EnrollRefused::Unavailable(reason) => {
            tracing::error!("enrollment from {remote}: {reason}");
            problem(
                StatusCode::SERVICE_UNAVAILABLE,
                "the panel cannot enroll nodes right now; try again later",
            )
        }
        other => {
            tracing::info!("enrollment from {remote} refused: {other}");
            problem(StatusCode::FORBIDDEN, &other.to_string())
        }
    }
}

async fn serve_enroll<S>(shared: &Arc<Shared>, tls: S, remote: SocketAddr)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let first_request = shared.options.first_request_timeout;
    let shared = shared.clone();
    // The service is called once the request's head is in: until then the connection
    // is a stranger's silence, cut at `first_request_timeout`.
    let (head_in, head_seen) = oneshot::channel::<()>();
    let head_in = std::sync::Mutex::new(Some(head_in));
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        if let Some(tx) = head_in.lock().ok().and_then(|mut h| h.take()) {
            let _ = tx.send(());
        }
        let shared = shared.clone();
        async move { Ok::<_, std::convert::Infallible>(enroll(&shared, request, remote).await) }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(first_request)
        .max_buf_size(MAX_ENROLL_BODY)
        .keep_alive(false)
        .serve_connection(TokioIo::new(tls), service);
    tokio::pin!(connection);
    let result = tokio::select! {
        r = &mut connection => r,
        seen = tokio::time::timeout(first_request, head_seen) => {
            if !matches!(seen, Ok(Ok(()))) {
                tracing::debug!("enrollment from {remote}: no request within {first_request:?}");
                return;
            }
            connection.await
        }
    };
    if let Err(e) = result {
        tracing::debug!("enrollment from {remote}: {e}");
    }
}

async fn enroll(
    shared: &Shared,
    request: Request<Incoming>,
    remote: SocketAddr,
) -> Response<Full<Bytes>> {
    if request.uri().path() != "/enroll" {
        return problem(StatusCode::NOT_FOUND, "only POST /enroll is served here");
    }
    if request.method() != Method::POST {
        return problem(StatusCode::METHOD_NOT_ALLOWED, "use POST /enroll");
    }
    let body = match Limited::new(request.into_body(), MAX_ENROLL_BODY)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes(),
        Err(_) => {
            return problem(
                StatusCode::PAYLOAD_TOO_LARGE,
                "the enrollment request is larger than 16 KiB",
            );
        }
    };
    let parsed = match EnrollRequest::parse(&body, remote) {
        Ok(r) => r,
        Err(e) => return problem(StatusCode::BAD_REQUEST, &e.to_string()),
    };
    let public_key = parsed.public_key.clone();
    let server_id = match shared.enroller.enroll(parsed).await {
        Ok(id) => id,
        Err(e) => return refused(&e, remote),
    };
    let certificate_pem = match shared
        .identity
        .issue_node_certificate(&public_key, &server_id)
    {
        Ok(pem) => pem,
        Err(e) => {
            tracing::error!("enrollment of {server_id} from {remote}: {e}");
            return problem(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the panel could not issue the node certificate; see the panel's log",
            );
        }
    };
    let Some(der) = crate::identity::first_cert_der(&certificate_pem) else {
        return problem(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the panel could not issue the node certificate; see the panel's log",
        );
    };
    if let Err(e) = shared
        .enroller
        .enrolled(&server_id, Pin::of_certificate(&der))
        .await
    {
        return refused(&e, remote);
    }
    tracing::info!("enrolled server {server_id} from {remote}");
    let answer = EnrollAnswer {
        server_id,
        certificate_pem,
    };
    let mut r = Response::new(Full::new(Bytes::from(
        serde_json::to_vec(&answer).unwrap_or_default(),
    )));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    r
}
