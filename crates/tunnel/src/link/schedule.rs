//! The dialing side's decisions for one address, without I/O: when to start an
//! attempt, how long to wait after a failure, when a link counts as stable. The
//! [`super::dialer`] task feeds it events with the time and does what it says.
//!
//! Rules:
//! - keep `wanted` links (connected + being dialed);
//! - after a failure, wait [`Backoff::failed`] before the next attempt; while failing,
//!   probe with one attempt at a time, so one blocked address costs one connection
//!   attempt per wait, and a wave of simultaneous failures advances the back-off once;
//! - a link that ends before [`STABLE`] counts as a failure (a flap must not become a
//!   tight reconnect loop); a link up for [`STABLE`] resets the back-off, whether it is
//!   still up or has ended;
//! - `reset` forgets the back-off and lets the address try at once.

use std::time::Duration;

use tokio::time::Instant;

use super::dial_error::DialError;
use crate::backoff::{Backoff, STABLE};

/// The state of one address of the listening side.
#[derive(Debug, Clone)]
pub struct Schedule {
    wanted: usize,
    links: Vec<(u64, Instant)>,
    dialing: usize,
    backoff: Backoff,
    retry_at: Option<Instant>,
    failures: u64,
    last_error: Option<DialError>,
    next_id: u64,
}

impl Schedule {
    /// An address that should carry `wanted` links.
    pub fn new(wanted: usize) -> Self {
        Self {
            wanted,
            links: Vec::new(),
            dialing: 0,
            backoff: Backoff::default(),
            retry_at: None,
            failures: 0,
            last_error: None,
            next_id: 0,
        }
    }

    /// Whether to start one more attempt now; `true` counts it as in flight.
    pub fn poll_dial(&mut self, now: Instant) -> bool {
        let missing = self.links.len() + self.dialing < self.wanted;
        let waiting = self.retry_at.is_some_and(|t| t > now);
        let probing = self.backoff.failures() > 0 && self.dialing > 0;
        if !missing || waiting || probing {
            return false;
        }
        self.dialing += 1;
        true
    }

    fn failed(&mut self, now: Instant, error: DialError, jitter: f64) {
        self.failures += 1;
        self.last_error = Some(error);
        // Only the first failure of a wave sets the wait; the others fall inside it.
        if self.retry_at.is_none_or(|t| t <= now) {
            self.retry_at = Some(now + self.backoff.failed(jitter));
        }
    }

    /// An attempt failed; `jitter` in `[0, 1)`.
    pub fn dial_failed(&mut self, now: Instant, error: DialError, jitter: f64) {
        self.dialing = self.dialing.saturating_sub(1);
        self.failed(now, error, jitter);
    }

    /// An attempt made a link; returns its id for [`Self::link_ended`].
    pub fn dial_succeeded(&mut self, now: Instant) -> u64 {
        self.dialing = self.dialing.saturating_sub(1);
        self.next_id += 1;
        self.links.push((self.next_id, now));
        self.next_id
    }

    /// Link `id` ended; `jitter` in `[0, 1)` for the wait if it was a flap.
    pub fn link_ended(&mut self, now: Instant, id: u64, jitter: f64) {
        let Some(i) = self.links.iter().position(|&(l, _)| l == id) else {
            return;
        };
        let (_, since) = self.links.swap_remove(i);
        let up_for = now.saturating_duration_since(since);
        if up_for >= STABLE {
            self.backoff.link_ended(up_for);
        } else {
            self.failed(now, DialError::Dropped { after: up_for }, jitter);
        }
    }

    /// Link `id` no longer counts (its peer hands over to another process): a
    /// replacement is due at once, and nothing counts as a failure.
    pub fn link_retired(&mut self, id: u64) {
        if let Some(i) = self.links.iter().position(|&(l, _)| l == id) {
            self.links.swap_remove(i);
        }
    }

