//! Nodes: enrollment (join tokens checked against the store, node certificates
//! pinned), and for every node channel this instance holds, one task that
//!
//! 1. sends a heartbeat (`GET /v1/status`) every [`HealthSettings::heartbeat_ms`] and
//!    feeds [`Health`] (pending / online / unavailable, with hysteresis);
//! 2. renders the server's desired config and, when the node runs another version,
//!    pushes it (`PUT /v1/config`); on every change announced by the store (this
//!    instance's writes, or another's through PostgreSQL's NOTIFY) it does so at once;
//! 3. pulls stats by journal cursor (`GET /v1/stats?cursor=C`), checks them (only the
//!    server's own users, within what a server can carry: `stats.rs`), adds them to
//!    users' usage in batches, each in the transaction that moves the stored cursor,
//!    and only then acknowledges (`POST /v1/stats/ack`): a crash between the two
//!    re-reads records the store then skips, so traffic is never lost or counted twice;
//! 4. stores health, load and the node's config version for the API and other
//!    instances.
//!
//! A node keeps serving its last config while the panel is away; when its channel
//! returns, step 2 catches it up.
//!
//! This module holds the channels and wires each one's loop; the steps live beside
//! it: the push (`push.rs`), the stats round (`stats.rs`), the roll-outs a round
//! confirms (`rollout.rs`), and what the API asks about tunnels ([`tunnel_status`]).

mod enroller;
pub mod forward;
mod push;
mod recent;
mod rollout;
mod stats;
pub mod tunnel_status;
mod usage;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

use http::Method;
use serde::Deserialize;
use switchyard_balance::capacity::{Capacity, EstimatorSettings};
use switchyard_channel::{ChannelError, NodeChannel};
use tokio_util::sync::CancellationToken;

pub use enroller::StoreEnroller;
pub use recent::RecentUsers;

use crate::metrics::Metrics;
use crate::model::{Health, HealthSettings, Id, Observation};
use crate::store::{Changes, ServerReport, Store, StoreError};

/// The capacity estimator's settings (half-life 24 h, floor 1 Mbit/s for a minute).
const ESTIMATOR: EstimatorSettings = EstimatorSettings {
    half_life_ms: EstimatorSettings::DEFAULT_HALF_LIFE_MS,
    floor: EstimatorSettings::DEFAULT_FLOOR,
    warmup_ms: EstimatorSettings::DEFAULT_WARMUP_MS,
    max_step_ms: EstimatorSettings::DEFAULT_MAX_STEP_MS,
};

/// The channels this instance holds, one task each.
#[derive(Clone)]
pub struct Nodes {
    store: Arc<dyn Store>,
    changes: Changes,
    metrics: Arc<Metrics>,
    settings: HealthSettings,
    held: Arc<Mutex<HashMap<Id, (NodeChannel, CancellationToken)>>>,
    health: Arc<Mutex<HashMap<Id, Health>>>,
    /// Refused stats records not yet logged.
    refusals: Arc<stats::RefusalLog>,
    /// Several instances on PostgreSQL: where requests for nodes held elsewhere go.
    forward: Arc<std::sync::OnceLock<Arc<forward::Forwarder>>>,
}

impl std::fmt::Debug for Nodes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nodes").finish_non_exhaustive()
    }
}

fn now_ms() -> i64 {
    crate::clock::now_ms()
}

#[derive(Deserialize)]
struct Status {
    #[serde(default)]
    version: Option<u64>,
    #[serde(default)]
    users_online: u64,
    #[serde(default)]
    throughput: Throughput,
    /// The node's software version (nodes before it said none).
    #[serde(default)]
    node_version: Option<String>,
    /// The sha256 of the binary the node runs, once it hashed it.
    #[serde(default)]
    binary_sha256: Option<String>,
}

/// The longest node version kept (as an enrollment's).
const MAX_VERSION_LEN: usize = switchyard_channel::enroll::MAX_VERSION_LEN;

/// What a node says of its software, kept only when it is what it claims to be: a
/// short printable version, a sha256 of 64 hex digits (lowercased).
fn software(status: &Status) -> (Option<String>, Option<String>) {
    let version = status
        .node_version
        .as_deref()
        .filter(|v| !v.is_empty() && v.len() <= MAX_VERSION_LEN)
        .filter(|v| v.chars().all(|c| c.is_ascii_graphic() || c == ' '))
        .map(str::to_owned);
    let sha = status
        .binary_sha256
        .as_deref()
        .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
        .map(str::to_ascii_lowercase);
    (version, sha)
}

#[derive(Default, Deserialize)]
struct Throughput {
    #[serde(default)]
    up_bytes_per_s: u64,
    #[serde(default)]
    down_bytes_per_s: u64,
}

