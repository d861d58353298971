//! The client's local page: what `status` shows, for people, in a browser on the same
//! machine (`http://127.0.0.1:2081/` by default), and the marks — right-click a server
//! or press and hold it to mark or unmark it, then "Done". Plain HTML, CSS and one ES
//! module embedded in the binary (`crates/client/page/`); the page talks to the same
//! driver as the control socket, through `GET /api/status` and `POST /api/mark`,
//! `/api/unmark` (`{"servers":[names]}`) and `/api/done`.
//!
//! The page has no login, so it serves loopback only ([`serve`] refuses another
//! address), answers only requests whose `Host` is a loopback name (a web page that
//! rebinds its own name to 127.0.0.1 gets `403`), and takes a `POST` only with the
//! header `X-Switchyard-Page: 1`, which another site's page cannot send here (a
//! cross-origin request with it needs a CORS pre-flight this server never grants).
//! Every answer carries a strict Content-Security-Policy.

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::extract::{Json, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::json;
use switchyard_transport::listen::{BindError, BindOptions, Listener, TcpListener};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};

use crate::control::{Call, Request};

/// Where the page is served by default.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:2081";

/// The policy every answer carries.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The header a `POST` must carry.
pub const POST_HEADER: &str = "x-switchyard-page";

/// Why the page could not be served.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PageError {
    /// Not a loopback address.
    #[error("the client's page has no login: it listens on loopback only, not {0}")]
    NotLoopback(SocketAddr),
    /// Binding failed.
    #[error("the client's page on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        source: BindError,
    },
}

/// Serves the page on `listen` (loopback only) until the runtime ends, talking to the
/// driver through `calls`; the address it listens on.
pub async fn serve(
    listen: SocketAddr,
    calls: mpsc::UnboundedSender<Call>,
) -> Result<SocketAddr, PageError> {
    if !listen.ip().is_loopback() {
        return Err(PageError::NotLoopback(listen));
    }
    let bind = |source| PageError::Bind {
        addr: listen,
        source,
    };
    let listener = TcpListener::bind(listen, BindOptions::default()).map_err(bind)?;
    let addr = listener.local_addr().map_err(|source| {
        bind(BindError::Listen {
            addr: listen,
            source,
        })
    })?;
    tokio::spawn(async move {
        if let Err(e) = axum::serve(PageListener(listener), router(calls)).await {
            tracing::warn!("the client's page stopped: {e}");
        }
    });
    Ok(addr)
}

/// The shared transport layer's listener as axum takes it: an accept that fails
/// (too many open files) is logged and tried again, as axum does with its own.
struct PageListener(TcpListener);

impl axum::serve::Listener for PageListener {
    type Io = TcpStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (TcpStream, SocketAddr) {
        loop {
            match Listener::accept(&self.0).await {
                Ok(conn) => return conn,
                Err(e) => {
                    tracing::warn!("the client's page: accept: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        Listener::local_addr(&self.0)
    }
}

/// The page's routes.
pub fn router(calls: mpsc::UnboundedSender<Call>) -> Router {
    Router::new()
        .route(
            "/",
            get(|| async { file("text/html; charset=utf-8", INDEX) }),
        )
        .route(
            "/page.js",
            get(|| async { file("text/javascript; charset=utf-8", SCRIPT) }),
        )
        .route(
            "/page.css",
            get(|| async { file("text/css; charset=utf-8", STYLE) }),
        )
        // No icon: an answer, so the browser's request for one is no error.
        .route("/favicon.ico", get(|| async { StatusCode::NO_CONTENT }))
        .route("/api/status", get(status))
        .route("/api/mark", post(mark))
        .route("/api/unmark", post(unmark))
        .route("/api/done", post(done))
        .layer(axum::middleware::from_fn(guard))
        .with_state(calls)
}

const INDEX: &str = include_str!("../page/index.html");
const SCRIPT: &str = include_str!("../page/page.js");
const STYLE: &str = include_str!("../page/page.css");

fn file(mime: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, mime)], body).into_response()
}

/// Whether `host` (a `Host` header) names this machine's loopback.
fn loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Refuses a foreign `Host` and a `POST` without [`POST_HEADER`]; adds the security
/// headers to every answer.
async fn guard(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let headers = request.headers();
    let host_ok = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .is_some_and(loopback_host);
    let post_ok = request.method() != axum::http::Method::POST
        || headers.get(POST_HEADER).is_some_and(|v| v == "1");
    let mut response = if !host_ok {
        refuse("this page answers only to a loopback Host")
    } else if !post_ok {
        refuse("a change needs the X-Switchyard-Page header")
    } else {
        next.run(request).await
    };
    secure(response.headers_mut());
    response
}

fn refuse(why: &str) -> Response {
    (
        StatusCode::FORBIDDEN,
        Json(json!({"ok": false, "error": why})),
    )
        .into_response()
}

fn secure(h: &mut HeaderMap) {
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

/// Asks the driver; its answer, or an error when it is gone.
async fn ask(calls: &mpsc::UnboundedSender<Call>, request: Request) -> Response {
    let (tx, rx) = oneshot::channel();
    if calls.send((request, tx)).is_err() {
        return unavailable();
    }
    match rx.await {
        Ok(answer) => {
            let code = if answer["ok"] == true {
                StatusCode::OK
            } else {
                StatusCode::UNPROCESSABLE_ENTITY
            };
            (code, Json(answer)).into_response()
        }
        Err(_) => unavailable(),
    }
}

fn unavailable() -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        Json(json!({"ok": false, "error": "the client is stopping"})),
    )
        .into_response()
}

/// `{"servers": [names]}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Names {
    servers: Vec<String>,
}

async fn status(State(calls): State<mpsc::UnboundedSender<Call>>) -> Response {
    ask(&calls, Request::Status).await
}

async fn mark(State(calls): State<mpsc::UnboundedSender<Call>>, Json(n): Json<Names>) -> Response {
    ask(&calls, Request::Mark { servers: n.servers }).await
}

async fn unmark(
    State(calls): State<mpsc::UnboundedSender<Call>>,
    Json(n): Json<Names>,
) -> Response {
    ask(&calls, Request::Unmark { servers: n.servers }).await
}

async fn done(State(calls): State<mpsc::UnboundedSender<Call>>) -> Response {
    ask(&calls, Request::Done).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_hosts_pass() {
        for ok in [
            "127.0.0.1:2081",
            "localhost:2081",
            "LOCALHOST",
            "[::1]:2081",
            "127.0.0.2",
        ] {
            assert!(loopback_host(ok), "{ok}");
        }
        for bad in [
            "evil.example:2081",
            "10.0.0.1:2081",
            "[2001:db8::1]:80",
            "",
            "127.0.0.1.evil.example",
        ] {
            assert!(!loopback_host(bad), "{bad}");
        }
    }
}
