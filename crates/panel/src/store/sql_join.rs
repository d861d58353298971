//! Join tokens and node pins over sqlx, for both backends.
//!
//! The rules, each decided inside one transaction that first locks the server's row
//! (so two enrollments of one server are serialized on PostgreSQL too):
//! - a server has at most one valid join token: issuing one revokes the server's other
//!   unused tokens, and an enrollment revokes the rest;
//! - a token enrolls only a server without a pinned node certificate; a pin is never
//!   overwritten, only forgotten by [`replace_node`](SqlStore::replace_node_tx) (or the
//!   server's deletion);
//! - replacing a node forgets its pin and issues a fresh token in the same step.

use sqlx::{Any, Row, Transaction};

use super::sql::conflict;
use super::{JoinRefusal, SqlStore, StoreError};
use crate::model::{FieldError, Id};

type Tx = Transaction<'static, Any>;

/// The refusal of a token for a server whose node has joined.
pub(super) fn enrolled_error() -> StoreError {
    StoreError::Conflict(FieldError::new(
        "id",
        "the server's node has already joined; to put another node in its place, replace it",
    ))
}

/// Locks the server's row for the rest of `tx` (a no-op write): its pin, or `None`
/// for a server without one; `NotFound` for no such server.
async fn lock_server(tx: &mut Tx, server_id: Id) -> Result<Option<String>, StoreError> {
    sqlx::query("UPDATE servers SET fingerprint = fingerprint WHERE id = $1")
        .bind(server_id)
        .execute(&mut **tx)
        .await?;
    let row = sqlx::query("SELECT fingerprint FROM servers WHERE id = $1")
        .bind(server_id)
        .fetch_optional(&mut **tx)
        .await?
        .ok_or(StoreError::NotFound("server"))?;
    Ok(row.try_get(0)?)
}

/// Revokes the server's unused tokens other than `keep`.
async fn revoke_others(
    tx: &mut Tx,
    server_id: Id,
    keep: &str,
    now_ms: i64,
) -> Result<u64, StoreError> {
    let done = sqlx::query(
        "UPDATE join_tokens SET revoked_ms = $1 \
         WHERE server_id = $2 AND secret_hash <> $3 AND used_ms IS NULL AND revoked_ms IS NULL",
    )
    .bind(now_ms)
    .bind(server_id)
    .bind(keep)
    .execute(&mut **tx)
    .await?;
    Ok(done.rows_affected())
}

async fn insert(
    tx: &mut Tx,
    server_id: Id,
    secret_hash: &str,
    expires_ms: i64,
    now_ms: i64,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO join_tokens (secret_hash, server_id, expires_ms, created_ms) \
         VALUES ($1, $2, $3, $4)",
    )
    .bind(secret_hash)
    .bind(server_id)
    .bind(expires_ms)
    .bind(now_ms)
    .execute(&mut **tx)
    .await
    .map_err(|e| conflict(e, "server_id", "no such server"))?;
    Ok(())
}

impl SqlStore {
    /// See [`super::ServerStore::create_join_token`].
    pub(super) async fn create_join_token_tx(
        &self,
        server_id: Id,
        secret_hash: &str,
        expires_ms: i64,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let mut tx = self.begin().await?;
        if lock_server(&mut tx, server_id).await?.is_some() {
            return Err(enrolled_error());
        }
        revoke_others(&mut tx, server_id, secret_hash, now_ms).await?;
        insert(&mut tx, server_id, secret_hash, expires_ms, now_ms).await?;
        // Nothing a node's config depends on changed: not announced.
        tx.commit().await?;
        Ok(())
    }

