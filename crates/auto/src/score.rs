//! The score S (sets the queue) and the switch score S' (picks where to switch).
//!
//! ```text
//! S  = median(r) + (r_n − r_1) + 1000·f   if n ≥ 2
//! S  = r_last + 1000·f                    if n < 2
//! S' = L + (max A − min A) + 1000·f
//! ```
//! `r_1 ≤ … ≤ r_n` are the answered delays among the usable measurements (same method as
//! the latest, ≤ 24 h, ≤ last 5), `f` the unanswered ones, the median is the upper one
//! for even `n`; `L` is the delay in the current check and `A` holds `L` and the
//! answered delays of the same method over 24 h.

use core::cmp::Ordering;

use serde::Serialize;

use crate::config::spec::{HISTORY_LEN, SILENT_PENALTY};
use crate::history::History;
use crate::measurement::Method;
use crate::time::Timestamp;

/// Where a server stands in the queue before subscription order breaks ties.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "standing", content = "value")]
pub enum Standing {
    /// Has a score; lower is better.
    Scored(u64),
    /// No score, but a speed-test result in Mbit/s; higher is better.
    SpeedTested(f64),
    /// No usable measurement at all.
    Unchecked,
    /// No score and the latest measurement got no answer.
    LatestSilent,
}

impl Standing {
    /// The standing of a server with this history and speed-test result at `now`.
    pub fn of(history: &History, speed_mbps: Option<f64>, now: Timestamp) -> Self {
        let mut buf = [None; HISTORY_LEN];
        let n = history.usable_delays(now, &mut buf);
        let usable = &buf[..n];
        if let Some(s) = score_of(usable) {
            return Self::Scored(s);
        }
        if let Some(mbps) = speed_mbps {
            return Self::SpeedTested(mbps);
        }
        if usable.is_empty() {
            Self::Unchecked
        } else {
            Self::LatestSilent
        }
    }

    const fn group(&self) -> u8 {
        match self {
            Self::Scored(_) => 0,
            Self::SpeedTested(_) => 1,
            Self::Unchecked => 2,
            Self::LatestSilent => 3,
        }
    }

    /// Queue order: scored by score, then speed-tested by speed (fastest first), then
    /// unchecked, then latest-silent. `Equal` means subscription order decides.
    pub fn queue_cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Self::Scored(a), Self::Scored(b)) => a.cmp(b),
            (Self::SpeedTested(a), Self::SpeedTested(b)) => b.total_cmp(a),
            _ => self.group().cmp(&other.group()),
        }
    }
}

/// The score S of a server at `now`, or `None` when it is unscored (fewer than two
/// usable answers, and the latest usable measurement is not its one answer).
pub fn score(history: &History, now: Timestamp) -> Option<u64> {
    let mut buf = [None; HISTORY_LEN];
    let n = history.usable_delays(now, &mut buf);
    score_of(&buf[..n])
}

/// What a server's score is made of, for people: `S = typical + jumps + 1000 · failures`
/// when it is scored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Parts {
    /// The typical ping: the (upper) median of the answered delays, ms; `None` when
    /// no usable measurement answered.
    pub typical_ms: Option<u64>,
    /// How far the ping jumps: the largest answered delay minus the smallest, ms
    /// (0 with fewer than two answers).
    pub jumps_ms: u64,
    /// Usable measurements that got no answer.
    pub failures: u32,
    /// Usable measurements (same method as the latest, within 24 h, the last 5).
    pub measurements: u32,
}

/// The parts of a server's score at `now` ([`Parts`]), or `None` with no usable
/// measurement.
pub fn parts(history: &History, now: Timestamp) -> Option<Parts> {
    let mut buf = [None; HISTORY_LEN];
    let n = history.usable_delays(now, &mut buf);
    if n == 0 {
        return None;
    }
    let mut answered = [0u64; HISTORY_LEN];
    let mut k = 0;
    for ms in buf[..n].iter().flatten() {
        answered[k] = u64::from(*ms);
        k += 1;
    }
    let answered = &mut answered[..k];
    answered.sort_unstable();
    let (typical_ms, jumps_ms) = match answered {
        [] => (None, 0),
        a => (Some(a[a.len() / 2]), a[a.len() - 1] - a[0]),
    };
    Some(Parts {
        typical_ms,
        jumps_ms,
        failures: u32::try_from(n - k).unwrap_or(u32::MAX),
        measurements: u32::try_from(n).unwrap_or(u32::MAX),
    })
}

/// S over usable delays, oldest first (`None`: no answer).
fn score_of(usable: &[Option<u32>]) -> Option<u64> {
    let mut answered = [0u64; HISTORY_LEN];
    let mut n = 0;
    for ms in usable.iter().flatten() {
        answered[n] = u64::from(*ms);
        n += 1;
    }
    let silent = (usable.len() - n) as u64;
    let penalty = SILENT_PENALTY * silent;
    match n {
        0 => None,
        1 => {
            // Scored only when the one answer is the latest measurement.
            let last = (*usable.last()?)?;
            Some(u64::from(last) + penalty)
        }
        n => {
            let answered = &mut answered[..n];
            answered.sort_unstable();
            let median = answered[n / 2];
            Some(median + (answered[n - 1] - answered[0]) + penalty)
        }
    }
}

