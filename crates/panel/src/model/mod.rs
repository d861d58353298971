//! The panel's domain: clusters, servers, inbounds, routes, users, admins, and the
//! rules that validate them. Pure: no I/O, time passed in.
//!
//! One name per concept, the spec's words: a **Server** is a machine running a node;
//! an **Inbound** is one of its listeners, the thing a client dials; a **Route** is one
//! entry in a user's app, a pool of inbounds; a **Cluster** holds servers, inbounds,
//! routes and tunnels (the spec's "cluster page").

pub mod admin;
mod certificate;
pub mod health;
pub mod hysteria2;
pub mod inbound;
pub mod inbound_rules;
pub mod names;
pub mod plan;
pub mod routing;
pub mod snapshot;
pub mod trusted_proxies;
pub mod tunnel;
pub mod user;
pub mod webhook;
pub mod xhttp;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub use admin::{Admin, Ask, Quota, QuotaUse, Role};
pub use health::{Health, HealthSettings, Observation, ServerState};
pub use hysteria2::{InboundHysteria2, check_hysteria2};
pub use inbound::{
    FINGERPRINTS, Flow, Inbound, InboundSecrets, InboundSecurity, InboundTransport, Protocol,
    REALITY_FINGERPRINT, REALITY_MAX_TIME_DIFF_MS, TlsCertificate, check_inbound,
    check_reality_and_flow,
};
pub use inbound_rules::{InboundRules, TunnelDestinations, check_inbound_rules};
pub use plan::{Plan, PlanInput};
pub use trusted_proxies::check_trusted_proxies;
pub use user::{ResetStrategy, Standing, UserStatus, period_start};
pub use webhook::{Webhook, WebhookInput};

/// The Shadowsocks 2022 methods and their key lengths.
pub const SS_METHODS: [(&str, usize); 3] = [
    ("2022-blake3-aes-128-gcm", 16),
    ("2022-blake3-aes-256-gcm", 32),
    ("2022-blake3-chacha20-poly1305", 32),
];

/// The key length of a Shadowsocks 2022 method.
pub fn ss_key_len(method: &str) -> Option<usize> {
    SS_METHODS
        .iter()
        .find(|(m, _)| *m == method)
        .map(|(_, l)| *l)
}

/// Row ids.
pub type Id = i64;

/// A field that failed validation, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct FieldError {
    /// The field, as the API names it (`port`, `transport.path`).
    pub field: String,
    /// What is wrong, for a person.
    pub message: String,
}

impl FieldError {
    /// An error for `field`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// A cluster: servers, inbounds, routes and tunnels that belong together.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Cluster {
    /// Id.
    pub id: Id,
    /// Name shown to operators.
    pub name: String,
    /// Unix ms.
    pub created_ms: i64,
}

/// A server: one machine running a node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Server {
    /// Id.
    pub id: Id,
    /// The cluster it belongs to.
    pub cluster_id: Id,
    /// Name shown to operators.
    pub name: String,
    /// The host name or IP clients dial, unless an inbound names its own.
    pub address: String,
    /// Let this node's users reach loopback and private addresses (off by default:
    /// users must not reach the node's own services or its LAN).
    pub allow_private_destinations: bool,
    /// Pending, online or unavailable.
    pub state: ServerState,
    /// Why it is in that state.
    pub state_reason: String,
    /// Since when (Unix ms).
    pub state_since_ms: i64,
    /// When the instance holding the node's channel last refreshed the state (Unix ms).
    pub refreshed_ms: Option<i64>,
    /// Whether the node has joined (its certificate is pinned).
    pub joined: bool,
    /// The node's host name, as it said when it joined.
    pub hostname: Option<String>,
    /// The node's software version, as its status last said (at the join before).
    pub node_version: Option<String>,
    /// The sha256 of the binary the node runs, as its status last said.
    #[serde(default)]
    pub binary_sha256: Option<String>,
    /// Whether the node runs another binary than the one this panel hands out
    /// (`POST /api/v1/servers/{id}/upgrade` upgrades it); false while either is unknown.
    #[serde(default)]
    pub upgrade_available: bool,
    /// The config version the node reports running.
    pub config_version: Option<u64>,
    /// Users with an open connection, at the last heartbeat.
    pub users_online: u64,
    /// Bytes per second from users, at the last heartbeat.
    pub up_bytes_per_s: u64,
    /// Bytes per second to users, at the last heartbeat.
    pub down_bytes_per_s: u64,
    /// The estimated capacity of the server's channel, bytes per second (both
    /// directions): the peak of observed traffic, cooling down while the server is
    /// not loaded. None until it has seen enough traffic (see `docs/routes.md`).
    pub capacity_bytes_per_s: Option<u64>,
    /// The estimator's state behind `capacity_bytes_per_s`.
    #[serde(skip)]
    #[schema(ignore)]
    pub capacity: switchyard_balance::capacity::Capacity,
    /// Unix ms.
    pub created_ms: i64,
}

