//! A relay's tunnel counters (payload bytes since each half started) turned into the
//! bytes each tunnel carried since the last look, for the usage chart. Pure.
//!
//! - On the channel's first round every counter is a baseline: what it holds was
//!   carried before this panel instance held the channel (and counted then, or lost
//!   while no instance held it).
//! - A tunnel first seen in a later round is a half started since: all of its counter
//!   counts.
//! - A counter that went down is a half that restarted (a rebuild, a node restart):
//!   all of it counts.

use std::collections::HashMap;

use crate::model::Id;

/// The last counter seen per tunnel on one relay.
#[derive(Debug, Default)]
pub(crate) struct TunnelMeter {
    primed: bool,
    last: HashMap<Id, u64>,
}

impl TunnelMeter {
    /// The bytes each tunnel of `counters` carried since the previous call (tunnels
    /// with none left out); forgets tunnels no longer reported.
    pub(crate) fn deltas(&mut self, counters: &[(Id, u64)]) -> Vec<(Id, u64)> {
        let mut out = Vec::new();
        for &(id, now) in counters {
            let delta = match self.last.get(&id) {
                None if !self.primed => 0,
                None => now,
                Some(&before) if now >= before => now - before,
                Some(_) => now,
            };
            self.last.insert(id, now);
            if delta > 0 {
                out.push((id, delta));
            }
        }
        self.last
            .retain(|id, _| counters.iter().any(|(i, _)| i == id));
        self.primed = true;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baselines_then_growth_restarts_and_new_halves() {
        let mut m = TunnelMeter::default();
        assert_eq!(
            m.deltas(&[(1, 500)]),
            vec![],
            "the first round is a baseline"
        );
        assert_eq!(m.deltas(&[(1, 800)]), vec![(1, 300)]);
        assert_eq!(m.deltas(&[(1, 800)]), vec![], "nothing carried");
        assert_eq!(m.deltas(&[(1, 50)]), vec![(1, 50)], "the half restarted");
        assert_eq!(
            m.deltas(&[(1, 60), (2, 7)]),
            vec![(1, 10), (2, 7)],
            "a half started since counts whole"
        );
        assert_eq!(m.deltas(&[(2, 9)]), vec![(2, 2)]);
        assert_eq!(
            m.deltas(&[(1, 5), (2, 9)]),
            vec![(1, 5)],
            "1 was forgotten, then new"
        );
        let mut empty = TunnelMeter::default();
        assert_eq!(empty.deltas(&[]), vec![]);
        assert_eq!(
            empty.deltas(&[(3, 4)]),
            vec![(3, 4)],
            "primed by an empty round"
        );
    }
}
