//! The driver's time: the wall clock in Unix milliseconds (what Auto's saved memory
//! is dated in), plus a skew that only moves when [`Clock::skip`] is called. Tests
//! use it to let five minutes pass for the scheduled checks without waiting for
//! them; the running client never calls it.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use switchyard_auto::Timestamp;

/// The wall clock, skippable ahead; clones share the skew.
#[derive(Clone, Debug, Default)]
pub struct Clock {
    skew_ms: Arc<AtomicI64>,
}

impl Clock {
    /// The time now.
    pub fn now(&self) -> Timestamp {
        let wall = crate::wall::unix_ms();
        Timestamp(wall.saturating_add(self.skew_ms.load(Ordering::Relaxed)))
    }

    /// Moves this clock (and its clones) `by` ahead of the wall clock. The driver
    /// sees it at its next wake-up, within a second (its traffic sample).
    pub fn skip(&self, by: Duration) {
        let ms = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        self.skew_ms.fetch_add(ms, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skip_moves_every_clone_ahead() {
        let clock = Clock::default();
        let other = clock.clone();
        let before = clock.now();
        other.skip(Duration::from_secs(300));
        let after = clock.now();
        assert!(after.0 - before.0 >= 300_000, "{before:?} {after:?}");
        assert!(after.0 - before.0 < 310_000, "{before:?} {after:?}");
    }
}
