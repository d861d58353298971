//! The admin's account: sessions (listed with where and when they were used, ended one
//! by one or all but the current one when the password changes) and API tokens that
//! may expire and may be read-only. The part of the [`Store`](super::Store) behind
//! `/api/v1/account`, `/api/v1/sessions` and `/api/v1/tokens`, with its SQL (both
//! backends).
//!
//! Secrets never leave: a session is named by a random public id, never by its
//! cookie or the cookie's hash; a token by its row id.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use sqlx::Row;
use utoipa::ToSchema;

use super::{ApiToken, SqlStore, StoreError, rows};
use crate::model::{Admin, Id};

/// What an API token may do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TokenScope {
    /// Everything the admin may do (the default).
    #[default]
    Full,
    /// Only reads (`GET`, `HEAD`); any write is answered 403.
    Read,
}

impl TokenScope {
    /// The stored and shown name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Full => "full",
            Self::Read => "read",
        }
    }
}

/// The scope stored as `text` (unknown text: read-only, the safe side).
pub(super) fn scope(text: String) -> TokenScope {
    match text.as_str() {
        "full" => TokenScope::Full,
        _ => TokenScope::Read,
    }
}

/// A session being opened at login.
#[derive(Clone, Debug)]
pub struct NewSession<'a> {
    /// The hash of the cookie's secret.
    pub id_hash: &'a str,
    /// The random id it is listed and revoked by.
    pub public_id: &'a str,
    /// Whose.
    pub admin_id: Id,
    /// Its CSRF token.
    pub csrf: &'a str,
    /// Unix ms.
    pub now_ms: i64,
    /// Unix ms.
    pub expires_ms: i64,
    /// The client's address.
    pub address: &'a str,
    /// The client's `User-Agent` (already cut to a bounded length).
    pub user_agent: &'a str,
}

/// A live session, as authentication sees it.
#[derive(Clone, Debug)]
pub struct LiveSession {
    /// Whose.
    pub admin: Admin,
    /// Its CSRF token.
    pub csrf: String,
    /// Its public id.
    pub public_id: String,
    /// When it was last used (Unix ms; absent before the first use after login).
    pub last_seen_ms: Option<i64>,
}

/// A session as listed: never its secret.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AdminSession {
    /// Its public id (`DELETE /api/v1/sessions/{id}` ends it).
    pub id: String,
    /// When it began (the login), Unix ms.
    pub created_ms: i64,
    /// When it was last used, Unix ms (to the minute).
    pub last_seen_ms: i64,
    /// When it ends by itself, Unix ms.
    pub expires_ms: i64,
    /// The client's address at login.
    pub address: Option<String>,
    /// The client's `User-Agent` at login.
    pub user_agent: Option<String>,
    /// Whether this is the session making the request.
    pub current: bool,
}

/// Sessions and tokens of admins.
#[async_trait]
pub trait AccountStore: Send + Sync {
    /// Opens a session (and forgets expired ones).
    async fn open_session(&self, s: &NewSession<'_>) -> Result<(), StoreError>;
    /// A live session by its id's hash.
    async fn live_session(
        &self,
        id_hash: &str,
        now_ms: i64,
    ) -> Result<Option<LiveSession>, StoreError>;
    /// Notes that a session was used now.
    async fn session_seen(&self, id_hash: &str, now_ms: i64) -> Result<(), StoreError>;
    /// An admin's live sessions, newest first; `current` (a public id) is marked.
    async fn admin_sessions(
        &self,
        admin_id: Id,
        current: Option<&str>,
        now_ms: i64,
    ) -> Result<Vec<AdminSession>, StoreError>;
    /// Ends one of an admin's sessions by its public id.
    async fn revoke_session(&self, admin_id: Id, public_id: &str) -> Result<(), StoreError>;
    /// Replaces an admin's password hash and ends every session of theirs but `keep`
    /// (an id hash), in one transaction; the number of sessions ended.
    async fn set_admin_password(
        &self,
        admin_id: Id,
        password_hash: &str,
        keep: Option<&str>,
    ) -> Result<u64, StoreError>;
    /// Stores an API token (its hash) with an optional expiry and a scope.
    async fn create_scoped_token(
        &self,
        admin_id: Id,
        name: &str,
        token_hash: &str,
        now_ms: i64,
        expires_ms: Option<i64>,
        scope: TokenScope,
    ) -> Result<ApiToken, StoreError>;
    /// The admin and scope of an API token that has not expired (noting its use).
    async fn token_auth(
        &self,
        token_hash: &str,
        now_ms: i64,
    ) -> Result<Option<(Admin, TokenScope)>, StoreError>;
}

/// How often a session's "last seen" is written, at most: once a minute keeps the list
/// honest without a write on every request.
pub const SEEN_EVERY_MS: i64 = 60_000;

#[async_trait]
impl AccountStore for SqlStore {
    async fn open_session(&self, s: &NewSession<'_>) -> Result<(), StoreError> {
        let mut tx = self.begin().await?;
        sqlx::query("DELETE FROM sessions WHERE expires_ms <= $1")
            .bind(s.now_ms)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO sessions (id_hash, admin_id, csrf, created_ms, expires_ms, public_id, \
             last_seen_ms, address, user_agent) VALUES ($1, $2, $3, $4, $5, $6, $4, $7, $8)",
        )
        .bind(s.id_hash)
        .bind(s.admin_id)
        .bind(s.csrf)
        .bind(s.now_ms)
        .bind(s.expires_ms)
        .bind(s.public_id)
        .bind(s.address)
        .bind(s.user_agent)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn live_session(
        &self,
        id_hash: &str,
        now_ms: i64,
    ) -> Result<Option<LiveSession>, StoreError> {
        let row = sqlx::query(
            "SELECT a.id, a.username, a.created_ms, s.csrf, \
             COALESCE(s.public_id, substr(s.id_hash, 1, 32)), s.last_seen_ms \
             FROM sessions s JOIN admins a ON a.id = s.admin_id \
             WHERE s.id_hash = $1 AND s.expires_ms > $2",
        )
        .bind(id_hash)
        .bind(now_ms)
        .fetch_optional(&self.read)
        .await?;
        let Some(r) = row else { return Ok(None) };
        Ok(Some(LiveSession {
            admin: Admin {
                id: r.try_get(0)?,
                username: r.try_get(1)?,
                created_ms: r.try_get(2)?,
            },
            csrf: r.try_get(3)?,
            public_id: r.try_get(4)?,
            last_seen_ms: r.try_get(5)?,
        }))
    }

