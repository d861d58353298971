//! [`UserStore`] over sqlx, for both backends.

use async_trait::async_trait;
use sqlx::{Any, Row, Transaction};

use super::rows::{self, USER, to_i64, to_u64};
use super::sql::conflict;
use super::token_hash::hash_token;
use super::user_filter::{order, predicate};
use super::users::{UserInput, UserQuery, UserStore};
use super::{RouteStore, SqlStore, StoreError};
use crate::model::{Credentials, Id, User, period_start};

impl SqlStore {
    pub(super) async fn fill_clusters(
        &self,
        users: &mut [(User, Credentials)],
    ) -> Result<(), StoreError> {
        for (u, _) in users.iter_mut().filter(|(u, _)| u.clusters.is_some()) {
            let rows = sqlx::query(
                "SELECT cluster_id FROM user_clusters WHERE user_id = $1 ORDER BY cluster_id",
            )
            .bind(u.id)
            .fetch_all(&self.read)
            .await?;
            u.clusters = Some(
                rows.iter()
                    .map(|r| r.try_get::<i64, _>(0))
                    .collect::<Result<_, _>>()?,
            );
        }
        Ok(())
    }

    /// Inserts a user (without clusters) created at `created_ms` whose period began at
    /// `period_ms`, with `(used_down, lifetime)` already counted (an import's).
    pub(super) async fn insert_user(
        tx: &mut Transaction<'static, Any>,
        input: &UserInput,
        credentials: &Credentials,
        token: &str,
        (created_ms, period_ms): (i64, i64),
        (used_down, lifetime): (u64, u64),
    ) -> Result<Id, StoreError> {
        let row = sqlx::query(
            "INSERT INTO users (username, enabled, note, traffic_limit, reset_strategy, \
             expires_ms, on_hold_days, period_started_ms, subscription_token, vless_uuid, \
             trojan_password, ss_seed, created_ms, token_hash, device_limit, address_limit, \
             used_down, lifetime_bytes) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, \
             $17, $18) RETURNING id",
        )
        .bind(&input.username)
        .bind(i64::from(input.enabled))
        .bind(&input.note)
        .bind(input.traffic_limit.map(to_i64))
        .bind(input.reset_strategy.as_str())
        .bind(input.expires_ms)
        .bind(input.on_hold_days.map(i64::from))
        .bind(period_ms)
        .bind(token)
        .bind(&credentials.vless_uuid)
        .bind(&credentials.trojan_password)
        .bind(&credentials.ss_seed)
        .bind(created_ms)
        .bind(hash_token(token))
        .bind(input.device_limit.map(i64::from))
        .bind(input.address_limit.map(i64::from))
        .bind(to_i64(used_down))
        .bind(to_i64(lifetime))
        .fetch_one(&mut **tx)
        .await
        .map_err(|e| conflict(e, "username", "a user with this name exists"))?;
        Ok(rows::id(&row)?)
    }

