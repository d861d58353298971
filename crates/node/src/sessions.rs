//! Live user connections, so a config change can close exactly the ones it affects.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio_util::sync::CancellationToken;

#[derive(Debug)]
struct Entry {
    user: String,
    inbound: String,
    cancel: CancellationToken,
}

/// The registry of authenticated connections.
#[derive(Debug, Default)]
pub struct Sessions {
    next: AtomicU64,
    live: Mutex<HashMap<u64, Entry>>,
}

/// One registered connection; leaves the registry on drop.
#[derive(Debug)]
pub struct Session {
    id: u64,
    sessions: Arc<Sessions>,
    /// Fires when the node closes this connection.
    pub cancel: CancellationToken,
}

impl Drop for Session {
    fn drop(&mut self) {
        self.sessions.lock().remove(&self.id);
    }
}

impl Sessions {
    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Entry>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a connection of `user` on `inbound`; `parent` is the inbound's token,
    /// so removing the inbound closes it too.
    pub fn register(
        self: &Arc<Self>,
        user: &str,
        inbound: &str,
        parent: &CancellationToken,
    ) -> Session {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let cancel = parent.child_token();
        self.lock().insert(
            id,
            Entry {
                user: user.to_owned(),
                inbound: inbound.to_owned(),
                cancel: cancel.clone(),
            },
        );
        Session {
            id,
            sessions: self.clone(),
            cancel,
        }
    }

    /// Closes every connection of the users `close` selects; returns how many.
    pub fn close_users(&self, close: impl Fn(&str) -> bool) -> usize {
        let live = self.lock();
        let mut n = 0;
        for e in live.values().filter(|e| close(&e.user)) {
            e.cancel.cancel();
            n += 1;
        }
        n
    }

    /// Open connections on `inbound`.
    pub fn count_inbound(&self, inbound: &str) -> usize {
        self.lock()
            .values()
            .filter(|e| e.inbound == inbound)
            .count()
    }

    /// Open connections in all.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no connection is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closing_a_user_cancels_only_their_connections() {
        let s = Arc::new(Sessions::default());
        let inbound = CancellationToken::new();
        let a = s.register("alice", "in", &inbound);
        let b = s.register("bob", "in", &inbound);
        assert_eq!(s.close_users(|u| u == "alice"), 1);
        assert!(a.cancel.is_cancelled());
        assert!(!b.cancel.is_cancelled());
        inbound.cancel();
        assert!(b.cancel.is_cancelled());
        assert_eq!(s.len(), 2);
        drop(a);
        assert_eq!(s.count_inbound("in"), 1);
    }
}
