//! [`BulkStore`] over sqlx, for both backends (see [`super::bulk`]). The users are
//! chosen once, into a list of ids, at the start of the transaction: every statement
//! after works on exactly those, whatever the changes do to their status.

use async_trait::async_trait;
use sqlx::Row;

use super::bulk::{BulkAction, BulkStore};
use super::rows::{to_i64, to_u64};
use super::sql::conflict;
use super::user_filter::{UserFilter, predicate};
use super::{SqlStore, StoreError};
use crate::model::Id;

/// Ids per statement (SQLite allows 32,766 parameters; fewer keeps statements small).
const CHUNK: usize = 500;

#[async_trait]
impl BulkStore for SqlStore {
    async fn bulk_count(&self, filter: &UserFilter<'_>, now_ms: i64) -> Result<u64, StoreError> {
        let w = predicate(filter, now_ms);
        let sql = format!("SELECT COUNT(*) FROM users WHERE 1 = 1{}", w.text);
        let row = w.bind(sqlx::query(&sql)).fetch_one(&self.read).await?;
        Ok(to_u64(row.try_get(0)?))
    }

    async fn bulk_apply(
        &self,
        filter: &UserFilter<'_>,
        action: &BulkAction,
        now_ms: i64,
    ) -> Result<u64, StoreError> {
        let mut tx = self.begin().await?;
        let w = predicate(filter, now_ms);
        let sql = format!("SELECT id FROM users WHERE 1 = 1{} ORDER BY id", w.text);
        let ids: Vec<Id> = w
            .bind(sqlx::query(&sql))
            .fetch_all(&mut *tx)
            .await?
            .iter()
            .map(|r| r.try_get::<i64, _>(0))
            .collect::<Result<_, _>>()?;
        for chunk in ids.chunks(CHUNK) {
            let list: Vec<String> = (0..chunk.len()).map(|i| format!("${}", i + 3)).collect();
            let among = format!("id IN ({})", list.join(", "));
            let (statement, a, b): (String, i64, i64) = match action {
                BulkAction::ExtendExpiry { days } => (
                    format!(
                        "UPDATE users SET expires_ms = CASE WHEN expires_ms IS NULL THEN NULL \
                         ELSE expires_ms + $1 END, on_hold_days = CASE WHEN on_hold_days IS NULL \
                         THEN NULL WHEN on_hold_days + $2 > 36500 THEN 36500 \
                         ELSE on_hold_days + $2 END WHERE {among}"
                    ),
                    i64::from(*days) * 86_400_000,
                    i64::from(*days),
                ),
                BulkAction::AddTraffic { bytes } => (
                    format!(
                        "UPDATE users SET traffic_limit = CASE WHEN traffic_limit IS NULL \
                         THEN NULL WHEN traffic_limit > $1 - $2 THEN $1 \
                         ELSE traffic_limit + $2 END WHERE {among}"
                    ),
                    i64::MAX,
                    to_i64(*bytes),
                ),
                BulkAction::ResetUsage => (
                    format!(
                        "UPDATE users SET used_up = 0, used_down = 0, period_started_ms = $1 \
                         WHERE $2 = $2 AND {among}"
                    ),
                    now_ms,
                    0,
                ),
                BulkAction::Enable | BulkAction::Disable => (
                    format!("UPDATE users SET enabled = $1 WHERE $2 = $2 AND {among}"),
                    i64::from(matches!(action, BulkAction::Enable)),
                    0,
                ),
                BulkAction::SetClusters { clusters } => (
                    format!("UPDATE users SET all_clusters = $1 WHERE $2 = $2 AND {among}"),
                    i64::from(clusters.is_none()),
                    0,
                ),
                BulkAction::Delete => (
                    format!("DELETE FROM users WHERE $1 = $1 AND $2 = $2 AND {among}"),
                    0,
                    0,
                ),
            };
            let mut q = sqlx::query(&statement).bind(a).bind(b);
            for id in chunk {
                q = q.bind(*id);
            }
            q.execute(&mut *tx).await?;
            if let BulkAction::SetClusters { clusters } = action {
                let forget =
                    format!("DELETE FROM user_clusters WHERE $1 = $1 AND $2 = $2 AND user_{among}");
                let mut q = sqlx::query(&forget).bind(0i64).bind(0i64);
                for id in chunk {
                    q = q.bind(*id);
                }
                q.execute(&mut *tx).await?;
                for c in clusters.iter().flatten() {
                    let add = format!(
                        "INSERT INTO user_clusters (user_id, cluster_id) \
                         SELECT id, $1 FROM users WHERE $2 = $2 AND {among}"
                    );
                    let mut q = sqlx::query(&add).bind(*c).bind(0i64);
                    for id in chunk {
                        q = q.bind(*id);
                    }
                    q.execute(&mut *tx)
                        .await
                        .map_err(|e| conflict(e, "action.clusters", "no such cluster"))?;
                }
            }
        }
        self.commit(tx).await?;
        Ok(ids.len() as u64)
    }
}
