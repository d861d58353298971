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
}

impl State {
    /// Records a measurement of `server`.
    pub(crate) fn record(&mut self, server: &ServerId, m: Measurement) {
        self.history.entry(server.clone()).or_default().record(m);
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
    pub(crate) fn eligible(&self, sub: &Subscription, id: &ServerId) -> bool {
        !self.marks.contains(id) || self.all_marked(sub)
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
        self.queue(&sub.servers, now)
            .into_iter()
            .map(|p| p.id)
            .filter(|id| !except.contains(&id) && self.eligible(sub, id))
            .take(n)
            .collect()
    }
}
