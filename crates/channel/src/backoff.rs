//! When the node dials its panel again (pure: the caller passes the jitter in).

use std::time::Duration;

/// The node's back-off between channel attempts; [`Default`] holds the defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The first wait. 1 s: a panel restart is bridged at once.
    pub first: Duration,
    /// The longest wait. 30 s: a panel that is away long is not hammered, and one that
    /// comes back is reached within half a minute.
    pub max: Duration,
    /// A channel up this long resets the back-off (it was not a flap). 10 s.
    pub stable: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            first: Duration::from_secs(1),
            max: Duration::from_secs(30),
            stable: Duration::from_secs(10),
        }
    }
}

impl Backoff {
    /// The wait after the `failures`-th failure in a row (from 1): between half and
    /// all of `min(first · 2^(failures−1), max)`, placed by `jitter` in `[0, 1)`.
    pub fn delay(&self, failures: u32, jitter: f64) -> Duration {
        let doubled = self
            .first
            .saturating_mul(1u32 << failures.saturating_sub(1).min(20));
        let full = doubled.min(self.max);
        full / 2 + full.mul_f64(jitter.clamp(0.0, 1.0) / 2.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_to_the_cap_with_jitter_below_the_full_wait() {
        let b = Backoff::default();
        let full: Vec<u64> = (1..=7).map(|f| b.delay(f, 1.0).as_secs()).collect();
        assert_eq!(full, [1, 2, 4, 8, 16, 30, 30]);
        assert_eq!(b.delay(1, 0.0), Duration::from_millis(500));
        assert_eq!(b.delay(u32::MAX, 0.0), Duration::from_secs(15));
        assert_eq!(b.delay(0, 2.0), Duration::from_secs(1));
    }
}
