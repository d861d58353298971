//! "Users on a server" as the balancer counts them: users seen online by the node's
//! accounting (an open connection, or traffic) within the last [`WINDOW_MS`], not
//! users ever assigned (`docs/routes.md`, clarifications). A user who
//! closed their app a minute ago is still counted, so a burst of reconnects after a
//! blip does not find the server "empty".

use std::collections::HashMap;

use crate::model::Id;
use crate::subscription::choice::WINDOW_MS;

/// The users a server has seen lately.
#[derive(Clone, Debug, Default)]
pub struct RecentUsers {
    seen: HashMap<Id, i64>,
}

impl RecentUsers {
    /// Records `users` as seen at `now_ms` and forgets those seen before the window.
    pub fn seen(&mut self, users: &[Id], now_ms: i64) {
        for u in users {
            self.seen.insert(*u, now_ms);
        }
        self.seen.retain(|_, at| now_ms - *at < WINDOW_MS);
    }

    /// How many were seen within the window before `now_ms`.
    pub fn count(&self, now_ms: i64) -> u64 {
        self.seen
            .values()
            .filter(|at| now_ms - **at < WINDOW_MS)
            .count() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_users_seen_in_the_last_three_minutes() {
        let mut r = RecentUsers::default();
        r.seen(&[1, 2], 0);
        r.seen(&[2, 3], 60_000);
        assert_eq!(r.count(60_000), 3);
        // User 1 was last seen at 0: counted until just before 180 s.
        assert_eq!(r.count(179_999), 3);
        assert_eq!(r.count(180_000), 2);
        r.seen(&[], 240_000);
        assert_eq!(r.count(240_000), 0);
        assert!(r.seen.is_empty());
    }

    #[test]
    fn a_user_seen_twice_counts_once() {
        let mut r = RecentUsers::default();
        r.seen(&[7, 7], 10);
        r.seen(&[7], 20);
        assert_eq!(r.count(20), 1);
    }
}
