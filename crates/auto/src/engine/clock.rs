//! The engine's clock: the driver's times, made monotonic.
//!
//! The driver promises a monotonic clock (see [`crate::time`]). If a time goes backwards
//! anyway, keeping the latest time seen (`max`) would stop the engine's clock until the
//! driver's caught up again, and every deadline with it: after a step back of an hour, no
//! stall or scheduled check for an hour. Instead a step back counts as no time passing and
//! the engine's clock runs on with the driver's from there; the steps add up in an offset
//! that converts between the two clocks.

use crate::time::Timestamp;

/// Driver time in, engine time out; engine time never goes backwards.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clock {
    /// The driver's latest time, `None` before the first call.
    last: Option<Timestamp>,
    /// Engine time minus driver time: the sum of the driver's steps back so far.
    offset: i64,
    /// The engine's latest time (it only differs from `last + offset` where the
    /// arithmetic saturated).
    now: Timestamp,
}

impl Default for Clock {
    fn default() -> Self {
        Self {
            last: None,
            offset: 0,
            now: Timestamp(i64::MIN),
        }
    }
}

impl Clock {
    /// The engine time for the driver's `now`, which becomes the latest time.
    pub(crate) fn advance(&mut self, now: Timestamp) -> Timestamp {
        if let Some(last) = self.last
            && now < last
        {
            self.offset = self.offset.saturating_add(last.0.saturating_sub(now.0));
        }
        self.last = Some(now);
        self.now = self.now.max(self.to_engine(now));
        self.now
    }

    /// Whether no time has been passed in yet.
    pub(crate) fn unset(&self) -> bool {
        self.last.is_none()
    }

    /// The engine time of a time on the driver's clock (a measurement's date).
    pub(crate) fn to_engine(self, t: Timestamp) -> Timestamp {
        Timestamp(t.0.saturating_add(self.offset))
    }

    /// The driver time of an engine time (a deadline for `poll_timeout`).
    pub(crate) fn to_driver(self, t: Timestamp) -> Timestamp {
        Timestamp(t.0.saturating_sub(self.offset))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: i64) -> Timestamp {
        Timestamp::from_secs(s)
    }

    #[test]
    fn a_step_back_counts_as_no_time_and_the_clock_runs_on() {
        let mut c = Clock::default();
        assert!(c.unset());
        assert_eq!(c.advance(t(100)), t(100));
        assert_eq!(c.advance(t(101)), t(101));
        // The driver's clock jumps back an hour: no time passes for the engine ...
        assert_eq!(c.advance(t(101 - 3600)), t(101));
        // ... and then it runs on at the driver's pace.
        assert_eq!(c.advance(t(102 - 3600)), t(102));
        // A deadline at engine time 106 is at driver time 106 - 3600.
        assert_eq!(c.to_driver(t(106)), t(106 - 3600));
        assert_eq!(c.to_engine(t(106 - 3600)), t(106));
        // Forward steps are time passing.
        assert_eq!(c.advance(t(0)), t(3600));
    }

    #[test]
    fn extreme_times_saturate() {
        let mut c = Clock::default();
        c.advance(Timestamp(i64::MAX));
        assert_eq!(c.advance(Timestamp(i64::MIN)), Timestamp(i64::MAX));
        assert_eq!(c.to_driver(Timestamp(i64::MIN)), Timestamp(i64::MIN));
    }
}
