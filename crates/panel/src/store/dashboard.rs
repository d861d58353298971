//! What the dashboard shows, counted by the store: users by status, online now,
//! those expiring soon or nearly out of traffic, servers by state, and traffic per
//! day from the servers' measured throughput. Its SQL is in `sql_dashboard`.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::StoreError;

/// Users by status.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ByStatus {
    /// May connect.
    pub active: u64,
    /// Out of traffic for the period.
    pub limited: u64,
    /// Past the expiry.
    pub expired: u64,
    /// Switched off.
    pub disabled: u64,
    /// Waiting for the first connection.
    pub on_hold: u64,
}

/// A few users, and how many there are in all.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Some10 {
    /// How many.
    pub count: u64,
    /// The first ten names (soonest or fullest first).
    pub names: Vec<String>,
}

/// Traffic of one day (UTC), both directions, estimated from the servers' measured
/// throughput (hourly averages).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Day {
    /// The day's start, Unix ms.
    pub day_ms: i64,
    /// Bytes.
    pub bytes: u64,
}

/// The dashboard's numbers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Numbers {
    /// Users by status now.
    pub users: ByStatus,
    /// Users seen with a connection open in the last two minutes.
    pub online: u64,
    /// Users who expire in the next three days (not yet expired, not disabled).
    pub expiring: Some10,
    /// Users who have used 90 % or more of their limit, not all of it.
    pub nearly_out: Some10,
    /// Servers by state: `pending`, `online`, `unavailable`.
    pub servers: std::collections::BTreeMap<String, u64>,
    /// The last 30 days, oldest first (today last, so far).
    pub traffic: Vec<Day>,
}

/// The dashboard.
#[async_trait]
pub trait DashboardStore: Send + Sync {
    /// The numbers at `now_ms`.
    async fn numbers(&self, now_ms: i64) -> Result<Numbers, StoreError>;
}
