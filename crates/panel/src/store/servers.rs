//! Clusters and servers: the part of the [`Store`](super::Store) behind
//! `/api/v1/clusters` and `/api/v1/servers`, with what the channel's holder reports
//! (health, load, history), the node's pin and join tokens, and the snapshot a
//! server's desired config is rendered from.
//!
//! Rules kept here: a cluster is deleted only empty; a server never moves to another
//! cluster and is not deleted while a tunnel holds it; a node's pin is never
//! overwritten, only forgotten by replacing the node (see `sql_join`).

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use thiserror::Error;
use utoipa::ToSchema;

use super::StoreError;
use crate::model::snapshot::ServerSnapshot;
use crate::model::tunnel::UsageStep;
use crate::model::{Cluster, Health, Id, Server};

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
    /// The node's software version, as its status says; none keeps the stored one.
    pub node_version: Option<String>,
    /// The sha256 of the binary the node runs; none keeps the stored one.
    pub binary_sha256: Option<String>,
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

/// Clusters and servers.
#[async_trait]
pub trait ServerStore: Send + Sync {
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
        step: UsageStep,
        since_ms: i64,
    ) -> Result<Vec<ServerPoint>, StoreError>;

    /// The journal cursor stored for a server.
    async fn journal_cursor(&self, id: Id) -> Result<u64, StoreError>;

    /// The pin of the server's node certificate, none before its node joins.
    async fn server_pin(&self, id: Id) -> Result<Option<String>, StoreError>;

    /// The server's pinned SSH host key (`SHA256:…`), none before an install over SSH
    /// pinned one.
    async fn ssh_host_key(&self, id: Id) -> Result<Option<String>, StoreError>;

    /// Pins the server's SSH host key. A pin is never overwritten: another key
    /// answers `Conflict` (only [`Self::replace_node`] forgets it).
    async fn pin_ssh_host_key(&self, id: Id, fingerprint: &str) -> Result<(), StoreError>;

    /// Forgets the server's pinned node (its channel is refused from now on) and its
    /// pinned SSH host key, revokes its unused join tokens and stores a fresh one, in one step.
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

    /// Everything a server's desired config is rendered from.
    async fn server_snapshot(&self, id: Id, now_ms: i64) -> Result<ServerSnapshot, StoreError>;
}
