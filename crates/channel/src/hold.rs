//! The node's end of the channel: dial the panel with the node certificate, serve the
//! control router over HTTP/2 on that connection, dial again when it is lost.

use core::pin::Pin as StdPin;
use core::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::{Buf as _, Bytes};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, ReadBuf};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::backoff::Backoff;
use crate::join::{Enrollment, dial};

/// The node end's tunables; [`Default`] holds every default.
#[derive(Debug, Clone)]
pub struct NodeOptions {
    /// Waits between attempts.
    pub backoff: Backoff,
    /// HTTP/2 keepalive ping interval. 5 s, with the timeout below: a dead path is
    /// noticed within 15 s and dialed again.
    pub keepalive_interval: Duration,
    /// A ping unanswered this long drops the channel. 10 s.
    pub keepalive_timeout: Duration,
    /// After TLS, the panel must start HTTP/2 within this (it first checks the node's
    /// certificate). 20 s: twice the panel's own deadline for that check.
    pub start_timeout: Duration,
    /// Requests the panel may have open at once on the channel. 64.
    pub max_concurrent_requests: u32,
}

impl Default for NodeOptions {
    fn default() -> Self {
        Self {
            backoff: Backoff::default(),
            keepalive_interval: Duration::from_secs(5),
            keepalive_timeout: Duration::from_secs(10),
            start_timeout: Duration::from_secs(20),
            max_concurrent_requests: 64,
        }
    }
}

/// The channel as the node sees it (for its status and logs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ChannelStatus {
    /// `host:port` of the panel.
    pub panel: String,
    /// This node's server id.
    pub server_id: String,
    /// When the channel in use now came up (Unix ms); `None` while it is down.
    pub connected_since_ms: Option<u64>,
    /// Why the last attempt or channel ended, until a channel is up again.
    pub last_error: Option<String>,
    /// When the next attempt starts (Unix ms), while waiting for it.
    pub next_attempt_ms: Option<u64>,
    /// Attempts that failed in a row.
    pub failures: u32,
    /// Channels made since the node started.
    pub connections: u64,
}

#[allow(
    clippy::disallowed_methods,
    reason = "the channel's one reading of the wall clock: the next attempt is reported as a Unix time"
)]
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn jitter() -> f64 {
    let mut b = [0u8; 4];
    match crate::random(&mut b) {
        Ok(()) => f64::from(u32::from_le_bytes(b)) / (f64::from(u32::MAX) + 1.0),
        Err(()) => 0.5,
    }
}

/// Holds the channel with [`NodeOptions::default`] until `shutdown`; see
/// [`run_node_with`].
pub async fn run_node(enrollment: Enrollment, router: axum::Router, shutdown: CancellationToken) {
    let (status, _) = watch::channel(ChannelStatus::default());
    run_node_with(enrollment, router, shutdown, NodeOptions::default(), status).await;
}

/// Holds the channel until `shutdown` is cancelled: dials the panel with the node's
/// certificate, serves `router` over HTTP/2 on the connection (the panel is the
/// client), and when it is lost or refused dials again after the back-off (reset after
/// a channel that stayed up [`Backoff::stable`]). `status` is kept current.
pub async fn run_node_with(
    enrollment: Enrollment,
    router: axum::Router,
    shutdown: CancellationToken,
    options: NodeOptions,
    status: watch::Sender<ChannelStatus>,
) {
    status.send_modify(|s| {
        s.panel.clone_from(&enrollment.panel);
        s.server_id.clone_from(&enrollment.server_id);
    });
    let mut failures: u32 = 0;
    while !shutdown.is_cancelled() {
        let started = tokio::time::Instant::now();
        let ended = session(&enrollment, &router, &options, &status, &shutdown).await;
        if shutdown.is_cancelled() {
            break;
        }
        let lasted = started.elapsed();
        failures = if lasted >= options.backoff.stable {
            1
        } else {
            failures.saturating_add(1)
        };
        let wait = options.backoff.delay(failures, jitter());
        tracing::warn!(
            "channel to the panel at {}: {ended}; next attempt in {:.1} s",
            enrollment.panel,
            wait.as_secs_f64()
        );
        status.send_modify(|s| {
            s.connected_since_ms = None;
            s.last_error = Some(ended);
            s.failures = failures;
            s.next_attempt_ms = Some(now_ms().saturating_add(wait.as_millis() as u64));
        });
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = shutdown.cancelled() => break,
        }
    }
    status.send_modify(|s| {
        s.connected_since_ms = None;
        s.next_attempt_ms = None;
    });
}

