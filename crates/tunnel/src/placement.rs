//! Which origin carries a user's new connection.
//!
//! The relay remembers each user's origin while that origin stays connected (entries
//! idle for a day are forgotten). A user with no live entry is placed by rendezvous
//! (highest-random-weight) hashing of the user name over the connected origins, so
//! placement is the same after a relay restart. Adding an origin moves nobody with an
//! entry; losing one moves only the users that were on it.

use std::collections::HashMap;

use sha2::{Digest, Sha256};

/// Entries unused this long (milliseconds) are forgotten: a day.
pub const FORGET_AFTER_MS: i64 = 24 * 3600 * 1000;

/// The rendezvous weight of `origin` for `user`.
pub fn weight(user: &str, origin: &str) -> u64 {
    let mut h = Sha256::new();
    h.update((user.len() as u32).to_be_bytes());
    h.update(user.as_bytes());
    h.update((origin.len() as u32).to_be_bytes());
    h.update(origin.as_bytes());
    let d = h.finalize();
    u64::from_be_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]])
}

/// The origin with the highest weight for `user` among `connected` (ties by name).
pub fn rendezvous<'a>(user: &str, connected: &[&'a str]) -> Option<&'a str> {
    connected
        .iter()
        .copied()
        .max_by_key(|o| (weight(user, o), *o))
}

/// The sticky table.
#[derive(Debug, Default, Clone)]
pub struct Placement {
    entries: HashMap<String, (String, i64)>,
}

impl Placement {
    /// The origin for a new connection of `user` at `now_ms`, given the origins
    /// connected now; `None` when none is.
    pub fn origin_for(&mut self, user: &str, connected: &[&str], now_ms: i64) -> Option<String> {
        if let Some((origin, used)) = self.entries.get_mut(user)
            && connected.contains(&origin.as_str())
        {
            *used = now_ms;
            return Some(origin.clone());
        }
        let origin = rendezvous(user, connected)?.to_owned();
        self.entries
            .insert(user.to_owned(), (origin.clone(), now_ms));
        Some(origin)
    }

    /// Forgets every user placed on `origin` (it was lost).
    pub fn origin_lost(&mut self, origin: &str) {
        self.entries.retain(|_, (o, _)| o != origin);
    }

    /// Forgets entries unused for [`FORGET_AFTER_MS`].
    pub fn expire(&mut self, now_ms: i64) {
        self.entries
            .retain(|_, (_, used)| now_ms - *used < FORGET_AFTER_MS);
    }

    /// Users remembered now.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nobody is remembered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn users() -> Vec<String> {
        (0..1000).map(|i| format!("user-{i}")).collect()
    }

    fn place_all(p: &mut Placement, connected: &[&str], now: i64) -> Vec<String> {
        users()
            .iter()
            .map(|u| p.origin_for(u, connected, now).unwrap())
            .collect()
    }

    #[test]
    fn the_same_user_lands_on_the_same_origin_and_origins_share_the_load() {
        let mut p = Placement::default();
        let origins = ["fi", "de", "nl"];
        let first = place_all(&mut p, &origins, 0);
        assert_eq!(first, place_all(&mut p, &origins, 1));
        for o in origins {
            let n = first.iter().filter(|x| *x == o).count();
            assert!((250..420).contains(&n), "{o}: {n} of 1000");
        }
        // A restarted relay (empty table) places everyone the same way.
        assert_eq!(first, place_all(&mut Placement::default(), &origins, 2));
    }

    #[test]
    fn losing_an_origin_moves_only_its_users() {
        let mut p = Placement::default();
        let before = place_all(&mut p, &["fi", "de", "nl"], 0);
        p.origin_lost("de");
        let after = place_all(&mut p, &["fi", "nl"], 1);
        let mut moved = 0;
        for (b, a) in before.iter().zip(&after) {
            if b == "de" {
                assert_ne!(a, "de");
                moved += 1;
            } else {
                assert_eq!(a, b, "a user not on the lost origin moved");
            }
        }
        assert!(moved > 250);
    }

    #[test]
    fn adding_an_origin_moves_nobody_and_a_returning_origin_moves_nobody_back() {
        let mut p = Placement::default();
        let before = place_all(&mut p, &["fi", "de"], 0);
        assert_eq!(place_all(&mut p, &["fi", "de", "nl"], 1), before);
        // New users do use the new origin.
        let new: Vec<String> = (0..300)
            .map(|i| {
                p.origin_for(&format!("new-{i}"), &["fi", "de", "nl"], 2)
                    .unwrap()
            })
            .collect();
        assert!(new.iter().any(|o| o == "nl"));
    }

    #[test]
    fn entries_idle_for_a_day_are_forgotten() {
        let mut p = Placement::default();
        p.origin_for("a", &["fi"], 0);
        p.origin_for("b", &["fi"], FORGET_AFTER_MS - 1);
        p.expire(FORGET_AFTER_MS);
        assert_eq!(p.len(), 1);
        assert_eq!(p.origin_for("x", &[], 0), None);
    }
}
