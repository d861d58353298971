//! The switch limit (3 in any 180 s) and the check cool-downs (5 s after a switch,
//! 15 s after a check).

use std::collections::VecDeque;

use crate::config::spec::{AFTER_CHECK, AFTER_SWITCH, SWITCH_LIMIT, SWITCH_WINDOW};
use crate::time::Timestamp;

/// Remembers recent switches and checks.
#[derive(Clone, Debug, Default)]
pub(crate) struct Limits {
    switches: VecDeque<Timestamp>,
    quiet_until: Option<Timestamp>,
}

impl Limits {
    /// Whether a switch at `now` keeps within 3 switches in any 180 s.
    pub(crate) fn switch_allowed(&self, now: Timestamp) -> bool {
        self.in_window(now) < SWITCH_LIMIT
    }

    /// The earliest time a switch is allowed, given none happens before it.
    pub(crate) fn next_switch_allowed(&self, now: Timestamp) -> Timestamp {
        if self.switch_allowed(now) {
            return now;
        }
        // The window frees up when the oldest of the last SWITCH_LIMIT switches leaves it.
        let oldest = self.switches[self.switches.len() - SWITCH_LIMIT];
        oldest + SWITCH_WINDOW
    }

    fn in_window(&self, now: Timestamp) -> usize {
        self.switches
            .iter()
            .filter(|&&t| now.since(t) < SWITCH_WINDOW)
            .count()
    }

    /// Records a switch at `now` (user-caused ones too: they count toward the limit).
    pub(crate) fn record_switch(&mut self, now: Timestamp) {
        self.switches.push_back(now);
        while self.switches.len() > SWITCH_LIMIT {
            self.switches.pop_front();
        }
        self.quiet(now + AFTER_SWITCH);
    }

    /// Records the end of a check at `now`.
    pub(crate) fn record_check(&mut self, now: Timestamp) {
        self.quiet(now + AFTER_CHECK);
    }

    fn quiet(&mut self, until: Timestamp) {
        self.quiet_until = Some(self.quiet_until.map_or(until, |q| q.max(until)));
    }

    /// The earliest time an automatic check may start.
    pub(crate) fn checks_allowed_from(&self) -> Option<Timestamp> {
        self.quiet_until
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: i64) -> Timestamp {
        Timestamp::from_secs(s)
    }

    #[test]
    fn three_switches_in_any_180_seconds() {
        let mut l = Limits::default();
        for s in [0, 10, 20] {
            assert!(l.switch_allowed(t(s)));
            l.record_switch(t(s));
        }
        assert!(!l.switch_allowed(t(30)));
        assert!(!l.switch_allowed(t(179)));
        assert_eq!(l.next_switch_allowed(t(30)), t(180));
        assert!(l.switch_allowed(t(180)));
        l.record_switch(t(180));
        // Now 10, 20, 180 are the last three: the next frees at 190.
        assert!(!l.switch_allowed(t(185)));
        assert_eq!(l.next_switch_allowed(t(185)), t(190));
    }

    #[test]
    fn quiet_5_s_after_a_switch_and_15_s_after_a_check() {
        let mut l = Limits::default();
        assert_eq!(l.checks_allowed_from(), None);
        l.record_check(t(100));
        assert_eq!(l.checks_allowed_from(), Some(t(115)));
        l.record_switch(t(101)); // 106 < 115: the longer quiet holds
        assert_eq!(l.checks_allowed_from(), Some(t(115)));
        l.record_switch(t(200));
        assert_eq!(l.checks_allowed_from(), Some(t(205)));
    }
}
