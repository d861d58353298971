//! The running node: applies configs as differences, owns the shared state.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Duration;

use thiserror::Error;
use tokio_util::sync::CancellationToken;

use crate::accounting::{Accounting, now_ms};
use crate::config::{InboundConfig, NodeConfig, UserConfig};
use crate::inbound::{self, Bound};
use crate::journal::{Journal, JournalError};
use crate::outbound::Dialer;
use crate::sessions::Sessions;
use crate::tunnels;
use crate::users::Users;

/// How often the journal takes a record. 10 s: a crash loses at most this much
/// counting; each record costs one small synced append.
pub const JOURNAL_EVERY: Duration = Duration::from_secs(10);

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
        problem: String,
    },
    /// A tunnel half could not start (port in use, unreadable certificate...).
    #[error("tunnel {name:?}: {problem}")]
    Tunnel {
        /// The tunnel's name.
        name: String,
        /// What went wrong.
        problem: String,
    },
    /// The state directory can't be written.
    #[error("state directory {path}: {source}")]
    State {
        /// The directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The journal can't be opened.
    #[error(transparent)]
    Journal(#[from] JournalError),
}

/// What the data path reads on every connection; swapped whole on a config change.
#[derive(Debug)]
pub struct Runtime {
    /// Enabled users by credential.
    pub users: Users,
    /// How users' traffic leaves.
    pub dialer: Dialer,
    /// Handshake deadline.
    pub handshake_timeout: Duration,
    /// Idle timeout of proxied connections.
    pub idle_timeout: Duration,
    /// How long a failed authentication without fallback is held.
    pub unauthenticated_hold: Duration,
    /// Relay halves by tunnel tag: where routes into tunnels open their streams.
    pub relays: HashMap<String, Arc<switchyard_tunnel::half::RelayHalf>>,
}

impl Runtime {
    fn from_config(
        c: &NodeConfig,
        relays: HashMap<String, Arc<switchyard_tunnel::half::RelayHalf>>,
    ) -> Self {
        Self {
            relays,
            users: Users::build(c),
            dialer: Dialer::from_config(c),
            handshake_timeout: Duration::from_secs(c.node.handshake_timeout_s),
            idle_timeout: Duration::from_secs(c.node.idle_timeout_s),
            unauthenticated_hold: Duration::from_secs(c.node.unauthenticated_hold_s),
        }
    }
}

/// State shared by the data path, the control API and the background tasks.
#[derive(Debug)]
pub struct Shared {
    /// Counters.
    pub accounting: Arc<Accounting>,
    /// Live connections.
    pub sessions: Arc<Sessions>,
    runtime: RwLock<Arc<Runtime>>,
    /// Bytes per second over the last second, up and down.
    pub throughput: (AtomicU64, AtomicU64),
    /// What each inbound tag keeps across its rebuilds (limits, replay state).
    pub(crate) inbound_states: Arc<crate::inbound::state::InboundStates>,
}

impl Shared {
    /// The runtime in force now.
    pub fn runtime(&self) -> Arc<Runtime> {
        self.runtime
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

struct Running {
    config: NodeConfig,
    inbounds: HashMap<String, inbound::Running>,
    tunnels: HashMap<String, tunnels::Running>,
}

/// A running node.
pub struct Node {
    shared: Arc<Shared>,
    running: tokio::sync::Mutex<Running>,
    journal: Mutex<Journal>,
    state_dir: PathBuf,
    stop: CancellationToken,
    started_ms: i64,
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

/// Whether two inbound configs differ in anything but the display name.
fn shape_changed(a: &InboundConfig, b: &InboundConfig) -> bool {
    let strip = |c: &InboundConfig| InboundConfig {
        name: String::new(),
        ..c.clone()
    };
    strip(a) != strip(b)
}

/// Users whose connections a change must close: removed, disabled, or with changed
/// credentials.
fn users_to_close(old: &[UserConfig], new: &[UserConfig]) -> HashSet<String> {
    let new: HashMap<&str, &UserConfig> = new.iter().map(|u| (u.name.as_str(), u)).collect();
    old.iter()
        .filter(|o| match new.get(o.name.as_str()) {
            None => true,
            Some(n) => {
                !n.enabled
                    || n.vless != o.vless
                    || n.trojan != o.trojan
                    || n.shadowsocks != o.shadowsocks
                    || n.socks != o.socks
            }
        })
        .map(|o| o.name.clone())
        .collect()
}

impl Node {
    /// Starts a node with `config`: binds its inbounds, opens its journal and starts
    /// the background tasks.
    pub async fn start(config: NodeConfig) -> Result<Arc<Self>, ApplyError> {
        config.validate()?;
        let state_dir = config.node.state_dir.clone();
        std::fs::create_dir_all(&state_dir).map_err(|source| ApplyError::State {
            path: state_dir.clone(),
            source,
        })?;
        let journal = Journal::open(&state_dir)?;
        let shared = Arc::new(Shared {
            accounting: Arc::new(Accounting::default()),
            sessions: Arc::new(Sessions::default()),
            runtime: RwLock::new(Arc::new(Runtime::from_config(&config, HashMap::new()))),
            throughput: (AtomicU64::new(0), AtomicU64::new(0)),
            inbound_states: Arc::default(),
        });
        let node = Arc::new(Self {
            shared,
            running: tokio::sync::Mutex::new(Running {
                config: NodeConfig {
                    inbounds: Vec::new(),
                    users: Vec::new(),
                    tunnels: Vec::new(),
                    ..config.clone()
                },
                inbounds: HashMap::new(),
                tunnels: HashMap::new(),
            }),
            journal: Mutex::new(journal),
            state_dir,
            stop: CancellationToken::new(),
            started_ms: now_ms(),
        });
        node.apply(config).await?;
        tokio::spawn(Self::sample_throughput(
            node.shared.clone(),
            node.stop.clone(),
        ));
        tokio::spawn(Self::journal_loop(node.clone()));
        Ok(node)
    }

    /// The last good config kept in `state_dir`, if any.
    pub fn last_good(state_dir: &std::path::Path) -> Option<NodeConfig> {
        let text = std::fs::read_to_string(state_dir.join(LAST_GOOD)).ok()?;
        NodeConfig::from_json(&text).ok()
    }

    /// Shared state, for the control API.
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// When the node started (Unix ms).
    pub fn started_ms(&self) -> i64 {
        self.started_ms
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

    /// Applies `new` as a difference: only added, removed or changed inbounds are
    /// rebuilt, only removed, disabled or re-keyed users lose their connections. On
    /// error nothing changes.
    pub async fn apply(&self, new: NodeConfig) -> Result<(), ApplyError> {
        new.validate()?;
        let mut running = self.running.lock().await;
        // 1. Bind what is new or changed (SO_REUSEPORT lets a changed inbound bind its
        //    port while the old listener still serves), all or nothing.
        let mut bound: Vec<Bound> = Vec::new();
        for ib in &new.inbounds {
            let unchanged = running
                .config
                .inbounds
                .iter()
                .any(|old| old.tag == ib.tag && !shape_changed(old, ib));
            if !unchanged {
                bound.push(
                    inbound::bind(ib)
                        .await
                        .map_err(|problem| ApplyError::Inbound {
                            tag: ib.tag.clone(),
                            problem,
                        })?,
                );
            }
        }
        // 2. Tunnel halves: membership changes apply live, other changes rebuild only
        //    that tunnel's half (the old one stops first: it holds the ports).
        let gone: Vec<String> = running
            .tunnels
            .keys()
            .filter(|n| !new.tunnels.iter().any(|t| &t.name == *n))
            .cloned()
            .collect();
        for name in gone {
            if let Some(old) = running.tunnels.remove(&name) {
                tunnels::stop(old).await;
            }
        }
        for t in &new.tunnels {
            match running.tunnels.get_mut(&t.name) {
                Some(r) if r.config == *t || tunnels::membership_only(&r.config, t) => {
                    tunnels::update_membership(r, t.clone());
                    tunnels::refresh_certificate(r).map_err(|problem| ApplyError::Tunnel {
                        name: t.name.clone(),
                        problem,
                    })?;
                }
                _ => {
                    if let Some(old) = running.tunnels.remove(&t.name) {
                        tunnels::stop(old).await;
                    }
                    let half = tunnels::start(t, &self.shared).await.map_err(|problem| {
                        ApplyError::Tunnel {
                            name: t.name.clone(),
                            problem,
                        }
                    })?;
                    let run = tunnels::Running {
                        config: t.clone(),
                        half,
                    };
                    running.tunnels.insert(t.name.clone(), run);
                }
            }
        }
        // 3. Keep the new config as the last good one, then swap what the data path
        //    reads.
        self.save(&new)?;
        let relays = tunnels::relays(&running.tunnels);
        *self
            .shared
            .runtime
            .write()
            .unwrap_or_else(|p| p.into_inner()) = Arc::new(Runtime::from_config(&new, relays));
        let close = users_to_close(&running.config.users, &new.users);
        if !close.is_empty() {
            let n = self.shared.sessions.close_users(|u| close.contains(u));
            tracing::info!(
                users = close.len(),
                connections = n,
                "closed connections of changed users"
            );
        }
        // 4. Stop removed and changed inbounds; start the new listeners.
        let keep: HashSet<&str> = new
            .inbounds
            .iter()
            .filter(|ib| !bound.iter().any(|b| b.config.tag == ib.tag))
            .map(|ib| ib.tag.as_str())
            .collect();
        let stale: Vec<String> = running
            .inbounds
            .keys()
            .filter(|t| !keep.contains(t.as_str()))
            .cloned()
            .collect();
        for tag in stale {
            if let Some(old) = running.inbounds.remove(&tag) {
                old.stop();
            }
        }
        for b in bound {
            let tag = b.config.tag.clone();
            running.inbounds.insert(tag, b.start(self.shared.clone()));
        }
        tracing::info!(version = new.version, "config applied");
        running.config = new;
        Ok(())
    }

    fn save(&self, config: &NodeConfig) -> Result<(), ApplyError> {
        let err = |source| ApplyError::State {
            path: self.state_dir.clone(),
            source,
        };
        let tmp = self.state_dir.join(format!("{LAST_GOOD}.tmp"));
        let text = serde_json::to_string_pretty(config).unwrap_or_default();
        std::fs::write(&tmp, text).map_err(err)?;
        std::fs::rename(&tmp, self.state_dir.join(LAST_GOOD)).map_err(err)
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

    /// The journal, for the control API.
    pub fn journal(&self) -> MutexGuard<'_, Journal> {
        self.journal.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes a journal record now.
    pub fn flush_journal(&self) -> Result<Option<u64>, JournalError> {
        let totals: BTreeMap<String, (u64, u64)> = self.shared.accounting.user_totals();
        self.journal().flush(&totals, now_ms())
    }

    /// Stops the listeners and background tasks and takes a last journal record.
    pub async fn shutdown(&self) {
        self.stop.cancel();
        let mut running = self.running.lock().await;
        for (_, ib) in running.inbounds.drain() {
            ib.stop();
        }
        running.tunnels.clear();
        if let Err(e) = self.flush_journal() {
            tracing::error!("last journal record: {e}");
        }
    }

    async fn sample_throughput(shared: Arc<Shared>, stop: CancellationToken) {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        let mut last = shared.accounting.node().totals();
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                () = stop.cancelled() => return,
            }
            let now = shared.accounting.node().totals();
            shared.throughput.0.store(now.0 - last.0, Ordering::Relaxed);
            shared.throughput.1.store(now.1 - last.1, Ordering::Relaxed);
            last = now;
        }
    }

    async fn journal_loop(node: Arc<Self>) {
        let mut tick = tokio::time::interval(JOURNAL_EVERY);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                () = node.stop.cancelled() => return,
            }
            if let Err(e) = node.flush_journal() {
                tracing::error!("traffic journal: {e}; counting goes on in memory");
            }
        }
    }
}
