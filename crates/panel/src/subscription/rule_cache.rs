//! The rule sets as served (`crate::api::rule_sets`), built once and kept with their
//! ETag until a file behind them changes: the endpoints are public, so a request
//! costs a few `stat` calls, not reading and parsing the lists (up to hundreds of
//! thousands of lines) and hashing the answer again.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use super::rule_sets::names;

/// An answer: its body and its ETag.
#[derive(Debug)]
pub struct Served {
    /// The body.
    pub body: Vec<u8>,
    /// Its strong ETag.
    pub etag: String,
}

/// What the files behind the sets look like: each one's size and modification time
/// (none when absent). Any difference rebuilds what is asked for.
type Stamp = Vec<Option<(u64, Option<SystemTime>)>>;

/// The served rule sets of the directory `dir`, by request (`sing-box/ads.json`…).
#[derive(Debug)]
pub struct RuleCache {
    dir: PathBuf,
    served: Mutex<HashMap<String, (Stamp, Arc<Served>)>>,
}

impl RuleCache {
    /// A cache of the sets under `dir` (`DATA_DIR/rule-sets`).
    pub fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            served: Mutex::default(),
        }
    }

    /// Where the sets are.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn stamp(&self) -> Stamp {
        let mut out = Vec::new();
        for name in names() {
            for path in [
                self.dir
                    .join(crate::rule_refresh::MAINTAINED)
                    .join(format!("{name}.txt")),
                self.dir.join(format!("{name}.txt")),
            ] {
                out.push(
                    std::fs::metadata(&path)
                        .ok()
                        .map(|m| (m.len(), m.modified().ok())),
                );
            }
        }
        out
    }

    /// The answer for `key`, built by `build` (on a blocking thread: it reads the
    /// files) when there is none or a file changed since; `None` when `build` says
    /// there is no such set (nothing is kept for it, so the map holds only the sets
    /// the panel serves).
    pub async fn get(
        self: &Arc<Self>,
        key: &str,
        build: impl FnOnce(&Path) -> Option<Vec<u8>> + Send + 'static,
    ) -> Option<Arc<Served>> {
        let stamp = self.stamp();
        if let Some((s, served)) = self.lock().get(key)
            && *s == stamp
        {
            return Some(served.clone());
        }
        let dir = self.dir.clone();
        let body = tokio::task::spawn_blocking(move || build(&dir))
            .await
            .ok()
            .flatten()?;
        let served = Arc::new(Served {
            etag: crate::ui::etag(&body),
            body,
        });
        self.lock().insert(key.to_owned(), (stamp, served.clone()));
        Some(served)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Stamp, Arc<Served>)>> {
        self.served.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_answer_is_built_once_and_again_after_a_file_changes() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Arc::new(RuleCache::new(dir.path().to_owned()));
        let built = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let get = |cache: &Arc<RuleCache>| {
            let built = built.clone();
            let cache = cache.clone();
            async move {
                cache
                    .get("clash/ads-domain.txt", move |dir| {
                        built.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        super::super::rule_sets::load(dir, "ads")
                            .map(|s| s.clash_domains().into_bytes())
                    })
                    .await
                    .unwrap()
            }
        };
        let first = get(&cache).await;
        assert_eq!(first.body, b"");
        let again = get(&cache).await;
        assert!(Arc::ptr_eq(&first, &again));
        std::fs::write(dir.path().join("ads.txt"), "ads.example\n").unwrap();
        let changed = get(&cache).await;
        assert_eq!(changed.body, b"+.ads.example\n");
        assert_ne!(changed.etag, first.etag);
        assert_eq!(built.load(std::sync::atomic::Ordering::Relaxed), 2);
        // No such set: nothing kept.
        assert!(cache.get("sing-box/nope.json", |_| None).await.is_none());
        assert_eq!(cache.lock().len(), 1);
    }
}
