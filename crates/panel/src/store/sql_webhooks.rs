//! [`WebhookStore`] over sqlx, for both backends (see [`super::webhooks`]).

use async_trait::async_trait;
use sqlx::Row;
use sqlx::any::AnyRow;

use super::rows::{self, USER};
use super::sql::Backend;
use super::webhooks::{Attempt, Delivery, Due, FoundTunnel, WebhookStore};
use super::{SqlStore, StoreError};
use crate::model::webhook::{
    Found, Seen, Thresholds, body, node_upgraded, observe, server_event, tunnel_changed,
};
use crate::model::{Id, UserStatus, Webhook, WebhookInput};

/// How long a delivered or given-up delivery is kept, for its list and a replay.
const KEEP_DONE_MS: i64 = 30 * 86_400_000;

/// Users looked at per read.
const PAGE: i64 = 1000;

fn status_named(name: &str) -> Option<UserStatus> {
    serde_json::from_value(serde_json::Value::String(name.to_owned())).ok()
}

fn status_name(s: UserStatus) -> String {
    serde_json::to_value(s)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn webhook(r: &AnyRow) -> Result<Webhook, sqlx::Error> {
    let events: String = r.try_get("events")?;
    Ok(Webhook {
        id: r.try_get("id")?,
        url: r.try_get("url")?,
        events: serde_json::from_str(&events).unwrap_or_default(),
        enabled: r.try_get::<i64, _>("enabled")? != 0,
        allow_private: r.try_get::<i64, _>("allow_private")? != 0,
        created_ms: r.try_get("created_ms")?,
    })
}

const HOOK: &str = "id, url, events, enabled, allow_private, created_ms";

fn small(v: i64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// Queues `body` in `tx` for each enabled hook of `hooks` that picked `event`.
async fn queue(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    hooks: &[Webhook],
    event: &str,
    body: &str,
    now_ms: i64,
) -> Result<(), StoreError> {
    for h in hooks
        .iter()
        .filter(|h| h.enabled && h.events.iter().any(|e| e == event))
    {
        sqlx::query(
            "INSERT INTO webhook_deliveries (hook_id, event, body, created_ms, next_ms) \
             VALUES ($1, $2, $3, $4, $4)",
        )
        .bind(h.id)
        .bind(event)
        .bind(body)
        .bind(now_ms)
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

#[async_trait]
impl WebhookStore for SqlStore {
    async fn create_webhook(
        &self,
        input: &WebhookInput,
        secret: &str,
        now_ms: i64,
    ) -> Result<Webhook, StoreError> {
        let mut tx = self.begin().await?;
        let row = sqlx::query(
            "INSERT INTO webhooks (url, secret, events, enabled, allow_private, created_ms) \
             VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
        )
        .bind(&input.url)
        .bind(secret)
        .bind(serde_json::to_string(&input.events).unwrap_or_default())
        .bind(i64::from(input.enabled))
        .bind(i64::from(input.allow_private))
        .bind(now_ms)
        .fetch_one(&mut *tx)
        .await?;
        let id = rows::id(&row)?;
        self.commit(tx).await?;
        self.webhook(id).await
    }

    async fn webhooks(&self) -> Result<Vec<Webhook>, StoreError> {
        let rows = sqlx::query(&format!("SELECT {HOOK} FROM webhooks ORDER BY id"))
            .fetch_all(&self.read)
            .await?;
        Ok(rows.iter().map(webhook).collect::<Result<_, _>>()?)
    }

    async fn webhook(&self, id: Id) -> Result<Webhook, StoreError> {
        let row = sqlx::query(&format!("SELECT {HOOK} FROM webhooks WHERE id = $1"))
            .bind(id)
            .fetch_optional(&self.read)
            .await?;
        self.one("webhook", row, webhook).await
    }

    async fn update_webhook(&self, id: Id, input: &WebhookInput) -> Result<Webhook, StoreError> {
        let mut tx = self.begin().await?;
        let done = sqlx::query(
            "UPDATE webhooks SET url = $1, events = $2, enabled = $3, allow_private = $4 \
             WHERE id = $5",
        )
        .bind(&input.url)
        .bind(serde_json::to_string(&input.events).unwrap_or_default())
        .bind(i64::from(input.enabled))
        .bind(i64::from(input.allow_private))
        .bind(id)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound("webhook"));
        }
        self.commit(tx).await?;
        self.webhook(id).await
    }

    async fn delete_webhook(&self, id: Id) -> Result<(), StoreError> {
        let mut tx = self.begin().await?;
        sqlx::query("DELETE FROM webhook_deliveries WHERE hook_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        let done = sqlx::query("DELETE FROM webhooks WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound("webhook"));
        }
        self.commit(tx).await
    }

    async fn enqueue(
        &self,
        event: &str,
        body: &str,
        only: Option<Id>,
        now_ms: i64,
    ) -> Result<u64, StoreError> {
        let hooks = self.webhooks().await?;
        let chosen: Vec<Id> = hooks
            .iter()
            .filter(|h| match only {
                Some(id) => h.id == id,
                None => h.enabled && h.events.iter().any(|e| e == event),
            })
            .map(|h| h.id)
            .collect();
        if chosen.is_empty() {
            return Ok(0);
        }
        let mut tx = self.write.begin().await?;
        for id in &chosen {
            sqlx::query(
                "INSERT INTO webhook_deliveries (hook_id, event, body, created_ms, next_ms) \
                 VALUES ($1, $2, $3, $4, $4)",
            )
            .bind(*id)
            .bind(event)
            .bind(body)
            .bind(now_ms)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(chosen.len() as u64)
    }

    async fn take_due(
        &self,
        now_ms: i64,
        limit: u32,
        lease_ms: i64,
    ) -> Result<Vec<Due>, StoreError> {
        let mut tx = self.write.begin().await?;
        // Done deliveries are kept 30 days, then forgotten: the table stays bounded.
        sqlx::query("DELETE FROM webhook_deliveries WHERE state <> 'pending' AND done_ms < $1")
            .bind(now_ms.saturating_sub(KEEP_DONE_MS))
            .execute(&mut *tx)
            .await?;
        // PostgreSQL: rows another instance is taking are skipped, not waited for.
        let skip = match self.backend() {
            Backend::Postgres => " FOR UPDATE OF d SKIP LOCKED",
            Backend::Sqlite => "",
        };
        let rows = sqlx::query(&format!(
            "SELECT d.id, d.event, d.body, d.attempts, w.url, w.secret, w.allow_private \
             FROM webhook_deliveries d JOIN webhooks w ON w.id = d.hook_id \
             WHERE d.state = 'pending' AND d.next_ms <= $1 AND d.lease_ms <= $1 \
             AND w.enabled <> 0 ORDER BY d.id LIMIT $2{skip}"
        ))
        .bind(now_ms)
        .bind(i64::from(limit))
        .fetch_all(&mut *tx)
        .await?;
        let mut due = Vec::with_capacity(rows.len());
        for r in &rows {
            let id: Id = r.try_get(0)?;
            sqlx::query("UPDATE webhook_deliveries SET lease_ms = $1 WHERE id = $2")
                .bind(now_ms.saturating_add(lease_ms))
                .bind(id)
                .execute(&mut *tx)
                .await?;
            due.push(Due {
                id,
                event: r.try_get(1)?,
                body: r.try_get(2)?,
                attempts: small(r.try_get(3)?),
                url: r.try_get(4)?,
                secret: r.try_get(5)?,
                allow_private: r.try_get::<i64, _>(6)? != 0,
            });
        }
        tx.commit().await?;
        Ok(due)
    }

    async fn finish(&self, id: Id, attempt: &Attempt, now_ms: i64) -> Result<(), StoreError> {
        let q = match attempt {
            Attempt::Delivered { status } => sqlx::query(
                "UPDATE webhook_deliveries SET state = 'delivered', attempts = attempts + 1, \
                 last_status = $1, last_error = NULL, done_ms = $2, lease_ms = 0 WHERE id = $3",
            )
            .bind(i64::from(*status))
            .bind(now_ms)
            .bind(id),
            Attempt::Failed {
                status,
                error,
                next_ms,
            } => sqlx::query(
                "UPDATE webhook_deliveries SET attempts = attempts + 1, last_status = $1, \
                 last_error = $2, state = CASE WHEN $3 < 0 THEN 'failed' ELSE 'pending' END, \
                 next_ms = CASE WHEN $3 < 0 THEN next_ms ELSE $3 END, \
                 done_ms = CASE WHEN $3 < 0 THEN $4 ELSE NULL END, lease_ms = 0 WHERE id = $5",
            )
            .bind(status.map(i64::from))
            .bind(error.chars().take(500).collect::<String>())
            .bind(next_ms.unwrap_or(-1))
            .bind(now_ms)
            .bind(id),
        };
        q.execute(&self.write).await?;
        Ok(())
    }

    async fn deliveries(&self, hook: Id, limit: u32) -> Result<Vec<Delivery>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, event, body, created_ms, state, attempts, next_ms, last_status, \
             last_error, done_ms FROM webhook_deliveries WHERE hook_id = $1 \
             ORDER BY id DESC LIMIT $2",
        )
        .bind(hook)
        .bind(i64::from(limit.clamp(1, 1000)))
        .fetch_all(&self.read)
        .await?;
        Ok(rows
            .iter()
            .map(|r| -> Result<_, sqlx::Error> {
                Ok(Delivery {
                    id: r.try_get(0)?,
                    event: r.try_get(1)?,
                    body: r.try_get(2)?,
                    created_ms: r.try_get(3)?,
                    state: r.try_get(4)?,
                    attempts: small(r.try_get(5)?),
                    next_ms: r.try_get(6)?,
                    last_status: r
                        .try_get::<Option<i64>, _>(7)?
                        .map(|s| u16::try_from(s).unwrap_or(0)),
                    last_error: r.try_get(8)?,
                    done_ms: r.try_get(9)?,
                })
            })
            .collect::<Result<_, _>>()?)
    }

    async fn watch_users(&self, now_ms: i64, at: &Thresholds) -> Result<u64, StoreError> {
        let hooks = self.webhooks().await?;
        let mut told = 0;
        let mut after = 0;
        loop {
            let rows = sqlx::query(&format!(
                "SELECT {USER}, watch_status, watch_flags FROM users WHERE id > $1 \
                 ORDER BY id LIMIT $2"
            ))
            .bind(after)
            .bind(PAGE)
            .fetch_all(&self.read)
            .await?;
            let Some(last) = rows.last() else { break };
            after = last.try_get("id")?;
            // One transaction per page (a first look records every user: one write
            // each would hold the database's writer 100,000 times).
            let mut tx = None;
            for r in &rows {
                let (user, _) = rows::user(r, now_ms)?;
                let stored: Option<String> = r.try_get("watch_status")?;
                let stored_flags: i64 = r.try_get("watch_flags")?;
                let seen = stored.as_deref().and_then(status_named).map(|status| Seen {
                    status,
                    flags: u32::try_from(stored_flags).unwrap_or(0),
                });
                let standing = user.standing();
                let found = Found {
                    status: user.status,
                    used: standing.used,
                    limit: user.traffic_limit,
                    expiry: standing.effective_expiry(),
                };
                let (events, flags) = observe(seen, found, now_ms, at);
                let status = status_name(user.status);
                if stored.as_deref() == Some(status.as_str()) && i64::from(flags) == stored_flags {
                    continue;
                }
                let tx = match &mut tx {
                    Some(tx) => tx,
                    None => tx.insert(self.write.begin().await?),
                };
                let done = sqlx::query(
                    "UPDATE users SET watch_status = $1, watch_flags = $2 WHERE id = $3 \
                     AND COALESCE(watch_status, '') = $4 AND watch_flags = $5",
                )
                .bind(&status)
                .bind(i64::from(flags))
                .bind(user.id)
                .bind(stored.clone().unwrap_or_default())
                .bind(stored_flags)
                .execute(&mut **tx)
                .await?;
                if done.rows_affected() == 1 {
                    for event in &events {
                        let body = body(event, "panel", &user, now_ms);
                        queue(tx, &hooks, event, &body, now_ms).await?;
                        told += 1;
                    }
                }
            }
            if let Some(tx) = tx {
                tx.commit().await?;
            }
        }
        Ok(told)
    }

    async fn watch_servers(&self, now_ms: i64) -> Result<u64, StoreError> {
        let hooks = self.webhooks().await?;
        let rows = sqlx::query(&format!(
            "SELECT {}, watch_state, watch_version FROM servers ORDER BY id",
            rows::SERVER
        ))
        .fetch_all(&self.read)
        .await?;
        let mut told = 0;
        for r in &rows {
            let server = rows::server(r)?;
            let seen: Option<String> = r.try_get("watch_state")?;
            let seen_version: Option<String> = r.try_get("watch_version")?;
            let state = server.state.as_str();
            // A node that reports no version (not connected) leaves the record.
            let version = server.node_version.as_deref().or(seen_version.as_deref());
            if seen.as_deref() == Some(state) && seen_version.as_deref() == version {
                continue;
            }
            let mut tx = self.write.begin().await?;
            let done = sqlx::query(
                "UPDATE servers SET watch_state = $1, watch_version = $2 WHERE id = $3 \
                 AND COALESCE(watch_state, '') = $4 AND COALESCE(watch_version, '') = $5",
            )
            .bind(state)
            .bind(version)
            .bind(server.id)
            .bind(seen.clone().unwrap_or_default())
            .bind(seen_version.clone().unwrap_or_default())
            .execute(&mut *tx)
            .await?;
            if done.rows_affected() == 1 {
                if let Some(event) = server_event(seen.as_deref(), state) {
                    let data = serde_json::json!({"id": server.id, "name": server.name,
                        "address": server.address, "state": state, "reason": server.state_reason});
                    let body = body(event, "panel", &data, now_ms);
                    queue(&mut tx, &hooks, event, &body, now_ms).await?;
                    told += 1;
                }
                if node_upgraded(seen_version.as_deref(), server.node_version.as_deref()) {
                    let event = "node.upgraded";
                    let data = serde_json::json!({"id": server.id, "name": server.name,
                        "address": server.address, "from": seen_version, "to": server.node_version});
                    let body = body(event, "panel", &data, now_ms);
                    queue(&mut tx, &hooks, event, &body, now_ms).await?;
                    told += 1;
                }
            }
            tx.commit().await?;
        }
        Ok(told)
    }

    async fn watch_tunnels(&self, found: &[FoundTunnel], now_ms: i64) -> Result<u64, StoreError> {
        let hooks = self.webhooks().await?;
        let mut told = 0;
        for f in found {
            let seen: Option<Option<String>> =
                sqlx::query_scalar("SELECT watch_state FROM tunnels WHERE id = $1")
                    .bind(f.id)
                    .fetch_optional(&self.read)
                    .await?;
            // Gone since it was asked about, or already recorded.
            let Some(seen) = seen else { continue };
            if seen.as_deref() == Some(f.state) {
                continue;
            }
            let mut tx = self.write.begin().await?;
            let done = sqlx::query(
                "UPDATE tunnels SET watch_state = $1 WHERE id = $2 \
                 AND COALESCE(watch_state, '') = $3",
            )
            .bind(f.state)
            .bind(f.id)
            .bind(seen.clone().unwrap_or_default())
            .execute(&mut *tx)
            .await?;
            if done.rows_affected() == 1 && tunnel_changed(seen.as_deref(), f.state) {
                let event = "tunnel.changed";
                let mut data = f.data.clone();
                if let Some(o) = data.as_object_mut() {
                    o.insert("from".into(), serde_json::json!(seen));
                }
                let body = body(event, "panel", &data, now_ms);
                queue(&mut tx, &hooks, event, &body, now_ms).await?;
                told += 1;
            }
            tx.commit().await?;
        }
        Ok(told)
    }

    async fn replay(&self, hook: Id, delivery: Id, now_ms: i64) -> Result<(), StoreError> {
        let done = sqlx::query(
            "UPDATE webhook_deliveries SET state = 'pending', attempts = 0, next_ms = $1, \
             lease_ms = 0, done_ms = NULL WHERE id = $2 AND hook_id = $3",
        )
        .bind(now_ms)
        .bind(delivery)
        .bind(hook)
        .execute(&self.write)
        .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound("delivery"));
        }
        Ok(())
    }
}
