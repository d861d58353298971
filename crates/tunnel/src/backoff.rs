//! When the dialing side tries an address again: exponential from 1 s with jitter,
//! capped at 60 s; a link that stays up resets it.

use core::time::Duration;

/// The first wait.
pub const FIRST: Duration = Duration::from_secs(1);
/// The longest wait.
pub const CAP: Duration = Duration::from_secs(60);
/// A link up this long resets the back-off: it was not a flap.
pub const STABLE: Duration = Duration::from_secs(10);

/// The back-off of one address.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    failures: u32,
}

impl Backoff {
    /// Failures in a row so far.
    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// Records a failed attempt and returns the wait before the next one.
    /// `jitter` in `[0, 1)` comes from the caller's randomness: the wait is between
    /// half and all of `min(FIRST · 2^(k−1), CAP)` for the k-th failure in a row.
    pub fn failed(&mut self, jitter: f64) -> Duration {
        self.failures = self.failures.saturating_add(1);
        let exp = FIRST.as_millis() as u64 * (1u64 << (self.failures - 1).min(16));
        let full = exp.min(CAP.as_millis() as u64);
        let jitter = jitter.clamp(0.0, 1.0);
        Duration::from_millis(full / 2 + (full as f64 / 2.0 * jitter) as u64)
    }

    /// A link to the address went down after being up for `up_for`: a link that
    /// stayed up resets the back-off.
    pub fn link_ended(&mut self, up_for: Duration) {
        if up_for >= STABLE {
            self.failures = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_from_one_second_and_stop_at_a_minute() {
        let mut b = Backoff::default();
        let top: Vec<u64> = (0..9)
            .map(|_| b.failed(0.999_999).as_millis() as u64)
            .collect();
        assert_eq!(
            top,
            [999, 1999, 3999, 7999, 15999, 31999, 59999, 59999, 59999]
        );
        let mut b = Backoff::default();
        let low: Vec<u64> = (0..8).map(|_| b.failed(0.0).as_secs()).collect();
        assert_eq!(low, [0, 1, 2, 4, 8, 16, 30, 30]);
        assert_eq!(b.failed(0.0).as_millis(), 30_000);
    }

    #[test]
    fn a_link_that_stays_up_resets_it_and_a_flap_does_not() {
        let mut b = Backoff::default();
        b.failed(0.5);
        b.failed(0.5);
        b.link_ended(Duration::from_secs(3));
        assert_eq!(b.failures(), 2);
        b.link_ended(STABLE);
        assert_eq!(b.failures(), 0);
        assert_eq!(b.failed(1.0), FIRST);
    }
}
