//! What Auto remembers across restarts, and the questions the engine asks of it.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::history::History;
use crate::measurement::Measurement;
use crate::queue::{self, Place};
use crate::server::{Server, ServerId, Subscription};
use crate::time::Timestamp;

/// Auto's durable memory. It serializes with serde so a client keeps it across
/// restarts; every entry is keyed by [`ServerId`], so it survives subscription updates.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct State {
    /// The last measurements of each server.
    pub history: BTreeMap<ServerId, History>,
    /// Servers the user marked: Auto won't switch to them.
    pub marks: BTreeSet<ServerId>,
    /// Speed-test results, Mbit/s.
    pub speeds: BTreeMap<ServerId, f64>,
    /// The subscription Auto is on in.
    pub auto: Option<String>,
    /// The server in use.
    pub current: Option<ServerId>,
    /// The server left on a failure, to switch back to when it answers again.
    pub return_to: Option<ServerId>,
    /// Servers remembered above that are in no subscription, with the time they were
    /// first seen missing. After [`PRUNE_AFTER`](crate::config::PRUNE_AFTER) their
    /// history, marks and speed results are forgotten, so the memory stays bounded.
    pub absent_since: BTreeMap<ServerId, Timestamp>,
}

impl State {
    /// Records a measurement of `server`.
    pub(crate) fn record(&mut self, server: &ServerId, m: Measurement) {
        self.history.entry(server.clone()).or_default().record(m);
    }

    /// Clamps every date after `now` to `now` (a state saved before the clock was set
    /// back): such a date would stay "recent" too long and sort after every newer one.
    pub(crate) fn clamp_future(&mut self, now: Timestamp) {
        for h in self.history.values_mut() {
            h.clamp_future(now);
        }
        for t in self.absent_since.values_mut() {
            *t = (*t).min(now);
        }
    }

    /// The subscription's servers in queue order.
    pub(crate) fn queue(&self, servers: &[Server], now: Timestamp) -> Vec<Place> {
        queue::rank(servers, &self.history, &self.speeds, now)
    }

    /// Whether every server of the subscription is marked (then Auto picks among them).
    pub(crate) fn all_marked(&self, sub: &Subscription) -> bool {
        sub.servers.iter().all(|s| self.marks.contains(&s.id))
    }

    /// Whether Auto may switch to `id` of `sub`: unmarked, or every server is marked.
    /// O(servers) when `id` is marked: loops use [`Self::eligible_with`].
    pub(crate) fn eligible(&self, sub: &Subscription, id: &ServerId) -> bool {
        self.eligible_with(self.marks.contains(id) && self.all_marked(sub), id)
    }

    /// [`Self::eligible`] given whether every server of the subscription is marked.
    pub(crate) fn eligible_with(&self, all_marked: bool, id: &ServerId) -> bool {
        all_marked || !self.marks.contains(id)
    }

    /// The best `n` servers of `sub` Auto may switch to, in queue order, leaving out
    /// `except`.
    pub(crate) fn best(
        &self,
        sub: &Subscription,
        n: usize,
        except: &[&ServerId],
        now: Timestamp,
    ) -> Vec<ServerId> {
        // Once for the whole queue: per server it made this quadratic with many marks.
        let all_marked = self.all_marked(sub);
        self.queue(&sub.servers, now)
            .into_iter()
            .map(|p| p.id)
            .filter(|id| !except.contains(&id) && self.eligible_with(all_marked, id))
            .take(n)
            .collect()
    }
}
