//! The running node: applies configs as differences (see [`apply`](Node::apply)),
//! owns the shared state, the journal and the control token.

mod apply;
mod handover;
mod tasks;

pub use apply::SaveStatus;
pub use handover::{Start, UpgradeRequest};

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use thiserror::Error;
use tokio_util::sync::CancellationToken;

use crate::accounting::now_ms;
use crate::config::{InboundConfig, NodeConfig, Secret};
use crate::inbound;
use crate::journal::{Journal, JournalError, Record, Summary};
use crate::runtime::{Runtime, Shared};
use crate::state::{self, StateError};
use crate::tunnels;

/// How often the journal takes a record. 1 s: a kill -9 or a power cut loses at most
/// this much counting; each record costs one small synced append (and only when some
/// user moved bytes).
pub const JOURNAL_EVERY: Duration = Duration::from_secs(1);

/// Why a config was not applied. The node goes on with the config it had.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ApplyError {
    /// The config is not valid.
    #[error(transparent)]
    Invalid(#[from] crate::config::ConfigError),
    /// An inbound could not be set up (port in use, unreadable certificate...).
    #[error("inbound {tag:?}: {problem}")]
    Inbound {
        /// The inbound's tag.
        tag: String,
        /// What went wrong.
        problem: Box<crate::inbound::InboundError>,
    },
    /// A tunnel half could not start (port in use, unreadable certificate...).
    #[error("tunnel {name:?}: {problem}")]
    Tunnel {
        /// The tunnel's name.
        name: String,
        /// What went wrong.
        problem: Box<crate::tunnels::TunnelError>,
    },
    /// The state directory or a file in it can't be written.
    #[error(transparent)]
    State(#[from] StateError),
    /// The journal can't be opened.
    #[error(transparent)]
    Journal(#[from] JournalError),
}

struct Running {
    config: NodeConfig,
    inbounds: HashMap<String, inbound::Running>,
    /// The certificates TLS inbounds serve, swapped live on a renewal.
    certificates: HashMap<String, Arc<crate::tls::Certificate>>,
    tunnels: HashMap<String, tunnels::Running>,
}

/// A running node.
pub struct Node {
    shared: Arc<Shared>,
    running: tokio::sync::Mutex<Running>,
    journal: Arc<Mutex<Journal>>,
    /// The journal's summary after its last operation: status and metrics read this,
    /// never the journal itself, which is locked while it syncs.
    journal_summary: Arc<Mutex<Summary>>,
    state_dir: PathBuf,
    token: Secret,
    metrics_without_token: AtomicBool,
    saved: Mutex<SaveStatus>,
    stop: CancellationToken,
    /// Background tasks started again after a panic.
    task_restarts: Arc<AtomicU64>,
    started_ms: i64,
    /// The channel to the panel, when the node holds one (for status).
    channel: Mutex<Option<tokio::sync::watch::Receiver<switchyard_channel::ChannelStatus>>>,
    /// Where `POST /v1/upgrade` requests go, once the binary takes them.
    upgrades: Mutex<Option<tokio::sync::mpsc::Sender<UpgradeRequest>>>,
    /// Set while an upgrade request waits for its outcome: one at a time.
    upgrading: AtomicBool,
    /// Certificates from ACME servers, for TLS inbounds that take theirs there.
    acme: crate::acme::Keepers,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("state_dir", &self.state_dir)
            .finish_non_exhaustive()
    }
}

/// Where the last good config is kept in the state directory.
pub const LAST_GOOD: &str = "config.json";

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Node {
    /// Starts a node with `config`: makes its state directory (`0700`), reads or makes
    /// the control token, opens the journal, binds its inbounds and starts the
    /// background tasks.
    pub async fn start(config: NodeConfig) -> Result<Arc<Self>, ApplyError> {
        Self::start_with(config, Start::default()).await
    }

    /// [`Node::start`], taking over from another process when `start` says so
    /// ([`crate::handover`]).
    pub async fn start_with(config: NodeConfig, start: Start) -> Result<Arc<Self>, ApplyError> {
        config.validate()?;
        let state_dir = config.node.state_dir.clone();
        let dir = state_dir.clone();
        let successor = start.inherited.is_some();
        let (token, journal) = state::blocking(move || -> Result<_, ApplyError> {
            state::create_dir(&dir)?;
            state::tighten(&dir.join(LAST_GOOD))?;
            let journal = if successor {
                Journal::standby()
            } else {
                Journal::open(&dir)?
            };
            Ok((state::load_or_create_token(&dir)?, journal))
        })
        .await
        .map_err(|source| StateError::Io {
            path: state_dir.clone(),
            source,
        })??;
        let shared = Arc::new(Shared::new(
            Runtime::from_config(&config, HashMap::new()),
            start.inherited,
        ));
        let stop = CancellationToken::new();
        let task_restarts = Arc::new(AtomicU64::new(0));
        let acme =
            crate::acme::Keepers::new(state_dir.clone(), stop.clone(), task_restarts.clone());
        let node = Arc::new(Self {
            acme,
            shared,
            running: tokio::sync::Mutex::new(Running {
                config: NodeConfig {
                    inbounds: Vec::new(),
                    users: Vec::new(),
                    tunnels: Vec::new(),
                    ..config.clone()
                },
                inbounds: HashMap::new(),
                certificates: HashMap::new(),
                tunnels: HashMap::new(),
            }),
            journal_summary: Arc::new(Mutex::new(journal.summary())),
            journal: Arc::new(Mutex::new(journal)),
            state_dir,
            token,
            metrics_without_token: AtomicBool::new(false),
            saved: Mutex::new(SaveStatus::default()),
            stop,
            task_restarts,
            started_ms: now_ms(),
            channel: Mutex::new(None),
            upgrades: Mutex::new(None),
            upgrading: AtomicBool::new(false),
        });
        node.apply(config).await?;
        tasks::start(&node);
        Ok(node)
    }

    /// The last good config kept in `state_dir`, if any. Blocks (a file read).
    pub fn last_good(state_dir: &std::path::Path) -> Option<NodeConfig> {
        let text = std::fs::read_to_string(state_dir.join(LAST_GOOD)).ok()?;
        NodeConfig::from_json(&text).ok()
    }

    /// The channel to the panel now, when the node holds one.
    pub fn channel_status(&self) -> Option<switchyard_channel::ChannelStatus> {
        lock(&self.channel).as_ref().map(|r| r.borrow().clone())
    }

    /// Reports the channel's status in `GET /v1/status` (`panel`).
    pub fn set_channel_status(
        &self,
        status: tokio::sync::watch::Receiver<switchyard_channel::ChannelStatus>,
    ) {
        *lock(&self.channel) = Some(status);
    }

    /// Shared state, for the control API.
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// When the node started (Unix ms).
    pub fn started_ms(&self) -> i64 {
        self.started_ms
    }

    /// The bearer token the control API wants (kept in the state directory).
    pub fn control_token(&self) -> &Secret {
        &self.token
    }

    /// Whether `GET /metrics` is served without the token (`control.metrics_without_token`).
    pub fn metrics_without_token(&self) -> bool {
        self.metrics_without_token.load(Ordering::Relaxed)
    }

    /// Background tasks (the journal's flusher, the throughput sampler) started again
    /// after a panic.
    pub fn task_restarts(&self) -> u64 {
        self.task_restarts.load(Ordering::Relaxed)
    }

    /// Whether the last good config reached the disk.
    pub fn save_status(&self) -> SaveStatus {
        lock(&self.saved).clone()
    }

    /// The config in force.
    pub async fn config(&self) -> NodeConfig {
        self.running.lock().await.config.clone()
    }

    /// Tags and open connections of the running inbounds.
    pub async fn inbounds(&self) -> Vec<(InboundConfig, usize)> {
        let running = self.running.lock().await;
        running
            .config
            .inbounds
            .iter()
            .map(|c| (c.clone(), self.shared.sessions.count_inbound(&c.tag)))
            .collect()
    }

    /// Status of every tunnel half on this node.
    pub async fn tunnels(&self) -> Vec<serde_json::Value> {
        let running = self.running.lock().await;
        let mut v: Vec<_> = running.tunnels.values().map(tunnels::status).collect();
        v.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
        v
    }

    /// Status of the tunnel `name` (its name or its tag), if this node has a half.
    pub async fn tunnel(&self, name: &str) -> Option<serde_json::Value> {
        let running = self.running.lock().await;
        running
            .tunnels
            .values()
            .find(|r| {
                r.config.name == name
                    || switchyard_tunnel::credentials::tunnel_tag(&r.config.name) == name
            })
            .map(tunnels::status)
    }

    /// Drops the tunnel half's links; the dialing side starts over at once.
    pub async fn reset_tunnel(&self, name: &str) -> bool {
        let running = self.running.lock().await;
        let found = running.tunnels.values().find(|r| {
            r.config.name == name
                || switchyard_tunnel::credentials::tunnel_tag(&r.config.name) == name
        });
        if let Some(r) = found {
            tunnels::reset(r);
        }
        found.is_some()
    }

    /// The journal. Its methods block (they write the file): async code calls
    /// [`Self::read_journal`], [`Self::ack_journal`] and [`Self::flush_journal`].
    pub fn journal(&self) -> MutexGuard<'_, Journal> {
        lock(&self.journal)
    }

    /// The journal's summary after its last operation (never waits for a write).
    pub fn journal_summary(&self) -> Summary {
        lock(&self.journal_summary).clone()
    }

    async fn with_journal<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Journal) -> T + Send + 'static,
    ) -> Result<T, JournalError> {
        let (journal, summary) = (self.journal.clone(), self.journal_summary.clone());
        state::blocking(move || {
            let mut j = lock(&journal);
            let out = f(&mut j);
            *lock(&summary) = j.summary();
            out
        })
        .await
        .map_err(|source| JournalError::Io {
            path: self.state_dir.join(crate::journal::FILE),
            source,
        })
    }

    /// Journal records after `cursor` (at most `limit`) and the cursor to acknowledge.
    pub async fn read_journal(
        &self,
        cursor: u64,
        limit: usize,
    ) -> Result<(Vec<Record>, u64), JournalError> {
        self.with_journal(move |j| j.read(cursor, limit)).await
    }

    /// Drops journal records up to `cursor`.
    pub async fn ack_journal(&self, cursor: u64) -> Result<(), JournalError> {
        self.with_journal(move |j| j.ack(cursor)).await?
    }

    /// Takes a journal record now.
    pub async fn flush_journal(&self) -> Result<Option<u64>, JournalError> {
        let totals: BTreeMap<String, (u64, u64)> = self.shared.accounting.user_totals();
        self.with_journal(move |j| j.flush(&totals, now_ms()))
            .await?
    }

    /// Stops the listeners and background tasks and takes a last journal record.
    pub async fn shutdown(&self) {
        self.stop.cancel();
        let mut running = self.running.lock().await;
        for (_, ib) in running.inbounds.drain() {
            ib.stop();
        }
        running.tunnels.clear();
        if let Err(e) = self.flush_journal().await {
            tracing::error!("last journal record: {e}");
        }
    }
}