/// How long requests under way may take to finish when the channel is closed on
/// purpose (an upgrade answers the panel's request, then closes).
pub(crate) const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// One channel, from dial to loss; the reason it ended. On `shutdown` it ends at
/// once, or, once serving, after the requests under way ([`CLOSE_GRACE`] at most).
async fn session(
    enrollment: &Enrollment,
    router: &axum::Router,
    options: &NodeOptions,
    status: &watch::Sender<ChannelStatus>,
    shutdown: &CancellationToken,
) -> String {
    let stopped = || String::from("stopped");
    tokio::select! {
        io = connect(enrollment, options, status) => match io {
            Ok(io) => serve(io, router, options, shutdown).await,
            Err(ended) => ended,
        },
        () = shutdown.cancelled() => stopped(),
    }
}

/// Dials and waits for the panel to start HTTP/2: the connection, with the bytes
/// already read; or why not.
async fn connect(
    enrollment: &Enrollment,
    options: &NodeOptions,
    status: &watch::Sender<ChannelStatus>,
) -> Result<Prefixed<tokio_rustls::client::TlsStream<tokio::net::TcpStream>>, String> {
    let config = match crate::tls::node_channel_config(
        enrollment.pin,
        &enrollment.certificate_pem,
        enrollment.key_pem.expose(),
    ) {
        Ok(c) => c,
        Err(e) => return Err(e.to_string()),
    };
    let mut tls = match dial(&enrollment.panel, config).await {
        Ok(t) => t,
        Err(e) => return Err(e.to_string()),
    };
    // The panel checks this node's certificate after TLS and then starts HTTP/2;
    // refused, it closes (TLS 1.3 reports a client certificate's refusal only now).
    let mut first = vec![0u8; 4096];
    let n = match tokio::time::timeout(options.start_timeout, tls.read(&mut first)).await {
        Err(_) => return Err("the panel did not start the channel in time".into()),
        Ok(Err(e)) => {
            return Err(format!(
                "the panel refused this node's certificate ({e}); join again with a new token if the server was removed"
            ));
        }
        Ok(Ok(0)) => {
            return Err("the panel closed the channel at once: it does not know this node's certificate (was the server removed? join again with a new token)".into());
        }
        Ok(Ok(n)) => n,
    };
    first.truncate(n);
    let since = now_ms();
    tracing::info!(
        "channel to the panel at {} up (server {})",
        enrollment.panel,
        enrollment.server_id
    );
    status.send_modify(|s| {
        s.connected_since_ms = Some(since);
        s.last_error = None;
        s.next_attempt_ms = None;
        s.failures = 0;
        s.connections += 1;
    });
    Ok(Prefixed {
        prefix: Bytes::from(first),
        inner: tls,
    })
}

/// Serves the control routes over the channel until it is lost, or `shutdown`: then
/// HTTP/2's GOAWAY, and the requests under way finish ([`CLOSE_GRACE`] at most).
async fn serve<S: AsyncRead + AsyncWrite + Send + Unpin + 'static>(
    io: S,
    router: &axum::Router,
    options: &NodeOptions,
    shutdown: &CancellationToken,
) -> String {
    let builder = {
        let mut b = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
        b.timer(TokioTimer::new())
            .keep_alive_interval(options.keepalive_interval)
            .keep_alive_timeout(options.keepalive_timeout)
            .max_concurrent_streams(options.max_concurrent_requests);
        b
    };
    let conn = builder.serve_connection(TokioIo::new(io), TowerToHyperService::new(router.clone()));
    tokio::pin!(conn);
    let served = tokio::select! {
        r = conn.as_mut() => r,
        () = shutdown.cancelled() => {
            conn.as_mut().graceful_shutdown();
            tokio::time::timeout(CLOSE_GRACE, conn.as_mut()).await.unwrap_or(Ok(()))
        }
    };
    match served {
        Ok(()) => "the panel closed the channel".into(),
        Err(e) => format!("the channel was lost: {e}"),
    }
}

/// A stream whose first bytes were already read: they are read again first.
struct Prefixed<S> {
    prefix: Bytes,
    inner: S,
}

impl<S: AsyncRead + Unpin> AsyncRead for Prefixed<S> {
    fn poll_read(
        mut self: StdPin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.prefix.has_remaining() {
            let n = self.prefix.len().min(buf.remaining());
            buf.put_slice(&self.prefix[..n]);
            self.prefix.advance(n);
            return Poll::Ready(Ok(()));
        }
        StdPin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Prefixed<S> {
    fn poll_write(
        mut self: StdPin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        StdPin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: StdPin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        StdPin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: StdPin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<std::io::Result<()>> {
        StdPin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: StdPin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        StdPin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}
