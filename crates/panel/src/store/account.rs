//! The admin's account: sessions (listed with where and when they were used, ended one
//! by one or all but the current one when the password changes) and API tokens that
//! may expire and may be read-only. The part of the [`Store`](super::Store) behind
//! `/api/v1/account`, `/api/v1/sessions` and `/api/v1/tokens`, with the admins themselves
//! (login); its SQL, for both backends, is in `sql_account`.
//!
//! Secrets never leave: a session is named by a random public id, never by its
//! cookie or the cookie's hash; a token by its row id.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::StoreError;
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

/// Admins, their sessions and their API tokens.
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

    /// How many admins there are.
    async fn admin_count(&self) -> Result<u64, StoreError>;

    /// A new admin.
    async fn create_admin(
        &self,
        username: &str,
        password_hash: &str,
        now_ms: i64,
    ) -> Result<Admin, StoreError>;

    /// An admin and their password hash, by login name.
    async fn admin_by_username(
        &self,
        username: &str,
    ) -> Result<Option<(Admin, String)>, StoreError>;

    /// Stores a session (its id's hash).
    async fn create_session(
        &self,
        id_hash: &str,
        admin_id: Id,
        csrf: &str,
        now_ms: i64,
        expires_ms: i64,
    ) -> Result<(), StoreError>;

    /// The admin and CSRF token of a live session.
    async fn session(
        &self,
        id_hash: &str,
        now_ms: i64,
    ) -> Result<Option<(Admin, String)>, StoreError>;

    /// Ends a session.
    async fn delete_session(&self, id_hash: &str) -> Result<(), StoreError>;

    /// Stores an API token (its hash).
    async fn create_api_token(
        &self,
        admin_id: Id,
        name: &str,
        token_hash: &str,
        now_ms: i64,
    ) -> Result<ApiToken, StoreError>;

    /// An admin's API tokens, without their secrets.
    async fn api_tokens(&self, admin_id: Id) -> Result<Vec<ApiToken>, StoreError>;

    /// The admin an API token acts for.
    async fn api_token_admin(
        &self,
        token_hash: &str,
        now_ms: i64,
    ) -> Result<Option<Admin>, StoreError>;

    /// Deletes one of an admin's API tokens (another's is not found).
    async fn delete_api_token(&self, admin_id: Id, id: Id) -> Result<(), StoreError>;
}

/// How often a session's "last seen" is written, at most: once a minute keeps the list
/// honest without a write on every request.
pub const SEEN_EVERY_MS: i64 = 60_000;

/// An API token as listed (its secret was shown once, at creation).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ApiToken {
    /// Id.
    pub id: Id,
    /// What it is for.
    pub name: String,
    /// Unix ms.
    pub created_ms: i64,
    /// Last use (Unix ms).
    pub last_used_ms: Option<i64>,
    /// When it stops working (Unix ms); never when absent.
    #[serde(default)]
    pub expires_ms: Option<i64>,
    /// What it may do.
    #[serde(default)]
    pub scope: TokenScope,
}
