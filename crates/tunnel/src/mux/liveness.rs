//! The link's liveness and round-trip time: a `Ping` after [`MuxConfig::keepalive`]
//! without a frame, the link dead after [`MuxConfig::idle_timeout`], and fresh round-trip
//! samples for the windows.
//!
//! [`MuxConfig::keepalive`]: super::MuxConfig::keepalive
//! [`MuxConfig::idle_timeout`]: super::MuxConfig::idle_timeout

use std::time::Duration;

use tokio::time::Instant;

use super::core::Core;
use super::error::MuxError;
use crate::frame::Kind;

/// A round-trip sample older than this is refreshed with a `Ping` when a stream grants.
const RTT_REFRESH: Duration = Duration::from_secs(2);

impl Core {
    /// Sends a `Ping`; its `Pong` gives a round-trip sample.
    pub(super) fn ping(&mut self, now: Instant) {
        self.ping_seq += 1;
        self.ping_out = Some((self.ping_seq, now));
        self.last_ping = now;
        self.push_control(Kind::Ping, 0, &self.ping_seq.to_be_bytes());
    }

    /// Refreshes a stale round-trip sample.
    pub(super) fn refresh_rtt(&mut self, now: Instant) {
        let stale = self
            .rtt
            .is_none_or(|(_, at)| now.saturating_duration_since(at) > RTT_REFRESH);
        if stale && self.ping_out.is_none() {
            self.ping(now);
        }
    }

    /// When [`handle_timeout`](Self::handle_timeout) must run next.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        if self.closed.is_some() {
            return None;
        }
        let dead = self.last_rx + self.config.idle_timeout;
        let ping = self.last_rx.max(self.last_ping) + self.config.keepalive;
        Some(dead.min(ping))
    }

    /// Pings an idle link and closes a dead one.
    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        if self.closed.is_some() {
            return;
        }
        if now >= self.last_rx + self.config.idle_timeout {
            self.close(MuxError::Timeout(self.config.idle_timeout));
        } else if now >= self.last_rx.max(self.last_ping) + self.config.keepalive {
            self.ping(now);
        }
    }
}
