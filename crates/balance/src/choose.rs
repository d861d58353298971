//! [`choose`]: one route's decision, and the metrics it compares.

use std::cmp::Ordering;

use crate::{Algorithm, Candidate, Choice, InboundId, Previous, Reason, Settings};

/// Chooses the inbound a user gets for one route, from the route's `pool` with fresh
/// measurements, the user's `previous` inbound for this route (if any) and `settings`.
/// Returns `None` only when the pool is empty.
///
/// The rules, in order (the crate documentation explains them with examples):
///
/// 1. The *considered* candidates are the available ones; when none is available, all
///    of them.
/// 2. The applied algorithm is [`Algorithm::RoundRobin`] when `algorithm` is, or when
///    any considered candidate has no capacity estimate; otherwise least loaded.
///    Unavailable candidates are not considered, so their missing estimates do not
///    force the fallback while another is available.
/// 3. Each considered candidate gets the applied metric: least loaded
///    `max(0, capacity − traffic) / (users + 1)` (higher is better), round-robin
///    `users / coefficient` (lower is better). The previous inbound is judged with one
///    user fewer (saturating) when `previous.counted`.
/// 4. When no candidate is available, the result is [`Reason::LeastBad`]: the previous
///    inbound if it is in the pool, else the best of all candidates.
/// 5. When the previous inbound is in the pool and available, it is
///    [`Reason::Kept`] unless the best other candidate beats it by more than the
///    hysteresis `h`: least loaded `challenger > kept × (1 + h)`, round-robin
///    `challenger × (1 + h) < kept`; then that challenger, [`Reason::Moved`].
/// 6. Otherwise the best considered candidate, [`Reason::Best`].
///
/// "Best" orders by the metric, then the smaller `position`, then the smaller
/// `inbound`: a total order on the candidates' values, so the decision does not depend
/// on the order of the slice.
///
/// Odd numbers never panic and never yield a NaN metric; they are read as:
///
/// - `capacity`: `Some(NaN)` is no estimate (`None`); negative is 0 (no room);
///   `+∞` is `f64::MAX`.
/// - `traffic`: NaN or negative is 0; `+∞` is `f64::MAX` (saturates any capacity).
/// - `coefficient`: not finite, or ≤ 0, is the smallest positive weight
///   (`f64::MIN_POSITIVE`), so such a server is never preferred over a properly
///   weighted one with users on it; an empty server still scores 0.
/// - a metric past `f64::MAX` (a huge `users / coefficient`) is `f64::MAX`.
/// - `hysteresis`: NaN or negative is 0; `+∞` is `f64::MAX`, so the user moves only
///   off a least-loaded metric of 0, or to a round-robin challenger at 0.
///
/// Inbound ids are expected to be unique in a pool. If one repeats, its entries are
/// separate candidates; the previous inbound is the best of the entries with its id.
pub fn choose(
    algorithm: Algorithm,
    pool: &[Candidate],
    previous: Option<Previous>,
    settings: &Settings,
) -> Option<Choice> {
    let any_available = pool.iter().any(|c| c.available);
    let considered = || pool.iter().filter(move |c| c.available || !any_available);
    let applied = if algorithm == Algorithm::RoundRobin
        || considered().any(|c| capacity(c.capacity).is_none())
    {
        Algorithm::RoundRobin
    } else {
        Algorithm::LeastLoaded
    };
    let scored = |c: &Candidate| {
        let counted = previous.is_some_and(|p| p.counted && p.inbound == c.inbound);
        Scored {
            inbound: c.inbound,
            position: c.position,
            metric: metric(applied, c, counted),
        }
    };
    let previous_id = previous.map(|p| p.inbound);
    let best_of = |skip: Option<InboundId>| {
        considered()
            .filter(|c| Some(c.inbound) != skip)
            .map(scored)
            .min_by(|a, b| a.rank(b, applied))
    };
    let kept = previous_id.and_then(|id| {
        considered()
            .filter(|c| c.inbound == id)
            .map(scored)
            .min_by(|a, b| a.rank(b, applied))
    });

    let (chosen, reason) = if !any_available {
        match kept {
            Some(kept) => (kept, Reason::LeastBad),
            None => (best_of(None)?, Reason::LeastBad),
        }
    } else if let Some(kept) = kept {
        match best_of(previous_id) {
            Some(challenger) if beats(applied, challenger.metric, kept.metric, settings) => {
                (challenger, Reason::Moved)
            }
            _ => (kept, Reason::Kept),
        }
    } else {
        (best_of(None)?, Reason::Best)
    };
    Some(Choice {
        inbound: chosen.inbound,
        reason,
        applied,
        metric: chosen.metric,
    })
}

