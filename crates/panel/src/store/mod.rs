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
mod changes;
mod routes;
mod rows;
mod sql;
mod sql_join;
mod sql_routes;
mod sql_traffic;
mod sql_tunnels;
mod sqlite_file;
#[cfg(test)]
mod strict_tests;
mod traffic;
mod tunnels;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use thiserror::Error;
use utoipa::ToSchema;

pub use account::{AccountStore, AdminSession, LiveSession, NewSession, SEEN_EVERY_MS, TokenScope};
pub use changes::Changes;
pub use routes::{
    Device, DeviceOutcome, DeviceSeen, MAX_DEVICES, RouteInput, RouteStore, Subscriber,
};
pub use sql::SqlStore;
pub use traffic::{BATCH_USERS, StatsBatch, StatsState, TrafficStore};
pub use tunnels::{TunnelCertificate, TunnelRealityKeys, TunnelStore};

use crate::model::{
    Admin, Cluster, Credentials, FieldError, Flow, Health, Id, Inbound, InboundSecrets,
    InboundSecurity, InboundTransport, Protocol, ResetStrategy, Route, Server, User,
};

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

/// Why a join token was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum JoinRefusal {
    /// No such token.
    #[error("unknown join token")]
    Unknown,
    /// Already used once.
    #[error("the join token was already used")]
    Used,
    /// Past its expiry.
    #[error("the join token expired")]
    Expired,
    /// Revoked before use: a newer token for its server, the server's enrollment or a
    /// replacement of its node.
    #[error(
        "the join token was revoked: a newer one was issued for its server, or the server's node joined"
    )]
    Revoked,
    /// Its server's node has joined; only replacing the node lets another join.
    #[error("the server's node has already joined; replace the node in the panel to join another")]
    Enrolled,
}

/// A new or changed server.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ServerInput {
    /// The cluster it belongs to.
    pub cluster_id: Id,
    /// Name shown to operators.
    #[schema(
        min_length = 1,
        max_length = 64,
        pattern = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$"
    )]
    pub name: String,
    /// The host name or IP clients dial.
    #[schema(
        min_length = 1,
        max_length = 253,
        pattern = r"^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$|^[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*$"
    )]
    pub address: String,
    /// Let this node's users reach loopback and private addresses.
    #[serde(default)]
    pub allow_private_destinations: bool,
}

/// A new or changed inbound.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InboundInput {
    /// The server it runs on.
    pub server_id: Id,
    /// The name users see.
    #[schema(
        min_length = 1,
        max_length = 64,
        pattern = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$"
    )]
    pub name: String,
    /// The protocol.
    pub protocol: Protocol,
    /// The port the node listens on.
    #[schema(minimum = 1)]
    pub port: u16,
    /// Transport (`{"type":"tcp"}` by default).
    #[serde(default)]
    pub transport: InboundTransport,
    /// Security (`{"type":"none"}` by default).
    #[serde(default)]
    pub security: InboundSecurity,
    /// The address clients dial; the server's address when unset.
    #[serde(default)]
    #[schema(
        min_length = 1,
        max_length = 253,
        pattern = r"^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$|^[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*$"
    )]
    pub host: Option<String>,
    /// The TLS server name; the host when unset.
    #[serde(default)]
    #[schema(
        min_length = 1,
        max_length = 253,
        pattern = r"^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$|^[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*$"
    )]
    pub sni: Option<String>,
    /// Round-robin weight, default 1.0.
    #[serde(default = "one")]
    #[schema(exclusive_minimum = 0.0, maximum = 1000.0)]
    pub coefficient: f64,
    /// Shadowsocks only: the 2022 method.
    #[serde(default)]
    pub method: Option<String>,
    /// VLESS over TCP with TLS or REALITY only: `xtls-rprx-vision`, or none.
    #[serde(default)]
    pub flow: Option<Flow>,
}

fn one() -> f64 {
    1.0
}

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
}

/// What one stats read brought from a node: applied with the cursor, atomically.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrafficBatch {
    /// The journal cursor the records end at.
    pub cursor: u64,
    /// Bytes per user id: (up, down).
    pub users: Vec<(Id, u64, u64)>,
}