impl Nodes {
    /// Nodes over `store`, hearing changes on `changes`.
    pub fn new(store: Arc<dyn Store>, changes: Changes, metrics: Arc<Metrics>) -> Self {
        Self {
            store,
            changes,
            metrics,
            settings: HealthSettings::default(),
            held: Arc::default(),
            health: Arc::default(),
            refusals: Arc::default(),
            forward: Arc::default(),
        }
    }

    /// Several instances on the PostgreSQL database at `url`: requests for nodes
    /// whose channel another instance holds go through it ([`forward`]), and this
    /// instance answers theirs for the nodes it holds, until `stop`.
    pub fn forward_through(&self, url: &str, stop: CancellationToken) -> Result<(), sqlx::Error> {
        let f = forward::Forwarder::start(url, self.clone(), stop)?;
        let _ = self.forward.set(f);
        Ok(())
    }

    /// Whether this instance holds `server`'s channel now.
    pub fn holds(&self, server: Id) -> bool {
        self.held
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&server)
            .is_some_and(|(c, _)| !c.is_closed())
    }

    /// A request to `server`'s node control API within `deadline`: over the channel
    /// this instance holds, or else through the instance that holds it (several
    /// instances on PostgreSQL; only the node's tunnel API is forwarded).
    pub async fn ask(
        &self,
        server: Id,
        method: Method,
        path: &str,
        deadline: Duration,
    ) -> Result<forward::Answer, forward::AskError> {
        if let Some(local) = self.request(server, method.clone(), path, deadline).await {
            return local.map_err(|e| forward::AskError::Node {
                server,
                reason: e.to_string(),
            });
        }
        match self.forward.get() {
            Some(f) => f.ask(server, method, path, deadline).await,
            None => Err(forward::AskError::NotConnected { server }),
        }
    }

    /// Server ids whose channel this instance holds now.
    pub fn held(&self) -> Vec<Id> {
        let mut v: Vec<Id> = self
            .held
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|(_, (c, _))| !c.is_closed())
            .map(|(id, _)| *id)
            .collect();
        v.sort_unstable();
        v
    }

    /// A request to `server`'s node control API over the channel this instance holds,
    /// within `deadline`; `None` when it holds none (the node is not connected here).
    pub async fn request(
        &self,
        server: Id,
        method: Method,
        path: &str,
        deadline: std::time::Duration,
    ) -> Option<Result<(http::StatusCode, Vec<u8>), ChannelError>> {
        let channel = {
            let held = self.held.lock().unwrap_or_else(|p| p.into_inner());
            held.get(&server)
                .map(|(c, _)| c.clone())
                .filter(|c| !c.is_closed())?
        };
        Some(
            channel
                .request_within(method, path, None, deadline)
                .await
                .map(|(status, body)| (status, body.to_vec())),
        )
    }

    /// A request with `body` to `server`'s node control API over the channel this
    /// instance holds, within `deadline`; `None` when it holds none.
    pub async fn request_with(
        &self,
        server: Id,
        method: Method,
        path: &str,
        body: Vec<u8>,
        deadline: std::time::Duration,
    ) -> Option<Result<(http::StatusCode, Vec<u8>), ChannelError>> {
        let channel = {
            let held = self.held.lock().unwrap_or_else(|p| p.into_inner());
            held.get(&server)
                .map(|(c, _)| c.clone())
                .filter(|c| !c.is_closed())?
        };
        Some(
            channel
                .request_within(method, path, Some(body), deadline)
                .await
                .map(|(status, body)| (status, body.to_vec())),
        )
    }

    /// Closes the channel this instance holds for `server`, if any; the node dials
    /// again after its back-off (and its state is caught up then).
    pub fn disconnect(&self, server: Id) -> bool {
        let held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        match held.get(&server) {
            Some((c, _)) => {
                c.close();
                true
            }
            None => false,
        }
    }

    /// Takes channels from `incoming` until it closes, one task per node.
    pub async fn run(
        self,
        mut incoming: tokio::sync::mpsc::Receiver<NodeChannel>,
        stop: CancellationToken,
    ) {
        loop {
            let channel = tokio::select! {
                c = incoming.recv() => match c { Some(c) => c, None => return },
                () = stop.cancelled() => return,
            };
            let Ok(id) = channel.server_id().parse::<Id>() else {
                channel.close();
                continue;
            };
            let token = stop.child_token();
            let old = self
                .held
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(id, (channel.clone(), token.clone()));
            if let Some((c, t)) = old {
                t.cancel();
                c.close();
            }
            tracing::info!(server = id, remote = %channel.remote(), "node channel up");
            let me = self.clone();
            // Supervised: if the task fails, the channel is closed, so the node dials
            // again and gets a fresh task (nothing stays held without one).
            tokio::spawn(async move {
                let held = channel.clone();
                let task = tokio::spawn(async move { me.hold(id, channel, token).await });
                if let Err(e) = task.await {
                    tracing::error!(
                        server = id,
                        "the node's task failed: {e}; closing its channel"
                    );
                    held.close();
                }
            });
        }
    }

    fn observe(&self, id: Id, now: i64, o: Observation) -> Health {
        let mut all = self.health.lock().unwrap_or_else(|p| p.into_inner());
        let h = all
            .entry(id)
            .or_insert_with(|| Health::new(now, self.settings));
        h.observe(now, o);
        h.clone()
    }

    fn tick(&self, id: Id, now: i64) -> Health {
        let mut all = self.health.lock().unwrap_or_else(|p| p.into_inner());
        let h = all
            .entry(id)
            .or_insert_with(|| Health::new(now, self.settings));
        h.tick(now);
        h.clone()
    }

    async fn hold(&self, id: Id, channel: NodeChannel, stop: CancellationToken) {
        let mut changes = self.changes.subscribe();
        let period = Duration::from_millis(self.settings.heartbeat_ms as u64);
        let mut beat = tokio::time::interval(period);
        beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last_report = None;
        let mut recent = RecentUsers::default();
        let mut meter = usage::TunnelMeter::default();
        // The estimate survives restarts and moves between instances with the channel.
        let mut capacity = match self.store.server(id).await {
            Ok(s) => s.capacity,
            Err(e) => {
                tracing::warn!(server = id, "reading the capacity estimate: {e}");
                Capacity::default()
            }
        };
        // The pin this channel's node was authorized with, once read.
        let mut pin = None;
        loop {
            tokio::select! {
                _ = beat.tick() => {}
                r = changes.recv() => {
                    if let Err(tokio::sync::broadcast::error::RecvError::Closed) = r { return; }
                }
                () = channel.closed() => break,
                () = stop.cancelled() => return,
            }
            if self.replaced(id, &mut pin).await {
                tracing::info!(server = id, remote = %channel.remote(), "the server's node was replaced (or the server deleted): its channel is closed");
                channel.close();
                return;
            }
            match self.round(id, &channel).await {
                Ok(mut report) => {
                    let now = now_ms();
                    recent.seen(&report.online, now);
                    if let Some(counters) = &report.tunnel_bytes {
                        for (tunnel, bytes) in meter.deltas(counters) {
                            let bytes = bytes.min(stats::MAX_TUNNEL_DELTA);
                            if let Err(e) = self.store.record_tunnel_usage(tunnel, bytes, now).await
                            {
                                tracing::warn!(
                                    server = id,
                                    tunnel,
                                    "storing the tunnel's usage: {e}"
                                );
                            }
                        }
                    }
                    report.users_online = report.users_online.max(recent.count(now));
                    let (up, down) = report.throughput;
                    capacity.observe(now, up.saturating_add(down) as f64, &ESTIMATOR);
                    report.capacity = Some(capacity);
                    last_report = Some(report.clone());
                    let health = self.observe(id, now, Observation::Answered);
                    self.report(id, &report, health).await;
                }
                Err(e) => {
                    tracing::warn!(server = id, "node round: {e}");
                    let health = self.observe(id, now_ms(), Observation::Failed(e.to_string()));
                    let mut report = last_report.clone().unwrap_or_default();
                    report.users_online = 0;
                    report.capacity = None;
                    self.report(id, &report, health).await;
                }
            }
        }
        // The channel is down: keep the state fresh until it crosses the grace, so
        // the API says "unavailable" with the reason, then let go.
        tracing::info!(server = id, "node channel down");
        let health = self.observe(
            id,
            now_ms(),
            Observation::Failed("the node's channel is down".into()),
        );
        self.report(id, &ReportParts::default(), health).await;
        let until = Instant::now()
            + Duration::from_millis(
                (self.settings.down_after_ms + self.settings.heartbeat_ms) as u64,
            );
        while Instant::now() < until {
            tokio::select! {
                () = tokio::time::sleep(period) => {}
                () = stop.cancelled() => return,
            }
            let health = self.tick(id, now_ms());
            self.report(id, &ReportParts::default(), health).await;
        }
    }

    async fn report(&self, id: Id, parts: &ReportParts, health: Health) {
        let report = ServerReport {
            health,
            config_version: parts.config_version,
            users_online: parts.users_online,
            throughput: parts.throughput,
            capacity: parts.capacity,
            node_version: parts.node_version.clone(),
            binary_sha256: parts.binary_sha256.clone(),
        };
        if let Err(e) = self.store.report_server(id, &report, now_ms()).await {
            tracing::warn!(server = id, "storing the server's health: {e}");
        }
    }

    /// Whether the node holding this channel is no longer the server's: its pin was
    /// forgotten (the node is being replaced) or is another node's, or the server is
    /// gone. `pin` is the channel's, read at the first call. A failing database is no
    /// reason to cut a node.
    async fn replaced(&self, id: Id, pin: &mut Option<String>) -> bool {
        match self.store.server_pin(id).await {
            Ok(Some(now)) => match pin {
                Some(held) => *held != now,
                None => {
                    *pin = Some(now);
                    false
                }
            },
            Ok(None) | Err(StoreError::NotFound(_)) => true,
            Err(e) => {
                tracing::warn!(server = id, "reading the server's pin: {e}");
                false
            }
        }
    }

    /// One heartbeat: status, push when behind, stats. An error is the heartbeat's
    /// failure reason.
    async fn round(&self, id: Id, channel: &NodeChannel) -> Result<ReportParts, RoundError> {
        let status: Status = call(channel, Method::GET, "/v1/status", None).await?;
        let (node_version, binary_sha256) = software(&status);
        let mut parts = ReportParts {
            node_version,
            binary_sha256,
            config_version: status.version,
            users_online: status.users_online,
            throughput: (
                status.throughput.up_bytes_per_s,
                status.throughput.down_bytes_per_s,
            ),
            ..ReportParts::default()
        };
        let now = now_ms();
        let snapshot = self
            .store
            .server_snapshot(id, now)
            .await
            .map_err(|source| RoundError::Store {
                doing: "reading the server from the database",
                source,
            })?;
        if let Some(version) = self
            .push(id, channel, &snapshot, status.version, now)
            .await?
        {
            parts.config_version = Some(version);
            self.confirm_runs(id, &snapshot).await;
        }
        // What a node says is bounded by what a server can be: no more users online
        // than its config has, no more throughput than the line rate (stats.rs).
        parts.users_online = parts.users_online.min(snapshot.users.len() as u64);
        let rate = stats::LINE_RATE_BYTES_PER_MS.saturating_mul(1000);
        parts.throughput = (parts.throughput.0.min(rate), parts.throughput.1.min(rate));
        parts.online = self.collect(id, channel, &snapshot, now).await?;
        parts.tunnel_bytes = stats::relayed_bytes(id, channel, &snapshot).await;
        Ok(parts)
    }
}

