//! The control API: HTTP/JSON on loopback ([`router`]) and, with the same handlers,
//! over the channel the node dials to its panel ([`routes`]).
//!
//! On loopback every route, unknown ones included, wants `Authorization: Bearer <token>`, the
//! token the node keeps in its state directory (`switchyard node token` prints it);
//! without it the answer is `401` with a problem document. `GET /metrics` may be
//! opened with `control.metrics_without_token`. Reads never show a secret: user
//! credentials, Shadowsocks server keys and tunnel credentials read `"<redacted>"`.
//!
//! - `GET /v1/status`: version, uptime, inbounds with open connections, throughput,
//!   the channel to the panel (`panel`, `null` when not enrolled), the software's
//!   version (`node_version`) and this executable's sha256 (`binary_sha256`, `null`
//!   until hashed, on a thread of its own at the first status);
//! - `GET /v1/stats?cursor=N&limit=M`: journal records after `cursor`, plus live
//!   per-user and per-inbound counters;
//! - `POST /v1/stats/ack` `{"cursor": N}`: drops records up to `N`;
//! - `GET /v1/config`, `PUT /v1/config`: the config in force; a new one applied as a
//!   difference, or refused with the field named (its `node.state_dir` and `control`
//!   are replaced by the node's own: they are not the writer's to change);
//! - `GET /v1/tunnels`, `GET /v1/tunnels/{name}`: every tunnel half's links, streams,
//!   refusals (relay) or addresses with back-off and last error (origin);
//!   `POST /v1/tunnels/{name}/reset`: drops the half's links, the dialing side starts
//!   over at once;
//! - `PUT /v1/binary?sha256=H` (or the `X-Switchyard-Sha256` header): a binary
//!   handed over, streamed into `<state_dir>/bin/switchyard-H` ([`binary`]):
//!   `{sha256, bytes}`; `409` while another upload runs, `413` past 256 MiB, `422`
//!   when the body's sha256 is another;
//! - `POST /v1/upgrade`: starts the binary at the path this process was started
//!   from (replaced by the new version), or with `"binary": H` the one `PUT
//!   /v1/binary` kept (`404` naming `binary` when there is none), and hands it the
//!   listening sockets, the journal and the channel; this process drains its open
//!   connections and exits ([`crate::handover`]); body (optional) `{"drain_s": N,
//!   "binary": H}`, how long the old process serves its open connections at most
//!   (default 600, at most 86400). Answers once the new process serves: `{old_pid,
//!   new_pid, version}`; `bin/current` then names the binary a restart runs (none:
//!   the installed one); `409` while another upgrade runs, `502` with why when the new process
//!   could not start (this one goes on serving), `501` when nothing runs the node
//!   that could start another (a test's node);
//! - `GET /metrics`: Prometheus text.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::accounting::now_ms;
use crate::node::{ApplyError, Node};

mod auth;
pub mod binary;
mod metrics;

/// Journal records returned per call at most.
pub const MAX_RECORDS_PER_READ: usize = 1000;

/// The control handlers without authentication: what the panel reaches over the
/// channel the node dials (the channel's mutual TLS authenticates the panel). Never
/// serve it on a socket of its own; [`router`] adds the bearer token for loopback.
pub fn routes(node: Arc<Node>) -> Router {
    Router::new()
        .route("/v1/status", get(status))
        .route("/v1/stats", get(stats))
        .route("/v1/stats/ack", post(ack))
        .route("/v1/config", get(get_config).put(put_config))
        .route("/v1/tunnels", get(tunnels))
        .route("/v1/tunnels/{name}", get(tunnel))
        .route("/v1/tunnels/{name}/reset", post(reset_tunnel))
        .route("/v1/upgrade", post(upgrade))
        // Binaries are far larger than axum's default 2 MB: [`binary`] bounds them.
        .route(
            "/v1/binary",
            put(binary::put).layer(axum::extract::DefaultBodyLimit::disable()),
        )
        .route("/metrics", get(metrics::metrics))
        .with_state(node)
}

