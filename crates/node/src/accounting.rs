//! Per-user and per-inbound traffic accounting, source addresses and the address limit.
//!
//! Counters are atomics updated on the data path; a [`Admission`] is held by every
//! proxied connection and keeps the user's open-connection count and source address
//! list right even when the connection ends by error.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

/// Counters of one user or one inbound.
#[derive(Debug, Default)]
pub struct Counters {
    up: AtomicU64,
    down: AtomicU64,
    open: AtomicU64,
    refused: AtomicU64,
    last_active_ms: AtomicI64,
    sources: Mutex<HashMap<IpAddr, u32>>,
}

/// A snapshot of [`Counters`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CountersSnapshot {
    /// Bytes from users to destinations.
    pub up: u64,
    /// Bytes from destinations to users.
    pub down: u64,
    /// Connections open now.
    pub open_connections: u64,
    /// Connections refused by the address limit.
    pub refused_by_address_limit: u64,
    /// Unix milliseconds of the last byte either way (0: never).
    pub last_active_ms: i64,
    /// Source addresses with open connections now.
    pub sources: Vec<IpAddr>,
}

impl Counters {
    fn sources(&self) -> MutexGuard<'_, HashMap<IpAddr, u32>> {
        // A panic while holding this lock can't leave the map inconsistent (single
        // insert/remove), so a poisoned lock is still usable.
        self.sources.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A snapshot.
    pub fn snapshot(&self) -> CountersSnapshot {
        let mut sources: Vec<IpAddr> = self.sources().keys().copied().collect();
        sources.sort();
        CountersSnapshot {
            up: self.up.load(Ordering::Relaxed),
            down: self.down.load(Ordering::Relaxed),
            open_connections: self.open.load(Ordering::Relaxed),
            refused_by_address_limit: self.refused.load(Ordering::Relaxed),
            last_active_ms: self.last_active_ms.load(Ordering::Relaxed),
            sources,
        }
    }

    fn add(&self, up: u64, down: u64, now_ms: i64) {
        if up > 0 {
            self.up.fetch_add(up, Ordering::Relaxed);
        }
        if down > 0 {
            self.down.fetch_add(down, Ordering::Relaxed);
        }
        self.last_active_ms.fetch_max(now_ms, Ordering::Relaxed);
    }

    /// [`Self::add`] for counts another process reports (an upgrade's predecessor):
    /// saturating, never wrapping.
    fn add_saturating(&self, up: u64, down: u64, now_ms: i64) {
        for (counter, n) in [(&self.up, up), (&self.down, down)] {
            if n > 0 {
                let _ = counter.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                    Some(v.saturating_add(n))
                });
            }
        }
        self.last_active_ms.fetch_max(now_ms, Ordering::Relaxed);
    }

    fn enter(&self, source: IpAddr) {
        self.open.fetch_add(1, Ordering::Relaxed);
        *self.sources().entry(source).or_default() += 1;
    }

    fn leave(&self, source: IpAddr) {
        self.open.fetch_sub(1, Ordering::Relaxed);
        let mut sources = self.sources();
        if let Some(n) = sources.get_mut(&source) {
            *n -= 1;
            if *n == 0 {
                sources.remove(&source);
            }
        }
    }

    /// Bytes counted so far, up and down.
    pub fn totals(&self) -> (u64, u64) {
        (
            self.up.load(Ordering::Relaxed),
            self.down.load(Ordering::Relaxed),
        )
    }
}

/// Why a connection was not admitted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("user {user:?} already has {limit} source addresses online; {from} refused")]
pub struct AddressLimitReached {
    /// The user.
    pub user: String,
    /// The limit.
    pub limit: u32,
    /// The refused source.
    pub from: IpAddr,
}

