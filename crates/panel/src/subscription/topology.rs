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
//!   may be that much behind the store's (plus one reload). Servers are kept as stored;
//!   the caller judges their state at its own `now` ([`Server::at`]), as before.
//!
//! Only after a change do requests wait for the reload. A view that is merely old is
//! reloaded by one request while the others keep answering from it: under load, a
//! reload's queries queue behind the users' in the read pool, and every request waiting
//! for them was a latency spike each second.
//!
//! Time comes in as `now_ms`; nothing here reads a clock.

use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::broadcast::{self, error::TryRecvError};

use crate::model::routing::RoutingSettings;
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
    /// Its own split tunnelling, if any.
    pub routing: Option<RoutingSettings>,
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

    /// The view if no change was announced since it was loaded, and whether it is
    /// also younger than [`MAX_AGE_MS`].
    fn current(&mut self, now_ms: i64) -> Option<(View, bool)> {
        self.take_changes();
        self.view
            .as_ref()
            .filter(|l| l.generation == self.generation)
            .map(|l| {
                let young = (0..MAX_AGE_MS).contains(&(now_ms - l.loaded_ms));
                (l.view.clone(), young)
            })
    }

    fn fresh(&mut self, now_ms: i64) -> Option<View> {
        self.current(now_ms)
            .and_then(|(v, young)| young.then_some(v))
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

    /// Counts as a change: the next request loads the view, as after an announced
    /// write (for measurements stored without an announcement, when a caller needs
    /// them seen at once).
    pub fn invalidate(&self) {
        self.lock().generation += 1;
    }

    fn lock(&self) -> MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The view at `now_ms`: the cached one while fresh, else loaded from the store.
    pub async fn view(&self, now_ms: i64) -> Result<View, StoreError> {
        let current = self.lock().current(now_ms);
        let _loading = match current {
            Some((v, true)) => return Ok(v),
            // Old but unchanged: one request reloads, the others answer from it.
            Some((v, false)) => match self.loading.try_lock() {
                Ok(guard) => guard,
                Err(_) => return Ok(v),
            },
            None => self.loading.lock().await,
        };
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
            routing: store.cluster_routing(cluster.id).await?,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{ServerStore, SqlStore};

    const NOW: i64 = 1_796_121_000_000;

    #[tokio::test]
    async fn changes_reload_at_once_and_age_reloads_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let changes = Changes::default();
        let store = SqlStore::open_sqlite(&dir.path().join("panel.db"), changes.clone())
            .await
            .unwrap();
        let topology = Topology::new(Arc::new(store.clone()), &changes);
        let empty = topology.view(NOW).await.unwrap();
        assert!(empty.is_empty());
        // Unchanged and young: the same view.
        assert!(Arc::ptr_eq(&empty, &topology.view(NOW + 1).await.unwrap()));

        // A write announces: the next view has it, however young the cached one.
        store.create_cluster("c", NOW).await.unwrap();
        let old = topology.view(NOW + 2).await.unwrap();
        assert!(!Arc::ptr_eq(&empty, &old));
        assert!(old.is_empty(), "a cluster without routes shows nothing");

        // Old but unchanged while another request reloads: answered from the old view.
        let later = NOW + 2 + MAX_AGE_MS;
        let busy = topology.loading.lock().await;
        assert!(Arc::ptr_eq(&old, &topology.view(later).await.unwrap()));
        drop(busy);
        // With nobody reloading, the old view is reloaded.
        let reloaded = topology.view(later).await.unwrap();
        assert!(!Arc::ptr_eq(&old, &reloaded));
        assert!(Arc::ptr_eq(
            &reloaded,
            &topology.view(later + 1).await.unwrap()
        ));
    }
}
