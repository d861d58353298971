//! Bounded memory: servers that left every subscription are forgotten after a day.
//!
//! History, marks and speed results are keyed by server identity so they survive
//! updates; without this rule every server a provider ever listed (or a driver ever
//! measured) would stay in the saved state forever. A server absent from every
//! subscription for more than [`PRUNE_AFTER`] loses all three; one that comes back
//! within the day keeps them. Absence is noted when the subscriptions change and when a
//! result arrives for a server in none; the pruning itself runs lazily, on the first
//! input after it is due, so it never needs a timer of its own.

use core::time::Duration;

use crate::config::PRUNE_AFTER;
use crate::server::ServerId;

use super::Engine;

impl Engine {
    /// After the subscriptions changed: servers back in one are no longer absent; every
    /// other remembered server is absent from now on, unless it already was.
    pub(super) fn note_absences(&mut self) {
        let now = self.now;
        let places = &self.places;
        let state = &mut self.state;
        state.absent_since.retain(|id, _| !places.contains_key(id));
        let missing: Vec<ServerId> = state
            .history
            .keys()
            .chain(&state.marks)
            .chain(state.speeds.keys())
            .filter(|id| !places.contains_key(*id) && !state.absent_since.contains_key(*id))
            .cloned()
            .collect();
        for id in missing {
            state.absent_since.insert(id, now);
        }
        self.schedule_prune();
        self.prune_due();
    }

    /// A result is about to be remembered for `id`: if it is in no subscription, it is
    /// absent from now on (unless it already was).
    pub(super) fn note_absent(&mut self, id: &ServerId) {
        if !self.known(id) && !self.state.absent_since.contains_key(id) {
            self.state.absent_since.insert(id.clone(), self.now);
            self.schedule_prune();
        }
    }

    /// Sets the time the longest-absent server is due to be forgotten.
    pub(super) fn schedule_prune(&mut self) {
        let earliest = self.state.absent_since.values().min();
        // "More than a day": due one millisecond after the day is over.
        self.next_prune = earliest.map(|&t| t + PRUNE_AFTER + Duration::from_millis(1));
    }

    /// Forgets every server absent for more than a day, if any is due.
    pub(super) fn prune_due(&mut self) {
        if self.next_prune.is_none_or(|at| self.now < at) {
            return;
        }
        let now = self.now;
        let gone: Vec<ServerId> = self
            .state
            .absent_since
            .iter()
            .filter(|&(_, &since)| now.since(since) > PRUNE_AFTER)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &gone {
            self.state.absent_since.remove(id);
            self.state.history.remove(id);
            self.state.marks.remove(id);
            self.state.speeds.remove(id);
        }
        self.schedule_prune();
    }
}
