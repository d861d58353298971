//! [`DashboardStore`] over sqlx, for both backends (see [`super::dashboard`]).

use async_trait::async_trait;
use sqlx::Row;

use super::dashboard::{ByStatus, DashboardStore, Day, Numbers, Some10};
use super::rows::to_u64;
use super::user_filter::status_sql;
use super::{SqlStore, StoreError};
use crate::model::UserStatus;

const DAY_MS: i64 = 86_400_000;
const HOUR_MS: i64 = 3_600_000;
/// How recently a user must have been seen to count as online.
const ONLINE_MS: i64 = 120_000;

/// Users expiring soon, over `$1` (now) and `$2` (three days on). Fixed expiries
/// only: an on-hold user's clock has not started, or has its own.
const EXPIRING: &str =
    "enabled <> 0 AND expires_ms IS NOT NULL AND expires_ms > $1 AND expires_ms <= $2";
/// Used, in floating point (two counters could overflow).
const USED: &str = "(CAST(used_up AS DOUBLE PRECISION) + CAST(used_down AS DOUBLE PRECISION))";

/// Users at 90 % of their limit or more, not all of it.
fn nearly_out() -> String {
    format!(
        "enabled <> 0 AND traffic_limit IS NOT NULL AND traffic_limit > 0 \
         AND used_up < traffic_limit - used_down \
         AND {USED} * 10 >= CAST(traffic_limit AS DOUBLE PRECISION) * 9"
    )
}

/// One pass over the users: how many of each status (at `$1`), online since `$3`,
/// expiring by `$2`, and nearly out of traffic.
fn counts_sql() -> String {
    let sum =
        |condition: &str| format!("COALESCE(SUM(CASE WHEN {condition} THEN 1 ELSE 0 END), 0)");
    let statuses = [
        UserStatus::Active,
        UserStatus::Limited,
        UserStatus::Expired,
        UserStatus::Disabled,
        UserStatus::OnHold,
    ]
    .map(|s| sum(&status_sql(s, "$1")));
    format!(
        "SELECT {}, {}, {}, {} FROM users",
        statuses.join(", "),
        sum("online_ms >= $3"),
        sum(EXPIRING),
        sum(&nearly_out())
    )
}

impl SqlStore {
    /// The first ten users `condition` (over `$1` and `$2`) names by `order`, with
    /// `count` (counted in the one pass of [`counts_sql`]).
    async fn some(
        &self,
        (condition, count): (&str, u64),
        order: &str,
        a: i64,
        b: i64,
    ) -> Result<Some10, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT username FROM users WHERE {condition} ORDER BY {order}, id LIMIT 10"
        ))
        .bind(a)
        .bind(b)
        .fetch_all(&self.read)
        .await?;
        Ok(Some10 {
            count,
            names: rows
                .iter()
                .map(|r| r.try_get::<String, _>(0))
                .collect::<Result<_, _>>()?,
        })
    }
}

#[async_trait]
impl DashboardStore for SqlStore {
    async fn numbers(&self, now_ms: i64) -> Result<Numbers, StoreError> {
        let counts = sqlx::query(&counts_sql())
            .bind(now_ms)
            .bind(now_ms.saturating_add(3 * DAY_MS))
            .bind(now_ms.saturating_sub(ONLINE_MS))
            .fetch_one(&self.read)
            .await?;
        let n = |i: usize| -> Result<u64, StoreError> { Ok(to_u64(counts.try_get(i)?)) };
        let users = ByStatus {
            active: n(0)?,
            limited: n(1)?,
            expired: n(2)?,
            disabled: n(3)?,
            on_hold: n(4)?,
        };
        let expiring = self
            .some(
                (EXPIRING, n(6)?),
                "expires_ms",
                now_ms,
                now_ms.saturating_add(3 * DAY_MS),
            )
            .await?;
        let nearly_out = self
            .some(
                (&format!("{} AND $1 = $1 AND $2 = $2", nearly_out()), n(7)?),
                &format!("{USED} / CAST(traffic_limit AS DOUBLE PRECISION) DESC"),
                0,
                0,
            )
            .await?;
        let mut servers = std::collections::BTreeMap::new();
        for r in sqlx::query("SELECT state, COUNT(*) FROM servers GROUP BY state")
            .fetch_all(&self.read)
            .await?
        {
            servers.insert(r.try_get::<String, _>(0)?, to_u64(r.try_get(1)?));
        }
        let today = now_ms.div_euclid(DAY_MS) * DAY_MS;
        let from = today - 29 * DAY_MS;
        let mut traffic: Vec<Day> = (0..30)
            .map(|i| Day {
                day_ms: from + i * DAY_MS,
                bytes: 0,
            })
            .collect();
        let rows = sqlx::query(
            "SELECT at_ms, samples, up_sum, down_sum FROM server_history \
             WHERE step_ms = $1 AND at_ms >= $2",
        )
        .bind(HOUR_MS)
        .bind(from)
        .fetch_all(&self.read)
        .await?;
        for r in &rows {
            let at: i64 = r.try_get(0)?;
            let samples = to_u64(r.try_get(1)?).max(1);
            let bps = to_u64(r.try_get(2)?).saturating_add(to_u64(r.try_get(3)?)) / samples;
            let i = usize::try_from((at - from).div_euclid(DAY_MS)).unwrap_or(usize::MAX);
            if let Some(d) = traffic.get_mut(i) {
                d.bytes = d.bytes.saturating_add(bps.saturating_mul(3600));
            }
        }
        Ok(Numbers {
            users,
            online: n(5)?,
            expiring,
            nearly_out,
            servers,
            traffic,
        })
    }
}