/// The control API as loopback serves it: [`routes`] behind the bearer token (tests
/// call it without a socket).
pub fn router(node: Arc<Node>) -> Router {
    routes(node.clone()).layer(axum::middleware::from_fn_with_state(
        node,
        auth::require_token,
    ))
}

/// Serves the API on `listener` until `shutdown` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    node: Arc<Node>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(node))
        .with_graceful_shutdown(shutdown)
        .await
}

/// `POST /v1/upgrade`'s body, optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct UpgradeBody {
    /// How long the old process serves its open connections at most (seconds).
    drain_s: Option<u64>,
    /// The sha256 of a binary `PUT /v1/binary` kept, to start instead of the one at
    /// this process's path.
    binary: Option<String>,
}

async fn upgrade(State(node): State<Arc<Node>>, body: axum::body::Bytes) -> Response {
    use crate::handover::{DRAIN_DEFAULT_S, DRAIN_MAX_S, HandoverError};
    let body: UpgradeBody = if body.is_empty() {
        UpgradeBody::default()
    } else {
        match serde_json::from_slice(&body) {
            Ok(b) => b,
            Err(e) => return error(StatusCode::BAD_REQUEST, format!("body: {e}")),
        }
    };
    let drain_s = body.drain_s.unwrap_or(DRAIN_DEFAULT_S);
    if drain_s > DRAIN_MAX_S {
        return error(
            StatusCode::BAD_REQUEST,
            format!("drain_s: at most {DRAIN_MAX_S} (a day)"),
        );
    }
    let drain = std::time::Duration::from_secs(drain_s);
    let dir = node.state_dir().to_owned();
    let kept = match body.binary.as_deref().map(binary::parse_sha256).transpose() {
        Ok(k) => k,
        Err(e) => return error(StatusCode::BAD_REQUEST, format!("binary: {e}")),
    };
    let program = match &kept {
        Some(sha) => {
            let path = binary::binary_path(&dir, sha);
            let p = path.clone();
            let there = crate::state::blocking(move || p.is_file())
                .await
                .unwrap_or(false);
            if !there {
                return error(
                    StatusCode::NOT_FOUND,
                    format!(
                        "binary: this node has no binary {sha}: hand it over first (PUT /v1/binary)"
                    ),
                );
            }
            Some(path)
        }
        None => None,
    };
    match node.request_upgrade(drain, program).await {
        Ok(upgraded) => {
            // The new process serves: a restart runs what it runs.
            let remembered = crate::state::blocking(move || match &kept {
                Some(sha) => binary::set_current(&dir, sha),
                None => binary::clear_current(&dir).map(|_| ()),
            })
            .await;
            if let Err(e) = remembered.and_then(|r| r) {
                tracing::error!(
                    "upgrade: recording which binary a restart runs (bin/current): {e}"
                );
            }
            Json(upgraded).into_response()
        }
        Err(e @ HandoverError::Busy) => error(StatusCode::CONFLICT, e.to_string()),
        Err(e @ HandoverError::Unsupported) => error(StatusCode::NOT_IMPLEMENTED, e.to_string()),
        Err(e) => error(StatusCode::BAD_GATEWAY, e.to_string()),
    }
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(json!({ "error": message.into() }))).into_response()
}

async fn status(State(node): State<Arc<Node>>) -> Json<serde_json::Value> {
    let config = node.config().await;
    let inbounds: Vec<_> = node
        .inbounds()
        .await
        .into_iter()
        .map(|(c, open)| {
            json!({
                "tag": c.tag, "name": c.name, "protocol": c.protocol, "listen": c.listen,
                "port": c.port, "open_connections": open,
            })
        })
        .collect();
    let shared = node.shared();
    Json(json!({
        "version": config.version,
        "uptime_s": (now_ms() - node.started_ms()) / 1000,
        "connections": shared.sessions.len(),
        "inbounds": inbounds,
        "users_online": shared.accounting.users().values().filter(|u| u.open_connections > 0).count(),
        "throughput": {
            "up_bytes_per_s": shared.throughput.0.load(Ordering::Relaxed),
            "down_bytes_per_s": shared.throughput.1.load(Ordering::Relaxed),
        },
        "journal": node.journal_summary(),
        "last_good": node.save_status(),
        "panel": node.channel_status(),
        "node_version": env!("CARGO_PKG_VERSION"),
        "binary_sha256": binary::this_executable_sha256(),
    }))
}