/// Everything a server's desired config is rendered from.
#[derive(Clone, Debug)]
pub struct ServerSnapshot {
    /// The server.
    pub server: Server,
    /// Its inbounds and their secrets.
    pub inbounds: Vec<(Inbound, InboundSecrets)>,
    /// Users who may see its cluster, with credentials (status decided by the caller).
    pub users: Vec<(User, Credentials)>,
    /// The tunnels it is the relay or an origin of (disabled ones too: the render
    /// leaves those out).
    pub tunnels: Vec<crate::render::tunnels::SnapshotTunnel>,
    /// The panel's tunnel secret, when there are tunnels.
    pub tunnel_secret: Option<switchyard_tunnel::credentials::TunnelSecret>,
}

/// Health and load as the channel's holder last saw them.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerReport {
    /// Health.
    pub health: Health,
    /// The config version the node runs.
    pub config_version: Option<u64>,
    /// Users online.
    pub users_online: u64,
    /// Bytes per second up and down.
    pub throughput: (u64, u64),
    /// The capacity estimate to store; none keeps the stored one.
    pub capacity: Option<switchyard_balance::capacity::Capacity>,
}

/// A server's load in one step of its history: averages over the heartbeats that found
/// it online in the step, and the most users seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ServerPoint {
    /// The step's start, Unix ms.
    pub at_ms: i64,
    /// Average upload, bytes per second.
    pub up_bytes_per_s: u64,
    /// Average download, bytes per second.
    pub down_bytes_per_s: u64,
    /// Average users online.
    pub users_online: u64,
    /// Most users online at one heartbeat.
    pub users_max: u64,
}

