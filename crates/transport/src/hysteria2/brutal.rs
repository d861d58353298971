//! Brutal: Hysteria's congestion control for a client that declared its download
//! rate. It sends at that rate whatever the losses say, raised by the share of bytes
//! lost so the delivered rate holds: the congestion window is
//! `rate × smoothed RTT ÷ ack rate`, where the ack rate is acked ÷ (acked + lost)
//! bytes over the last 5 seconds, never below 0.8 (so at most 1.25× the rate is
//! sent), and 1 until 60 kB have been counted.
//!
//! quinn paces at 1.25 windows per RTT, so the window alone sets the rate here (the
//! official client doubles its window and paces at the rate instead; quinn's pacer
//! is not ours to set). Until a rate is set, and whenever it is 0 (the client
//! declared none), the connection runs the fallback controller (BBR). The rate is
//! set once the client has authenticated ([`set_rate`]), since only then is it
//! known.

#![allow(
    clippy::disallowed_types,
    reason = "quinn's congestion interface takes std's Instant; the controller only \
              compares the instants quinn gives it, it never reads a clock"
)]

use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use quinn::congestion::{Controller, ControllerFactory};

/// Seconds of history the ack rate is taken over.
const SLOTS: usize = 5;
/// The lowest ack rate counted: at most 1.25× the rate goes out.
const MIN_ACK_RATE: f64 = 0.8;
/// Bytes (acked and lost) counted before the ack rate is trusted.
const MIN_SAMPLE: u64 = 50 * 1200;
/// The smallest window, in packets.
const MIN_WINDOW_PACKETS: u64 = 10;

#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    second: u64,
    acked: u64,
    lost: u64,
}

/// The controller: Brutal at the rate set, the fallback until then.
pub struct Brutal {
    /// Bytes per second; 0: the fallback decides. Shared with the copies quinn hands
    /// out, so [`set_rate`] reaches the live controller.
    rate: Arc<AtomicU64>,
    fallback: Box<dyn Controller>,
    start: Instant,
    slots: [Slot; SLOTS],
    window: u64,
    mtu: u16,
}

impl Brutal {
    fn new(fallback: Box<dyn Controller>, now: Instant, mtu: u16) -> Self {
        let window = fallback.initial_window();
        Self {
            rate: Arc::new(AtomicU64::new(0)),
            fallback,
            start: now,
            slots: [Slot::default(); SLOTS],
            window,
            mtu,
        }
    }

    fn slot(&mut self, now: Instant) -> &mut Slot {
        let second = now.saturating_duration_since(self.start).as_secs();
        let slot = &mut self.slots[(second % SLOTS as u64) as usize];
        if slot.second != second {
            *slot = Slot {
                second,
                ..Slot::default()
            };
        }
        slot
    }

    /// Acked ÷ (acked + lost) over the last [`SLOTS`] seconds, at least
    /// [`MIN_ACK_RATE`]; 1 while fewer than [`MIN_SAMPLE`] bytes are counted.
    fn ack_rate(&self, now: Instant) -> f64 {
        let second = now.saturating_duration_since(self.start).as_secs();
        let (acked, lost) = self
            .slots
            .iter()
            .filter(|s| second.saturating_sub(s.second) < SLOTS as u64)
            .fold((0u64, 0u64), |(a, l), s| (a + s.acked, l + s.lost));
        let total = acked + lost;
        if total < MIN_SAMPLE {
            return 1.0;
        }
        (acked as f64 / total as f64).max(MIN_ACK_RATE)
    }

    fn record_ack(&mut self, now: Instant, bytes: u64) {
        self.slot(now).acked += bytes;
    }

    fn update_window(&mut self, now: Instant, rtt: Duration) {
        let rate = self.rate.load(Ordering::Relaxed);
        if rate == 0 {
            return;
        }
        let window = rate as f64 * rtt.as_secs_f64() / self.ack_rate(now);
        self.window = (window as u64).max(MIN_WINDOW_PACKETS * u64::from(self.mtu));
    }
}

impl Controller for Brutal {
    fn on_sent(&mut self, now: Instant, bytes: u64, last_packet_number: u64) {
        self.fallback.on_sent(now, bytes, last_packet_number);
    }

    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        rtt: &quinn_proto::RttEstimator,
    ) {
        self.fallback.on_ack(now, sent, bytes, app_limited, rtt);
        self.record_ack(now, bytes);
        self.update_window(now, rtt.get());
    }

    fn on_end_acks(
        &mut self,
        now: Instant,
        in_flight: u64,
        app_limited: bool,
        largest_packet_num_acked: Option<u64>,
    ) {
        self.fallback
            .on_end_acks(now, in_flight, app_limited, largest_packet_num_acked);
    }

    fn on_congestion_event(
        &mut self,
        now: Instant,
        sent: Instant,
        is_persistent_congestion: bool,
        lost_bytes: u64,
    ) {
        self.fallback
            .on_congestion_event(now, sent, is_persistent_congestion, lost_bytes);
        self.slot(now).lost += lost_bytes;
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.mtu = new_mtu;
        self.fallback.on_mtu_update(new_mtu);
    }

    fn window(&self) -> u64 {
        if self.rate.load(Ordering::Relaxed) == 0 {
            self.fallback.window()
        } else {
            self.window
        }
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(Self {
            rate: self.rate.clone(),
            fallback: self.fallback.clone_box(),
            start: self.start,
            slots: self.slots,
            window: self.window,
            mtu: self.mtu,
        })
    }

    fn initial_window(&self) -> u64 {
        self.fallback.initial_window()
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

/// Makes [`Brutal`] controllers over `fallback`'s.
pub struct BrutalConfig {
    fallback: Arc<dyn ControllerFactory + Send + Sync>,
}

impl BrutalConfig {
    /// Brutal over `fallback` (BBR in the server).
    pub fn new(fallback: Arc<dyn ControllerFactory + Send + Sync>) -> Self {
        Self { fallback }
    }
}

impl ControllerFactory for BrutalConfig {
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        Box::new(Brutal::new(
            self.fallback.clone().build(now, current_mtu),
            now,
            current_mtu,
        ))
    }
}

/// Sets the rate (bytes per second; 0: the fallback) of `conn`'s Brutal controller;
/// false when its controller is another.
pub fn set_rate(conn: &quinn::Connection, bytes_per_second: u64) -> bool {
    match conn.congestion_state().into_any().downcast::<Brutal>() {
        Ok(brutal) => {
            brutal.rate.store(bytes_per_second, Ordering::Relaxed);
            true
        }
        Err(_) => false,
    }
}

/// The Brutal rate of `conn` (0: the fallback runs), or `None` when its controller
/// is another.
pub fn rate(conn: &quinn::Connection) -> Option<u64> {
    conn.congestion_state()
        .into_any()
        .downcast::<Brutal>()
        .ok()
        .map(|b| b.rate.load(Ordering::Relaxed))
}

#[cfg(test)]
#[path = "brutal_tests.rs"]
mod tests;