    /// When [`Self::handle_timeout`] has something to do.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let retry = self
            .retry_at
            .filter(|_| self.links.len() + self.dialing < self.wanted);
        let stable = (self.backoff.failures() > 0)
            .then(|| self.links.iter().map(|&(_, since)| since + STABLE).min())
            .flatten();
        [retry, stable].into_iter().flatten().min()
    }

    /// Time passed: ends a wait that is over, resets the back-off for a link that has
    /// stayed up.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.retry_at.is_some_and(|t| t <= now) {
            self.retry_at = None;
        }
        if let Some(&(_, since)) = self.links.iter().min_by_key(|&&(_, since)| since) {
            let up_for = now.saturating_duration_since(since);
            if up_for >= STABLE {
                self.backoff.link_ended(up_for);
            }
        }
    }

    /// Forgets the back-off: the address tries again at once.
    pub fn reset(&mut self) {
        self.backoff = Backoff::default();
        self.retry_at = None;
    }

    /// Links up.
    pub fn connected(&self) -> usize {
        self.links.len()
    }

    /// Attempts in flight.
    pub fn dialing(&self) -> usize {
        self.dialing
    }

    /// Links wanted.
    pub fn wanted(&self) -> usize {
        self.wanted
    }

    /// Failed attempts (and flaps) so far.
    pub fn failures(&self) -> u64 {
        self.failures
    }

    /// Failures in a row, as the back-off counts them.
    pub fn failures_in_a_row(&self) -> u32 {
        self.backoff.failures()
    }

    /// The latest failure.
    pub fn last_error(&self) -> Option<&DialError> {
        self.last_error.as_ref()
    }

    /// How long until the next attempt: `None` when no link is missing or one is being
    /// dialed, zero when one could start now.
    pub fn next_attempt_in(&self, now: Instant) -> Option<Duration> {
        if self.links.len() + self.dialing >= self.wanted || self.dialing > 0 {
            return None;
        }
        Some(
            self.retry_at
                .map_or(Duration::ZERO, |t| t.saturating_duration_since(now)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused() -> DialError {
        DialError::Dropped {
            after: Duration::ZERO,
        }
    }

    #[test]
    fn opens_all_wanted_links_at_once_while_healthy() {
        let now = Instant::now();
        let mut s = Schedule::new(4);
        assert_eq!((0..6).filter(|_| s.poll_dial(now)).count(), 4);
        for _ in 0..4 {
            s.dial_succeeded(now);
        }
        assert_eq!((s.connected(), s.next_attempt_in(now)), (4, None));
    }

    #[test]
    fn a_wave_of_failures_backs_off_once_then_probes_one_at_a_time() {
        let t0 = Instant::now();
        let mut s = Schedule::new(4);
        while s.poll_dial(t0) {}
        for _ in 0..4 {
            s.dial_failed(t0, refused(), 0.999_999);
        }
        assert_eq!((s.failures(), s.failures_in_a_row()), (4, 1));
        assert_eq!(s.poll_timeout(), Some(t0 + Duration::from_millis(999)));
        assert!(!s.poll_dial(t0));
        let t1 = t0 + Duration::from_secs(1);
        s.handle_timeout(t1);
        assert!(s.poll_dial(t1));
        assert!(!s.poll_dial(t1), "one probe at a time while failing");
        assert_eq!(s.next_attempt_in(t1), None);
    }

    #[test]
    fn flaps_count_as_failures_and_a_stable_link_resets_the_back_off() {
        let t0 = Instant::now();
        let mut s = Schedule::new(2);
        assert!(s.poll_dial(t0));
        let id = s.dial_succeeded(t0);
        s.link_ended(t0 + Duration::from_secs(1), id, 0.0);
        assert_eq!(s.failures_in_a_row(), 1);
        assert!(matches!(s.last_error(), Some(DialError::Dropped { .. })));
        let t1 = t0 + Duration::from_secs(2);
        s.handle_timeout(t1);
        assert!(s.poll_dial(t1));
        s.dial_succeeded(t1);
        // Still up after STABLE: the back-off resets without the link ending.
        assert_eq!(s.poll_timeout(), Some(t1 + STABLE));
        s.handle_timeout(t1 + STABLE);
        assert_eq!(s.failures_in_a_row(), 0);
        assert_eq!(s.next_attempt_in(t1 + STABLE), Some(Duration::ZERO));
    }

    #[test]
    fn a_retired_link_is_replaced_at_once_and_is_no_failure() {
        let t0 = Instant::now();
        let mut s = Schedule::new(2);
        while s.poll_dial(t0) {}
        let (a, _b) = (s.dial_succeeded(t0), s.dial_succeeded(t0));
        assert!(!s.poll_dial(t0), "both wanted links are up");
        // A second after it came up: as an end, a flap; retired, nothing of the kind.
        let t1 = t0 + Duration::from_secs(1);
        s.link_retired(a);
        assert_eq!(
            (s.connected(), s.failures(), s.failures_in_a_row()),
            (1, 0, 0)
        );
        assert!(s.last_error().is_none());
        assert!(s.poll_dial(t1), "the replacement is dialed at once");
        assert!(!s.poll_dial(t1));
        s.link_retired(a);
        assert_eq!(s.connected(), 1, "retiring twice changes nothing");
    }

    #[test]
    fn reset_ends_the_wait() {
        let t0 = Instant::now();
        let mut s = Schedule::new(1);
        assert!(s.poll_dial(t0));
        s.dial_failed(t0, refused(), 0.5);
        assert!(!s.poll_dial(t0));
        s.reset();
        assert_eq!(s.next_attempt_in(t0), Some(Duration::ZERO));
        assert!(s.poll_dial(t0));
    }
}
