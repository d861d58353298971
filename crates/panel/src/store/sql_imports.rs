//! [`ImportStore`] over sqlx, for both backends.

use async_trait::async_trait;
use sqlx::{Any, Row, Transaction};

use super::imports::{ImportMode, ImportStore, ImportWritten, ImportedLink, ImportedUser};
use super::routes::MAX_DEVICES;
use super::rows::{to_i64, to_u64};
use super::sql::conflict;
use super::{SqlStore, StoreError};
use crate::model::{Id, period_start};

impl SqlStore {
    /// The user `source` knew by `value` in `column` (`source_key` or `link`).
    async fn link_where(
        &self,
        source: &str,
        column: &'static str,
        value: &str,
    ) -> Result<Option<ImportedLink>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT i.user_id, u.subscription_token, i.source_created_ms, i.sub_revoked_ms \
             FROM imported_users i JOIN users u ON u.id = i.user_id \
             WHERE i.source = $1 AND i.{column} = $2 ORDER BY i.user_id LIMIT 1"
        ))
        .bind(source)
        .bind(value)
        .fetch_optional(&self.read)
        .await?;
        let Some(row) = row else { return Ok(None) };
        Ok(Some(ImportedLink {
            user_id: row.try_get(0)?,
            token: row.try_get(1)?,
            source_created_ms: row.try_get(2)?,
            sub_revoked_ms: row.try_get(3)?,
        }))
    }

    /// Adds `u` as a new user and links it to `source`.
    async fn add_imported(
        tx: &mut Transaction<'static, Any>,
        source: &str,
        u: &ImportedUser,
        now_ms: i64,
    ) -> Result<Id, StoreError> {
        let input = &u.input;
        let period = period_start(input.reset_strategy, u.created_ms, now_ms).unwrap_or(now_ms);
        let id = Self::insert_user(
            tx,
            input,
            &u.credentials,
            &u.token,
            (u.created_ms, period),
            (u.used, u.lifetime),
        )
        .await?;
        Self::set_clusters(tx, id, &input.clusters).await?;
        sqlx::query(
            "INSERT INTO imported_users (source, source_key, user_id, source_created_ms, \
             sub_revoked_ms, source_used, source_lifetime, link) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(source)
        .bind(&u.source_key)
        .bind(id)
        .bind(u.created_ms)
        .bind(u.sub_revoked_ms)
        .bind(to_i64(u.used))
        .bind(to_i64(u.lifetime))
        .bind(&u.link)
        .execute(&mut **tx)
        .await?;
        Self::add_devices(tx, id, u).await?;
        Ok(id)
    }

    /// Adds the source's devices of `u` to user `id`'s: one we know already stays as
    /// it is, and the list stays within [`MAX_DEVICES`] (the source's seen last
    /// first, as the plan orders them).
    async fn add_devices(
        tx: &mut Transaction<'static, Any>,
        id: Id,
        u: &ImportedUser,
    ) -> Result<(), StoreError> {
        if u.devices.is_empty() {
            return Ok(());
        }
        let count: i64 = sqlx::query("SELECT COUNT(*) FROM devices WHERE user_id = $1")
            .bind(id)
            .fetch_one(&mut **tx)
            .await?
            .try_get(0)?;
        let mut room = i64::from(MAX_DEVICES).saturating_sub(count);
        for d in &u.devices {
            if room <= 0 {
                break;
            }
            let done = sqlx::query(
                "INSERT INTO devices (user_id, hwid, os, model, user_agent, first_seen_ms, \
                 last_seen_ms) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING",
            )
            .bind(id)
            .bind(&d.hwid)
            .bind(&d.os)
            .bind(&d.model)
            .bind(&d.user_agent)
            .bind(d.first_seen_ms)
            .bind(d.last_seen_ms)
            .execute(&mut **tx)
            .await?;
            room -= i64::try_from(done.rows_affected()).unwrap_or(1);
        }
        Ok(())
    }

    /// Brings user `id`, imported from `source` before with the source's usage
    /// `was` (period, lifetime) and the link revocation `revoked` (the later of the
    /// source's and ours), up to date with `u`.
    async fn update_imported(
        tx: &mut Transaction<'static, Any>,
        source: &str,
        id: Id,
        (was, revoked): ((u64, u64), Option<i64>),
        u: &ImportedUser,
    ) -> Result<(), StoreError> {
        let input = &u.input;
        let row = sqlx::query("SELECT used_down, lifetime_bytes FROM users WHERE id = $1")
            .bind(id)
            .fetch_one(&mut **tx)
            .await?;
        let (down, lifetime) = (to_u64(row.try_get(0)?), to_u64(row.try_get(1)?));
        // What our nodes counted since the last import stays; the source's growth is
        // added (a source whose counter went down, a reset there, starts it over).
        let grown = |ours: u64, then: u64, now: u64| {
            if now >= then {
                ours.saturating_add(now - then)
            } else {
                ours.saturating_sub(then).saturating_add(now)
            }
        };
        let down = grown(down, was.0, u.used);
        let lifetime = grown(lifetime, was.1, u.lifetime);
        sqlx::query(
            "UPDATE users SET username = $1, enabled = $2, note = $3, traffic_limit = $4, \
             reset_strategy = $5, expires_ms = $6, on_hold_days = $7, vless_uuid = $8, \
             trojan_password = $9, used_down = $10, lifetime_bytes = $11, \
             address_limit = CASE WHEN $15 = 1 THEN $12 ELSE address_limit END, \
             device_limit = CASE WHEN $16 = 1 THEN $13 ELSE device_limit END WHERE id = $14",
        )
        .bind(&input.username)
        .bind(i64::from(input.enabled))
        .bind(&input.note)
        .bind(input.traffic_limit.map(to_i64))
        .bind(input.reset_strategy.as_str())
        .bind(input.expires_ms)
        .bind(input.on_hold_days.map(i64::from))
        .bind(&u.credentials.vless_uuid)
        .bind(&u.credentials.trojan_password)
        .bind(to_i64(down))
        .bind(to_i64(lifetime))
        .bind(input.address_limit.map(i64::from))
        .bind(input.device_limit.map(i64::from))
        .bind(id)
        // A limit the source does not have stays as the operator set it here.
        .bind(i64::from(u.carries.address_limit))
        .bind(i64::from(u.carries.device_limit))
        .execute(&mut **tx)
        .await
        .map_err(|e| conflict(e, "username", "a user with this name exists"))?;
        Self::set_clusters(tx, id, &input.clusters).await?;
        sqlx::query(
            "UPDATE imported_users SET source_created_ms = $1, sub_revoked_ms = $2, \
             source_used = $3, source_lifetime = $4, link = $5 \
             WHERE source = $6 AND source_key = $7",
        )
        .bind(u.created_ms)
        // A revocation here (a new link of ours) is never undone by the source's.
        .bind(revoked.max(u.sub_revoked_ms))
        .bind(to_i64(u.used))
        .bind(to_i64(u.lifetime))
        .bind(&u.link)
        .bind(source)
        .bind(&u.source_key)
        .execute(&mut **tx)
        .await?;
        Self::add_devices(tx, id, u).await?;
        Ok(())
    }
}