impl Server {
    /// The state at `now_ms` alone, as [`Self::at`] judges it, without a copy.
    pub fn state_at(&self, now_ms: i64, settings: HealthSettings) -> ServerState {
        health::stored_state(self.state, self.refreshed_ms, now_ms, settings).0
    }

    /// The state to show at `now_ms`: the stored one, unless its holder stopped
    /// refreshing it (see [`health::stored_state`]).
    pub fn at(mut self, now_ms: i64, settings: HealthSettings) -> Self {
        let (state, reason) = health::stored_state(self.state, self.refreshed_ms, now_ms, settings);
        if state != self.state {
            self.state = state;
            self.state_since_ms = self.refreshed_ms.unwrap_or(self.state_since_ms);
        }
        if let Some(r) = reason {
            self.state_reason = r.into();
        }
        self
    }
}

/// How a route spreads its users over its inbounds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Algorithm {
    /// "Least loaded by traffic": the most free bandwidth per user.
    #[default]
    LeastLoaded,
    /// "Round-robin": the fewest users per coefficient.
    RoundRobin,
}

impl Algorithm {
    /// Its name in the API and the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::LeastLoaded => "least_loaded",
            Self::RoundRobin => "round_robin",
        }
    }

    /// The algorithm named `s`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "least_loaded" => Some(Self::LeastLoaded),
            "round_robin" => Some(Self::RoundRobin),
            _ => None,
        }
    }
}

/// A route: one entry in a user's app, a pool of inbounds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Route {
    /// Id.
    pub id: Id,
    /// The cluster it belongs to.
    pub cluster_id: Id,
    /// The route's sign (`🇺🇸 USA`).
    pub name: String,
    /// A flag (an emoji or a country code), shown beside the name.
    pub flag: Option<String>,
    /// Balancing algorithm.
    pub algorithm: Algorithm,
    /// Order of the route boxes, and of the entries in the subscription.
    pub position: i64,
    /// Created by the panel for the cluster's first inbound.
    pub is_default: bool,
    /// The pool, in order.
    pub inbound_ids: Vec<Id>,
}

/// A user of the VPN.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct User {
    /// Id.
    pub id: Id,
    /// Unique name.
    pub username: String,
    /// Computed from the data at the time of reading.
    pub status: UserStatus,
    /// Switched on by an operator.
    pub enabled: bool,
    /// A note for operators.
    pub note: String,
    /// Bytes allowed per period, both directions; none is unlimited.
    pub traffic_limit: Option<u64>,
    /// When the counter starts over.
    pub reset_strategy: ResetStrategy,
    /// Unix ms after which the user may no longer connect.
    pub expires_ms: Option<i64>,
    /// On hold: the expiry is this many days after the first connection.
    pub on_hold_days: Option<u32>,
    /// The first connection, once seen.
    pub first_connected_ms: Option<i64>,
    /// Bytes from the user in the current period.
    pub used_up: u64,
    /// Bytes to the user in the current period.
    pub used_down: u64,
    /// When the current period began (Unix ms).
    pub period_started_ms: i64,
    /// Bytes in all periods, both directions.
    pub lifetime_bytes: u64,
    /// Last seen with an open connection (Unix ms).
    pub online_ms: Option<i64>,
    /// The subscription URL's path, `/sub/{token}`.
    pub subscription_path: String,
    /// Unix ms.
    pub created_ms: i64,
    /// At most this many devices (apps sending `x-hwid`) get servers; none is no limit.
    pub device_limit: Option<u32>,
    /// At most this many source addresses (IP addresses) with connections open at once,
    /// on each server; none is no limit.
    pub address_limit: Option<u32>,
    /// The clusters whose routes the user sees; all when unset.
    pub clusters: Option<Vec<Id>>,
    /// The reseller (or other admin) who owns the user; none: the service's own.
    #[serde(default)]
    pub admin_id: Option<Id>,
}

