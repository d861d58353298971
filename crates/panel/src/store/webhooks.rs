//! Webhooks and their outbox: the part of the [`Store`](super::Store) behind
//! `/api/v1/webhooks` and the delivery worker ([`crate::webhooks`]); its SQL is in
//! `sql_webhooks`. A delivery is a row until it is delivered or given up; a worker
//! takes due ones with a lease (a row lease, taken with `FOR UPDATE SKIP LOCKED` on
//! PostgreSQL), so of several panel instances one sends each, and a worker that dies
//! mid-send leaves it to be taken again when the lease ends.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::StoreError;
use crate::model::webhook::Thresholds;
use crate::model::{Id, Webhook, WebhookInput};

/// A delivery as listed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Delivery {
    /// Id (sent as `X-Switchyard-Delivery`).
    pub id: Id,
    /// The event.
    pub event: String,
    /// The body sent.
    pub body: String,
    /// When the event happened (Unix ms).
    pub created_ms: i64,
    /// `pending`, `delivered` or `failed` (given up).
    pub state: String,
    /// Attempts made.
    pub attempts: u32,
    /// The next attempt (Unix ms), while pending.
    pub next_ms: i64,
    /// The receiver's last status, if it answered.
    pub last_status: Option<u16>,
    /// Why the last attempt failed, if it did.
    pub last_error: Option<String>,
    /// When it was delivered or given up (Unix ms).
    pub done_ms: Option<i64>,
}

/// A delivery taken to be sent.
#[derive(Clone, PartialEq, Eq)]
pub struct Due {
    /// The delivery.
    pub id: Id,
    /// Its event.
    pub event: String,
    /// Its body.
    pub body: String,
    /// Attempts made before this one.
    pub attempts: u32,
    /// Where.
    pub url: String,
    /// The hook's secret.
    pub secret: String,
    /// Whether the hook may reach private addresses.
    pub allow_private: bool,
}

impl std::fmt::Debug for Due {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Due")
            .field("id", &self.id)
            .field("event", &self.event)
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

/// How an attempt ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attempt {
    /// The receiver answered 2xx.
    Delivered {
        /// Its status.
        status: u16,
    },
    /// It did not; try again at `next_ms`, or (`None`) give up.
    Failed {
        /// The status, if it answered.
        status: Option<u16>,
        /// Why.
        error: String,
        /// The next attempt, if any.
        next_ms: Option<i64>,
    },
}

/// Webhooks and deliveries.
#[async_trait]
pub trait WebhookStore: Send + Sync {
    /// A new hook with `secret`.
    async fn create_webhook(
        &self,
        input: &WebhookInput,
        secret: &str,
        now_ms: i64,
    ) -> Result<Webhook, StoreError>;
    /// Every hook.
    async fn webhooks(&self) -> Result<Vec<Webhook>, StoreError>;
    /// One hook.
    async fn webhook(&self, id: Id) -> Result<Webhook, StoreError>;
    /// Changes a hook (its secret stays).
    async fn update_webhook(&self, id: Id, input: &WebhookInput) -> Result<Webhook, StoreError>;
    /// Deletes a hook and its deliveries.
    async fn delete_webhook(&self, id: Id) -> Result<(), StoreError>;
    /// Queues `body` for every enabled hook that picked `event` (or for `only`);
    /// how many deliveries were queued.
    async fn enqueue(
        &self,
        event: &str,
        body: &str,
        only: Option<Id>,
        now_ms: i64,
    ) -> Result<u64, StoreError>;
    /// Takes at most `limit` due deliveries for `lease_ms`.
    async fn take_due(
        &self,
        now_ms: i64,
        limit: u32,
        lease_ms: i64,
    ) -> Result<Vec<Due>, StoreError>;
    /// Records how an attempt ended.
    async fn finish(&self, id: Id, attempt: &Attempt, now_ms: i64) -> Result<(), StoreError>;
    /// A hook's deliveries, newest first.
    async fn deliveries(&self, hook: Id, limit: u32) -> Result<Vec<Delivery>, StoreError>;
    /// Sends a delivery again from now (pending, attempts from zero).
    async fn replay(&self, hook: Id, delivery: Id, now_ms: i64) -> Result<(), StoreError>;

    /// Looks at every user once ([`crate::model::webhook::observe`]) and queues the
    /// events their changes make, each with the user's record; a user is updated
    /// only if what was recorded of them is still what this look read (so of several
    /// instances looking at once, one tells each change). How many events.
    async fn watch_users(&self, now_ms: i64, at: &Thresholds) -> Result<u64, StoreError>;

    /// The same for servers' states ([`crate::model::webhook::server_event`]) and
    /// their nodes' versions ([`crate::model::webhook::node_upgraded`]).
    async fn watch_servers(&self, now_ms: i64) -> Result<u64, StoreError>;

    /// The same for tunnels, whose states the caller found by asking their relays
    /// ([`crate::model::webhook::tunnel_state`]): `found` is each tunnel's id, state
    /// and what the event says of it. Tunnels not in `found` are left as they were.
    async fn watch_tunnels(&self, found: &[FoundTunnel], now_ms: i64) -> Result<u64, StoreError>;
}

/// A tunnel's state as the observer found it.
#[derive(Clone, Debug, PartialEq)]
pub struct FoundTunnel {
    /// The tunnel.
    pub id: Id,
    /// `connected`, `no_connections` or `unreachable`.
    pub state: &'static str,
    /// The event's `data` (the tunnel's id, name, state, links and error).
    pub data: serde_json::Value,
}
