//! `GET /metrics`: Prometheus text.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use crate::node::Node;

/// Writes a metric family's `HELP` and `TYPE` lines.
fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

pub(super) async fn metrics(State(node): State<Arc<Node>>) -> Response {
    let shared = node.shared();
    let mut out = String::new();
    let o = &mut out;
    family(
        o,
        "switchyard_node_bytes_total",
        "counter",
        "Bytes carried for users, by direction.",
    );
    let (up, down) = shared.accounting.node().totals();
    let _ = writeln!(o, "switchyard_node_bytes_total{{direction=\"up\"}} {up}");
    let _ = writeln!(
        o,
        "switchyard_node_bytes_total{{direction=\"down\"}} {down}"
    );
    family(
        o,
        "switchyard_node_connections",
        "gauge",
        "Open user connections.",
    );
    let _ = writeln!(o, "switchyard_node_connections {}", shared.sessions.len());
    let inbounds = shared.accounting.inbounds();
    family(
        o,
        "switchyard_inbound_bytes_total",
        "counter",
        "Bytes carried per inbound, by direction.",
    );
    for (tag, c) in &inbounds {
        for (direction, n) in [("up", c.up), ("down", c.down)] {
            let _ = writeln!(
                o,
                "switchyard_inbound_bytes_total{{inbound=\"{tag}\",direction=\"{direction}\"}} {n}"
            );
        }
    }
    let per_inbound = [
        (
            "switchyard_inbound_connections",
            "gauge",
            "Open connections per inbound.",
        ),
        (
            "switchyard_inbound_refused_total",
            "counter",
            "Connections refused by users' address limits.",
        ),
    ];
    for (i, (name, kind, help)) in per_inbound.into_iter().enumerate() {
        family(o, name, kind, help);
        for (tag, c) in &inbounds {
            let n = [c.open_connections, c.refused_by_address_limit][i];
            let _ = writeln!(o, "{name}{{inbound=\"{tag}\"}} {n}");
        }
    }
    let online = shared
        .accounting
        .users()
        .values()
        .filter(|u| u.open_connections > 0)
        .count() as u64;
    let journal = node.journal_summary();
    let (pending, health) = (journal.pending as u64, journal.health);
    let saved = node.save_status();
    let single = [
        (
            "switchyard_users_online",
            "gauge",
            "Users with open connections.",
            online,
        ),
        (
            "switchyard_journal_pending",
            "gauge",
            "Journal records not yet acknowledged.",
            pending,
        ),
        (
            "switchyard_journal_writable",
            "gauge",
            "1 while the traffic journal reaches the disk, 0 while writes fail (counting goes on in memory).",
            u64::from(health.error.is_none()),
        ),
        (
            "switchyard_journal_write_failures_total",
            "counter",
            "Traffic journal writes that failed.",
            health.write_failures,
        ),
        (
            "switchyard_node_task_restarts_total",
            "counter",
            "Background tasks (journal flusher, throughput sampler) started again after a panic.",
            node.task_restarts(),
        ),
        (
            "switchyard_last_good_saved",
            "gauge",
            "1 when the config in force is saved as the last good one, 0 when its save failed.",
            u64::from(saved.error.is_none()),
        ),
        (
            "switchyard_last_good_save_failures_total",
            "counter",
            "Saves of the last good config that failed.",
            saved.failures,
        ),
    ];
    for (name, kind, help, value) in single {
        family(o, name, kind, help);
        let _ = writeln!(o, "{name} {value}");
    }
    shared.inbound_states.write_metrics(o);
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], out).into_response()
}
