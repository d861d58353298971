//! One change to many users at once: named by a filter or by ids, counted first
//! (a preview changes nothing), then applied in one transaction, so a failure on
//! any user changes none. The part of the [`Store`](super::Store) behind
//! `POST /api/v1/users/bulk`; its SQL is in `sql_bulk`.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::StoreError;
use super::user_filter::UserFilter;
use crate::model::{FieldError, Id};

/// The most days or bytes one bulk change adds (a bound, so no sum overflows).
pub const MAX_DAYS: u32 = 36_500;
/// A pebibyte per change.
pub const MAX_BYTES: u64 = 1 << 50;

/// What to do to each user.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum BulkAction {
    /// Pushes each expiry back by `days` (an on-hold user's hold grows by them; a
    /// user who never expires still never does).
    ExtendExpiry {
        /// 1 to 36500.
        days: u32,
    },
    /// Raises each traffic limit by `bytes` (unlimited users stay unlimited).
    AddTraffic {
        /// 1 byte to 1 PiB.
        bytes: u64,
    },
    /// Starts a new period now: usage back to zero.
    ResetUsage,
    /// Switches the users on.
    Enable,
    /// Switches the users off (they are taken off every node within seconds).
    Disable,
    /// Puts the users in these clusters (unset: every cluster).
    SetClusters {
        /// The clusters.
        clusters: Option<Vec<Id>>,
    },
    /// Deletes the users.
    Delete,
}

impl BulkAction {
    /// Checks the action's numbers.
    pub fn check(&self) -> Result<(), FieldError> {
        match self {
            Self::ExtendExpiry { days } if !(1..=MAX_DAYS).contains(days) => Err(FieldError::new(
                "action.days",
                format!("must be 1 to {MAX_DAYS}"),
            )),
            Self::AddTraffic { bytes } if !(1..=MAX_BYTES).contains(bytes) => Err(FieldError::new(
                "action.bytes",
                format!("must be 1 to {MAX_BYTES}"),
            )),
            Self::SetClusters { clusters: Some(c) } if c.len() > 1000 => {
                Err(FieldError::new("action.clusters", "at most 1000 clusters"))
            }
            _ => Ok(()),
        }
    }

    /// The action in words, for the answer and the audit log.
    pub fn describe(&self) -> String {
        match self {
            Self::ExtendExpiry { days } => format!("extend expiry by {days} days"),
            Self::AddTraffic { bytes } => format!("add {bytes} bytes of traffic"),
            Self::ResetUsage => "reset usage".into(),
            Self::Enable => "enable".into(),
            Self::Disable => "disable".into(),
            Self::SetClusters { clusters: None } => "put in every cluster".into(),
            Self::SetClusters { clusters: Some(c) } => format!("put in clusters {c:?}"),
            Self::Delete => "delete".into(),
        }
    }
}

/// Bulk changes.
#[async_trait]
pub trait BulkStore: Send + Sync {
    /// How many users `filter` names at `now_ms`.
    async fn bulk_count(&self, filter: &UserFilter<'_>, now_ms: i64) -> Result<u64, StoreError>;

    /// Applies `action` to the users `filter` names at `now_ms`, in one transaction;
    /// how many there were.
    async fn bulk_apply(
        &self,
        filter: &UserFilter<'_>,
        action: &BulkAction,
        now_ms: i64,
    ) -> Result<u64, StoreError>;
}
