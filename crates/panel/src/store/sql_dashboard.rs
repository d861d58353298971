//! [`DashboardStore`] over sqlx, for both backends (see [`super::dashboard`]).

use async_trait::async_trait;
use sqlx::Row;

use super::bulk::BulkStore;
use super::dashboard::{ByStatus, DashboardStore, Day, Numbers, Some10};
use super::rows::to_u64;
use super::user_filter::UserFilter;
use super::{SqlStore, StoreError};
use crate::model::UserStatus;

const DAY_MS: i64 = 86_400_000;
const HOUR_MS: i64 = 3_600_000;
/// How recently a user must have been seen to count as online.
const ONLINE_MS: i64 = 120_000;

impl SqlStore {
    /// How many users `condition` (over `$1` and `$2`) names, and the first ten by
    /// `order`.
    async fn some(
        &self,
        condition: &str,
        order: &str,
        a: i64,
        b: i64,
    ) -> Result<Some10, StoreError> {
        let count = sqlx::query(&format!("SELECT COUNT(*) FROM users WHERE {condition}"))
            .bind(a)
            .bind(b)
            .fetch_one(&self.read)
            .await?;
        let rows = sqlx::query(&format!(
            "SELECT username FROM users WHERE {condition} ORDER BY {order}, id LIMIT 10"
        ))
        .bind(a)
        .bind(b)
        .fetch_all(&self.read)
        .await?;
        Ok(Some10 {
            count: to_u64(count.try_get(0)?),
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
        let count = |status| async move {
            let f = UserFilter {
                status: Some(status),
                ..UserFilter::default()
            };
            self.bulk_count(&f, now_ms).await
        };
        let users = ByStatus {
            active: count(UserStatus::Active).await?,
            limited: count(UserStatus::Limited).await?,
            expired: count(UserStatus::Expired).await?,
            disabled: count(UserStatus::Disabled).await?,
            on_hold: count(UserStatus::OnHold).await?,
        };
        let online = sqlx::query("SELECT COUNT(*) FROM users WHERE online_ms >= $1")
            .bind(now_ms.saturating_sub(ONLINE_MS))
            .fetch_one(&self.read)
            .await?;
        // Fixed expiries only: an on-hold user's clock has not started, or has its own.
        let expiring = self
            .some(
                "enabled <> 0 AND expires_ms IS NOT NULL AND expires_ms > $1 AND expires_ms <= $2",
                "expires_ms",
                now_ms,
                now_ms.saturating_add(3 * DAY_MS),
            )
            .await?;
        // 90 % or more, not all: in floating point (two counters could overflow).
        let used = "(CAST(used_up AS DOUBLE PRECISION) + CAST(used_down AS DOUBLE PRECISION))";
        let nearly_out = self
            .some(
                &format!(
                    "enabled <> 0 AND traffic_limit IS NOT NULL AND traffic_limit > 0 \
                     AND used_up < traffic_limit - used_down \
                     AND {used} * 10 >= CAST(traffic_limit AS DOUBLE PRECISION) * 9 \
                     AND $1 = $1 AND $2 = $2"
                ),
                &format!("{used} / CAST(traffic_limit AS DOUBLE PRECISION) DESC"),
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
            online: to_u64(online.try_get(0)?),
            expiring,
            nearly_out,
            servers,
            traffic,
        })
    }
}
