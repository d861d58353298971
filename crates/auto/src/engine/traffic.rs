//! The traffic watch: turns cumulative byte counters into the spec's traffic triggers.
//!
//! - **stall**: samples in a row show data going out and nothing coming back, for the
//!   platform's threshold (2 s mobile, 5 s computer);
//! - **no inbound**: nothing came in for 30 s since something was sent (sending may be
//!   sporadic, which the stall rule does not catch);
//! - **use**: whether anything was sent since a given time (timers only check a device
//!   that is in use).
//!
//! # When a window starts
//! A sample covers the interval since the previous one. The first sample that shows data
//! out and nothing in says that replies stopped (or the unanswered sending began) inside
//! that interval, at its end at the latest. The windows start there, at that sample's
//! time, so a trigger never fires before the threshold has passed since replies really
//! stopped; with 1 s samples it fires at most 1 s after that. (Counting from the start
//! of the interval instead fired up to one sample period early: a server silent from
//! t = 640 was checked at 644 on a computer and 641 on a phone.)

use core::time::Duration;

use crate::error::{InputError, counters_forward};
use crate::time::Timestamp;

#[derive(Clone, Copy, Debug)]
struct Sample {
    sent: u64,
    received: u64,
}

/// What the counters have shown so far.
#[derive(Clone, Debug, Default)]
pub(crate) struct TrafficWatch {
    last: Option<Sample>,
    /// The first sample of the current run of samples with data out and nothing in.
    stall_since: Option<Timestamp>,
    /// The first sample with data out (and nothing in) after the last data received.
    unanswered_since: Option<Timestamp>,
    /// When data last went out (the end of the sample interval that showed it).
    last_sent_at: Option<Timestamp>,
}

impl TrafficWatch {
    /// Takes a sample of the cumulative counters at `now`.
    pub(crate) fn sample(
        &mut self,
        now: Timestamp,
        sent: u64,
        received: u64,
    ) -> Result<(), InputError> {
        let new = Sample { sent, received };
        let Some(prev) = self.last else {
            self.last = Some(new);
            return Ok(());
        };
        counters_forward((prev.sent, prev.received), (sent, received))?;
        let (out, inn) = (sent > prev.sent, received > prev.received);
        if inn {
            self.stall_since = None;
            self.unanswered_since = None;
        } else if out {
            self.stall_since.get_or_insert(now);
            self.unanswered_since.get_or_insert(now);
        } else {
            // An idle interval breaks the "in a row".
            self.stall_since = None;
        }
        if out {
            self.last_sent_at = Some(now);
        }
        self.last = Some(new);
        Ok(())
    }

    /// When the stall trigger fires if sending goes on unanswered (`None`: no stall run).
    pub(crate) fn stall_at(&self, threshold: Duration) -> Option<Timestamp> {
        self.stall_since.map(|t| t + threshold)
    }

    /// When the no-inbound trigger fires if nothing comes in (`None`: nothing pending).
    pub(crate) fn no_inbound_at(&self, after: Duration) -> Option<Timestamp> {
        self.unanswered_since.map(|t| t + after)
    }

    /// Whether data went out after `t`.
    pub(crate) fn sent_after(&self, t: Timestamp) -> bool {
        self.last_sent_at.is_some_and(|s| s > t)
    }

    /// Starts the stall and no-inbound windows afresh: what was sent before a check or
    /// a reconnect says nothing about the server used after it.
    pub(crate) fn restart_windows(&mut self) {
        self.stall_since = None;
        self.unanswered_since = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: i64) -> Timestamp {
        Timestamp::from_secs(s)
    }

    #[test]
    fn windows_start_at_the_first_sample_that_saw_nothing_come_back() {
        let mut w = TrafficWatch::default();
        w.sample(t(0), 0, 0).unwrap();
        w.sample(t(1), 10, 10).unwrap();
        assert_eq!(w.stall_at(Duration::from_secs(5)), None);
        // Replies came at 1 and not by 2: they stopped in (1, 2], at 2 at the latest.
        w.sample(t(2), 20, 10).unwrap();
        w.sample(t(3), 30, 10).unwrap();
        assert_eq!(w.stall_at(Duration::from_secs(5)), Some(t(7)));
        assert_eq!(w.no_inbound_at(Duration::from_secs(30)), Some(t(32)));
        // Something comes back: both windows close.
        w.sample(t(4), 40, 11).unwrap();
        assert_eq!(w.stall_at(Duration::from_secs(5)), None);
        assert_eq!(w.no_inbound_at(Duration::from_secs(30)), None);
    }

    #[test]
    fn an_idle_interval_breaks_a_stall_but_not_the_no_inbound_window() {
        let mut w = TrafficWatch::default();
        w.sample(t(0), 0, 0).unwrap();
        w.sample(t(1), 10, 0).unwrap();
        w.sample(t(2), 10, 0).unwrap(); // idle
        assert_eq!(w.stall_at(Duration::from_secs(2)), None);
        assert_eq!(w.no_inbound_at(Duration::from_secs(30)), Some(t(31)));
        w.sample(t(3), 20, 0).unwrap();
        assert_eq!(w.stall_at(Duration::from_secs(2)), Some(t(5)));
        assert!(w.sent_after(t(2)));
        assert!(!w.sent_after(t(3)));
    }

    #[test]
    fn counters_going_back_are_refused_and_change_nothing() {
        let mut w = TrafficWatch::default();
        w.sample(t(0), 100, 100).unwrap();
        let err = w.sample(t(1), 99, 100).unwrap_err();
        assert_eq!(
            err,
            InputError::CountersWentBack {
                field: "sent",
                before: 100,
                after: 99
            }
        );
        assert!(w.sample(t(1), 100, 50).is_err());
        w.sample(t(2), 110, 100).unwrap();
        assert_eq!(w.stall_at(Duration::ZERO), Some(t(2)));
    }
}
