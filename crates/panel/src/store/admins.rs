//! Admins with roles and quotas, and who owns which user: the part of the
//! [`Store`](super::Store) behind `/api/v1/admins` and the resellers' view of users.
//! Its SQL, for both backends, is in `sql_admins`.
//!
//! The last owner can be neither demoted nor deleted: a panel always has someone
//! who may manage its admins.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::StoreError;
use super::users::{UserInput, UserQuery};
use crate::model::{Admin, Ask, Credentials, Id, Quota, QuotaUse, Role, User};

/// An admin as the owner sees them: role, quota and what the quota is used by.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AdminView {
    /// Who.
    #[serde(flatten)]
    pub admin: Admin,
    /// What a reseller may hand out (ignored for the other roles).
    pub quota: Quota,
    /// Their users and the traffic limits handed out.
    pub used: QuotaUse,
}

/// A new or changed admin (without the password, which the API hashes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdminFields<'a> {
    /// Login name.
    pub username: &'a str,
    /// What they may do.
    pub role: Role,
    /// A reseller's quota.
    pub quota: &'a Quota,
}

/// The reseller a user write is for, and the quota it must fit.
#[derive(Clone, Copy, Debug)]
pub struct Owner<'a> {
    /// The reseller.
    pub admin_id: Id,
    /// Their quota.
    pub quota: &'a Quota,
}

impl UserInput {
    /// What the user asks of a quota.
    pub fn ask(&self) -> Ask<'_> {
        Ask {
            traffic_limit: self.traffic_limit,
            expires_ms: self.expires_ms,
            on_hold_days: self.on_hold_days,
            clusters: self.clusters.as_deref(),
        }
    }
}

/// Admins, and users by owner.
#[async_trait]
pub trait AdminStore: Send + Sync {
    /// Every admin, by id.
    async fn admins(&self) -> Result<Vec<AdminView>, StoreError>;

    /// One admin.
    async fn admin_view(&self, id: Id) -> Result<AdminView, StoreError>;

    /// A new admin with a role (the password already hashed).
    async fn add_admin(
        &self,
        fields: &AdminFields<'_>,
        password_hash: &str,
        now_ms: i64,
    ) -> Result<Admin, StoreError>;

    /// Changes an admin's name, role and quota; refuses demoting the last owner.
    async fn set_admin(&self, id: Id, fields: &AdminFields<'_>) -> Result<Admin, StoreError>;

    /// Replaces an admin's password hash, ending all their sessions.
    async fn reset_admin_password(&self, id: Id, password_hash: &str) -> Result<(), StoreError>;

    /// Deletes an admin (their users stay, owned by nobody; their sessions and tokens
    /// go); refuses deleting the last owner.
    async fn delete_admin(&self, id: Id) -> Result<(), StoreError>;

    /// An admin's quota (empty for one without).
    async fn quota(&self, admin_id: Id) -> Result<Quota, StoreError>;

    /// Who owns a user (`NotFound` when there is no such user).
    async fn user_admin(&self, user_id: Id) -> Result<Option<Id>, StoreError>;

    /// Gives a user to an admin (or to nobody).
    async fn set_user_admin(&self, user_id: Id, admin_id: Option<Id>) -> Result<(), StoreError>;

    /// A page of an admin's users, and how many they have in all.
    async fn owned_users(
        &self,
        admin_id: Id,
        query: &UserQuery,
        now_ms: i64,
    ) -> Result<(Vec<User>, u64), StoreError>;

    /// A new user of `owner`'s, if it fits their quota (checked in the write's
    /// transaction, the owner's row locked: two at once cannot both take the last
    /// place).
    async fn create_owned_user(
        &self,
        input: &UserInput,
        credentials: &Credentials,
        token: &str,
        owner: Owner<'_>,
        now_ms: i64,
    ) -> Result<User, StoreError>;

    /// Changes a user of `owner`'s, if the change fits their quota.
    async fn update_owned_user(
        &self,
        id: Id,
        input: &UserInput,
        owner: Owner<'_>,
        now_ms: i64,
    ) -> Result<User, StoreError>;
}
