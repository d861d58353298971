//! [`TrafficStore`] over sqlx, for both backends.

use async_trait::async_trait;
use sqlx::Row;

use super::rows::{to_i64, to_u64};
use super::traffic::{BATCH_USERS, StatsBatch, StatsState, TrafficBatch, TrafficStore};
use super::{SqlStore, StoreError};
use crate::model::Id;

/// Adds `$1` bytes up, `$2` down and `$3` in total to user `$4`, each sum saturating
/// at `i64::MAX` (the binds are never negative, so `MAX - $n` cannot overflow).
const ADD_USAGE: &str = "UPDATE users SET \
    used_up = CASE WHEN used_up > 9223372036854775807 - $1 \
        THEN 9223372036854775807 ELSE used_up + $1 END, \
    used_down = CASE WHEN used_down > 9223372036854775807 - $2 \
        THEN 9223372036854775807 ELSE used_down + $2 END, \
    lifetime_bytes = CASE WHEN lifetime_bytes > 9223372036854775807 - $3 \
        THEN 9223372036854775807 ELSE lifetime_bytes + $3 END \
    WHERE id = $4";

#[async_trait]
impl TrafficStore for SqlStore {
    async fn stats_state(&self, server_id: Id) -> Result<StatsState, StoreError> {
        let row = sqlx::query(
            "SELECT journal_cursor, stats_allowance_ms, created_ms FROM servers WHERE id = $1",
        )
        .bind(server_id)
        .fetch_optional(&self.write)
        .await?
        .ok_or(StoreError::NotFound("server"))?;
        Ok(StatsState {
            cursor: to_u64(row.try_get(0)?),
            allowance_ms: row.try_get(1)?,
            created_ms: row.try_get(2)?,
        })
    }

    async fn add_traffic(&self, server_id: Id, batch: &StatsBatch) -> Result<bool, StoreError> {
        let mut tx = self.begin().await?;
        let moved = sqlx::query(
            "UPDATE servers SET journal_cursor = $1, stats_allowance_ms = $2 \
             WHERE id = $3 AND journal_cursor = $4",
        )
        .bind(to_i64(batch.to))
        .bind(batch.allowance_ms)
        .bind(server_id)
        .bind(to_i64(batch.from))
        .execute(&mut *tx)
        .await?
        .rows_affected()
            == 1;
        if !moved {
            tx.rollback().await?;
            return Ok(false);
        }
        for (user, up, down) in &batch.users {
            sqlx::query(ADD_USAGE)
                .bind(to_i64(*up))
                .bind(to_i64(*down))
                .bind(to_i64(up.saturating_add(*down)))
                .bind(*user)
                .execute(&mut *tx)
                .await?;
        }
        // Usage moves statuses (limits): announce, so nodes get the users they should
        // have.
        if batch.users.is_empty() {
            tx.commit().await?;
        } else {
            self.commit(tx).await?;
        }
        Ok(true)
    }

    async fn mark_online(&self, users: &[Id], now_ms: i64) -> Result<u64, StoreError> {
        let mut started = 0;
        for chunk in users.chunks(BATCH_USERS) {
            let mut tx = self.begin().await?;
            let mut here = 0;
            for user in chunk {
                here += sqlx::query(
                    "UPDATE users SET first_connected_ms = $1 \
                     WHERE id = $2 AND first_connected_ms IS NULL",
                )
                .bind(now_ms)
                .bind(*user)
                .execute(&mut *tx)
                .await?
                .rows_affected();
                sqlx::query("UPDATE users SET online_ms = $1 WHERE id = $2")
                    .bind(now_ms)
                    .bind(*user)
                    .execute(&mut *tx)
                    .await?;
            }
            // A first connection starts an on-hold clock: announce.
            if here > 0 {
                self.commit(tx).await?;
            } else {
                tx.commit().await?;
            }
            started += here;
        }
        Ok(started)
    }

    async fn record_traffic(
        &self,
        server_id: Id,
        batch: &TrafficBatch,
        online: &[Id],
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let mut tx = self.begin().await?;
        let moved = sqlx::query(
            "UPDATE servers SET journal_cursor = $1 WHERE id = $2 AND journal_cursor < $1",
        )
        .bind(to_i64(batch.cursor))
        .bind(server_id)
        .execute(&mut *tx)
        .await?
        .rows_affected()
            == 1;
        if moved {
            for (user, up, down) in &batch.users {
                sqlx::query(ADD_USAGE)
                    .bind(to_i64(*up))
                    .bind(to_i64(*down))
                    .bind(to_i64(up.saturating_add(*down)))
                    .bind(*user)
                    .execute(&mut *tx)
                    .await?;
            }
        }
        let mut started = 0;
        for user in online {
            started += sqlx::query(
                "UPDATE users SET first_connected_ms = $1 \
                 WHERE id = $2 AND first_connected_ms IS NULL",
            )
            .bind(now_ms)
            .bind(*user)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            sqlx::query("UPDATE users SET online_ms = $1 WHERE id = $2")
                .bind(now_ms)
                .bind(*user)
                .execute(&mut *tx)
                .await?;
        }
        // Usage moves statuses (limits) and a first connection starts an on-hold
        // clock: announce, so nodes get the users they should have.
        if (moved && !batch.users.is_empty()) || started > 0 {
            self.commit(tx).await?;
        } else {
            tx.commit().await?;
        }
        Ok(moved)
    }
}
