//! Users: limits, reset periods, expiry, *on hold*, and the status computed from them.
//!
//! Everything here is pure: `now` (Unix milliseconds) is passed in, so every rule is a
//! unit test with exact times.

use serde::{Deserialize, Serialize};
use time::{Date, Duration, Month, OffsetDateTime, Time};
use utoipa::ToSchema;

/// When a user's traffic counter starts over.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResetStrategy {
    /// Never: the limit is for the user's whole life.
    #[default]
    None,
    /// Every day at 00:00 UTC.
    Day,
    /// Every Monday at 00:00 UTC.
    Week,
    /// On the 1st of every month, 00:00 UTC.
    Month,
    /// Every month on the day of the month the user was created (the last day of
    /// shorter months), at the time of day the user was created.
    MonthFromStart,
    /// Every 1 January, 00:00 UTC.
    Year,
}

impl ResetStrategy {
    /// Its name in the API and the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Day => "day",
            Self::Week => "week",
            Self::Month => "month",
            Self::MonthFromStart => "month_from_start",
            Self::Year => "year",
        }
    }

    /// The strategy named `s`.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "none" => Self::None,
            "day" => Self::Day,
            "week" => Self::Week,
            "month" => Self::Month,
            "month_from_start" => Self::MonthFromStart,
            "year" => Self::Year,
            _ => return None,
        })
    }
}

/// A user's status, computed from the data, never stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum UserStatus {
    /// May connect.
    Active,
    /// Used up the traffic limit of the current period.
    Limited,
    /// Past the expiry.
    Expired,
    /// Switched off by an operator.
    Disabled,
    /// Has not connected yet; the expiry clock starts at the first connection. May
    /// connect.
    OnHold,
}

impl UserStatus {
    /// How a person reads it.
    pub fn label(self) -> &'static str {
        match self {
            Self::Active => "Active",
            Self::Limited => "Limited",
            Self::Expired => "Expired",
            Self::Disabled => "Disabled",
            Self::OnHold => "On hold",
        }
    }

    /// Whether the user's credentials go to the nodes.
    pub fn may_connect(self) -> bool {
        matches!(self, Self::Active | Self::OnHold)
    }
}

/// The parts of a user that decide its status.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Standing {
    /// Switched on by the operator.
    pub enabled: bool,
    /// Bytes allowed per period; none is unlimited.
    pub traffic_limit: Option<u64>,
    /// Bytes used in the current period, both directions.
    pub used: u64,
    /// Unix ms after which the user is expired; none never expires.
    pub expires_ms: Option<i64>,
    /// On hold: the expiry is this many days after the first connection.
    pub on_hold_days: Option<u32>,
    /// The first connection, once seen.
    pub first_connected_ms: Option<i64>,
}

impl Standing {
    /// The expiry in force: for an on-hold user who has connected, the first
    /// connection plus the hold's days; else the fixed expiry.
    pub fn effective_expiry(&self) -> Option<i64> {
        match (self.on_hold_days, self.first_connected_ms) {
            (Some(days), Some(first)) => Some(first.saturating_add(i64::from(days) * 86_400_000)),
            _ => self.expires_ms,
        }
    }

    /// The status at `now`. Order: disabled, then on hold (the clock has not started,
    /// so it cannot have expired), then expired, then limited.
    pub fn status(&self, now_ms: i64) -> UserStatus {
        if !self.enabled {
            return UserStatus::Disabled;
        }
        let held = self.on_hold_days.is_some() && self.first_connected_ms.is_none();
        if held {
            if self.traffic_limit.is_some_and(|l| self.used >= l) {
                return UserStatus::Limited;
            }
            return UserStatus::OnHold;
        }
        if self.effective_expiry().is_some_and(|e| now_ms >= e) {
            return UserStatus::Expired;
        }
        if self.traffic_limit.is_some_and(|l| self.used >= l) {
            return UserStatus::Limited;
        }
        UserStatus::Active
    }
}

