//! Accepted hellos remembered, so that one seen again is refused.
//!
//! A prober that records a real client's ClientHello and sends it again cannot finish
//! the handshake (it lacks the client's X25519 private key), but without this filter
//! it would get the REALITY server's answer instead of the target site's, and learn
//! that the server is not that site. So an accepted hello's random (32 bytes, fresh
//! per hello; changing it breaks the sealed session id) is remembered, and a hello
//! with a remembered random is spliced to the target like any unauthenticated one.
//!
//! How long: a hello is acceptable while its timestamp is within `max_time_diff` of
//! the server's clock, so a replay can succeed at most `2 × max_time_diff` after the
//! hello was first seen. The filter keeps two generations of randoms and starts a new
//! one every `2 × max_time_diff`: each random is remembered at least that long. With
//! the time unchecked (`max_time_diff_ms = 0`) the period is
//! [`REPLAY_MEMORY_UNCHECKED_MS`], and a hello replayed later than that is accepted
//! again: set a time limit to close that. Each generation holds at most
//! [`REPLAY_CAPACITY`] randoms; a full one starts the next early. Only authenticated
//! hellos are remembered, so only real clients fill it.

use std::collections::HashSet;

/// Randoms one generation holds: 65,536 (about 2.5 MiB for both generations). Past
/// it, over 65,536 accepted handshakes in one period, the oldest are forgotten early.
pub const REPLAY_CAPACITY: usize = 65_536;

/// How long a random is remembered when the client's time is unchecked: 10 minutes.
pub const REPLAY_MEMORY_UNCHECKED_MS: u64 = 10 * 60 * 1000;

/// The remembered randoms of one inbound.
#[derive(Debug, Clone)]
pub struct ReplayFilter {
    pub(super) current: HashSet<[u8; 32]>,
    pub(super) previous: HashSet<[u8; 32]>,
    /// When `current` was started (Unix ms).
    started_ms: i64,
    period_ms: u64,
}

impl ReplayFilter {
    /// A filter for a server that allows `max_time_diff_ms` of clock difference (0 =
    /// unchecked), starting at `now_ms`.
    pub fn new(max_time_diff_ms: u64, now_ms: i64) -> Self {
        Self {
            current: HashSet::new(),
            previous: HashSet::new(),
            started_ms: now_ms,
            period_ms: Self::period(max_time_diff_ms),
        }
    }

    fn period(max_time_diff_ms: u64) -> u64 {
        if max_time_diff_ms == 0 {
            REPLAY_MEMORY_UNCHECKED_MS
        } else {
            max_time_diff_ms.saturating_mul(2)
        }
    }

    /// Follows a changed time limit, keeping what is remembered.
    pub fn set_max_time_diff(&mut self, max_time_diff_ms: u64) {
        self.period_ms = Self::period(max_time_diff_ms);
    }

    /// Remembers `random` at `now_ms`; `false` when it was remembered already.
    pub fn first_time(&mut self, random: &[u8; 32], now_ms: i64) -> bool {
        let age = now_ms.saturating_sub(self.started_ms);
        let period = i64::try_from(self.period_ms).unwrap_or(i64::MAX);
        if age >= period.saturating_mul(2) {
            self.previous.clear();
            self.current.clear();
            self.started_ms = now_ms;
        } else if age >= period || self.current.len() >= REPLAY_CAPACITY {
            self.previous = std::mem::take(&mut self.current);
            self.started_ms = now_ms;
        }
        if self.previous.contains(random) {
            return false;
        }
        self.current.insert(*random)
    }
}