/// What a heartbeat learnt besides health.
#[derive(Clone, Debug, Default)]
struct ReportParts {
    config_version: Option<u64>,
    users_online: u64,
    throughput: (u64, u64),
    /// Users seen online in this round.
    online: Vec<Id>,
    /// The capacity estimate after this round's observation; none leaves the stored
    /// one as it is.
    capacity: Option<Capacity>,
    /// The payload counters of the tunnels this server relays, by tunnel id (none:
    /// the node did not answer).
    tunnel_bytes: Option<Vec<(Id, u64)>>,
    /// The node's software version; none keeps the stored one.
    node_version: Option<String>,
    /// The sha256 of the binary the node runs; none keeps the stored one.
    binary_sha256: Option<String>,
}

/// Why a heartbeat round failed (its text is the heartbeat's failure reason).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
enum RoundError {
    /// A request over the channel failed.
    #[error(transparent)]
    Channel(#[from] ChannelError),
    /// The node answered a request with an error status.
    #[error("{path}: the node answered {status}")]
    Status {
        /// The request's path.
        path: String,
        /// The node's status.
        status: http::StatusCode,
    },
    /// The node's answer is not the JSON expected.
    #[error("{path}: unreadable answer: {source}")]
    Answer {
        /// The request's path.
        path: String,
        /// Why it does not parse.
        source: serde_json::Error,
    },
    /// The database failed.
    #[error("{doing}: {source}")]
    Store {
        /// What the round was doing.
        doing: &'static str,
        /// The store's error.
        source: StoreError,
    },
    /// A stats page cannot be taken.
    #[error(transparent)]
    Page(#[from] stats::PageError),
    /// Another writer moved the journal cursor during this round.
    #[error("the journal cursor moved under this round (another panel instance holds the node?)")]
    CursorMoved,
    /// Acknowledging the stats taken failed.
    #[error("acknowledging stats: {0}")]
    Ack(ChannelError),
    /// The node answered the acknowledgement with an error status.
    #[error("acknowledging stats: the node answered {0}")]
    AckStatus(http::StatusCode),
    /// The config did not reach the node.
    #[error("pushing the config: {0}")]
    Push(ChannelError),
}

async fn call<T: serde::de::DeserializeOwned>(
    channel: &NodeChannel,
    method: Method,
    path: &str,
    body: Option<Vec<u8>>,
) -> Result<T, RoundError> {
    let (status, body) = channel.request(method, path, body).await?;
    if !status.is_success() {
        return Err(RoundError::Status {
            path: path.to_owned(),
            status,
        });
    }
    serde_json::from_slice(&body).map_err(|source| RoundError::Answer {
        path: path.to_owned(),
        source,
    })
}
