//! Who may hold the panel's channel listener before being a node's channel:
//! [`Pending`] counts connections not yet authenticated (in their TLS handshake, in
//! enrollment, waiting for authorization), in all and per source, and refuses one past
//! either limit. A [`Slot`] is one such connection; dropping it frees its place.
//!
//! A source is an IPv4 address, or an IPv6 /64 (one host's usual allotment, so an
//! attacker with a /64 counts as one source); an IPv4-mapped IPv6 address is its IPv4
//! address. Pure bookkeeping: no I/O, no clock.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::{Arc, Mutex, MutexGuard};

/// What one source is, for the per-source limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Source(IpAddr);

impl Source {
    /// The source `ip` counts under.
    pub(crate) fn of(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(v4) => Self(IpAddr::V4(v4)),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => Self(IpAddr::V4(v4)),
                None => {
                    let s = v6.segments();
                    Self(IpAddr::V6(Ipv6Addr::new(
                        s[0], s[1], s[2], s[3], 0, 0, 0, 0,
                    )))
                }
            },
        }
    }
}

/// Which limit refused a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// [`crate::PanelOptions::max_pending`]: too many strangers in all.
    Total,
    /// [`crate::PanelOptions::max_pending_per_source`]: this source holds its share.
    Source,
}

#[derive(Debug, Default)]
struct Counts {
    total: usize,
    by_source: HashMap<Source, usize>,
}

/// The count of unauthenticated connections; cheap to clone (clones share it).
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    counts: Arc<Mutex<Counts>>,
    max_total: usize,
    max_per_source: usize,
}

impl Pending {
    /// At most `max_total` connections at once, `max_per_source` of them from one
    /// source (each at least 1).
    pub(crate) fn new(max_total: usize, max_per_source: usize) -> Self {
        Self {
            counts: Arc::default(),
            max_total: max_total.max(1),
            max_per_source: max_per_source.max(1),
        }
    }

    fn counts(&self) -> MutexGuard<'_, Counts> {
        // The counts stay consistent whatever panicked while holding them.
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A place for a connection from `ip`, or which limit refuses it.
    pub(crate) fn enter(&self, ip: IpAddr) -> Result<Slot, Refused> {
        let source = Source::of(ip);
        let mut c = self.counts();
        if c.total >= self.max_total {
            return Err(Refused::Total);
        }
        let held = c.by_source.get(&source).copied().unwrap_or(0);
        if held >= self.max_per_source {
            return Err(Refused::Source);
        }
        c.total += 1;
        c.by_source.insert(source, held + 1);
        Ok(Slot {
            pending: self.clone(),
            source,
        })
    }

    /// Connections held now (in all, and from `ip`'s source).
    #[cfg(test)]
    fn held(&self, ip: IpAddr) -> (usize, usize) {
        let c = self.counts();
        let by = c.by_source.get(&Source::of(ip)).copied().unwrap_or(0);
        (c.total, by)
    }

    fn leave(&self, source: Source) {
        let mut c = self.counts();
        c.total = c.total.saturating_sub(1);
        if let Some(n) = c.by_source.get_mut(&source) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                // Only sources with a connection are kept: the map stays bounded by
                // the total.
                c.by_source.remove(&source);
            }
        }
    }
}

/// One unauthenticated connection's place; dropped when the connection ends or
/// becomes a node's channel.
#[derive(Debug)]
pub(crate) struct Slot {
    pending: Pending,
    source: Source,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.pending.leave(self.source);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn one_source_holds_at_most_its_share_and_others_still_enter() {
        let p = Pending::new(5, 2);
        let a = ip("192.0.2.1");
        let held: Vec<Slot> = (0..2).map(|_| p.enter(a).unwrap()).collect();
        assert_eq!(p.enter(a).unwrap_err(), Refused::Source);
        let b = p.enter(ip("192.0.2.2")).unwrap();
        assert_eq!(p.held(a), (3, 2));
        drop(held);
        assert_eq!(p.held(a), (1, 0));
        drop(b);
        assert_eq!(p.held(a), (0, 0));
        assert!(p.counts().by_source.is_empty());
    }

    #[test]
    fn the_total_bounds_many_sources() {
        let p = Pending::new(3, 2);
        let held: Vec<Slot> = (1..=3)
            .map(|i| p.enter(ip(&format!("198.51.100.{i}"))).unwrap())
            .collect();
        assert_eq!(p.enter(ip("198.51.100.9")).unwrap_err(), Refused::Total);
        drop(held);
        assert!(p.enter(ip("198.51.100.9")).is_ok());
    }

    #[test]
    fn an_ipv6_slash_64_is_one_source_and_mapped_v4_is_its_v4() {
        let p = Pending::new(10, 1);
        let _a = p.enter(ip("2001:db8:1:2::1")).unwrap();
        assert_eq!(
            p.enter(ip("2001:db8:1:2:ffff::9")).unwrap_err(),
            Refused::Source
        );
        assert!(p.enter(ip("2001:db8:1:3::1")).is_ok());
        let _v4 = p.enter(ip("203.0.113.7")).unwrap();
        assert_eq!(
            p.enter(ip("::ffff:203.0.113.7")).unwrap_err(),
            Refused::Source
        );
    }
}
