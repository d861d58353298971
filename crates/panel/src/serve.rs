//! Serving a router on a TCP listener with the limits a public listener needs
//! (`http` in the panel config):
//!
//! - a connection that has not sent a whole request head within
//!   `header_read_timeout_s` of opening (or of its previous answer, when kept alive)
//!   is closed, so a client that trickles its headers (slowloris) holds nothing for
//!   long;
//! - at most `max_connections` connections at once; past it a new connection is
//!   accepted and closed at once (counted), and the ones already open go on.
//!
//! - with a certificate (`tls`), every connection is TLS first: its handshake must
//!   end within `header_read_timeout_s` too, and one that fails is closed.
//!
//! HTTP/1.1 only, as before. On shutdown the listener stops accepting and open
//! connections finish their request in flight.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

use crate::config::HttpSettings;

/// How long open connections get to finish after shutdown begins.
const DRAIN: Duration = Duration::from_secs(5);

/// A listener's counters.
#[derive(Debug, Default)]
pub struct ListenerStats {
    /// Connections closed at once because `max_connections` were open.
    pub refused: AtomicU64,
    /// TLS handshakes that failed or did not end in time.
    pub tls_failed: AtomicU64,
}

/// Serves `router` on `listener` (over TLS with `tls`) until `shutdown` resolves;
/// every request carries `ConnectInfo<SocketAddr>` of its connection.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: &HttpSettings,
    stats: Arc<ListenerStats>,
    tls: Option<TlsAcceptor>,
    shutdown: impl Future<Output = ()> + Send,
) {
    let head_timeout = Duration::from_secs(limits.header_read_timeout_s.max(1));
    let slots = Arc::new(Semaphore::new(
        usize::try_from(limits.max_connections.max(1)).unwrap_or(1),
    ));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(head_timeout);
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: wait rather than spin.
                    tracing::warn!("accepting a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            stats.refused.fetch_add(1, Ordering::Relaxed);
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let service = router
            .clone()
            .map_request(move |mut r: axum::http::Request<Incoming>| {
                r.extensions_mut().insert(ConnectInfo::<SocketAddr>(peer));
                r
            });
        let (http, watcher, tls, stats) =
            (http.clone(), graceful.watcher(), tls.clone(), stats.clone());
        tokio::spawn(async move {
            // Errors here are the client's (a reset, a timeout, a bad request).
            match tls {
                None => {
                    let c = http
                        .serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
                    let _ = watcher.watch(c).await;
                }
                Some(acceptor) => {
                    match tokio::time::timeout(head_timeout, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => {
                            let c = http.serve_connection(
                                TokioIo::new(tls),
                                TowerToHyperService::new(service),
                            );
                            let _ = watcher.watch(c).await;
                        }
                        _ => {
                            stats.tls_failed.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }
            drop(slot);
        });
    }
    drop(listener);
    // A connection accepted just now may not have sent its request yet, and a
    // graceful shutdown closes such idle connections at once (an upgrade's old
    // process would drop a client the new one never saw): give them a moment first.
    let until = tokio::time::Instant::now() + FIRST_REQUEST;
    while graceful.count() > 0 && tokio::time::Instant::now() < until {
        tokio::time::sleep(FIRST_REQUEST / 20).await;
    }
    let _ = tokio::time::timeout(DRAIN, graceful.shutdown()).await;
}

/// How long a stopping listener's connections have to send a request before idle ones
/// are closed: 1 s.
const FIRST_REQUEST: Duration = Duration::from_secs(1);
