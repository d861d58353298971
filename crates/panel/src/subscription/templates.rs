//! The operators' templates, cached for subscriptions (`crate::api::templates` keeps
//! them): read from the store once, then again only after a change is announced on
//! [`Changes`] (a template's save announces, as every write does; with PostgreSQL,
//! every instance hears it), so a fetch costs no query for them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;
use tokio::sync::broadcast::{self, error::TryRecvError};

use super::agents::Format;
use crate::store::{Changes, Store, StoreError};

type Loaded = Arc<HashMap<Format, Arc<Value>>>;

/// The templates of the formats that take one.
pub struct Templates {
    store: Arc<dyn Store>,
    cache: Mutex<Cache>,
}

struct Cache {
    changes: broadcast::Receiver<()>,
    loaded: Option<Loaded>,
}

impl Cache {
    /// Whether a change was announced since the last call.
    fn changed(&mut self) -> bool {
        let mut changed = false;
        loop {
            match self.changes.try_recv() {
                Ok(()) | Err(TryRecvError::Lagged(_)) => changed = true,
                Err(TryRecvError::Empty | TryRecvError::Closed) => return changed,
            }
        }
    }
}

impl std::fmt::Debug for Templates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Templates").finish_non_exhaustive()
    }
}

impl Templates {
    /// A cache over `store`, emptied by every change announced on `changes`.
    pub fn new(store: Arc<dyn Store>, changes: &Changes) -> Self {
        Self {
            store,
            cache: Mutex::new(Cache {
                changes: changes.subscribe(),
                loaded: None,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `format`'s template, if the operator keeps one.
    pub async fn get(&self, format: Format) -> Result<Option<Arc<Value>>, StoreError> {
        {
            let mut cache = self.lock();
            if cache.changed() {
                cache.loaded = None;
            }
            if let Some(loaded) = &cache.loaded {
                return Ok(loaded.get(&format).cloned());
            }
        }
        let mut map = HashMap::new();
        for f in [Format::SingBox, Format::Clash, Format::Xray] {
            if let Some(v) = crate::api::templates::load(self.store.as_ref(), f).await? {
                map.insert(f, Arc::new(v));
            }
        }
        let loaded: Loaded = Arc::new(map);
        let mut cache = self.lock();
        // A change announced while loading: serve what was read, keep nothing.
        if !cache.changed() {
            cache.loaded = Some(loaded.clone());
        }
        Ok(loaded.get(&format).cloned())
    }
}
