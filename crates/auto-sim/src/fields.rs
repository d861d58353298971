//! Checks of single fields for [`Scenario::validate`](super::Scenario::validate):
//! numbers, intervals, keywords, each failure naming its field.

use switchyard_auto::server::ServerId;
use switchyard_auto::time::Timestamp;

use super::error::ScenarioError;
use super::scenario::ServerSpec;

/// Bound on any time in a scenario, seconds either way (about 31 years).
pub(super) const MAX_ABS_TIME_S: f64 = 1e9;

pub(super) type Result<T> = core::result::Result<T, ScenarioError>;

/// Speed-test results by server.
pub(super) type Speeds = Vec<(ServerId, f64)>;

pub(super) fn speeds_of(field: &str, servers: &[ServerSpec]) -> Result<Speeds> {
    let mut out = Vec::new();
    for (j, s) in servers.iter().enumerate() {
        if let Some(v) = s.speed_mbps {
            let f = format!("{field}[{j}].speed_mbps");
            let v = number(&f, v, 0.0, f64::MAX, "a speed ≥ 0 Mbit/s")?;
            out.push((ServerId::new(s.name.clone()), v));
        }
    }
    Ok(out)
}

/// An interval in seconds with defaults `[0, default_to)`; `to` may pass the end of the
/// run (it is clipped later).
pub(super) fn interval(
    field: &str,
    from: Option<f64>,
    to: Option<f64>,
    default_to: Timestamp,
) -> Result<(Timestamp, Timestamp)> {
    let from_s = match from {
        Some(v) => number(&format!("{field}.from"), v, 0.0, MAX_ABS_TIME_S, "0 ≤ from")?,
        None => 0.0,
    };
    let to_ms = match to {
        Some(v) => {
            let to_s = number(&format!("{field}.to"), v, 0.0, MAX_ABS_TIME_S, "0 ≤ to")?;
            if to_s <= from_s {
                return Err(ScenarioError::EmptyInterval {
                    field: field.to_owned(),
                    from: from_s,
                    to: to_s,
                });
            }
            ms(to_s)
        }
        None => default_to,
    };
    let from_ms = ms(from_s);
    if from_ms >= to_ms {
        return Err(ScenarioError::EmptyInterval {
            field: field.to_owned(),
            from: from_s,
            to: to_ms.as_secs_f64(),
        });
    }
    Ok((from_ms, to_ms))
}

/// A finite number in `[lo, hi]`.
pub(super) fn number(field: &str, v: f64, lo: f64, hi: f64, expected: &'static str) -> Result<f64> {
    if !v.is_finite() {
        return Err(ScenarioError::NotFinite {
            field: field.to_owned(),
            value: v,
        });
    }
    if v < lo || v > hi {
        return Err(range(field, v, expected));
    }
    Ok(v)
}

/// A latency: a whole number of milliseconds that fits a probe reply.
pub(super) fn latency(field: &str, v: f64) -> Result<u32> {
    let v = number(field, v, 0.0, f64::from(u32::MAX), "0 ≤ ms ≤ 4294967295")?;
    if v.fract() != 0.0 {
        return Err(range(field, v, "a whole number of milliseconds"));
    }
    Ok(v as u32)
}

pub(super) fn flag(field: &str, v: bool) -> Result<()> {
    if v {
        Ok(())
    } else {
        Err(ScenarioError::invalid(
            field,
            "must be true (leave the action out instead)",
        ))
    }
}

/// Seconds (already range-checked) to a timestamp in whole milliseconds.
pub(super) fn ms(seconds: f64) -> Timestamp {
    Timestamp((seconds * 1000.0).round() as i64)
}

pub(super) fn range(field: &str, value: f64, expected: &'static str) -> ScenarioError {
    ScenarioError::OutOfRange {
        field: field.to_owned(),
        value,
        expected,
    }
}

pub(super) fn keyword(
    field: &str,
    what: &'static str,
    value: &str,
    expected: &'static str,
) -> ScenarioError {
    ScenarioError::UnknownKeyword {
        field: field.to_owned(),
        what,
        value: value.to_owned(),
        expected,
    }
}

pub(super) fn unknown_sub(field: &str, name: &str) -> ScenarioError {
    ScenarioError::UnknownSubscription {
        field: field.to_owned(),
        name: name.to_owned(),
    }
}

pub(super) fn duplicate(field: String, name: &str) -> ScenarioError {
    ScenarioError::Duplicate {
        field,
        what: "server",
        name: name.to_owned(),
    }
}
