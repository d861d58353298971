//! Holding apps' new connections while a failed connect waits for a check's verdict.
//!
//! A connection that could not be made through the current server starts a check
//! (`docs/auto.md`, "When Auto checks"), but within the spec's limits that check may
//! have to wait for a cool-down (up to 15 s after the last check). Rather than let
//! every new connection fail against a server that refuses until then, the driver
//! holds them and dials them through the server the check settles on. The engine says
//! whether and until when; the driver holds and releases.

use crate::config::{HOLD_LIMIT, RESULTS_GRACE, STANDBY};
use crate::server::ServerId;
use crate::time::Timestamp;

use super::Engine;

impl Engine {
    /// Until when the driver should hold apps' new connections (its time): a connect
    /// to the current server failed and the check it starts (or the one running) has
    /// not decided yet. `None`: dial at once, as usual.
    ///
    /// The time is the latest the deciding check can end: the running check's
    /// deadline, or, while the check waits for a cool-down, its start plus the probe
    /// timeout plus [`RESULTS_GRACE`]. Nothing is held when that is more than
    /// [`HOLD_LIMIT`] away, during a network-loss pause (the next attempt is up to
    /// minutes away and likely silent too) or while the switch limit holds a switch
    /// back (a check could not move anyway). The hold ends when the round of checks
    /// ends, switched or not; a round that stays on the same server leaves the held
    /// connections to fail as they would have.
    pub fn hold_until(&self) -> Option<Timestamp> {
        if !self.holding || self.lost.paused.is_some() || self.switch_retry_at.is_some() {
            return None;
        }
        let end = match &self.running {
            Some(running) => running.deadline,
            None => {
                let (start, _) = self.next_check_at()?;
                start.max(self.now) + self.config.probe_timeout + RESULTS_GRACE
            }
        };
        (end <= self.now + HOLD_LIMIT).then(|| self.clock.to_driver(end))
    }

    /// While connections are held ([`Self::hold_until`]): the servers that may carry
    /// them meanwhile, the best [`STANDBY`] of the subscription Auto is on that Auto may
    /// switch to, in queue order, the current one left out. Empty when nothing is held.
    ///
    /// A held connection would otherwise wait for the check's verdict, up to the
    /// quiet time plus the check (21 s), longer than most apps wait. The driver dials
    /// it through the first of these that takes it; Auto's choice, its checks and its
    /// measurements stay as they are (no switch, nothing recorded).
    pub fn standby(&self) -> Vec<ServerId> {
        if self.hold_until().is_none() {
            return Vec::new();
        }
        let (Some(sub), Some(current)) = (self.auto_sub(), self.state.current.as_ref()) else {
            return Vec::new();
        };
        self.state.best(sub, STANDBY, &[current], self.now)
    }

    /// The round of checks a failed connect waited for ended (or was dropped).
    pub(super) fn end_hold(&mut self) {
        self.holding = false;
    }
}
