//! The audit log: who changed what, and when. The part of the
//! [`Store`](super::Store) behind `GET /api/v1/audit`; its SQL is in `sql_audit`.
//! An entry names the admin (by id and by name, which outlive the admin), the action
//! (`create user`), the object (its kind, id and name) and the answer's status;
//! never a request's body, so no password, key or token reaches it.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::StoreError;
use crate::model::Id;

/// One change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AuditEntry {
    /// Its id (newer entries have larger ones).
    pub id: Id,
    /// When (Unix ms).
    pub at_ms: i64,
    /// Who (none: the admin was deleted since, or nobody was logged in).
    pub admin_id: Option<Id>,
    /// Their login name at the time.
    pub admin: String,
    /// What (`create user`, `update server`, `log in`…).
    pub action: String,
    /// The kind of object (`user`, `server`, `admin`…).
    pub kind: String,
    /// The object's id, when it has one.
    pub object_id: Option<Id>,
    /// The object's name when the answer gave it, else its id.
    pub object: String,
    /// The HTTP status the panel answered.
    pub status: u16,
}

/// Which entries, newest first.
#[derive(Clone, Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// Only this admin's (by id).
    #[serde(default)]
    pub admin_id: Option<Id>,
    /// Only about this kind of object.
    #[serde(default)]
    pub kind: Option<String>,
    /// Only about this object (with `kind`).
    #[serde(default)]
    pub object_id: Option<Id>,
    /// Only from this time on (Unix ms).
    #[serde(default)]
    pub since_ms: Option<i64>,
    /// Only before this time (Unix ms).
    #[serde(default)]
    pub until_ms: Option<i64>,
    /// Only entries older than this id (the next page: the last id seen).
    #[serde(default)]
    pub before: Option<Id>,
    /// At most this many (default 100, at most 1000).
    #[serde(default)]
    pub limit: Option<u64>,
}

/// The audit log.
#[async_trait]
pub trait AuditStore: Send + Sync {
    /// Keeps `entry` (its id is given here) and forgets entries older than
    /// `keep_from_ms`.
    async fn record(&self, entry: &AuditEntry, keep_from_ms: i64) -> Result<(), StoreError>;

    /// Entries, newest first.
    async fn audit(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>, StoreError>;
}
