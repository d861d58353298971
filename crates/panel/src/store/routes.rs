//! Routes (one entry in a user's app, a pool of inbounds), the sticky choices of the
//! balancer, and the devices that fetch a user's subscription: the part of the
//! [`Store`](super::Store) that `docs/routes.md` and the subscription
//! endpoint stand on.
//!
//! Rules kept here, atomically, so no caller can break them:
//! - an inbound is in at most one route (the pool table's key is the inbound):
//!   assigning it to a route moves it, in one transaction;
//! - a route's inbounds are of the route's cluster;
//! - route positions of a cluster are a permutation of `0..n` after every write.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::StoreError;
use crate::model::{Algorithm, FieldError, Id, Inbound, Route, check_name};

/// A new or changed route.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RouteInput {
    /// How clients see it (`🇺🇸 USA`): the name of the route's entry in every
    /// format, after the flag (made unique in a subscription with ` 2`, ` 3`, ...).
    #[schema(
        min_length = 1,
        max_length = 64,
        pattern = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$"
    )]
    pub name: String,
    /// A flag (an emoji or a country code), shown before the name in apps (a
    /// two-letter country code as its flag emoji).
    #[serde(default)]
    #[schema(max_length = 16)]
    pub flag: Option<String>,
    /// Balancing algorithm (default least loaded by traffic).
    #[serde(default)]
    pub algorithm: Algorithm,
    /// The pool, in order. Inbounds held by another route move here. On a change,
    /// unset keeps the pool as it is; a list replaces it (inbounds left out are
    /// detached).
    #[serde(default)]
    pub inbound_ids: Option<Vec<Id>>,
}

impl RouteInput {
    /// Checks the fields that need no database.
    pub fn check(&self) -> Result<(), FieldError> {
        check_name("name", &self.name)?;
        if let Some(flag) = &self.flag {
            if flag.chars().count() > 16 {
                return Err(FieldError::new("flag", "must be at most 16 characters"));
            }
            crate::model::names::check_flag("flag", flag)?;
        }
        if let Some(ids) = &self.inbound_ids {
            let mut seen = std::collections::HashSet::new();
            if let Some(dup) = ids.iter().find(|i| !seen.insert(**i)) {
                return Err(FieldError::new(
                    "inbound_ids",
                    format!("inbound {dup} is listed twice"),
                ));
            }
        }
        Ok(())
    }
}

/// A device that fetched a user's subscription (its app sent `x-hwid`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Device {
    /// Id.
    pub id: Id,
    /// The user.
    pub user_id: Id,
    /// The app's hardware id (`x-hwid`).
    pub hwid: String,
    /// `x-device-os`, when sent.
    pub os: Option<String>,
    /// `x-device-model`, when sent.
    pub model: Option<String>,
    /// The app's User-Agent at the last fetch.
    pub user_agent: Option<String>,
    /// Unix ms.
    pub first_seen_ms: i64,
    /// Unix ms.
    pub last_seen_ms: i64,
}

/// What a fetching device says about itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceSeen {
    /// `x-hwid`.
    pub hwid: String,
    /// `x-device-os`.
    pub os: Option<String>,
    /// `x-device-model`.
    pub model: Option<String>,
    /// `User-Agent`.
    pub user_agent: Option<String>,
}

/// The most devices kept per user without a device limit: a new one beyond them
/// takes the place of the one seen least recently, so the list stays bounded and
/// nobody is refused for it. (With a limit, the limit bounds the list.)
pub const MAX_DEVICES: u32 = 64;

/// Whether a device may have the user's servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceOutcome {
    /// Already registered (its last-seen time moved).
    Known,
    /// Registered now, within the limit.
    Registered,
    /// New, and the user already has `limit` devices: not registered.
    OverLimit,
}

/// A subscription's owner as a fetch needs them, read in one query.
#[derive(Clone, Debug)]
pub struct Subscriber {
    /// The user (status computed at the time of reading).
    pub user: crate::model::User,
    /// Their credentials.
    pub credentials: crate::model::Credentials,
    /// Their last choice per route, as `(route, inbound)`.
    pub sticky: Vec<(Id, Id)>,
    /// Their own split tunnelling, if any.
    pub routing: Option<crate::model::routing::RoutingSettings>,
}

/// Routes, sticky choices and devices.
#[async_trait]
pub trait RouteStore: Send + Sync {
    /// Routes of a cluster, in order.
    async fn routes(&self, cluster: Id) -> Result<Vec<Route>, StoreError>;

    /// One route.
    async fn route(&self, id: Id) -> Result<Route, StoreError>;
    /// A new route at the end of the cluster's order; its inbounds move into it.
    async fn create_route(
        &self,
        cluster: Id,
        input: &RouteInput,
        now_ms: i64,
    ) -> Result<Route, StoreError>;
    /// Changes a route's sign and algorithm, and its pool when `inbound_ids` is set.
    async fn update_route(&self, id: Id, input: &RouteInput) -> Result<Route, StoreError>;
    /// Deletes a route; its inbounds are detached (not in any route).
    async fn delete_route(&self, id: Id) -> Result<(), StoreError>;
    /// Moves a route one place up (`-1`) or down (`+1`) in its cluster's order (at an
    /// end it stays); returns the cluster's routes.
    async fn move_route(&self, id: Id, by: i64) -> Result<Vec<Route>, StoreError>;
    /// Sets the order of a cluster's routes: `ids` must list each of them once.
    async fn order_routes(&self, cluster: Id, ids: &[Id]) -> Result<Vec<Route>, StoreError>;
    /// Puts an inbound at the end of `route`'s pool (moving it from any other), or
    /// detaches it with `None`.
    async fn attach_inbound(&self, inbound: Id, route: Option<Id>) -> Result<Inbound, StoreError>;

    /// The user with this subscription token, their credentials and sticky choices,
    /// in one query (a subscription fetch's only read besides the cached topology):
    /// looked up by the token's hash, then compared in constant time.
    async fn subscriber(&self, token: &str, now_ms: i64) -> Result<Option<Subscriber>, StoreError>;

    /// The user's last choice per route, as `(route, inbound)`.
    async fn sticky_choices(&self, user: Id) -> Result<Vec<(Id, Id)>, StoreError>;
    /// Remembers the user's choices, `(route, inbound)`, in one transaction (not
    /// announced: they change no config).
    async fn put_sticky(
        &self,
        user: Id,
        choices: &[(Id, Id)],
        now_ms: i64,
    ) -> Result<(), StoreError>;

    /// A user's devices, most recently seen first.
    async fn devices(&self, user: Id) -> Result<Vec<Device>, StoreError>;
    /// Registers a fetch by `device`: a known one is refreshed; a new one is added
    /// unless the user has `limit` devices already (atomically). Without a limit the
    /// user keeps at most [`MAX_DEVICES`]: a new one beyond them replaces the one seen
    /// least recently.
    async fn register_device(
        &self,
        user: Id,
        device: &DeviceSeen,
        limit: Option<u32>,
        now_ms: i64,
    ) -> Result<DeviceOutcome, StoreError>;
    /// Forgets a device (its app is counted anew at its next fetch).
    async fn delete_device(&self, user: Id, id: Id) -> Result<(), StoreError>;
}