    pub(super) async fn set_clusters(
        tx: &mut Transaction<'static, Any>,
        user: Id,
        clusters: &Option<Vec<Id>>,
    ) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM user_clusters WHERE user_id = $1")
            .bind(user)
            .execute(&mut **tx)
            .await?;
        sqlx::query("UPDATE users SET all_clusters = $1 WHERE id = $2")
            .bind(i64::from(clusters.is_none()))
            .bind(user)
            .execute(&mut **tx)
            .await?;
        for c in clusters.iter().flatten() {
            sqlx::query(
                "INSERT INTO user_clusters (user_id, cluster_id) VALUES ($1, $2) \
                 ON CONFLICT DO NOTHING",
            )
            .bind(user)
            .bind(*c)
            .execute(&mut **tx)
            .await
            .map_err(|e| conflict(e, "clusters", "no such cluster"))?;
        }
        Ok(())
    }

    /// A page of users (of `owner`'s alone, when given), and how many the query
    /// names in all.
    pub(super) async fn list_users(
        &self,
        query: &UserQuery,
        owner: Option<Id>,
        now_ms: i64,
    ) -> Result<(Vec<User>, u64), StoreError> {
        let limit = query.limit.unwrap_or(100).clamp(1, 1000);
        let offset = query.offset.unwrap_or(0);
        let w = predicate(&query.filter(owner), now_ms);
        let order = order(query.sort.unwrap_or_default(), query.desc.unwrap_or(false));
        let n = w.args.len();
        let sql = format!(
            "SELECT {USER} FROM users WHERE 1 = 1{} ORDER BY {order} LIMIT ${} OFFSET ${}",
            w.text,
            n + 1,
            n + 2
        );
        let rows = w
            .bind(sqlx::query(&sql))
            .bind(to_i64(limit))
            .bind(to_i64(offset))
            .fetch_all(&self.read)
            .await?;
        let count = format!("SELECT COUNT(*) FROM users WHERE 1 = 1{}", w.text);
        let total = w.bind(sqlx::query(&count)).fetch_one(&self.read).await?;
        let mut users = rows
            .iter()
            .map(|r| rows::user(r, now_ms))
            .collect::<Result<Vec<_>, _>>()?;
        self.fill_clusters(&mut users).await?;
        Ok((
            users.into_iter().map(|(u, _)| u).collect(),
            to_u64(total.try_get(0)?),
        ))
    }

    /// Changes a user in `tx` (one of `owner`'s alone, when given: another's is not
    /// found).
    pub(super) async fn update_in(
        tx: &mut Transaction<'static, Any>,
        id: Id,
        input: &UserInput,
        owner: Option<Id>,
    ) -> Result<(), StoreError> {
        let mine = if owner.is_some() {
            "admin_id = $11"
        } else {
            "$11 = $11"
        };
        let done = sqlx::query(&format!(
            "UPDATE users SET username = $1, enabled = $2, note = $3, traffic_limit = $4, \
             reset_strategy = $5, expires_ms = $6, on_hold_days = $7, device_limit = $8, \
             address_limit = $9 WHERE id = $10 AND {mine}"
        ))
        .bind(&input.username)
        .bind(i64::from(input.enabled))
        .bind(&input.note)
        .bind(input.traffic_limit.map(to_i64))
        .bind(input.reset_strategy.as_str())
        .bind(input.expires_ms)
        .bind(input.on_hold_days.map(i64::from))
        .bind(input.device_limit.map(i64::from))
        .bind(input.address_limit.map(i64::from))
        .bind(id)
        .bind(owner.unwrap_or(-1))
        .execute(&mut **tx)
        .await
        .map_err(|e| conflict(e, "username", "a user with this name exists"))?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound("user"));
        }
        Self::set_clusters(tx, id, &input.clusters).await
    }

    async fn user_full(&self, id: Id, now_ms: i64) -> Result<(User, Credentials), StoreError> {
        let row = sqlx::query(&format!("SELECT {USER} FROM users WHERE id = $1"))
            .bind(id)
            .fetch_optional(&self.read)
            .await?;
        let mut one = vec![self.one("user", row, |r| rows::user(r, now_ms)).await?];
        self.fill_clusters(&mut one).await?;
        Ok(one.remove(0))
    }
}

#[async_trait]
impl UserStore for SqlStore {
    async fn users(&self, query: &UserQuery, now_ms: i64) -> Result<Vec<User>, StoreError> {
        Ok(self.list_users(query, None, now_ms).await?.0)
    }

    async fn user_page(
        &self,
        query: &UserQuery,
        admin_id: Option<Id>,
        now_ms: i64,
    ) -> Result<(Vec<User>, u64), StoreError> {
        self.list_users(query, admin_id, now_ms).await
    }

    async fn user_count(&self) -> Result<u64, StoreError> {
        let row = sqlx::query("SELECT COUNT(*) FROM users")
            .fetch_one(&self.read)
            .await?;
        Ok(to_u64(row.try_get(0)?))
    }

