//! The client's one reading of the wall clock.

/// Unix milliseconds now (0 before 1970, `i64::MAX` past its range).
#[allow(
    clippy::disallowed_methods,
    reason = "the client's one reading of the wall clock"
)]
pub(crate) fn unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
