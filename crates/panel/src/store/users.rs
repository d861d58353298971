//! Users: the part of the [`Store`](super::Store) behind `/api/v1/users`. Their usage
//! comes in through [`TrafficStore`](super::TrafficStore); their subscription token is
//! kept with its hash ([`super::token_hash`]), by which a fetch finds it.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::StoreError;
use crate::model::{Credentials, Id, ResetStrategy, User};

/// A new or changed user.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UserInput {
    /// Unique name.
    #[schema(pattern = r"^[A-Za-z0-9_.@-]{1,64}$")]
    pub username: String,
    /// Switched on (default true).
    #[serde(default = "yes")]
    pub enabled: bool,
    /// A note for operators.
    #[serde(default)]
    #[schema(max_length = 1000)]
    pub note: String,
    /// Bytes allowed per period; unset is unlimited.
    #[serde(default)]
    pub traffic_limit: Option<u64>,
    /// When the counter starts over.
    #[serde(default)]
    pub reset_strategy: ResetStrategy,
    /// Unix ms after which the user may no longer connect.
    #[serde(default)]
    #[schema(minimum = 0)]
    pub expires_ms: Option<i64>,
    /// On hold: the expiry is this many days after the first connection.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 36500)]
    pub on_hold_days: Option<u32>,
    /// At most this many devices (apps sending `x-hwid`) get servers; unset is no
    /// limit.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 1000)]
    pub device_limit: Option<u32>,
    /// At most this many source addresses online at once, on each server; unset is no
    /// limit.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 1000)]
    pub address_limit: Option<u32>,
    /// The clusters whose routes the user sees; all when unset.
    #[serde(default)]
    pub clusters: Option<Vec<Id>>,
}

impl UserInput {
    /// An enabled user named `username` with no limits, no expiry and no note, in
    /// every cluster.
    pub fn new(username: impl Into<String>) -> Self {
        Self {
            username: username.into(),
            enabled: true,
            note: String::new(),
            traffic_limit: None,
            reset_strategy: ResetStrategy::default(),
            expires_ms: None,
            on_hold_days: None,
            device_limit: None,
            address_limit: None,
            clusters: None,
        }
    }
}

fn yes() -> bool {
    true
}

/// Which users to list.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, ToSchema, utoipa::IntoParams)]
pub struct UserQuery {
    /// Only users whose name contains this.
    #[serde(default)]
    pub search: Option<String>,
    /// Skip this many (default 0).
    #[serde(default)]
    pub offset: Option<u64>,
    /// At most this many (default 100, at most 1000).
    #[serde(default)]
    pub limit: Option<u64>,
    /// Only users with this status now.
    #[serde(default)]
    pub status: Option<crate::model::UserStatus>,
    /// Only users who see this cluster's routes (in it, or in every cluster).
    #[serde(default)]
    pub cluster: Option<Id>,
    /// The order (default: by id).
    #[serde(default)]
    pub sort: Option<super::user_filter::UserSort>,
    /// Descending.
    #[serde(default)]
    pub desc: Option<bool>,
}

impl UserQuery {
    /// The filter it names (of `admin_id`'s users alone, when given).
    pub fn filter(&self, admin_id: Option<Id>) -> super::user_filter::UserFilter<'_> {
        super::user_filter::UserFilter {
            search: self.search.as_deref(),
            status: self.status,
            cluster: self.cluster,
            admin_id,
            ids: None,
        }
    }
}

/// Users.
#[async_trait]
pub trait UserStore: Send + Sync {
    /// Users.
    async fn users(&self, query: &UserQuery, now_ms: i64) -> Result<Vec<User>, StoreError>;

    /// How many users there are.
    async fn user_count(&self) -> Result<u64, StoreError>;

    /// A page of the users `query` names (of `admin_id`'s alone, when given), and how
    /// many it names in all.
    async fn user_page(
        &self,
        query: &UserQuery,
        admin_id: Option<Id>,
        now_ms: i64,
    ) -> Result<(Vec<User>, u64), StoreError>;

    /// One user.
    async fn user(&self, id: Id, now_ms: i64) -> Result<User, StoreError>;

    /// The user with this subscription token, with credentials.
    async fn user_by_token(
        &self,
        token: &str,
        now_ms: i64,
    ) -> Result<Option<(User, Credentials)>, StoreError>;

    /// A new user.
    async fn create_user(
        &self,
        input: &UserInput,
        credentials: &Credentials,
        token: &str,
        now_ms: i64,
    ) -> Result<User, StoreError>;

    /// Changes a user.
    async fn update_user(&self, id: Id, input: &UserInput, now_ms: i64)
    -> Result<User, StoreError>;

    /// Deletes a user.
    async fn delete_user(&self, id: Id) -> Result<(), StoreError>;

    /// Replaces the subscription token (the old link stops working).
    async fn set_subscription_token(
        &self,
        id: Id,
        token: &str,
        now_ms: i64,
    ) -> Result<User, StoreError>;

    /// Starts a new period for the user now (usage to zero).
    async fn reset_usage(&self, id: Id, now_ms: i64) -> Result<User, StoreError>;

    /// Starts new periods for users whose reset strategy says one began; returns how
    /// many were reset.
    async fn reset_due(&self, now_ms: i64) -> Result<u64, StoreError>;
}
