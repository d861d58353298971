//! [`AuditStore`] over sqlx, for both backends (see [`super::audit`]).

use async_trait::async_trait;
use sqlx::Row;

use super::audit::{AuditEntry, AuditQuery, AuditStore};
use super::rows::to_i64;
use super::{SqlStore, StoreError};

#[async_trait]
impl AuditStore for SqlStore {
    async fn record(&self, e: &AuditEntry, keep_from_ms: i64) -> Result<(), StoreError> {
        let mut tx = self.write.begin().await?;
        sqlx::query("DELETE FROM audit_log WHERE at_ms < $1")
            .bind(keep_from_ms)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO audit_log (at_ms, admin_id, admin, action, kind, object_id, object, \
             status) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(e.at_ms)
        .bind(e.admin_id)
        .bind(&e.admin)
        .bind(&e.action)
        .bind(&e.kind)
        .bind(e.object_id)
        .bind(&e.object)
        .bind(i64::from(e.status))
        .execute(&mut *tx)
        .await?;
        // Not announced as a change: nodes and subscriptions do not depend on it.
        tx.commit().await?;
        Ok(())
    }

    async fn audit(&self, q: &AuditQuery) -> Result<Vec<AuditEntry>, StoreError> {
        let limit = q.limit.unwrap_or(100).clamp(1, 1000);
        // Every filter is bound (an absent one as a value that matches everything),
        // so the statement is one text.
        let rows = sqlx::query(
            "SELECT id, at_ms, admin_id, admin, action, kind, object_id, object, status \
             FROM audit_log WHERE ($1 < 0 OR admin_id = $1) AND ($2 = '' OR kind = $2) \
             AND ($3 < 0 OR object_id = $3) AND at_ms >= $4 AND at_ms < $5 AND id < $6 \
             ORDER BY id DESC LIMIT $7",
        )
        .bind(q.admin_id.unwrap_or(-1))
        .bind(q.kind.clone().unwrap_or_default())
        .bind(q.object_id.unwrap_or(-1))
        .bind(q.since_ms.unwrap_or(i64::MIN))
        .bind(q.until_ms.unwrap_or(i64::MAX))
        .bind(q.before.unwrap_or(i64::MAX))
        .bind(to_i64(limit))
        .fetch_all(&self.read)
        .await?;
        Ok(rows
            .iter()
            .map(|r| -> Result<_, sqlx::Error> {
                Ok(AuditEntry {
                    id: r.try_get(0)?,
                    at_ms: r.try_get(1)?,
                    admin_id: r.try_get(2)?,
                    admin: r.try_get(3)?,
                    action: r.try_get(4)?,
                    kind: r.try_get(5)?,
                    object_id: r.try_get(6)?,
                    object: r.try_get(7)?,
                    status: u16::try_from(r.try_get::<i64, _>(8)?).unwrap_or(0),
                })
            })
            .collect::<Result<_, _>>()?)
    }
}
