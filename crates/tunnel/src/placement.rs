//! Which origin carries a user's new connection.
//!
//! The relay remembers each user's origin while that origin stays connected (entries
//! idle for a day are forgotten, checked at most once an hour, so the table holds only
//! the users of the last day). A user with no live entry is placed by rendezvous
//! (highest-random-weight) hashing of the user name over the connected origins, so
//! placement is the same after a relay restart. Adding an origin moves nobody with an
//! entry; losing one moves only the users that were on it.
//!
//! Right after a start the origins connect one by one. So that the first one up does
//! not collect every user for good, a user whose own origin (rendezvous over all the
//! configured origins) is not connected yet is carried by the next best connected one
//! *without* an entry while the pool is warming up ([`Placement::place`]); once their
//! origin connects they land there, as after any restart.

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

/// How often (milliseconds) entries are checked for expiry: an hour.
pub const EXPIRE_EVERY_MS: i64 = 3600 * 1000;

/// The sticky table.
#[derive(Debug, Default, Clone)]
pub struct Placement {
    entries: HashMap<String, (String, i64)>,
    last_expiry: i64,
}

impl Placement {
    /// The origin for a new connection of `user` at `now_ms`, given the origins
    /// connected now; `None` when none is.
    pub fn origin_for(&mut self, user: &str, connected: &[&str], now_ms: i64) -> Option<String> {
        self.place(user, connected, &[], false, now_ms)
    }

    /// Like [`origin_for`](Self::origin_for), knowing the `configured` origins and
    /// whether the pool is `warming` up: then a user whose own origin is configured
    /// but not connected yet is placed on the best connected one without an entry.
    pub fn place(
        &mut self,
        user: &str,
        connected: &[&str],
        configured: &[&str],
        warming: bool,
        now_ms: i64,
    ) -> Option<String> {
        if now_ms.saturating_sub(self.last_expiry) >= EXPIRE_EVERY_MS {
            self.expire(now_ms);
        }
        if let Some((origin, used)) = self.entries.get_mut(user)
            && connected.contains(&origin.as_str())
        {
            *used = now_ms;
            return Some(origin.clone());
        }
        let origin = rendezvous(user, connected)?.to_owned();
        let all: Vec<&str> = configured.iter().chain(connected).copied().collect();
        if !warming || rendezvous(user, &all) == Some(origin.as_str()) {
            self.entries
                .insert(user.to_owned(), (origin.clone(), now_ms));
        }
        Some(origin)
    }

    /// Forgets every user placed on `origin` (it was lost).
    pub fn origin_lost(&mut self, origin: &str) {
        self.entries.retain(|_, (o, _)| o != origin);
    }

    /// Forgets entries unused for [`FORGET_AFTER_MS`].
    pub fn expire(&mut self, now_ms: i64) {
        self.last_expiry = now_ms;
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

    /// A user whose rendezvous origin among `origins` is `want`.
    fn user_on(want: &str, origins: &[&str]) -> String {
        (0..)
            .map(|i| format!("user-{i}"))
            .find(|u| rendezvous(u, origins) == Some(want))
            .unwrap()
    }

    #[test]
    fn an_entry_idle_for_a_day_is_forgotten_without_being_asked() {
        let mut p = Placement::default();
        let u = user_on("de", &["fi", "de"]);
        // de is down: u is placed on fi and remembered there.
        assert_eq!(p.origin_for(&u, &["fi"], 0).unwrap(), "fi");
        assert_eq!(p.origin_for(&u, &["fi", "de"], 1).unwrap(), "fi");
        // Idle for a day: forgotten, so u is placed by rendezvous again.
        let later = 1 + FORGET_AFTER_MS;
        assert_eq!(p.origin_for(&u, &["fi", "de"], later).unwrap(), "de");
        assert_eq!(p.len(), 1);
    }

    #[test]
    fn while_warming_up_the_first_origin_up_does_not_keep_everyone() {
        let mut p = Placement::default();
        let all = ["fi", "de", "nl"];
        let users: Vec<String> = users();
        for u in &users {
            assert_eq!(p.place(u, &["fi"], &all, true, 0).unwrap(), "fi");
        }
        // Only the users whose own origin is fi were remembered.
        let own_fi = users
            .iter()
            .filter(|u| rendezvous(u, &all) == Some("fi"))
            .count();
        assert_eq!(p.len(), own_fi);
        // The others connect: everyone lands where a fresh relay would put them.
        let placed: Vec<String> = users
            .iter()
            .map(|u| p.place(u, &all, &all, true, 1).unwrap())
            .collect();
        assert_eq!(placed, place_all(&mut Placement::default(), &all, 2));
        // After the warm-up, a user placed on a stand-in is remembered there.
        let mut p = Placement::default();
        let u = user_on("de", &all);
        assert_eq!(p.place(&u, &["fi"], &all, false, 0).unwrap(), "fi");
        assert_eq!(p.place(&u, &all, &all, false, 1).unwrap(), "fi");
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