/// A considered candidate with its metric under the applied algorithm.
#[derive(Clone, Copy, Debug)]
struct Scored {
    inbound: InboundId,
    position: u32,
    metric: f64,
}

impl Scored {
    /// `Less` when `self` is the better choice: by metric, then position, then id.
    fn rank(&self, other: &Self, applied: Algorithm) -> Ordering {
        let by_metric = match applied {
            // Higher free bandwidth first.
            Algorithm::LeastLoaded => other.metric.total_cmp(&self.metric),
            // Fewer users per weight first.
            Algorithm::RoundRobin => self.metric.total_cmp(&other.metric),
        };
        by_metric
            .then(self.position.cmp(&other.position))
            .then(self.inbound.cmp(&other.inbound))
    }
}

/// Whether `challenger` beats `kept` by more than the hysteresis margin.
fn beats(applied: Algorithm, challenger: f64, kept: f64, settings: &Settings) -> bool {
    let factor = 1.0 + hysteresis(settings.hysteresis);
    match applied {
        // A kept metric of 0 loses to any challenger above 0 (0 × factor = 0).
        Algorithm::LeastLoaded => challenger > kept * factor,
        // A kept metric of 0 is never beaten: nothing is below 0.
        Algorithm::RoundRobin => challenger * factor < kept,
    }
}

/// The candidate's metric under `applied`, finite and never negative; `counted` judges
/// it with one user fewer.
fn metric(applied: Algorithm, c: &Candidate, counted: bool) -> f64 {
    let users = if counted {
        c.users.saturating_sub(1)
    } else {
        c.users
    };
    let value = match applied {
        Algorithm::LeastLoaded => {
            // `choose` applies least loaded only when every considered candidate has
            // an estimate; 0 is a safe reading should it ever be called otherwise.
            let free = capacity(c.capacity).unwrap_or(0.0) - traffic(c.traffic);
            // f64::MAX − f64::MAX is 0, so `free` is never NaN.
            free.max(0.0) / (users as f64 + 1.0)
        }
        Algorithm::RoundRobin => users as f64 / coefficient(c.coefficient),
    };
    // `free / n` and `users / MIN_POSITIVE` may pass f64::MAX; -0.0 becomes 0.
    if value > 0.0 {
        value.min(f64::MAX)
    } else {
        0.0
    }
}

/// A capacity estimate as used: NaN is none, negative 0, `+∞` `f64::MAX`.
fn capacity(capacity: Option<f64>) -> Option<f64> {
    match capacity {
        Some(c) if c.is_nan() => None,
        Some(c) => Some(c.clamp(0.0, f64::MAX)),
        None => None,
    }
}

/// Traffic as used: NaN or negative is 0, `+∞` `f64::MAX`.
fn traffic(traffic: f64) -> f64 {
    if traffic.is_nan() {
        0.0
    } else {
        traffic.clamp(0.0, f64::MAX)
    }
}

/// A coefficient as used: not finite or ≤ 0 is the smallest positive weight.
fn coefficient(coefficient: f64) -> f64 {
    if coefficient.is_finite() && coefficient > 0.0 {
        coefficient
    } else {
        f64::MIN_POSITIVE
    }
}

/// The hysteresis as used: NaN or negative is 0, `+∞` `f64::MAX`.
fn hysteresis(h: f64) -> f64 {
    if h.is_nan() {
        0.0
    } else {
        h.clamp(0.0, f64::MAX)
    }
}
