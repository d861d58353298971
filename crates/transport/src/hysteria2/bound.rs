//! A loss bound over BBR: what may be in flight is capped after a round trip that
//! lost more than 2 % of its bytes, as BBR's second version does (its `inflight_hi`).
//!
//! quinn's BBR is the first version: it reads losses only in recovery and otherwise
//! sends at its bandwidth estimate whatever is lost. quinn's pacer sends 1.25 windows
//! per smoothed RTT, and where the receiver, not the path, is the bottleneck (a busy
//! client dropping packets its queue has no room for) BBR's window kept a third of
//! the packets sent lost, each one sent again: measured with the sing-box client on
//! one 2-core machine (`docs/node.md`). The bound leaves BBR alone on a path that
//! loses a few packets at random (BBR's strength), and holds it where the losses say
//! it sends more than gets through:
//! - a round trip runs from the packet last sent when it began until that packet is
//!   acknowledged; its acknowledged and lost bytes are counted;
//! - a round that lost more than 2 % of its bytes ([`LOSS_THRESHOLD_INVERSE`]), and
//!   at least [`MIN_LOSS_PACKETS`] packets, sets the bound to 0.7 ([`BETA_TENTHS`]) ×
//!   the bytes the round carried (or × the window, when less), never below
//!   [`MIN_WINDOW_PACKETS`] packets;
//! - each round within the threshold raises the bound by one packet, as TCP's Reno
//!   and CUBIC (in its TCP-friendly region) grow after a loss; once the bound reaches
//!   BBR's own window it is lifted. A step that doubled every round (BBRv2's probe)
//!   overshot again within a few round trips where rounds are short: 12 % of the
//!   packets were still lost, against 2.4 % with one packet a round.

#![allow(
    clippy::disallowed_types,
    reason = "quinn's congestion interface takes std's Instant; the controller only \
              hands on the instants quinn gives it, it never reads a clock"
)]

use std::any::Any;
use std::sync::Arc;
use std::time::Instant;

use quinn::congestion::{Controller, ControllerFactory};

/// The share of a round's bytes that may be lost before the bound is set, 2 % (BBRv2's):
/// one part in this many.
pub const LOSS_THRESHOLD_INVERSE: u64 = 50;
/// What the bound keeps of the bytes a lossy round carried, 0.7 (BBRv2's β), in tenths.
pub const BETA_TENTHS: u64 = 7;
/// Packets lost in a round before it can set the bound: one or two lost at random
/// in a short round are no signal.
pub const MIN_LOSS_PACKETS: u64 = 3;
/// The smallest bound, in packets (quinn's BBR's smallest window).
pub const MIN_WINDOW_PACKETS: u64 = 4;

#[derive(Debug, Clone, Copy, Default)]
struct Round {
    /// The round ends when this packet number is acknowledged.
    end: u64,
    acked: u64,
    lost: u64,
}

/// The inner controller's window, capped by the loss bound while one is set.
pub struct Bound {
    inner: Box<dyn Controller>,
    /// Bytes; `None`: the inner controller's window alone.
    bound: Option<u64>,
    round: Round,
    last_sent: u64,
    mtu: u16,
}

impl Bound {
    fn new(inner: Box<dyn Controller>, mtu: u16) -> Self {
        Self {
            inner,
            bound: None,
            round: Round::default(),
            last_sent: 0,
            mtu,
        }
    }

    /// The bound in bytes, `None` while none is set.
    pub fn bound(&self) -> Option<u64> {
        self.bound
    }

    fn count_acked(&mut self, bytes: u64) {
        self.round.acked = self.round.acked.saturating_add(bytes);
    }

    fn min_window(&self) -> u64 {
        MIN_WINDOW_PACKETS * u64::from(self.mtu)
    }

    /// The round that just ended decides the bound; the next one starts.
    fn end_round(&mut self) {
        let Round { acked, lost, .. } = self.round;
        let carried = acked.saturating_add(lost);
        let heavy = lost >= MIN_LOSS_PACKETS * u64::from(self.mtu)
            && lost.saturating_mul(LOSS_THRESHOLD_INVERSE) > carried;
        if heavy {
            let base = carried.min(self.window());
            self.bound = Some((base.saturating_mul(BETA_TENTHS) / 10).max(self.min_window()));
        } else if let Some(bound) = self.bound {
            let raised = bound.saturating_add(u64::from(self.mtu));
            self.bound = (raised < self.inner.window()).then_some(raised);
        }
        self.round = Round {
            end: self.last_sent,
            ..Round::default()
        };
    }
}

impl Controller for Bound {
    fn on_sent(&mut self, now: Instant, bytes: u64, last_packet_number: u64) {
        self.last_sent = last_packet_number;
        self.inner.on_sent(now, bytes, last_packet_number);
    }

    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        rtt: &quinn_proto::RttEstimator,
    ) {
        self.count_acked(bytes);
        self.inner.on_ack(now, sent, bytes, app_limited, rtt);
    }

    fn on_end_acks(
        &mut self,
        now: Instant,
        in_flight: u64,
        app_limited: bool,
        largest_packet_num_acked: Option<u64>,
    ) {
        self.inner
            .on_end_acks(now, in_flight, app_limited, largest_packet_num_acked);
        if largest_packet_num_acked.is_some_and(|pn| pn >= self.round.end) {
            self.end_round();
        }
    }

    fn on_congestion_event(
        &mut self,
        now: Instant,
        sent: Instant,
        is_persistent_congestion: bool,
        lost_bytes: u64,
    ) {
        self.round.lost = self.round.lost.saturating_add(lost_bytes);
        self.inner
            .on_congestion_event(now, sent, is_persistent_congestion, lost_bytes);
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.mtu = new_mtu;
        self.inner.on_mtu_update(new_mtu);
    }

    fn window(&self) -> u64 {
        let inner = self.inner.window();
        self.bound.map_or(inner, |b| b.min(inner))
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(Self {
            inner: self.inner.clone_box(),
            bound: self.bound,
            round: self.round,
            last_sent: self.last_sent,
            mtu: self.mtu,
        })
    }

    fn initial_window(&self) -> u64 {
        self.inner.initial_window()
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

/// Makes [`Bound`] controllers over `inner`'s.
pub struct BoundConfig {
    inner: Arc<dyn ControllerFactory + Send + Sync>,
}

impl BoundConfig {
    /// The loss bound over `inner` (BBR).
    pub fn new(inner: Arc<dyn ControllerFactory + Send + Sync>) -> Self {
        Self { inner }
    }

    /// The loss bound over quinn's BBR with its defaults: what the Hysteria 2 server
    /// runs when a client declares no rate, and the client always.
    pub fn bbr() -> Self {
        Self::new(Arc::new(quinn::congestion::BbrConfig::default()))
    }
}

impl ControllerFactory for BoundConfig {
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        Box::new(Bound::new(
            self.inner.clone().build(now, current_mtu),
            current_mtu,
        ))
    }
}

#[cfg(test)]
#[path = "bound_tests.rs"]
mod tests;
