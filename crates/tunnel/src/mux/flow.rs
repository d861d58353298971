//! One stream direction's receive window, and its auto-tuning.
//!
//! The receiver grants the sender credit: the sender never has more than the window
//! in flight or unread. When the application has read half the window since the last
//! grant, the receiver grants what was read. To let one stream fill a fast, long link,
//! the window grows toward the bandwidth-delay product: if that half window was read
//! in less than one round trip (a whole window in less than two), the grant also
//! doubles the window, up to a maximum. A slow reader never grows its window, so its
//! buffer stays small. (HTTP/2 implementations do the same with BDP pings.)

use std::time::Duration;

use tokio::time::Instant;

/// Every stream direction's window when it opens. A protocol constant, not a setting:
/// the sender must know it before the first grant.
pub const INITIAL_WINDOW: u32 = 256 * 1024;

/// The receiving half of one stream direction's flow control.
#[derive(Debug)]
pub(crate) struct RecvWindow {
    /// How much the peer may have in flight or unread.
    window: u32,
    /// How much the peer may still send before our next grant.
    credit: u32,
    /// Bytes the application read since the last grant.
    consumed: u32,
    /// When the last grant was sent (or the stream opened).
    since: Instant,
}

impl RecvWindow {
    /// A window of [`INITIAL_WINDOW`] opened at `now`.
    pub(crate) fn new(now: Instant) -> Self {
        Self {
            window: INITIAL_WINDOW,
            credit: INITIAL_WINDOW,
            consumed: 0,
            since: now,
        }
    }

    /// The current window.
    #[cfg(test)]
    pub(crate) fn window(&self) -> u32 {
        self.window
    }

    /// Accounts for `n` bytes received; `Err(excess)` if the peer sent beyond its
    /// credit.
    pub(crate) fn on_data(&mut self, n: u32) -> Result<(), u32> {
        match self.credit.checked_sub(n) {
            Some(left) => {
                self.credit = left;
                Ok(())
            }
            None => Err(n - self.credit),
        }
    }

    /// Accounts for `n` received bytes the application will never read (a dropped
    /// datagram): they are granted back with the next grant, or now if that is due.
    pub(crate) fn on_drop(&mut self, n: u32) -> Option<u32> {
        self.consumed = self.consumed.saturating_add(n);
        if self.consumed < self.window / 2 {
            return None;
        }
        let grant = std::mem::take(&mut self.consumed);
        self.credit = self.credit.saturating_add(grant);
        Some(grant)
    }

    /// Accounts for `n` bytes read by the application at `now`; returns the increment
    /// to grant, if it is time to grant. `rtt` is the link's latest round-trip sample.
    pub(crate) fn on_read(
        &mut self,
        n: u32,
        now: Instant,
        rtt: Option<Duration>,
        max: u32,
    ) -> Option<u32> {
        self.consumed = self.consumed.saturating_add(n);
        if self.consumed < self.window / 2 {
            return None;
        }
        let mut grant = self.consumed;
        let fast = rtt.is_some_and(|rtt| now.saturating_duration_since(self.since) < rtt);
        if fast && self.window < max {
            let grown = self.window.saturating_mul(2).min(max);
            grant += grown - self.window;
            self.window = grown;
        }
        self.consumed = 0;
        self.credit = self.credit.saturating_add(grant);
        self.since = now;
        Some(grant)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: u32 = 16 * 1024 * 1024;

    #[test]
    fn grants_what_was_read_once_half_the_window_is_read() {
        let t0 = Instant::now();
        let mut w = RecvWindow::new(t0);
        w.on_data(INITIAL_WINDOW).unwrap();
        assert_eq!(w.on_data(1), Err(1));
        let half = INITIAL_WINDOW / 2;
        assert_eq!(w.on_read(half - 1, t0, None, MAX), None);
        assert_eq!(w.on_read(1, t0, None, MAX), Some(half));
        assert_eq!(w.window(), INITIAL_WINDOW);
        w.on_data(half).unwrap();
        assert_eq!(w.on_data(1), Err(1));
    }

    #[test]
    fn a_fast_reader_doubles_the_window_up_to_the_max() {
        let t0 = Instant::now();
        let rtt = Some(Duration::from_millis(50));
        let mut w = RecvWindow::new(t0);
        let mut now = t0;
        for _ in 0..20 {
            let win = w.window();
            w.on_data(win / 2).unwrap();
            now += Duration::from_millis(10);
            w.on_read(win / 2, now, rtt, MAX).unwrap();
        }
        assert_eq!(w.window(), MAX);
        // The credit follows: the peer may now have a whole max window in flight.
        w.on_data(MAX).unwrap();
        assert!(w.on_data(1).is_err());
    }

    #[test]
    fn a_slow_reader_keeps_the_initial_window() {
        let t0 = Instant::now();
        let rtt = Some(Duration::from_millis(50));
        let mut w = RecvWindow::new(t0);
        let mut now = t0;
        for _ in 0..20 {
            w.on_data(INITIAL_WINDOW / 2).unwrap();
            now += Duration::from_millis(200);
            w.on_read(INITIAL_WINDOW / 2, now, rtt, MAX).unwrap();
        }
        assert_eq!(w.window(), INITIAL_WINDOW);
    }
}
