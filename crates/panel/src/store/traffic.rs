//! [`TrafficStore`]: users' traffic as the nodes report it, written in bounded
//! batches.
//!
//! The stats round (`nodes::stats`) decides what to accept; the store only adds it up.
//! Every batch is one transaction that moves the server's journal cursor with the
//! usage it adds, and only from the cursor the round read from: nothing is counted
//! twice or lost, and a round that lost a race (another instance took the channel)
//! writes nothing. Sums saturate at the columns' largest value (`i64::MAX` bytes)
//! rather than overflow: SQLite would turn the sum into a REAL (refused since its
//! tables are STRICT), PostgreSQL would refuse the statement, and either would stop the
//! server's stats for good.

use async_trait::async_trait;

use super::StoreError;
use crate::model::Id;

/// Users per transaction when marking users online, and the most users one traffic
/// batch holds unless a single journal record has more (see `nodes::stats`). 500: a
/// batch's transaction holds SQLite's one writer for tens of milliseconds, so an
/// admin's write waits no longer than that.
pub const BATCH_USERS: usize = 500;

/// Where a server's stats stand.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatsState {
    /// The journal cursor stored for it: records up to it are counted.
    pub cursor: u64,
    /// The panel time (Unix ms) from which its allowance for reported traffic accrues
    /// (0: never spent).
    pub allowance_ms: i64,
    /// When the server was made (Unix ms): it carried nothing before.
    pub created_ms: i64,
}

/// One batch of a stats page: the records after `from` up to `to`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatsBatch {
    /// The stored cursor the round read from.
    pub from: u64,
    /// The cursor the batch's records end at.
    pub to: u64,
    /// Bytes per user: (user, up, down), each user once.
    pub users: Vec<(Id, u64, u64)>,
    /// The allowance after the batch (stored with it).
    pub allowance_ms: i64,
}

/// What one stats read brought from a node: applied with the cursor, atomically.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrafficBatch {
    /// The journal cursor the records end at.
    pub cursor: u64,
    /// Bytes per user id: (up, down).
    pub users: Vec<(Id, u64, u64)>,
}

/// Users' traffic from the nodes.
#[async_trait]
pub trait TrafficStore: Send + Sync {
    /// Where `server_id`'s stats stand.
    async fn stats_state(&self, server_id: Id) -> Result<StatsState, StoreError>;
    /// Adds `batch` in one transaction, if the stored cursor is still `batch.from`:
    /// the users' usage (saturating), the cursor moved to `batch.to`, the allowance
    /// stored. Returns whether it was applied.
    async fn add_traffic(&self, server_id: Id, batch: &StatsBatch) -> Result<bool, StoreError>;
    /// Marks `users` seen online at `now_ms` (and starts on-hold users' clocks), in
    /// transactions of at most [`BATCH_USERS`]; returns how many clocks started.
    async fn mark_online(&self, users: &[Id], now_ms: i64) -> Result<u64, StoreError>;
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
}
