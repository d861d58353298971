//! The panel's clock: where it reads the system's time, in one place.

use std::time::{SystemTime, UNIX_EPOCH};

/// Unix milliseconds now.
#[allow(
    clippy::disallowed_methods,
    reason = "the panel's one reading of the wall clock"
)]
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