    async fn session_seen(&self, id_hash: &str, now_ms: i64) -> Result<(), StoreError> {
        sqlx::query("UPDATE sessions SET last_seen_ms = $1 WHERE id_hash = $2")
            .bind(now_ms)
            .bind(id_hash)
            .execute(&self.write)
            .await?;
        Ok(())
    }

    async fn admin_sessions(
        &self,
        admin_id: Id,
        current: Option<&str>,
        now_ms: i64,
    ) -> Result<Vec<AdminSession>, StoreError> {
        let rows = sqlx::query(
            "SELECT COALESCE(public_id, substr(id_hash, 1, 32)), created_ms, \
             COALESCE(last_seen_ms, created_ms), expires_ms, address, user_agent \
             FROM sessions WHERE admin_id = $1 AND expires_ms > $2 \
             ORDER BY created_ms DESC",
        )
        .bind(admin_id)
        .bind(now_ms)
        .fetch_all(&self.read)
        .await?;
        Ok(rows
            .iter()
            .map(|r| -> Result<_, sqlx::Error> {
                let id: String = r.try_get(0)?;
                Ok(AdminSession {
                    current: current == Some(id.as_str()),
                    id,
                    created_ms: r.try_get(1)?,
                    last_seen_ms: r.try_get(2)?,
                    expires_ms: r.try_get(3)?,
                    address: r.try_get(4)?,
                    user_agent: r.try_get(5)?,
                })
            })
            .collect::<Result<_, _>>()?)
    }

    async fn revoke_session(&self, admin_id: Id, public_id: &str) -> Result<(), StoreError> {
        let done = sqlx::query(
            "DELETE FROM sessions WHERE admin_id = $1 \
             AND COALESCE(public_id, substr(id_hash, 1, 32)) = $2",
        )
        .bind(admin_id)
        .bind(public_id)
        .execute(&self.write)
        .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound("session"));
        }
        Ok(())
    }

    async fn set_admin_password(
        &self,
        admin_id: Id,
        password_hash: &str,
        keep: Option<&str>,
    ) -> Result<u64, StoreError> {
        let mut tx = self.begin().await?;
        let done = sqlx::query("UPDATE admins SET password_hash = $1 WHERE id = $2")
            .bind(password_hash)
            .bind(admin_id)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound("admin"));
        }
        let ended = sqlx::query("DELETE FROM sessions WHERE admin_id = $1 AND id_hash <> $2")
            .bind(admin_id)
            .bind(keep.unwrap_or(""))
            .execute(&mut *tx)
            .await?
            .rows_affected();
        tx.commit().await?;
        Ok(ended)
    }

    async fn create_scoped_token(
        &self,
        admin_id: Id,
        name: &str,
        token_hash: &str,
        now_ms: i64,
        expires_ms: Option<i64>,
        scope: TokenScope,
    ) -> Result<ApiToken, StoreError> {
        let row = sqlx::query(
            "INSERT INTO api_tokens (name, token_hash, admin_id, created_ms, expires_ms, scope) \
             VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
        )
        .bind(name)
        .bind(token_hash)
        .bind(admin_id)
        .bind(now_ms)
        .bind(expires_ms)
        .bind(scope.as_str())
        .fetch_one(&self.write)
        .await?;
        Ok(ApiToken {
            id: rows::id(&row)?,
            name: name.into(),
            created_ms: now_ms,
            last_used_ms: None,
            expires_ms,
            scope,
        })
    }

    async fn token_auth(
        &self,
        token_hash: &str,
        now_ms: i64,
    ) -> Result<Option<(Admin, TokenScope)>, StoreError> {
        let row = sqlx::query(
            "SELECT a.id, a.username, a.created_ms, t.id, t.scope FROM api_tokens t \
             JOIN admins a ON a.id = t.admin_id WHERE t.token_hash = $1 \
             AND (t.expires_ms IS NULL OR t.expires_ms > $2)",
        )
        .bind(token_hash)
        .bind(now_ms)
        .fetch_optional(&self.read)
        .await?;
        let Some(r) = row else { return Ok(None) };
        let token: i64 = r.try_get(3)?;
        sqlx::query("UPDATE api_tokens SET last_used_ms = $1 WHERE id = $2")
            .bind(now_ms)
            .bind(token)
            .execute(&self.write)
            .await?;
        Ok(Some((
            Admin {
                id: r.try_get(0)?,
                username: r.try_get(1)?,
                created_ms: r.try_get(2)?,
            },
            scope(r.try_get(4)?),
        )))
    }
}
