//! Storage: the [`Store`] trait, and [`SqlStore`], its implementation over sqlx for
//! SQLite (the default: a file in the data directory, WAL, one writer) and PostgreSQL
//! (for several panel instances over one database).
//!
//! The queries are the same SQL for both backends (through sqlx's `Any` driver, with
//! `$N` placeholders, which SQLite accepts too); the migrations are per backend, in
//! `migrations/sqlite` and `migrations/postgres`, because only id columns' DDL differs.
//!
//! Every write announces itself on [`Changes`]: in-process for SQLite, through
//! PostgreSQL's `NOTIFY switchyard` for PostgreSQL, so every panel instance on the
//! database hears every change and pushes it to the nodes it holds.

mod account;
mod admins;
mod audit;
mod bulk;
mod changes;
mod dashboard;
mod imports;
mod inbounds;
mod plans;
mod rollout;
mod routes;
mod routing;
mod rows;
mod servers;
mod sql;
mod sql_account;
mod sql_admins;
mod sql_audit;
mod sql_bulk;
mod sql_dashboard;
mod sql_imports;
mod sql_inbounds;
mod sql_join;
mod sql_plans;
mod sql_routes;
mod sql_routing;
mod sql_servers;
mod sql_traffic;
mod sql_tunnels;
mod sql_users;
mod sql_webhooks;
mod sqlite_file;
#[cfg(test)]
mod strict_tests;
pub mod token_hash;
mod traffic;
mod tunnels;
mod user_filter;
mod users;
mod webhooks;

use async_trait::async_trait;
use thiserror::Error;

pub use account::{
    AccountStore, AdminSession, ApiToken, LiveSession, NewSession, SEEN_EVERY_MS, TokenScope,
};
pub use admins::{AdminFields, AdminStore, AdminView, Owner};
pub use audit::{AuditEntry, AuditQuery, AuditStore};
pub use bulk::{BulkAction, BulkStore, MAX_BYTES, MAX_DAYS};
pub use changes::Changes;
pub use dashboard::{ByStatus, DashboardStore, Day, Numbers, Some10};
pub use imports::{
    Carries, ImportMode, ImportStore, ImportWritten, ImportedDevice, ImportedLink, ImportedUser,
};
pub use inbounds::{InboundInput, InboundStore};
pub use plans::PlanStore;
pub use routes::{
    Device, DeviceOutcome, DeviceSeen, MAX_DEVICES, RouteInput, RouteStore, Subscriber,
};
pub use routing::RoutingStore;
pub use servers::{JoinRefusal, ServerInput, ServerPoint, ServerReport, ServerStore};
pub use sql::SqlStore;
pub use traffic::{BATCH_USERS, StatsBatch, StatsState, TrafficBatch, TrafficStore};
pub use tunnels::TunnelStore;
pub use user_filter::{UserFilter, UserSort};
pub use users::{UserInput, UserQuery, UserStore};
pub use webhooks::{Attempt, Delivery, Due, FoundTunnel, WebhookStore};

use crate::model::FieldError;

/// What went wrong in the store.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No such row.
    #[error("{0} not found")]
    NotFound(&'static str),
    /// The write conflicts with existing data (a taken name or port); names the field.
    #[error("{0}")]
    Conflict(FieldError),
    /// The write is not allowed in the current state (deleting a cluster that still
    /// has servers...); names the field.
    #[error("{0}")]
    Refused(FieldError),
    /// The write does not fit the reseller's quota; names the user's field.
    #[error("{0}")]
    OverQuota(FieldError),
    /// The database failed (logged, never shown to clients).
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    /// Migrations failed.
    #[error("database migration: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// The SQLite file (or its `-wal`/`-shm`) could not be created or made private.
    #[error("database file {path}: {source}")]
    File {
        /// The file.
        path: std::path::PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// The panel's storage. One implementation ([`SqlStore`]) serves both backends; the
/// traits are what the rest of the panel sees, and what the storage story tests: one
/// per resource, each in its own module (`servers`, `inbounds`, `routes`, `users`,
/// `traffic`, `tunnels`, `account`) with its SQL beside it (`sql_<resource>`);
/// `Store` is all of them, plus the settings.
#[async_trait]
pub trait Store:
    ServerStore
    + InboundStore
    + RouteStore
    + RoutingStore
    + UserStore
    + TrafficStore
    + TunnelStore
    + AccountStore
    + AdminStore
    + AuditStore
    + BulkStore
    + PlanStore
    + WebhookStore
    + DashboardStore
    + ImportStore
    + Send
    + Sync
    + 'static
{
    /// The value of a setting, inserting `init` first when there is none (atomic, so
    /// two instances starting at once agree on one value).
    async fn setting_or_init(&self, key: &str, init: String) -> Result<String, StoreError>;

    /// Replaces a setting.
    async fn put_setting(&self, key: &str, value: &str) -> Result<(), StoreError>;

    /// The value of a setting, if there is one.
    async fn setting(&self, key: &str) -> Result<Option<String>, StoreError>;
}