fn at(ms: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

fn ms(t: OffsetDateTime) -> i64 {
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

fn last_day(year: i32, month: Month) -> u8 {
    month.length(year)
}

/// The same day of month as `anchor` (clamped to the month's length) in `year`/`month`,
/// at `anchor`'s time of day.
fn monthly(anchor: OffsetDateTime, year: i32, month: Month) -> OffsetDateTime {
    let day = anchor.day().min(last_day(year, month));
    let date = Date::from_calendar_date(year, month, day).unwrap_or(anchor.date());
    date.with_time(anchor.time()).assume_utc()
}

/// The start of the reset period that holds `now`, for a user created at
/// `created_ms`; none for [`ResetStrategy::None`]. A user whose counter started before
/// this is due for a reset.
pub fn period_start(strategy: ResetStrategy, created_ms: i64, now_ms: i64) -> Option<i64> {
    let now = at(now_ms);
    let midnight = now.date().with_time(Time::MIDNIGHT).assume_utc();
    let start = match strategy {
        ResetStrategy::None => return None,
        ResetStrategy::Day => midnight,
        ResetStrategy::Week => {
            let back = i64::from(now.weekday().number_days_from_monday());
            midnight - Duration::days(back)
        }
        ResetStrategy::Month => midnight.replace_day(1).unwrap_or(midnight),
        ResetStrategy::Year => Date::from_calendar_date(now.year(), Month::January, 1)
            .unwrap_or(now.date())
            .with_time(Time::MIDNIGHT)
            .assume_utc(),
        ResetStrategy::MonthFromStart => {
            let anchor = at(created_ms);
            let this = monthly(anchor, now.year(), now.month());
            if this <= now {
                this
            } else {
                let (y, m) = if now.month() == Month::January {
                    (now.year() - 1, Month::December)
                } else {
                    (now.year(), now.month().previous())
                };
                monthly(anchor, y, m)
            }
        }
    };
    Some(ms(start))
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::Weekday;

    const DAY: i64 = 86_400_000;
    // 2026-12-01T10:30:00Z is a Tuesday.
    const NOW: i64 = 1_796_121_000_000;

    fn utc(y: i32, m: u8, d: u8, h: u8, min: u8) -> i64 {
        let date = Date::from_calendar_date(y, Month::try_from(m).unwrap(), d).unwrap();
        ms(date.with_hms(h, min, 0).unwrap().assume_utc())
    }

    #[test]
    fn now_is_what_the_tests_say() {
        assert_eq!(NOW, utc(2026, 12, 1, 10, 30));
        assert_eq!(at(NOW).weekday(), Weekday::Tuesday);
    }

    #[test]
    fn periods_start_where_the_calendar_says() {
        use ResetStrategy::*;
        let created = utc(2025, 1, 31, 15, 0);
        assert_eq!(period_start(None, created, NOW), Option::None);
        assert_eq!(
            period_start(Day, created, NOW),
            Some(utc(2026, 12, 1, 0, 0))
        );
        assert_eq!(
            period_start(Week, created, NOW),
            Some(utc(2026, 11, 30, 0, 0))
        );
        assert_eq!(
            period_start(Month, created, NOW),
            Some(utc(2026, 12, 1, 0, 0))
        );
        assert_eq!(
            period_start(Year, created, NOW),
            Some(utc(2026, 1, 1, 0, 0))
        );
        // Created on the 31st at 15:00: November has 30 days, so its period started on
        // 30 November at 15:00, and December's starts on the 31st.
        assert_eq!(
            period_start(MonthFromStart, created, NOW),
            Some(utc(2026, 11, 30, 15, 0))
        );
        assert_eq!(
            period_start(MonthFromStart, created, utc(2026, 12, 31, 15, 0)),
            Some(utc(2026, 12, 31, 15, 0))
        );
        // In January, before the anchor day, the period began in December.
        assert_eq!(
            period_start(
                MonthFromStart,
                utc(2025, 3, 10, 0, 0),
                utc(2027, 1, 5, 0, 0)
            ),
            Some(utc(2026, 12, 10, 0, 0))
        );
        // February of a leap year clamps to the 29th.
        assert_eq!(
            period_start(MonthFromStart, created, utc(2028, 3, 1, 0, 0)),
            Some(utc(2028, 2, 29, 15, 0))
        );
    }

    #[test]
    fn status_follows_the_data() {
        let active = Standing {
            enabled: true,
            ..Standing::default()
        };
        assert_eq!(active.status(NOW), UserStatus::Active);
        let disabled = Standing {
            enabled: false,
            used: u64::MAX,
            expires_ms: Some(0),
            ..active.clone()
        };
        assert_eq!(disabled.status(NOW), UserStatus::Disabled);
        let limited = Standing {
            traffic_limit: Some(1000),
            used: 1000,
            ..active.clone()
        };
        assert_eq!(limited.status(NOW), UserStatus::Limited);
        let under = Standing {
            used: 999,
            ..limited.clone()
        };
        assert_eq!(under.status(NOW), UserStatus::Active);
        let expired = Standing {
            expires_ms: Some(NOW),
            ..limited.clone()
        };
        assert_eq!(expired.status(NOW), UserStatus::Expired);
        assert_eq!(expired.status(NOW - 1), UserStatus::Limited);
    }

    #[test]
    fn on_hold_starts_the_clock_at_the_first_connection() {
        let held = Standing {
            enabled: true,
            on_hold_days: Some(30),
            expires_ms: Some(0),
            ..Standing::default()
        };
        assert_eq!(held.status(NOW), UserStatus::OnHold);
        assert!(held.status(NOW).may_connect());
        let connected = Standing {
            first_connected_ms: Some(NOW),
            ..held.clone()
        };
        assert_eq!(connected.effective_expiry(), Some(NOW + 30 * DAY));
        assert_eq!(connected.status(NOW + 30 * DAY - 1), UserStatus::Active);
        assert_eq!(connected.status(NOW + 30 * DAY), UserStatus::Expired);
        assert!(!connected.status(NOW + 30 * DAY).may_connect());
    }
}