    async fn user(&self, id: Id, now_ms: i64) -> Result<User, StoreError> {
        Ok(self.user_full(id, now_ms).await?.0)
    }

    async fn user_by_token(
        &self,
        token: &str,
        now_ms: i64,
    ) -> Result<Option<(User, Credentials)>, StoreError> {
        // The subscription's lookup (by hash, compared in constant time) without
        // the sticky choices.
        Ok(RouteStore::subscriber(self, token, now_ms)
            .await?
            .map(|s| (s.user, s.credentials)))
    }

    async fn create_user(
        &self,
        input: &UserInput,
        credentials: &Credentials,
        token: &str,
        now_ms: i64,
    ) -> Result<User, StoreError> {
        let mut tx = self.begin().await?;
        let id =
            Self::insert_user(&mut tx, input, credentials, token, (now_ms, now_ms), (0, 0)).await?;
        Self::set_clusters(&mut tx, id, &input.clusters).await?;
        self.commit(tx).await?;
        self.user(id, now_ms).await
    }

    async fn update_user(
        &self,
        id: Id,
        input: &UserInput,
        now_ms: i64,
    ) -> Result<User, StoreError> {
        let mut tx = self.begin().await?;
        Self::update_in(&mut tx, id, input, None).await?;
        self.commit(tx).await?;
        self.user(id, now_ms).await
    }

    async fn delete_user(&self, id: Id) -> Result<(), StoreError> {
        let mut tx = self.begin().await?;
        let done = sqlx::query("DELETE FROM users WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound("user"));
        }
        self.commit(tx).await
    }

    async fn set_subscription_token(
        &self,
        id: Id,
        token: &str,
        now_ms: i64,
    ) -> Result<User, StoreError> {
        let mut tx = self.begin().await?;
        let done =
            sqlx::query("UPDATE users SET subscription_token = $1, token_hash = $2 WHERE id = $3")
                .bind(token)
                .bind(hash_token(token))
                .bind(id)
                .execute(&mut *tx)
                .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound("user"));
        }
        // An imported panel's links to the user stop working too (`crate::import`).
        sqlx::query("UPDATE imported_users SET sub_revoked_ms = $1 WHERE user_id = $2")
            .bind(now_ms)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        self.user(id, now_ms).await
    }

    async fn reset_usage(&self, id: Id, now_ms: i64) -> Result<User, StoreError> {
        let mut tx = self.begin().await?;
        let done = sqlx::query(
            "UPDATE users SET used_up = 0, used_down = 0, period_started_ms = $1 WHERE id = $2",
        )
        .bind(now_ms)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound("user"));
        }
        self.commit(tx).await?;
        self.user(id, now_ms).await
    }

    async fn reset_due(&self, now_ms: i64) -> Result<u64, StoreError> {
        let rows = sqlx::query(
            "SELECT id, reset_strategy, created_ms, period_started_ms FROM users \
             WHERE reset_strategy <> 'none'",
        )
        .fetch_all(&self.read)
        .await?;
        let mut due = Vec::new();
        for r in &rows {
            let strategy: String = r.try_get(1)?;
            let Some(strategy) = crate::model::ResetStrategy::parse(&strategy) else {
                continue;
            };
            let (created, started): (i64, i64) = (r.try_get(2)?, r.try_get(3)?);
            if let Some(start) = period_start(strategy, created, now_ms)
                && start > started
            {
                due.push((r.try_get::<i64, _>(0)?, start));
            }
        }
        if due.is_empty() {
            return Ok(0);
        }
        let mut tx = self.begin().await?;
        for (id, start) in &due {
            sqlx::query(
                "UPDATE users SET used_up = 0, used_down = 0, period_started_ms = $1 \
                 WHERE id = $2 AND period_started_ms < $1",
            )
            .bind(*start)
            .bind(*id)
            .execute(&mut *tx)
            .await?;
        }
        self.commit(tx).await?;
        Ok(due.len() as u64)
    }
}