/// The switch score S' of a server that answered a check with `method` in `l_ms`,
/// over its history before that check.
pub fn switch_score(l_ms: u32, history: &History, method: Method, now: Timestamp) -> u64 {
    let l = u64::from(l_ms);
    let (mut min, mut max, mut silent) = (l, l, 0u64);
    for m in history.recent(method, now) {
        match m.ms {
            Some(ms) => {
                min = min.min(u64::from(ms));
                max = max.max(u64::from(ms));
            }
            None => silent += 1,
        }
    }
    l + (max - min) + SILENT_PENALTY * silent
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measurement::Measurement;

    fn hist(ms: &[Option<u32>]) -> History {
        History::from_measurements(ms.iter().enumerate().map(|(i, &ms)| Measurement {
            at: Timestamp::from_secs(i as i64),
            method: Method::Url,
            ms,
        }))
    }

    const NOW: Timestamp = Timestamp::from_secs(10);

    #[test]
    fn worked_example_finland_63_germany_305_netherlands_1021() {
        assert_eq!(score(&hist(&[Some(60), Some(61), Some(62)]), NOW), Some(63));
        assert_eq!(
            score(&hist(&[Some(20), Some(25), Some(300)]), NOW),
            Some(305)
        );
        assert_eq!(score(&hist(&[Some(15), Some(18), None]), NOW), Some(1021));
    }

    #[test]
    fn parts_add_up_to_the_score() {
        // Finland, Germany, the Netherlands of the worked example.
        for (ms, typical, jumps, failures) in [
            (&[Some(60), Some(61), Some(62)][..], Some(61), 2, 0),
            (&[Some(20), Some(25), Some(300)][..], Some(25), 280, 0),
            (&[Some(15), Some(18), None][..], Some(18), 3, 1),
        ] {
            let h = hist(ms);
            let p = parts(&h, NOW).unwrap();
            assert_eq!(
                (p.typical_ms, p.jumps_ms, p.failures, p.measurements),
                (typical, jumps, failures, 3)
            );
            assert_eq!(
                score(&h, NOW),
                Some(typical.unwrap() + jumps + SILENT_PENALTY * u64::from(failures))
            );
        }
        let silent = parts(&hist(&[None, None]), NOW).unwrap();
        assert_eq!(
            (silent.typical_ms, silent.jumps_ms, silent.failures),
            (None, 0, 2)
        );
        assert_eq!(parts(&History::new(), NOW), None);
    }

    #[test]
    fn even_count_takes_the_larger_middle_value() {
        // r = 10, 20, 30, 40: median 30, spread 30.
        assert_eq!(
            score(&hist(&[Some(40), Some(10), Some(30), Some(20)]), NOW),
            Some(60)
        );
        // r = 10, 20: median 20, spread 10.
        assert_eq!(score(&hist(&[Some(10), Some(20)]), NOW), Some(30));
    }

    #[test]
    fn one_answer_scores_only_when_it_is_the_latest() {
        assert_eq!(score(&hist(&[None, None, Some(50)]), NOW), Some(2050));
        assert_eq!(score(&hist(&[Some(50)]), NOW), Some(50));
        assert_eq!(score(&hist(&[Some(50), None]), NOW), None);
        assert_eq!(score(&hist(&[None]), NOW), None);
        assert_eq!(score(&hist(&[]), NOW), None);
    }

    #[test]
    fn only_the_last_five_count() {
        // Six measurements: the first (a failure) falls out.
        let h = hist(&[None, Some(10), Some(10), Some(10), Some(10), Some(10)]);
        assert_eq!(score(&h, NOW), Some(10));
    }

    #[test]
    fn only_the_latest_method_and_24_hours_count() {
        let mut h = hist(&[Some(100), None]);
        h.record(Measurement::answered(
            Timestamp::from_secs(5),
            Method::Tcp,
            30,
        ));
        assert_eq!(score(&h, NOW), Some(30)); // the URL ones don't mix in
        let day_later = Timestamp::from_secs(5 + 86_400 + 1);
        assert_eq!(score(&h, day_later), None);
        assert_eq!(Standing::of(&h, None, day_later), Standing::Unchecked);
    }

    #[test]
    fn switch_score_replaces_the_typical_ping_with_this_checks_ping() {
        // A steady server beats one that answered fast now but jumped all day.
        let steady = hist(&[Some(60), Some(61), Some(62)]);
        let jumpy = hist(&[Some(20), Some(25), Some(300)]);
        assert_eq!(switch_score(61, &steady, Method::Url, NOW), 61 + 2);
        assert_eq!(switch_score(15, &jumpy, Method::Url, NOW), 15 + 285);
        // L widens the spread; failures cost 1000 each.
        let flaky = hist(&[Some(15), Some(18), None]);
        assert_eq!(switch_score(40, &flaky, Method::Url, NOW), 40 + 25 + 1000);
        // Other methods are not mixed in.
        assert_eq!(switch_score(40, &flaky, Method::Tcp, NOW), 40);
    }

    #[test]
    fn standing_groups_in_spec_order() {
        let now = NOW;
        assert_eq!(
            Standing::of(&hist(&[Some(5), None]), Some(50.0), now),
            Standing::SpeedTested(50.0)
        );
        assert_eq!(Standing::of(&hist(&[]), None, now), Standing::Unchecked);
        assert_eq!(
            Standing::of(&hist(&[Some(5), None]), None, now),
            Standing::LatestSilent
        );
        let order = [
            Standing::Scored(5000),
            Standing::SpeedTested(90.0),
            Standing::SpeedTested(10.0),
            Standing::Unchecked,
            Standing::LatestSilent,
        ];
        for w in order.windows(2) {
            assert_eq!(w[0].queue_cmp(&w[1]), Ordering::Less, "{w:?}");
            assert_eq!(w[1].queue_cmp(&w[0]), Ordering::Greater, "{w:?}");
        }
    }
}
