//! Time as the engine sees it: plain milliseconds passed in by the caller.
//!
//! The engine never reads a clock. **Drivers pass a monotonic clock**: one that never
//! goes backwards while the engine runs. A real client anchors a monotonic clock
//! (`std::time::Instant`) to the wall clock once at start, `unix_ms_at_start +
//! elapsed_ms`, so a wall-clock step (NTP, the user setting the time) does not reach the
//! engine and persisted history stays roughly meaningful across restarts. The simulator
//! passes milliseconds since the start of the scenario, negative for history before it.
//!
//! The engine still copes with a clock that breaks the contract:
//! - a time earlier than the previous one counts as no time passing, and time runs on
//!   from there, so a step back never freezes the triggers (the deadlines from
//!   `poll_timeout` stay on the caller's clock);
//! - a measurement dated after "now" (imported, or saved before the clock was set back
//!   across a restart) is clamped to now, so it can't stay "recent" past its day or sort
//!   after every later measurement.

use core::fmt;
use core::ops::{Add, Sub};
use core::time::Duration;

use serde::{Deserialize, Serialize};

/// A point in time, in milliseconds on the caller's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// The start of the caller's clock.
    pub const ZERO: Self = Self(0);

    /// A timestamp `ms` milliseconds after the start of the clock.
    pub const fn from_millis(ms: i64) -> Self {
        Self(ms)
    }

    /// A timestamp `s` seconds after the start of the clock.
    pub const fn from_secs(s: i64) -> Self {
        Self(s * 1000)
    }

    /// Milliseconds since the start of the clock.
    pub const fn as_millis(self) -> i64 {
        self.0
    }

    /// Seconds since the start of the clock, as a float (for reports).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1000.0
    }

    /// Time elapsed from `earlier` to `self`; zero if `earlier` is later.
    pub fn since(self, earlier: Self) -> Duration {
        Duration::from_millis(self.0.saturating_sub(earlier.0).max(0) as u64)
    }
}

impl Add<Duration> for Timestamp {
    type Output = Self;
    fn add(self, rhs: Duration) -> Self {
        Self(self.0.saturating_add(duration_ms(rhs)))
    }
}

impl Sub<Duration> for Timestamp {
    type Output = Self;
    fn sub(self, rhs: Duration) -> Self {
        Self(self.0.saturating_sub(duration_ms(rhs)))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.as_secs_f64())
    }
}

fn duration_ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates_and_since_never_goes_negative() {
        let t = Timestamp::from_secs(10);
        assert_eq!(t + Duration::from_millis(1500), Timestamp(11_500));
        assert_eq!(t - Duration::from_secs(20), Timestamp(-10_000));
        assert_eq!(t.since(Timestamp::from_secs(4)), Duration::from_secs(6));
        assert_eq!(Timestamp::ZERO.since(t), Duration::ZERO);
        assert_eq!(
            Timestamp(i64::MAX) + Duration::from_secs(1),
            Timestamp(i64::MAX)
        );
    }
}
