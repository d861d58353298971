//! How often one subscription token may be fetched: a token bucket per token, in
//! memory, keyed by the token's SHA-256 (the token itself is never kept).
//!
//! A token may fetch `burst` times at once, then once per `refill` (the config's
//! defaults: 60 at once, then one every 10 s, 360 an hour; its tests show they never
//! hold back apps). Apps fetch on start, when the user taps "update" and every
//! `profile-update-interval` hours: a household of devices on one token never comes
//! near it; a script that hammers one token, or makes up device ids, gets `429` with
//! `Retry-After` after the burst.
//!
//! Bounded: at most [`MAX_TOKENS`] tokens are tracked. Past it, the buckets that
//! have refilled (worth the same as no bucket) are forgotten, and if none has, the
//! longest untouched one. Unknown tokens never get a bucket: the handler takes
//! from the bucket only once the token is found.
//!
//! Pure but for its lock: "now" comes in as Unix ms.

use std::collections::HashMap;
use std::sync::Mutex;

use sha2::{Digest, Sha256};

/// The most tokens tracked at once.
pub const MAX_TOKENS: usize = 65_536;

/// A token's key: the SHA-256 of the token.
pub type TokenKey = [u8; 32];

/// The key of `token`.
pub fn key(token: &str) -> TokenKey {
    Sha256::digest(token.as_bytes()).into()
}

/// Fetches per token (see the [module docs](self)).
#[derive(Debug)]
pub struct FetchLimiter {
    /// Credit for one fetch, ms.
    refill_ms: i64,
    /// The most credit a bucket holds, ms (`burst` fetches); 0: no limit.
    cap_ms: i64,
    /// Credit (ms) and when it was counted (Unix ms), by token key.
    buckets: Mutex<HashMap<TokenKey, (i64, i64)>>,
}

impl FetchLimiter {
    /// `burst` fetches at once, then one per `refill_s` seconds; `burst` 0 turns the
    /// limit off.
    pub fn new(burst: u32, refill_s: u32) -> Self {
        let refill_ms = i64::from(refill_s.max(1)).saturating_mul(1000);
        Self {
            refill_ms,
            cap_ms: refill_ms.saturating_mul(i64::from(burst)),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    fn credit(&self, bucket: Option<&(i64, i64)>, now_ms: i64) -> i64 {
        bucket.map_or(self.cap_ms, |(credit, at)| {
            credit
                .saturating_add(now_ms.saturating_sub(*at).max(0))
                .min(self.cap_ms)
        })
    }

    fn wait_s(&self, credit: i64) -> u64 {
        let short = self.refill_ms.saturating_sub(credit).max(0);
        u64::try_from(short.saturating_add(999) / 1000)
            .unwrap_or(0)
            .max(1)
    }

    /// Seconds `key` must wait before its next fetch, without taking one; `None`
    /// when it may fetch (or is not tracked).
    pub fn waiting(&self, key: &TokenKey, now_ms: i64) -> Option<u64> {
        if self.cap_ms == 0 {
            return None;
        }
        let buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let credit = self.credit(Some(buckets.get(key)?), now_ms);
        (credit < self.refill_ms).then(|| self.wait_s(credit))
    }

    /// Takes one fetch from `key`'s bucket: `Ok` when it may fetch now, else the
    /// seconds to wait (`Retry-After`).
    pub fn take(&self, key: &TokenKey, now_ms: i64) -> Result<(), u64> {
        if self.cap_ms == 0 {
            return Ok(());
        }
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if buckets.len() >= MAX_TOKENS && !buckets.contains_key(key) {
            self.make_room(&mut buckets, now_ms);
        }
        let credit = self.credit(buckets.get(key), now_ms);
        if credit < self.refill_ms {
            return Err(self.wait_s(credit));
        }
        buckets.insert(*key, (credit - self.refill_ms, now_ms));
        Ok(())
    }

    /// Forgets the full buckets; if none is, the longest untouched one.
    fn make_room(&self, buckets: &mut HashMap<TokenKey, (i64, i64)>, now_ms: i64) {
        let cap = self.cap_ms;
        buckets.retain(|_, (c, at)| c.saturating_add(now_ms.saturating_sub(*at).max(0)) < cap);
        if buckets.len() >= MAX_TOKENS
            && let Some(oldest) = buckets
                .iter()
                .min_by_key(|(_, (_, at))| *at)
                .map(|(k, _)| *k)
        {
            buckets.remove(&oldest);
        }
    }

    /// How many tokens are tracked.
    pub fn tracked(&self) -> usize {
        self.buckets.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_one_per_refill() {
        let l = FetchLimiter::new(3, 10);
        let k = key("alice");
        assert_eq!(l.waiting(&k, 0), None);
        for _ in 0..3 {
            assert_eq!(l.take(&k, 0), Ok(()));
        }
        assert_eq!(l.take(&k, 0), Err(10));
        assert_eq!(l.waiting(&k, 0), Some(10));
        assert_eq!(l.waiting(&k, 4_000), Some(6));
        assert_eq!(l.take(&k, 10_000), Ok(()));
        assert_eq!(l.take(&k, 10_000), Err(10));
        // Other tokens are not concerned; a clock that steps back never panics.
        assert_eq!(l.take(&key("bob"), 0), Ok(()));
        assert_eq!(l.take(&k, -5_000), Err(10));
        // Idle long enough, the whole burst is back.
        for _ in 0..3 {
            assert_eq!(l.take(&k, 1_000_000), Ok(()));
        }
    }

    #[test]
    fn a_zero_burst_is_no_limit() {
        let l = FetchLimiter::new(0, 10);
        for _ in 0..1000 {
            assert_eq!(l.take(&key("a"), 0), Ok(()));
        }
        assert_eq!(l.tracked(), 0);
    }

    #[test]
    fn the_tracked_tokens_are_bounded() {
        let l = FetchLimiter::new(2, 10);
        for i in 0..MAX_TOKENS + 10 {
            // Each token fetched once: none is full again until 10 s pass.
            assert_eq!(l.take(&key(&i.to_string()), 0), Ok(()));
        }
        assert_eq!(l.tracked(), MAX_TOKENS);
        // Once they have refilled, they are forgotten to make room.
        assert_eq!(l.take(&key("late"), 60_000), Ok(()));
        assert_eq!(l.tracked(), 1);
    }
}