/// All counters of the node.
#[derive(Debug, Default)]
pub struct Accounting {
    users: Mutex<BTreeMap<String, Arc<Counters>>>,
    inbounds: Mutex<BTreeMap<String, Arc<Counters>>>,
    node: Counters,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Unix milliseconds now: the node's one reading of the wall clock.
#[allow(
    clippy::disallowed_methods,
    reason = "the node's one reading of the wall clock"
)]
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl Accounting {
    /// Counters of a user (created on first use).
    pub fn user(&self, name: &str) -> Arc<Counters> {
        lock(&self.users)
            .entry(name.to_owned())
            .or_default()
            .clone()
    }

    /// Counters of an inbound (created on first use).
    pub fn inbound(&self, tag: &str) -> Arc<Counters> {
        lock(&self.inbounds)
            .entry(tag.to_owned())
            .or_default()
            .clone()
    }

    /// The node's totals.
    pub fn node(&self) -> &Counters {
        &self.node
    }

    /// Snapshots of every user's counters.
    pub fn users(&self) -> BTreeMap<String, CountersSnapshot> {
        lock(&self.users)
            .iter()
            .map(|(k, v)| (k.clone(), v.snapshot()))
            .collect()
    }

    /// Snapshots of every inbound's counters.
    pub fn inbounds(&self) -> BTreeMap<String, CountersSnapshot> {
        lock(&self.inbounds)
            .iter()
            .map(|(k, v)| (k.clone(), v.snapshot()))
            .collect()
    }

    /// Adds bytes `user` moved in another process (the one this node took over
    /// from, while it drained) to the user's and the node's totals.
    pub fn absorb(&self, user: &str, up: u64, down: u64) {
        let now = now_ms();
        self.user(user).add_saturating(up, down, now);
        self.node.add_saturating(up, down, now);
    }

    /// Bytes counted per user so far (for the journal).
    pub fn user_totals(&self) -> BTreeMap<String, (u64, u64)> {
        lock(&self.users)
            .iter()
            .map(|(k, v)| (k.clone(), v.totals()))
            .collect()
    }

    /// Admits a connection of `user` from `source` on `inbound`, checking the user's
    /// address limit: a source already online is always admitted; a new one only while
    /// the user has fewer than `limit` sources online.
    pub fn admit(
        self: &Arc<Self>,
        user: &str,
        inbound: &str,
        source: IpAddr,
        limit: Option<u32>,
    ) -> Result<Admission, AddressLimitReached> {
        let counters = self.user(user);
        {
            let mut sources = counters.sources();
            if let Some(limit) = limit
                && !sources.contains_key(&source)
                && sources.len() >= limit as usize
            {
                drop(sources);
                counters.refused.fetch_add(1, Ordering::Relaxed);
                self.inbound(inbound)
                    .refused
                    .fetch_add(1, Ordering::Relaxed);
                return Err(AddressLimitReached {
                    user: user.to_owned(),
                    limit,
                    from: source,
                });
            }
            // Entered under the same lock, so two connections can't both take the
            // last place.
            counters.open.fetch_add(1, Ordering::Relaxed);
            *sources.entry(source).or_default() += 1;
        }
        let inbound = self.inbound(inbound);
        inbound.enter(source);
        self.node.open.fetch_add(1, Ordering::Relaxed);
        Ok(Admission {
            user: counters,
            inbound,
            accounting: self.clone(),
            source,
        })
    }
}

/// A connection counted against a user and an inbound; undoes its entry on drop.
#[derive(Debug)]
pub struct Admission {
    user: Arc<Counters>,
    inbound: Arc<Counters>,
    accounting: Arc<Accounting>,
    source: IpAddr,
}

impl Admission {
    /// Counts bytes carried by this connection.
    pub fn add(&self, up: u64, down: u64) {
        let now = now_ms();
        self.user.add(up, down, now);
        self.inbound.add(up, down, now);
        self.accounting.node.add(up, down, now);
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        self.user.leave(self.source);
        self.inbound.leave(self.source);
        self.accounting.node.open.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn address_limit_counts_distinct_sources_online() {
        let acc = Arc::new(Accounting::default());
        let a1 = acc.admit("alice", "in", ip("10.0.0.1"), Some(2)).unwrap();
        let a2 = acc.admit("alice", "in", ip("10.0.0.1"), Some(2)).unwrap(); // same source
        let b = acc.admit("alice", "in", ip("10.0.0.2"), Some(2)).unwrap();
        let err = acc
            .admit("alice", "in", ip("10.0.0.3"), Some(2))
            .unwrap_err();
        assert_eq!(err.limit, 2);
        let snap = acc.users()["alice"].clone();
        assert_eq!(snap.open_connections, 3);
        assert_eq!(snap.refused_by_address_limit, 1);
        assert_eq!(snap.sources, [ip("10.0.0.1"), ip("10.0.0.2")]);
        assert_eq!(acc.inbounds()["in"].refused_by_address_limit, 1);
        // One source leaves entirely: a new one fits.
        drop(b);
        let _c = acc.admit("alice", "in", ip("10.0.0.3"), Some(2)).unwrap();
        drop((a1, a2));
        assert_eq!(acc.users()["alice"].sources, [ip("10.0.0.3")]);
        // Other users are not limited by alice's sources.
        acc.admit("bob", "in", ip("10.0.0.9"), Some(1)).unwrap();
    }

    #[test]
    fn bytes_count_for_user_inbound_and_node() {
        let acc = Arc::new(Accounting::default());
        let a = acc.admit("alice", "vless", ip("127.0.0.1"), None).unwrap();
        a.add(100, 2000);
        a.add(5, 0);
        assert_eq!(acc.users()["alice"].up, 105);
        assert_eq!(acc.users()["alice"].down, 2000);
        assert_eq!(acc.inbounds()["vless"].down, 2000);
        assert_eq!(acc.node().totals(), (105, 2000));
        assert!(acc.users()["alice"].last_active_ms > 0);
        drop(a);
        assert_eq!(acc.users()["alice"].open_connections, 0);
        assert!(acc.users()["alice"].sources.is_empty());
    }
}
