//! A server's recent measurements.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::config::spec::{HISTORY_LEN, HISTORY_MAX_AGE};
use crate::measurement::{Measurement, Method};
use crate::time::Timestamp;

/// The last [`HISTORY_LEN`] measurements of one server, oldest first.
///
/// Serialized as a plain list. Reading one back goes through
/// [`History::from_measurements`], so a saved (or hand-edited) list that is longer than
/// five or out of time order still gives a history that is neither: the score code
/// relies on both, and a longer list used to panic it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct History {
    #[serde(deserialize_with = "five_in_time_order")]
    measurements: VecDeque<Measurement>,
}

fn five_in_time_order<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<VecDeque<Measurement>, D::Error> {
    let list = Vec::<Measurement>::deserialize(d)?;
    Ok(History::from_measurements(list).measurements)
}

impl History {
    /// An empty history.
    pub fn new() -> Self {
        Self::default()
    }

    /// A history holding `measurements` (the oldest beyond the last five are dropped).
    pub fn from_measurements(measurements: impl IntoIterator<Item = Measurement>) -> Self {
        let mut h = Self::new();
        for m in measurements {
            h.record(m);
        }
        h
    }

    /// Adds a measurement, keeping time order (a measurement imported out of order
    /// takes its place by time) and only the last five.
    pub fn record(&mut self, m: Measurement) {
        let pos = self.measurements.partition_point(|x| x.at <= m.at);
        self.measurements.insert(pos, m);
        while self.measurements.len() > HISTORY_LEN {
            self.measurements.pop_front();
        }
    }

    /// Clamps the dates of measurements taken after `now` to `now` (time order holds).
    pub fn clamp_future(&mut self, now: Timestamp) {
        for m in &mut self.measurements {
            m.at = m.at.min(now);
        }
    }

    /// All kept measurements, oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Measurement> + '_ {
        self.measurements.iter()
    }

    /// The latest measurement, whatever its age.
    pub fn latest(&self) -> Option<&Measurement> {
        self.measurements.back()
    }

    /// Whether no measurement is kept.
    pub fn is_empty(&self) -> bool {
        self.measurements.is_empty()
    }

    /// Kept measurements taken with `method` no more than 24 h before `now`, oldest
    /// first.
    pub fn recent(
        &self,
        method: Method,
        now: Timestamp,
    ) -> impl Iterator<Item = &Measurement> + '_ {
        let oldest = now - HISTORY_MAX_AGE;
        self.measurements
            .iter()
            .filter(move |m| m.method == method && m.at >= oldest)
    }

    /// The measurements the score uses at `now`: same method as the latest one, no
    /// older than 24 h. Empty when there is no measurement.
    pub fn usable(&self, now: Timestamp) -> Vec<Measurement> {
        match self.latest() {
            Some(latest) => self.recent(latest.method, now).copied().collect(),
            None => Vec::new(),
        }
    }

    /// The delays of [`usable`](Self::usable) measurements, oldest first, without
    /// allocating: fills `out` and returns how many it filled.
    pub fn usable_delays(&self, now: Timestamp, out: &mut [Option<u32>; HISTORY_LEN]) -> usize {
        let Some(latest) = self.latest() else {
            return 0;
        };
        let mut n = 0;
        for m in self.recent(latest.method, now) {
            out[n] = m.ms;
            n += 1;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(at: i64, ms: Option<u32>) -> Measurement {
        Measurement {
            at: Timestamp::from_secs(at),
            method: Method::Url,
            ms,
        }
    }

    #[test]
    fn keeps_the_last_five_in_time_order() {
        let mut h = History::new();
        for i in 0..7 {
            h.record(url(i, Some(i as u32)));
        }
        let ats: Vec<i64> = h.iter().map(|m| m.at.as_millis() / 1000).collect();
        assert_eq!(ats, [2, 3, 4, 5, 6]);
        h.record(url(3, None)); // out of order: lands by time, oldest drops
        let ats: Vec<i64> = h.iter().map(|m| m.at.as_millis() / 1000).collect();
        assert_eq!(ats, [3, 3, 4, 5, 6]);
    }

    #[test]
    fn a_saved_history_reads_back_as_the_last_five_in_time_order() {
        let json = r#"[
            {"at": 7000, "method": "url", "ms": 7}, {"at": 1000, "method": "url", "ms": 1},
            {"at": 6000, "method": "url", "ms": 6}, {"at": 2000, "method": "url", "ms": 2},
            {"at": 5000, "method": "url", "ms": 5}, {"at": 3000, "method": "url", "ms": 3},
            {"at": 4000, "method": "url", "ms": null}
        ]"#;
        let h: History = serde_json::from_str(json).unwrap();
        let ats: Vec<i64> = h.iter().map(|m| m.at.as_millis() / 1000).collect();
        assert_eq!(ats, [3, 4, 5, 6, 7]);
        // The score reads it without running past its buffer of five.
        assert_eq!(
            crate::score::score(&h, Timestamp::from_secs(8)),
            Some(6 + 4 + 1000)
        );
        assert_eq!(
            serde_json::from_str::<History>(&serde_json::to_string(&h).unwrap()).unwrap(),
            h
        );
    }

    #[test]
    fn usable_takes_the_latest_method_within_24_hours() {
        let now = Timestamp::from_secs(100_000);
        let mut h = History::new();
        h.record(url(100_000 - 86_401, Some(10))); // 24 h and 1 s old: too old
        h.record(url(100_000 - 86_400, Some(20))); // exactly 24 h: usable
        h.record(Measurement::answered(
            Timestamp::from_secs(99_000),
            Method::Tcp,
            5,
        ));
        h.record(url(99_500, None));
        let usable = h.usable(now);
        assert_eq!(usable.len(), 2);
        assert_eq!(usable[0].ms, Some(20));
        assert_eq!(usable[1].ms, None);
        h.record(Measurement::answered(
            Timestamp::from_secs(99_900),
            Method::Tcp,
            7,
        ));
        let usable: Vec<_> = h.usable(now).iter().map(|m| m.ms).collect();
        assert_eq!(usable, [Some(5), Some(7)]);
    }
}