    /// See [`super::ServerStore::consume_join_token`].
    pub(super) async fn consume_join_token_tx(
        &self,
        secret_hash: &str,
        now_ms: i64,
    ) -> Result<Result<Id, JoinRefusal>, StoreError> {
        const TOKEN: &str = "SELECT server_id, used_ms, expires_ms, revoked_ms FROM join_tokens WHERE secret_hash = $1";
        let mut tx = self.begin().await?;
        let Some(row) = sqlx::query(TOKEN)
            .bind(secret_hash)
            .fetch_optional(&mut *tx)
            .await?
        else {
            return Ok(Err(JoinRefusal::Unknown));
        };
        let server_id: Id = row.try_get(0)?;
        let pinned = match lock_server(&mut tx, server_id).await {
            Ok(pin) => pin.is_some(),
            Err(StoreError::NotFound(_)) => return Ok(Err(JoinRefusal::Unknown)),
            Err(e) => return Err(e),
        };
        // Read again under the lock: another enrollment of this server may have
        // revoked it meanwhile.
        let Some(row) = sqlx::query(TOKEN)
            .bind(secret_hash)
            .fetch_optional(&mut *tx)
            .await?
        else {
            return Ok(Err(JoinRefusal::Unknown));
        };
        let used: Option<i64> = row.try_get(1)?;
        let expires: i64 = row.try_get(2)?;
        let revoked: Option<i64> = row.try_get(3)?;
        let refusal = if used.is_some() {
            Some(JoinRefusal::Used)
        } else if revoked.is_some() {
            Some(JoinRefusal::Revoked)
        } else if expires <= now_ms {
            Some(JoinRefusal::Expired)
        } else if pinned {
            Some(JoinRefusal::Enrolled)
        } else {
            None
        };
        if let Some(refusal) = refusal {
            // Rolled back: a refusal changes nothing.
            return Ok(Err(refusal));
        }
        // The conditional update is the single use: of two nodes racing with one
        // token, exactly one changes the row.
        let done = sqlx::query(
            "UPDATE join_tokens SET used_ms = $1 \
             WHERE secret_hash = $2 AND used_ms IS NULL AND revoked_ms IS NULL",
        )
        .bind(now_ms)
        .bind(secret_hash)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() != 1 {
            return Ok(Err(JoinRefusal::Used));
        }
        revoke_others(&mut tx, server_id, secret_hash, now_ms).await?;
        tx.commit().await?;
        Ok(Ok(server_id))
    }

    /// See [`super::ServerStore::pin_server`].
    pub(super) async fn pin_server_tx(
        &self,
        id: Id,
        fingerprint: &str,
        hostname: &str,
        version: &str,
    ) -> Result<(), StoreError> {
        let mut tx = self.begin().await?;
        if lock_server(&mut tx, id).await?.is_some() {
            return Err(enrolled_error());
        }
        sqlx::query(
            "UPDATE servers SET fingerprint = $1, hostname = $2, node_version = $3, \
             journal_cursor = 0 WHERE id = $4",
        )
        .bind(fingerprint)
        .bind(hostname)
        .bind(version)
        .bind(id)
        .execute(&mut *tx)
        .await
        .map_err(|e| conflict(e, "fingerprint", "another server has this node certificate"))?;
        self.commit(tx).await
    }

    /// See [`super::ServerStore::replace_node`].
    pub(super) async fn replace_node_tx(
        &self,
        server_id: Id,
        secret_hash: &str,
        expires_ms: i64,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let mut tx = self.begin().await?;
        lock_server(&mut tx, server_id).await?;
        sqlx::query(
            "UPDATE servers SET fingerprint = NULL, ssh_host_key = NULL, journal_cursor = 0, \
             state = 'pending', \
             state_reason = 'the node is being replaced: waiting for the new one to join', \
             state_since_ms = $1, config_version = NULL, users_online = 0, up_bps = 0, \
             down_bps = 0 WHERE id = $2",
        )
        .bind(now_ms)
        .bind(server_id)
        .execute(&mut *tx)
        .await?;
        revoke_others(&mut tx, server_id, secret_hash, now_ms).await?;
        insert(&mut tx, server_id, secret_hash, expires_ms, now_ms).await?;
        // Announced: the instance holding the old node's channel closes it.
        self.commit(tx).await
    }

    /// See [`super::ServerStore::server_pin`].
    pub(super) async fn server_pin_of(&self, id: Id) -> Result<Option<String>, StoreError> {
        let row = sqlx::query("SELECT fingerprint FROM servers WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.read)
            .await?
            .ok_or(StoreError::NotFound("server"))?;
        Ok(row.try_get(0)?)
    }

    /// See [`super::ServerStore::ssh_host_key`].
    pub(super) async fn ssh_host_key_of(&self, id: Id) -> Result<Option<String>, StoreError> {
        let row = sqlx::query("SELECT ssh_host_key FROM servers WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.write)
            .await?
            .ok_or(StoreError::NotFound("server"))?;
        Ok(row.try_get(0)?)
    }

    /// See [`super::ServerStore::pin_ssh_host_key`].
    pub(super) async fn pin_ssh_host_key_of(
        &self,
        id: Id,
        fingerprint: &str,
    ) -> Result<(), StoreError> {
        sqlx::query("UPDATE servers SET ssh_host_key = $1 WHERE id = $2 AND ssh_host_key IS NULL")
            .bind(fingerprint)
            .bind(id)
            .execute(&self.write)
            .await?;
        match self.ssh_host_key_of(id).await? {
            Some(pinned) if pinned == fingerprint => Ok(()),
            _ => Err(StoreError::Conflict(crate::model::FieldError::new(
                "host_key",
                "the server's SSH host key is pinned to another key",
            ))),
        }
    }
}
