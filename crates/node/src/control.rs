//! The control API: HTTP/JSON on loopback.
//!
//! - `GET /v1/status`: version, uptime, inbounds with open connections, throughput;
//! - `GET /v1/stats?cursor=N&limit=M`: journal records after `cursor`, plus live
//!   per-user and per-inbound counters;
//! - `POST /v1/stats/ack` `{"cursor": N}`: drops records up to `N`;
//! - `GET /v1/config`, `PUT /v1/config`: the config in force; a new one applied as a
//!   difference, or refused with the field named;
//! - `GET /v1/tunnels`, `GET /v1/tunnels/{name}`: every tunnel half's links, streams,
//!   refusals (relay) or addresses with back-off and last error (origin);
//!   `POST /v1/tunnels/{name}/reset`: drops the half's links, the dialing side starts
//!   over at once;
//! - `GET /metrics`: Prometheus text.

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::accounting::now_ms;
use crate::node::{ApplyError, Node};

/// Journal records returned per call at most.
pub const MAX_RECORDS_PER_READ: usize = 1000;

/// Builds the router (tests call it without a socket).
pub fn router(node: Arc<Node>) -> Router {
    Router::new()
        .route("/v1/status", get(status))
        .route("/v1/stats", get(stats))
        .route("/v1/stats/ack", post(ack))
        .route("/v1/config", get(get_config).put(put_config))
        .route("/v1/tunnels", get(tunnels))
        .route("/v1/tunnels/{name}", get(tunnel))
        .route("/v1/tunnels/{name}/reset", post(reset_tunnel))
        .route("/metrics", get(metrics))
        .with_state(node)
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
    let journal = node.journal();
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
        "journal": { "pending": journal.pending(), "acked": journal.acked() },
    }))
}

#[derive(Deserialize)]
struct StatsQuery {
    #[serde(default)]
    cursor: u64,
    limit: Option<usize>,
}

async fn stats(
    State(node): State<Arc<Node>>,
    Query(q): Query<StatsQuery>,
) -> Json<serde_json::Value> {
    let limit = q
        .limit
        .unwrap_or(MAX_RECORDS_PER_READ)
        .min(MAX_RECORDS_PER_READ);
    let (records, next) = node.journal().read(q.cursor, limit);
    let shared = node.shared();
    Json(json!({
        "records": records,
        "next_cursor": next,
        "users": shared.accounting.users(),
        "inbounds": shared.accounting.inbounds(),
    }))
}

#[derive(Deserialize, Serialize)]
struct Ack {
    cursor: u64,
}

async fn ack(State(node): State<Arc<Node>>, Json(ack): Json<Ack>) -> Response {
    match node.journal().ack(ack.cursor) {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => {
            tracing::error!("journal ack: {e}");
            error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the journal could not be written; see the node's log",
            )
        }
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
    Json(node.config().await)
}

async fn put_config(State(node): State<Arc<Node>>, body: String) -> Response {
    let config = match crate::NodeConfig::from_json(&body) {
        Ok(c) => c,
        Err(e) => return error(StatusCode::BAD_REQUEST, e.to_string()),
    };
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

async fn metrics(State(node): State<Arc<Node>>) -> Response {
    let shared = node.shared();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# HELP switchyard_node_bytes_total Bytes carried for users, by direction."
    );
    let _ = writeln!(out, "# TYPE switchyard_node_bytes_total counter");
    let (up, down) = shared.accounting.node().totals();
    let _ = writeln!(out, "switchyard_node_bytes_total{{direction=\"up\"}} {up}");
    let _ = writeln!(
        out,
        "switchyard_node_bytes_total{{direction=\"down\"}} {down}"
    );
    let _ = writeln!(
        out,
        "# HELP switchyard_node_connections Open user connections."
    );
    let _ = writeln!(out, "# TYPE switchyard_node_connections gauge");
    let _ = writeln!(out, "switchyard_node_connections {}", shared.sessions.len());
    let _ = writeln!(
        out,
        "# HELP switchyard_inbound_bytes_total Bytes carried per inbound, by direction."
    );
    let _ = writeln!(out, "# TYPE switchyard_inbound_bytes_total counter");
    let inbounds = shared.accounting.inbounds();
    for (tag, c) in &inbounds {
        let _ = writeln!(
            out,
            "switchyard_inbound_bytes_total{{inbound=\"{tag}\",direction=\"up\"}} {}",
            c.up
        );
        let _ = writeln!(
            out,
            "switchyard_inbound_bytes_total{{inbound=\"{tag}\",direction=\"down\"}} {}",
            c.down
        );
    }
    let _ = writeln!(
        out,
        "# HELP switchyard_inbound_connections Open connections per inbound."
    );
    let _ = writeln!(out, "# TYPE switchyard_inbound_connections gauge");
    for (tag, c) in &inbounds {
        let _ = writeln!(
            out,
            "switchyard_inbound_connections{{inbound=\"{tag}\"}} {}",
            c.open_connections
        );
    }
    let _ = writeln!(
        out,
        "# HELP switchyard_inbound_refused_total Connections refused by users' address limits."
    );
    let _ = writeln!(out, "# TYPE switchyard_inbound_refused_total counter");
    for (tag, c) in &inbounds {
        let _ = writeln!(
            out,
            "switchyard_inbound_refused_total{{inbound=\"{tag}\"}} {}",
            c.refused_by_address_limit
        );
    }
    let _ = writeln!(
        out,
        "# HELP switchyard_users_online Users with open connections."
    );
    let _ = writeln!(out, "# TYPE switchyard_users_online gauge");
    let online = shared
        .accounting
        .users()
        .values()
        .filter(|u| u.open_connections > 0)
        .count();
    let _ = writeln!(out, "switchyard_users_online {online}");
    let _ = writeln!(
        out,
        "# HELP switchyard_journal_pending Journal records not yet acknowledged."
    );
    let _ = writeln!(out, "# TYPE switchyard_journal_pending gauge");
    let _ = writeln!(
        out,
        "switchyard_journal_pending {}",
        node.journal().pending()
    );
    shared.inbound_states.write_metrics(&mut out);
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], out).into_response()
}