/// The panel's storage. One implementation ([`SqlStore`]) serves both backends; the
/// trait is what the rest of the panel sees, and what the storage story tests.
#[async_trait]
pub trait Store:
    RouteStore + TunnelStore + AccountStore + TrafficStore + Send + Sync + 'static
{
    /// The value of a setting, inserting `init` first when there is none (atomic, so
    /// two instances starting at once agree on one value).
    async fn setting_or_init(&self, key: &str, init: String) -> Result<String, StoreError>;
    /// Replaces a setting.
    async fn put_setting(&self, key: &str, value: &str) -> Result<(), StoreError>;

    /// All clusters, oldest first.
    async fn clusters(&self) -> Result<Vec<Cluster>, StoreError>;
    /// One cluster.
    async fn cluster(&self, id: Id) -> Result<Cluster, StoreError>;
    /// A new cluster.
    async fn create_cluster(&self, name: &str, now_ms: i64) -> Result<Cluster, StoreError>;
    /// Renames a cluster.
    async fn rename_cluster(&self, id: Id, name: &str) -> Result<Cluster, StoreError>;
    /// Deletes an empty cluster.
    async fn delete_cluster(&self, id: Id) -> Result<(), StoreError>;

    /// Servers, of one cluster or all.
    async fn servers(&self, cluster: Option<Id>) -> Result<Vec<Server>, StoreError>;
    /// One server.
    async fn server(&self, id: Id) -> Result<Server, StoreError>;
    /// A new server (pending until its node joins).
    async fn create_server(&self, input: &ServerInput, now_ms: i64) -> Result<Server, StoreError>;
    /// Changes a server.
    async fn update_server(&self, id: Id, input: &ServerInput) -> Result<Server, StoreError>;
    /// Deletes a server and its inbounds.
    async fn delete_server(&self, id: Id) -> Result<(), StoreError>;
    /// The server whose node certificate has this fingerprint (hex SHA-256 of DER).
    async fn server_by_fingerprint(&self, fingerprint: &str) -> Result<Option<Id>, StoreError>;
    /// Pins the node's certificate after it joined. A pin is never overwritten: a
    /// server that has one answers `Conflict` (only [`Self::replace_node`] forgets it).
    async fn pin_server(
        &self,
        id: Id,
        fingerprint: &str,
        hostname: &str,
        version: &str,
    ) -> Result<(), StoreError>;
    /// Stores health and load from the channel's holder; a report of an online server
    /// also goes into its history (both steps; points older than a step keeps are
    /// forgotten).
    async fn report_server(
        &self,
        id: Id,
        report: &ServerReport,
        now_ms: i64,
    ) -> Result<(), StoreError>;
    /// A server's throughput and users online at `step` from `since_ms` on, oldest
    /// first (steps in which no heartbeat found it online are left out).
    async fn server_history(
        &self,
        id: Id,
        step: crate::model::tunnel::UsageStep,
        since_ms: i64,
    ) -> Result<Vec<ServerPoint>, StoreError>;
    /// The journal cursor stored for a server.
    async fn journal_cursor(&self, id: Id) -> Result<u64, StoreError>;

    /// The pin of the server's node certificate, none before its node joins.
    async fn server_pin(&self, id: Id) -> Result<Option<String>, StoreError>;
    /// Forgets the server's pinned node (its channel is refused from now on), revokes
    /// its unused join tokens and stores a fresh one, in one step.
    async fn replace_node(
        &self,
        server_id: Id,
        secret_hash: &str,
        expires_ms: i64,
        now_ms: i64,
    ) -> Result<(), StoreError>;
    /// Stores a join token (its hash) for a server, revoking its other unused ones; a
    /// server whose node has joined answers `Conflict` (replace the node instead).
    async fn create_join_token(
        &self,
        server_id: Id,
        secret_hash: &str,
        expires_ms: i64,
        now_ms: i64,
    ) -> Result<(), StoreError>;
    /// Uses a join token once: the server it is for, or why not. The server's other
    /// unused tokens are revoked; a server whose node has joined is refused.
    async fn consume_join_token(
        &self,
        secret_hash: &str,
        now_ms: i64,
    ) -> Result<Result<Id, JoinRefusal>, StoreError>;

    /// Inbounds, of one server, one cluster, or all.
    async fn inbounds(
        &self,
        server: Option<Id>,
        cluster: Option<Id>,
    ) -> Result<Vec<Inbound>, StoreError>;
    /// One inbound.
    async fn inbound(&self, id: Id) -> Result<Inbound, StoreError>;
    /// A new inbound; the cluster's first one also gets a default route holding it.
    async fn create_inbound(
        &self,
        input: &InboundInput,
        secrets: &InboundSecrets,
        now_ms: i64,
    ) -> Result<Inbound, StoreError>;
    /// Changes an inbound (secrets replaced when given).
    async fn update_inbound(
        &self,
        id: Id,
        input: &InboundInput,
        secrets: Option<&InboundSecrets>,
    ) -> Result<Inbound, StoreError>;
    /// Deletes an inbound.
    async fn delete_inbound(&self, id: Id) -> Result<(), StoreError>;

    /// Inbounds of a cluster with their secrets (for subscriptions).
    async fn cluster_inbounds(
        &self,
        cluster: Id,
    ) -> Result<Vec<(Inbound, InboundSecrets)>, StoreError>;

    /// Routes of a cluster, in order.
    async fn routes(&self, cluster: Id) -> Result<Vec<Route>, StoreError>;

    /// Users.
    async fn users(&self, query: &UserQuery, now_ms: i64) -> Result<Vec<User>, StoreError>;
    /// How many users there are.
    async fn user_count(&self) -> Result<u64, StoreError>;
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
    /// Adds a stats read's traffic, if `batch.cursor` is past the server's stored
    /// cursor, and moves the cursor, in one transaction: nothing counted twice or lost.
    /// Users online are marked seen (and on-hold users' clocks started). Returns
    /// whether the batch was new.
    async fn record_traffic(
        &self,
        server_id: Id,
        batch: &TrafficBatch,
        online: &[Id],
        now_ms: i64,
    ) -> Result<bool, StoreError>;

    /// Everything a server's desired config is rendered from.
    async fn server_snapshot(&self, id: Id, now_ms: i64) -> Result<ServerSnapshot, StoreError>;

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
    /// API tokens, without their secrets.
    async fn api_tokens(&self) -> Result<Vec<ApiToken>, StoreError>;
    /// The admin an API token acts for.
    async fn api_token_admin(
        &self,
        token_hash: &str,
        now_ms: i64,
    ) -> Result<Option<Admin>, StoreError>;
    /// Deletes an API token.
    async fn delete_api_token(&self, id: Id) -> Result<(), StoreError>;
}

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
