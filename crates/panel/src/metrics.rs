//! The panel's Prometheus counters: nodes by state, users online, subscription
//! requests, config push latency and outcomes, refused entries of nodes' traffic
//! records. Kept in memory per instance; the API's `/metrics` handler serves
//! [`render`]'s text.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::model::{HealthSettings, Server, ServerState};
use crate::subscription::agents::Format;

/// Upper bounds of the push latency histogram, in seconds.
const PUSH_BUCKETS: [f64; 8] = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0];

/// Counters the panel keeps in memory (per instance).
#[derive(Debug, Default)]
pub struct Metrics {
    /// Per [`Format::ALL`], then the HTML page.
    subscriptions: [AtomicU64; 5],
    push_buckets: [AtomicU64; PUSH_BUCKETS.len()],
    push_count: AtomicU64,
    push_micros: AtomicU64,
    push_refused: AtomicU64,
    push_failed: AtomicU64,
    /// Per [`StatsRefusal::ALL`].
    stats_refused: [AtomicU64; 2],
}

/// Why the panel refused an entry of a node's stats record (`nodes::stats`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatsRefusal {
    /// For a user the server does not serve (another cluster's, or no user at all).
    NotThisServer,
    /// More than the server's allowance has left (more than it can have carried).
    OverAllowance,
}

impl StatsRefusal {
    /// Every reason, in the metric's order.
    pub const ALL: [Self; 2] = [Self::NotThisServer, Self::OverAllowance];

    /// The metric's label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotThisServer => "not_this_server",
            Self::OverAllowance => "over_allowance",
        }
    }
}

/// How a push ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PushOutcome {
    /// Applied.
    Applied,
    /// The node refused the config.
    Refused,
    /// It did not reach the node.
    Failed,
}

impl Metrics {
    /// Counts a subscription request: a format, or `None` for the HTML page.
    pub fn subscription(&self, format: Option<Format>) {
        let i = format.map_or(4, |f| Format::ALL.iter().position(|x| *x == f).unwrap_or(3));
        self.subscriptions[i].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts `n` refused stats entries.
    pub fn stats_refused(&self, reason: StatsRefusal, n: u64) {
        let i = StatsRefusal::ALL
            .iter()
            .position(|r| *r == reason)
            .unwrap_or(0);
        self.stats_refused[i].fetch_add(n, Ordering::Relaxed);
    }

    /// Records a config push that took `took`.
    pub fn push(&self, took: Duration, outcome: PushOutcome) {
        match outcome {
            PushOutcome::Applied => {
                let s = took.as_secs_f64();
                for (i, le) in PUSH_BUCKETS.iter().enumerate() {
                    if s <= *le {
                        self.push_buckets[i].fetch_add(1, Ordering::Relaxed);
                    }
                }
                self.push_count.fetch_add(1, Ordering::Relaxed);
                self.push_micros
                    .fetch_add(took.as_micros() as u64, Ordering::Relaxed);
            }
            PushOutcome::Refused => {
                self.push_refused.fetch_add(1, Ordering::Relaxed);
            }
            PushOutcome::Failed => {
                self.push_failed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// Servers by state and the users online on the online ones, as the text shows them:
/// each server judged at `now_ms` with `health`.
pub fn servers_by_state(
    servers: Vec<Server>,
    now_ms: i64,
    health: HealthSettings,
) -> ([(ServerState, u64); 3], u64) {
    let mut states = [
        (ServerState::Pending, 0),
        (ServerState::Online, 0),
        (ServerState::Unavailable, 0),
    ];
    let mut online = 0;
    for s in servers {
        let s = s.at(now_ms, health);
        if let Some(e) = states.iter_mut().find(|(k, _)| *k == s.state) {
            e.1 += 1;
        }
        if s.state == ServerState::Online {
            online += s.users_online;
        }
    }
    (states, online)
}

/// The counters of `m` in Prometheus' text format, after the servers by state and
/// the users online (see [`servers_by_state`]).
pub fn render(m: &Metrics, states: [(ServerState, u64); 3], online: u64) -> String {
    let mut o = String::new();
    let g = |v: &AtomicU64| v.load(Ordering::Relaxed);
    let _ = writeln!(o, "# HELP switchyard_panel_servers Servers by state.");
    let _ = writeln!(o, "# TYPE switchyard_panel_servers gauge");
    for (s, n) in states {
        let _ = writeln!(
            o,
            "switchyard_panel_servers{{state=\"{}\"}} {n}",
            s.as_str()
        );
    }
    let _ = writeln!(
        o,
        "# HELP switchyard_panel_users_online Users with an open connection, summed over servers."
    );
    let _ = writeln!(o, "# TYPE switchyard_panel_users_online gauge");
    let _ = writeln!(o, "switchyard_panel_users_online {online}");
    let _ = writeln!(
        o,
        "# HELP switchyard_panel_subscription_requests_total Subscription requests by format."
    );
    let _ = writeln!(
        o,
        "# TYPE switchyard_panel_subscription_requests_total counter"
    );
    let names = Format::ALL.map(Format::name);
    for (i, name) in names.iter().chain(&["page"]).enumerate() {
        let _ = writeln!(
            o,
            "switchyard_panel_subscription_requests_total{{format=\"{name}\"}} {}",
            g(&m.subscriptions[i])
        );
    }
    let _ = writeln!(
        o,
        "# HELP switchyard_panel_push_seconds Time from sending a node its config to its answer, for applied pushes."
    );
    let _ = writeln!(o, "# TYPE switchyard_panel_push_seconds histogram");
    for (i, le) in PUSH_BUCKETS.iter().enumerate() {
        let _ = writeln!(
            o,
            "switchyard_panel_push_seconds_bucket{{le=\"{le}\"}} {}",
            g(&m.push_buckets[i])
        );
    }
    let _ = writeln!(
        o,
        "switchyard_panel_push_seconds_bucket{{le=\"+Inf\"}} {}",
        g(&m.push_count)
    );
    let _ = writeln!(
        o,
        "switchyard_panel_push_seconds_sum {}",
        g(&m.push_micros) as f64 / 1e6
    );
    let _ = writeln!(
        o,
        "switchyard_panel_push_seconds_count {}",
        g(&m.push_count)
    );
    let _ = writeln!(
        o,
        "# HELP switchyard_panel_pushes_failed_total Pushes a node refused or that did not reach it."
    );
    let _ = writeln!(o, "# TYPE switchyard_panel_pushes_failed_total counter");
    let _ = writeln!(
        o,
        "switchyard_panel_pushes_failed_total{{reason=\"refused\"}} {}",
        g(&m.push_refused)
    );
    let _ = writeln!(
        o,
        "switchyard_panel_pushes_failed_total{{reason=\"unreachable\"}} {}",
        g(&m.push_failed)
    );
    let _ = writeln!(
        o,
        "# HELP switchyard_panel_stats_refused_total Entries of nodes' traffic records the panel refused."
    );
    let _ = writeln!(o, "# TYPE switchyard_panel_stats_refused_total counter");
    for (i, reason) in StatsRefusal::ALL.iter().enumerate() {
        let _ = writeln!(
            o,
            "switchyard_panel_stats_refused_total{{reason=\"{}\"}} {}",
            reason.as_str(),
            g(&m.stats_refused[i])
        );
    }
    o
}