impl User {
    /// What decides the status.
    pub fn standing(&self) -> Standing {
        Standing {
            enabled: self.enabled,
            traffic_limit: self.traffic_limit,
            used: self.used_up.saturating_add(self.used_down),
            expires_ms: self.expires_ms,
            on_hold_days: self.on_hold_days,
            first_connected_ms: self.first_connected_ms,
        }
    }
}

/// A user's credentials, generated by the panel, sent only to nodes and in the user's
/// own subscription.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// VLESS UUID.
    pub vless_uuid: String,
    /// Trojan password.
    pub trojan_password: String,
    /// 32 random bytes (base64) from which each Shadowsocks method's key is cut.
    pub ss_seed: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Credentials(<redacted>)")
    }
}

/// Checks a display name: 1–64 characters, no control or format characters
/// ([`names`]).
pub fn check_name(field: &str, name: &str) -> Result<(), FieldError> {
    let n = name.chars().count();
    if name.trim().is_empty() {
        return Err(FieldError::new(field, "must not be empty"));
    }
    if n > 64 {
        return Err(FieldError::new(field, "must be at most 64 characters"));
    }
    names::check_visible(field, name)
}

/// Checks a user name: 1–64 of letters, digits, `_ . @ -`.
pub fn check_username(field: &str, name: &str) -> Result<(), FieldError> {
    if name.is_empty() || name.len() > 64 {
        return Err(FieldError::new(field, "must be 1 to 64 characters"));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"_.@-".contains(&b))
    {
        return Err(FieldError::new(
            field,
            "may contain only letters, digits and _ . @ -",
        ));
    }
    Ok(())
}

/// Checks a host name or IP address clients will dial.
pub fn check_host(field: &str, host: &str) -> Result<(), FieldError> {
    if host.is_empty() || host.len() > 253 {
        return Err(FieldError::new(
            field,
            "must be a host name or an IP address",
        ));
    }
    if host.parse::<std::net::IpAddr>().is_ok() {
        return Ok(());
    }
    let ok = host.split('.').all(|label| {
        !label.is_empty()
            && label.len() <= 63
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    });
    if ok {
        Ok(())
    } else {
        Err(FieldError::new(
            field,
            format!("{host:?} is not a host name or an IP address"),
        ))
    }
}

/// Checks a REALITY `dest` (`host:port`) with the node's own function
/// ([`switchyard_proto::dest::check`]); `allow_private` is its server's
/// `allow_private_destinations` (true to check the form alone).
pub fn check_dest(field: &str, dest: &str, allow_private: bool) -> Result<(), FieldError> {
    switchyard_proto::dest::check(dest, allow_private)
        .map(|_| ())
        .map_err(|e| FieldError::new(field, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_hosts() {
        assert!(check_name("name", "🇺🇸 New York").is_ok());
        assert_eq!(
            check_name("name", " ").unwrap_err().message,
            "must not be empty"
        );
        assert!(check_name("name", &"x".repeat(65)).is_err());
        assert!(check_name("name", "a\nb").is_err());
        assert!(check_username("username", "alice.b@x-y_z").is_ok());
        assert!(check_username("username", "alice bob").is_err());
        assert!(check_host("host", "vpn.example.com").is_ok());
        assert!(check_host("host", "127.0.0.1").is_ok());
        assert!(check_host("host", "::1").is_ok());
        assert!(check_host("host", "-bad.example").is_err());
        assert!(check_host("host", "a..b").is_err());
    }
}