#[derive(Deserialize)]
struct StatsQuery {
    #[serde(default)]
    cursor: u64,
    limit: Option<usize>,
}

async fn stats(State(node): State<Arc<Node>>, Query(q): Query<StatsQuery>) -> Response {
    let limit = q
        .limit
        .unwrap_or(MAX_RECORDS_PER_READ)
        .min(MAX_RECORDS_PER_READ);
    let (records, next) = match node.read_journal(q.cursor, limit).await {
        Ok(r) => r,
        Err(e) => return journal_error(&e),
    };
    let shared = node.shared();
    Json(json!({
        "records": records,
        "next_cursor": next,
        "users": shared.accounting.users(),
        "inbounds": shared.accounting.inbounds(),
    }))
    .into_response()
}

fn journal_error(e: &crate::journal::JournalError) -> Response {
    tracing::error!("{e}");
    error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "the journal could not be written; see the node's log",
    )
}

#[derive(Deserialize, Serialize)]
struct Ack {
    cursor: u64,
}

async fn ack(State(node): State<Arc<Node>>, Json(ack): Json<Ack>) -> Response {
    match node.ack_journal(ack.cursor).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => journal_error(&e),
    }
}

async fn tunnels(State(node): State<Arc<Node>>) -> Json<serde_json::Value> {
    Json(json!({ "tunnels": node.tunnels().await }))
}

async fn tunnel(State(node): State<Arc<Node>>, Path(name): Path<String>) -> Response {
    match node.tunnel(&name).await {
        Some(v) => Json(v).into_response(),
        None => error(
            StatusCode::NOT_FOUND,
            format!("no tunnel {name:?} on this node"),
        ),
    }
}

async fn reset_tunnel(State(node): State<Arc<Node>>, Path(name): Path<String>) -> Response {
    if node.reset_tunnel(&name).await {
        StatusCode::NO_CONTENT.into_response()
    } else {
        error(
            StatusCode::NOT_FOUND,
            format!("no tunnel {name:?} on this node"),
        )
    }
}

async fn get_config(State(node): State<Arc<Node>>) -> Json<crate::NodeConfig> {
    Json(node.config().await.redacted())
}

async fn put_config(State(node): State<Arc<Node>>, body: String) -> Response {
    // Validation refuses the placeholder that reads show for secrets first, naming
    // the field, before it could be refused for not being a key.
    let mut config = match crate::NodeConfig::parse_json(&body) {
        Ok(c) => c,
        Err(e) => return error(StatusCode::BAD_REQUEST, e.to_string()),
    };
    // The state directory and the control API are the node's own, not the writer's:
    // what a pushed config says of them is ignored.
    {
        let own = node.config().await;
        config.node.state_dir = own.node.state_dir;
        config.control = own.control;
    }
    if let Err(e) = config.validate() {
        return error(StatusCode::BAD_REQUEST, e.to_string());
    }
    let version = config.version;
    match node.apply(config).await {
        Ok(()) => Json(json!({ "applied": version })).into_response(),
        Err(
            e @ (ApplyError::Invalid(_) | ApplyError::Inbound { .. } | ApplyError::Tunnel { .. }),
        ) => error(StatusCode::BAD_REQUEST, e.to_string()),
        Err(e) => {
            tracing::error!("applying config: {e}");
            error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the config could not be applied; see the node's log",
            )
        }
    }
}
