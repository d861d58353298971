//! [`AccountStore`] over sqlx, for both backends (see [`super::account`]).

use async_trait::async_trait;
use sqlx::Row;

use super::account::{AccountStore, AdminSession, ApiToken, LiveSession, NewSession, TokenScope};
use super::rows::{self, to_u64};
use super::sql::conflict;
use super::sql_admins::admin;
use super::{SqlStore, StoreError};
use crate::model::{Admin, Id};

/// The scope stored as `text` (unknown text: read-only, the safe side).
fn scope(text: String) -> TokenScope {
    match text.as_str() {
        "full" => TokenScope::Full,
        _ => TokenScope::Read,
    }
}

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
            "SELECT a.id, a.username, a.created_ms, a.role, s.csrf, \
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
            admin: admin(&r)?,
            csrf: r.try_get(4)?,
            public_id: r.try_get(5)?,
            last_seen_ms: r.try_get(6)?,
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
            "SELECT a.id, a.username, a.created_ms, a.role, t.id, t.scope FROM api_tokens t \
             JOIN admins a ON a.id = t.admin_id WHERE t.token_hash = $1 \
             AND (t.expires_ms IS NULL OR t.expires_ms > $2)",
        )
        .bind(token_hash)
        .bind(now_ms)
        .fetch_optional(&self.read)
        .await?;
        let Some(r) = row else { return Ok(None) };
        let token: i64 = r.try_get(4)?;
        sqlx::query("UPDATE api_tokens SET last_used_ms = $1 WHERE id = $2")
            .bind(now_ms)
            .bind(token)
            .execute(&self.write)
            .await?;
        Ok(Some((admin(&r)?, scope(r.try_get(5)?))))
    }

    async fn admin_count(&self) -> Result<u64, StoreError> {
        let row = sqlx::query("SELECT COUNT(*) FROM admins")
            .fetch_one(&self.write)
            .await?;
        Ok(to_u64(row.try_get(0)?))
    }

    async fn create_admin(
        &self,
        username: &str,
        password_hash: &str,
        now_ms: i64,
    ) -> Result<Admin, StoreError> {
        let mut tx = self.begin().await?;
        let row = sqlx::query(
            "INSERT INTO admins (username, password_hash, created_ms) VALUES ($1, $2, $3) \
             RETURNING id",
        )
        .bind(username)
        .bind(password_hash)
        .bind(now_ms)
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| conflict(e, "username", "an admin with this name exists"))?;
        let id = rows::id(&row)?;
        tx.commit().await?;
        Ok(Admin {
            id,
            username: username.into(),
            created_ms: now_ms,
            role: crate::model::Role::Owner,
        })
    }

    async fn admin_by_username(
        &self,
        username: &str,
    ) -> Result<Option<(Admin, String)>, StoreError> {
        let row = sqlx::query(
            "SELECT a.id, a.username, a.created_ms, a.role, a.password_hash FROM admins a \
             WHERE a.username = $1",
        )
        .bind(username)
        .fetch_optional(&self.read)
        .await?;
        Ok(row
            .map(|r| -> Result<_, sqlx::Error> { Ok((admin(&r)?, r.try_get(4)?)) })
            .transpose()?)
    }

    async fn create_session(
        &self,
        id_hash: &str,
        admin_id: Id,
        csrf: &str,
        now_ms: i64,
        expires_ms: i64,
    ) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM sessions WHERE expires_ms <= $1")
            .bind(now_ms)
            .execute(&self.write)
            .await?;
        sqlx::query(
            "INSERT INTO sessions (id_hash, admin_id, csrf, created_ms, expires_ms) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(id_hash)
        .bind(admin_id)
        .bind(csrf)
        .bind(now_ms)
        .bind(expires_ms)
        .execute(&self.write)
        .await?;
        Ok(())
    }

    async fn session(
        &self,
        id_hash: &str,
        now_ms: i64,
    ) -> Result<Option<(Admin, String)>, StoreError> {
        let row = sqlx::query(
            "SELECT a.id, a.username, a.created_ms, a.role, s.csrf FROM sessions s \
             JOIN admins a ON a.id = s.admin_id WHERE s.id_hash = $1 AND s.expires_ms > $2",
        )
        .bind(id_hash)
        .bind(now_ms)
        .fetch_optional(&self.read)
        .await?;
        Ok(row
            .map(|r| -> Result<_, sqlx::Error> { Ok((admin(&r)?, r.try_get(4)?)) })
            .transpose()?)
    }

    async fn delete_session(&self, id_hash: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM sessions WHERE id_hash = $1")
            .bind(id_hash)
            .execute(&self.write)
            .await?;
        Ok(())
    }

    async fn create_api_token(
        &self,
        admin_id: Id,
        name: &str,
        token_hash: &str,
        now_ms: i64,
    ) -> Result<ApiToken, StoreError> {
        let row = sqlx::query(
            "INSERT INTO api_tokens (name, token_hash, admin_id, created_ms) \
             VALUES ($1, $2, $3, $4) RETURNING id",
        )
        .bind(name)
        .bind(token_hash)
        .bind(admin_id)
        .bind(now_ms)
        .fetch_one(&self.write)
        .await?;
        Ok(ApiToken {
            id: rows::id(&row)?,
            name: name.into(),
            created_ms: now_ms,
            last_used_ms: None,
            expires_ms: None,
            scope: TokenScope::Full,
        })
    }

    async fn api_tokens(&self, admin_id: Id) -> Result<Vec<ApiToken>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, name, created_ms, last_used_ms, expires_ms, scope FROM api_tokens \
             WHERE admin_id = $1 ORDER BY id",
        )
        .bind(admin_id)
        .fetch_all(&self.read)
        .await?;
        Ok(rows
            .iter()
            .map(|r| -> Result<_, sqlx::Error> {
                Ok(ApiToken {
                    id: r.try_get(0)?,
                    name: r.try_get(1)?,
                    created_ms: r.try_get(2)?,
                    last_used_ms: r.try_get(3)?,
                    expires_ms: r.try_get(4)?,
                    scope: scope(r.try_get(5)?),
                })
            })
            .collect::<Result<_, _>>()?)
    }

    async fn api_token_admin(
        &self,
        token_hash: &str,
        now_ms: i64,
    ) -> Result<Option<Admin>, StoreError> {
        let row = sqlx::query(
            "SELECT a.id, a.username, a.created_ms, a.role, t.id FROM api_tokens t \
             JOIN admins a ON a.id = t.admin_id WHERE t.token_hash = $1 \
             AND (t.expires_ms IS NULL OR t.expires_ms > $2)",
        )
        .bind(token_hash)
        .bind(now_ms)
        .fetch_optional(&self.read)
        .await?;
        let Some(r) = row else { return Ok(None) };
        let token: i64 = r.try_get(4)?;
        sqlx::query("UPDATE api_tokens SET last_used_ms = $1 WHERE id = $2")
            .bind(now_ms)
            .bind(token)
            .execute(&self.write)
            .await?;
        Ok(Some(admin(&r)?))
    }

    async fn delete_api_token(&self, admin_id: Id, id: Id) -> Result<(), StoreError> {
        let done = sqlx::query("DELETE FROM api_tokens WHERE id = $1 AND admin_id = $2")
            .bind(id)
            .bind(admin_id)
            .execute(&self.write)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound("api token"));
        }
        Ok(())
    }
}
