//! What subscriptions are made of besides the user: every cluster's routes, servers and
//! inbounds with their secrets, cached in [`Topology`], so that a subscription costs
//! one indexed query (the user by token) instead of five per cluster.
//!
//! The cached view is loaded again
//!
//! - after any write announced on [`Changes`]: every write that can change a
//!   subscription announces (this instance's writes at once; with PostgreSQL, every
//!   instance's when their `NOTIFY` arrives, as for the nodes), and a view loaded while
//!   a change was announced is served to the request that loaded it but never kept;
//! - when it is [`MAX_AGE_MS`] old: servers' health and load are stored without an
//!   announcement (they change no node's config), so a subscription's choice of server
//!   may be that much behind the store's. Servers are kept as stored; the caller judges
//!   their state at its own `now` ([`Server::at`]), as before.
//!
//! Time comes in as `now_ms`; nothing here reads a clock.

use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::broadcast::{self, error::TryRecvError};

use crate::model::{Id, Inbound, InboundSecrets, Route, Server};
use crate::store::{Changes, Store, StoreError};

/// How old the cached view may be before a subscription loads it again. 1 s: servers'
/// health is stored every heartbeat (2 s) without an announcement, and a server is
/// judged unavailable only after `down_after_ms` (10 s) of silence, so a subscription
/// is at most a second behind either; under load, one reload a second costs nothing.
pub const MAX_AGE_MS: i64 = 1_000;

/// One cluster with at least one non-empty route, as subscriptions see it.
#[derive(Clone, Debug)]
pub struct ClusterView {
    /// The cluster.
    pub id: Id,
    /// Its routes, in order.
    pub routes: Vec<Route>,
    /// Its servers, as stored (health not yet judged at a `now`).
    pub servers: Vec<Server>,
    /// Its inbounds with their secrets.
    pub inbounds: Vec<(Inbound, InboundSecrets)>,
}

/// Every cluster with a non-empty route, oldest first.
pub type View = Arc<[ClusterView]>;

/// The cached [`View`] over a store.
pub struct Topology {
    store: Arc<dyn Store>,
    cache: Mutex<Cache>,
    /// Held while loading, so that a stale view is loaded once, not by every request
    /// that finds it stale.
    loading: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Topology {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Topology").finish_non_exhaustive()
    }
}

struct Cache {
    changes: broadcast::Receiver<()>,
    /// Counts the batches of announcements taken; a view is good for one generation.
    generation: u64,
    view: Option<Loaded>,
}

struct Loaded {
    generation: u64,
    loaded_ms: i64,
    view: View,
}

impl Cache {
    fn take_changes(&mut self) {
        loop {
            match self.changes.try_recv() {
                // Lagged: changes were missed, which is a change.
                Ok(()) | Err(TryRecvError::Lagged(_)) => self.generation += 1,
                Err(TryRecvError::Empty | TryRecvError::Closed) => return,
            }
        }
    }

    fn fresh(&mut self, now_ms: i64) -> Option<View> {
        self.take_changes();
        self.view
            .as_ref()
            .filter(|l| {
                l.generation == self.generation && (0..MAX_AGE_MS).contains(&(now_ms - l.loaded_ms))
            })
            .map(|l| l.view.clone())
    }
}

impl Topology {
    /// A cache over `store`, emptied by every change announced on `changes`.
    pub fn new(store: Arc<dyn Store>, changes: &Changes) -> Self {
        Self {
            store,
            cache: Mutex::new(Cache {
                changes: changes.subscribe(),
                generation: 0,
                view: None,
            }),
            loading: tokio::sync::Mutex::new(()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The view at `now_ms`: the cached one while fresh, else loaded from the store.
    pub async fn view(&self, now_ms: i64) -> Result<View, StoreError> {
        if let Some(v) = self.lock().fresh(now_ms) {
            return Ok(v);
        }
        let _loading = self.loading.lock().await;
        let generation = {
            let mut cache = self.lock();
            if let Some(v) = cache.fresh(now_ms) {
                return Ok(v);
            }
            cache.generation
        };
        let view: View = load(self.store.as_ref()).await?.into();
        let mut cache = self.lock();
        cache.take_changes();
        if cache.generation == generation {
            cache.view = Some(Loaded {
                generation,
                loaded_ms: now_ms,
                view: view.clone(),
            });
        }
        Ok(view)
    }
}

/// Reads the view from the store: what the subscription handler used to read per
/// request.
async fn load(store: &dyn Store) -> Result<Vec<ClusterView>, StoreError> {
    let mut out = Vec::new();
    for cluster in store.clusters().await? {
        let routes = store.routes(cluster.id).await?;
        if routes.iter().all(|r| r.inbound_ids.is_empty()) {
            continue;
        }
        out.push(ClusterView {
            id: cluster.id,
            routes,
            servers: store.servers(Some(cluster.id)).await?,
            inbounds: store.cluster_inbounds(cluster.id).await?,
        });
    }
    Ok(out)
}