#[async_trait]
impl ImportStore for SqlStore {
    async fn import_users(
        &self,
        source: &str,
        secret: &str,
        users: &[ImportedUser],
        mode: ImportMode,
        now_ms: i64,
    ) -> Result<ImportWritten, StoreError> {
        let mut tx = self.begin().await?;
        sqlx::query(
            "INSERT INTO import_sources (source, secret, imported_ms) VALUES ($1, $2, $3) \
             ON CONFLICT (source) DO UPDATE SET secret = excluded.secret, \
             imported_ms = excluded.imported_ms",
        )
        .bind(source)
        .bind(secret)
        .bind(now_ms)
        .execute(&mut *tx)
        .await?;
        let mut written = ImportWritten::default();
        for u in users {
            let known = sqlx::query(
                "SELECT user_id, source_used, source_lifetime, sub_revoked_ms \
                 FROM imported_users WHERE source = $1 AND source_key = $2",
            )
            .bind(source)
            .bind(&u.source_key)
            .fetch_optional(&mut *tx)
            .await?;
            if let Some(row) = known {
                let id: Id = row.try_get(0)?;
                let was = (to_u64(row.try_get(1)?), to_u64(row.try_get(2)?));
                let revoked: Option<i64> = row.try_get(3)?;
                Self::update_imported(&mut tx, source, id, (was, revoked), u).await?;
                written.updated.push(u.input.username.clone());
                continue;
            }
            let taken = sqlx::query("SELECT id FROM users WHERE username = $1")
                .bind(&u.input.username)
                .fetch_optional(&mut *tx)
                .await?;
            if taken.is_some() {
                written.conflicts.push((
                    u.input.username.clone(),
                    format!(
                        "a user named {:?} exists here and did not come from {source}",
                        u.input.username
                    ),
                ));
                continue;
            }
            Self::add_imported(&mut tx, source, u, now_ms).await?;
            written.added.push(u.input.username.clone());
        }
        if mode.disable_missing {
            let rows = sqlx::query(
                "SELECT i.source_key, i.user_id, u.username FROM imported_users i JOIN users u \
                 ON u.id = i.user_id WHERE i.source = $1 AND u.enabled = 1 ORDER BY u.username",
            )
            .bind(source)
            .fetch_all(&mut *tx)
            .await?;
            for row in rows {
                let key: String = row.try_get(0)?;
                if users.iter().any(|u| u.source_key == key) {
                    continue;
                }
                let id: Id = row.try_get(1)?;
                sqlx::query("UPDATE users SET enabled = 0 WHERE id = $1")
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                written.disabled.push(row.try_get(2)?);
            }
        }
        if mode.dry_run {
            tx.rollback().await?;
        } else {
            self.commit(tx).await?;
        }
        Ok(written)
    }

    async fn imported_link(
        &self,
        source: &str,
        key: &str,
    ) -> Result<Option<ImportedLink>, StoreError> {
        self.link_where(source, "source_key", key).await
    }

    async fn imported_link_by(
        &self,
        source: &str,
        link: &str,
    ) -> Result<Option<ImportedLink>, StoreError> {
        self.link_where(source, "link", link).await
    }

    async fn import_sources(&self) -> Result<Vec<(String, String)>, StoreError> {
        let rows = sqlx::query("SELECT source, secret FROM import_sources ORDER BY source")
            .fetch_all(&self.read)
            .await?;
        Ok(rows
            .iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
            .collect::<Result<_, sqlx::Error>>()?)
    }

    async fn import_secret(&self, source: &str) -> Result<Option<String>, StoreError> {
        let row = sqlx::query("SELECT secret FROM import_sources WHERE source = $1")
            .bind(source)
            .fetch_optional(&self.read)
            .await?;
        Ok(row.map(|r| r.try_get(0)).transpose()?)
    }
}
