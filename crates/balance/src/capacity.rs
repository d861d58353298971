//! A server's channel capacity, estimated from its observed traffic peaks.
//!
//! Least loaded needs each server's capacity, and nobody tells us what it is, so the
//! panel learns it from the traffic it sees (`docs/routes.md`,
//! "Clarifications"): every second-ish it calls [`Capacity::observe`] with the server's
//! current throughput (both directions summed, bytes/s) and the time, and reads
//! [`Capacity::estimate`] when it balances.
//!
//! - A sample above the estimate raises it at once.
//! - A sample below it lets the estimate cool down toward the sample exponentially:
//!   `peak = sample + (peak − sample) · 0.5^(dt / half_life)`, `dt` the time since the
//!   previous observation. A long gap (the panel down for days) decays over the whole
//!   gap, so a server idle for 24 h (the default half-life) is estimated halfway
//!   between its old peak and its traffic now.
//! - There is no estimate until the server has carried traffic at or above a small
//!   floor ([`EstimatorSettings::floor`]) for [`EstimatorSettings::warmup_ms`] in total.
//!   Each observation at or above the floor credits the time since the previous one,
//!   at most [`EstimatorSettings::max_step_ms`], so a single sample after a long
//!   silence cannot finish the warm-up alone.
//!
//! ```
//! use switchyard_balance::capacity::{Capacity, EstimatorSettings};
//!
//! let s = EstimatorSettings::default();
//! let mut c = Capacity::default();
//! // 10 MB/s, observed every 10 s for a minute: warmed up.
//! for t in 0..=6 {
//!     c.observe(t * 10_000, 10e6, &s);
//! }
//! assert_eq!(c.estimate(&s), Some(10e6));
//! // Then idle (2 MB/s) for a day: halfway down.
//! c.observe(60_000 + 86_400_000, 2e6, &s);
//! assert_eq!(c.estimate(&s), Some(6e6));
//! ```
//!
//! Time is the caller's milliseconds (any epoch, but one clock). It is pure state: the
//! three fields of [`Capacity`] are plain so the panel can store them in columns.

/// The estimator's tunables.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EstimatorSettings {
    /// How long, in ms, the estimate takes to cool halfway toward lower traffic.
    /// Default 24 h: long enough that a quiet night does not forget the evening peak,
    /// short enough that a server whose link got slower is believed within days.
    /// 0 or less forgets a peak at the first lower sample.
    pub half_life_ms: i64,
    /// Bytes/s at or above which a sample counts toward the warm-up. Default 125,000
    /// (1 Mbit/s): below it a server's traffic says nothing about its channel.
    pub floor: f64,
    /// How long, in ms, a server must carry traffic at or above the floor before it has
    /// an estimate. Default 60,000 (a minute): a single burst is not a capacity.
    pub warmup_ms: i64,
    /// The longest gap between two observations, in ms, that counts toward the
    /// warm-up. Default 10,000: longer gaps count as 10 s, since nobody saw what
    /// happened in between.
    pub max_step_ms: i64,
}

impl EstimatorSettings {
    /// The default half-life, 24 h.
    pub const DEFAULT_HALF_LIFE_MS: i64 = 24 * 60 * 60 * 1000;
    /// The default floor, 125,000 bytes/s (1 Mbit/s).
    pub const DEFAULT_FLOOR: f64 = 125_000.0;
    /// The default warm-up, one minute.
    pub const DEFAULT_WARMUP_MS: i64 = 60_000;
    /// The default longest step credited toward the warm-up, 10 s.
    pub const DEFAULT_MAX_STEP_MS: i64 = 10_000;
}

impl Default for EstimatorSettings {
    fn default() -> Self {
        Self {
            half_life_ms: Self::DEFAULT_HALF_LIFE_MS,
            floor: Self::DEFAULT_FLOOR,
            warmup_ms: Self::DEFAULT_WARMUP_MS,
            max_step_ms: Self::DEFAULT_MAX_STEP_MS,
        }
    }
}

/// One server's capacity estimate, as persistable state.
///
/// The default is a server never observed: no peak, no warm-up, no last observation.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Capacity {
    /// The estimate in bytes/s: the peak throughput seen, cooled since.
    pub peak: f64,
    /// Time in ms credited toward the warm-up so far.
    pub above_floor_ms: i64,
    /// When the last observation was made, in the caller's ms; `None` before the first.
    pub last_ms: Option<i64>,
}

impl Capacity {
    /// Takes one throughput sample, `bytes_per_s` (both directions summed) at `now_ms`.
    ///
    /// - A sample that is not finite, or negative, is ignored: nothing changes.
    /// - The first observation sets the peak (if higher) and the time; it credits no
    ///   warm-up, since there is no interval before it.
    /// - Time going backwards (`now_ms` before [`last_ms`](Self::last_ms)) moves
    ///   `last_ms` back to `now_ms` and changes nothing else: no raise, no decay, no
    ///   warm-up credit. The next observation counts from the new clock, so a clock
    ///   set back once costs one sample, not the time until it catches up.
    /// - A stored peak that is not finite, or negative, is read as 0.
    pub fn observe(&mut self, now_ms: i64, bytes_per_s: f64, s: &EstimatorSettings) {
        let sample = bytes_per_s;
        if !sample.is_finite() || sample < 0.0 {
            return;
        }
        let peak = if self.peak.is_finite() && self.peak > 0.0 {
            self.peak
        } else {
            0.0
        };
        let dt = match self.last_ms {
            None => 0,
            Some(last) if now_ms < last => {
                self.last_ms = Some(now_ms);
                return;
            }
            Some(last) => now_ms.saturating_sub(last),
        };
        self.peak = if sample >= peak {
            sample
        } else {
            sample + (peak - sample) * decay(dt, s.half_life_ms)
        };
        if sample >= s.floor {
            let step = dt.min(s.max_step_ms.max(0));
            self.above_floor_ms = self.above_floor_ms.saturating_add(step);
        }
        self.last_ms = Some(now_ms);
    }

    /// The capacity estimate in bytes/s: `Some(peak)` once the warm-up is done
    /// (`above_floor_ms >= warmup_ms`), else `None`. A stored peak that is not finite,
    /// or negative, is no estimate either.
    pub fn estimate(&self, s: &EstimatorSettings) -> Option<f64> {
        let sound = self.peak.is_finite() && self.peak >= 0.0;
        (sound && self.above_floor_ms >= s.warmup_ms).then_some(self.peak)
    }
}

/// The fraction of the excess over the sample left after `dt_ms`: `0.5^(dt / half_life)`.
fn decay(dt_ms: i64, half_life_ms: i64) -> f64 {
    if half_life_ms <= 0 {
        if dt_ms == 0 { 1.0 } else { 0.0 }
    } else {
        0.5_f64.powf(dt_ms as f64 / half_life_ms as f64)
    }
}
