//! The panel's domain: clusters, servers, inbounds, routes, users, admins, and the
//! rules that validate them. Pure: no I/O, time passed in.
//!
//! One name per concept, the spec's words: a **Server** is a machine running a node;
//! an **Inbound** is one of its listeners, the thing a client dials; a **Route** is one
//! entry in a user's app, a pool of inbounds; a **Cluster** holds servers, inbounds,
//! routes and tunnels (the spec's "cluster page").

pub mod health;
pub mod tunnel;
pub mod user;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub use health::{Health, HealthSettings, Observation, ServerState};
pub use user::{ResetStrategy, Standing, UserStatus, period_start};

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
    /// The node's software version.
    pub node_version: Option<String>,
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

/// The protocol an inbound speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// VLESS.
    Vless,
    /// Trojan.
    Trojan,
    /// Shadowsocks 2022 (multi-user).
    Shadowsocks,
}

impl Protocol {
    /// Its name in the API and the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Vless => "vless",
            Self::Trojan => "trojan",
            Self::Shadowsocks => "shadowsocks",
        }
    }

    /// The protocol named `s`.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "vless" => Self::Vless,
            "trojan" => Self::Trojan,
            "shadowsocks" => Self::Shadowsocks,
            _ => return None,
        })
    }
}

/// How bytes travel under the protocol.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum InboundTransport {
    /// Raw TCP.
    #[default]
    Tcp,
    /// WebSocket.
    Ws {
        /// The request path, starting with `/`.
        #[schema(max_length = 256, pattern = r"^/[^\x00-\x1f\x7f-\x9f]*$")]
        path: String,
        /// The `Host` the node expects and clients send; any when unset.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        host: Option<String>,
    },
}

/// Where a TLS inbound's certificate comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "source", rename_all = "snake_case", deny_unknown_fields)]
pub enum TlsCertificate {
    /// The panel generates a self-signed certificate for the inbound's SNI and gives
    /// it to clients in the subscription to pin (sing-box) or to accept without a CA
    /// (share links, `allowInsecure=1`). For first looks and tests; use a real
    /// certificate in production.
    SelfSigned,
    /// PEM files on the node (for example kept fresh by an ACME client there).
    Files {
        /// The certificate chain's path on the node.
        cert: String,
        /// The private key's path on the node.
        key: String,
    },
}

/// What protects the transport.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum InboundSecurity {
    /// Nothing (Shadowsocks brings its own encryption).
    #[default]
    None,
    /// TLS.
    Tls {
        /// Where the certificate comes from.
        certificate: TlsCertificate,
    },
}

/// One listener on a server: what a client dials.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Inbound {
    /// Id.
    pub id: Id,
    /// The server it runs on.
    pub server_id: Id,
    /// The name users see in their app (`🇺🇸 New York`).
    pub name: String,
    /// The protocol.
    pub protocol: Protocol,
    /// The port the node listens on.
    pub port: u16,
    /// Transport.
    pub transport: InboundTransport,
    /// TLS or none.
    pub security: InboundSecurity,
    /// The address clients dial; the server's address when unset.
    pub host: Option<String>,
    /// The TLS server name clients send; `host` (or the server's address) when unset.
    pub sni: Option<String>,
    /// The weight in round-robin balancing (2.0 takes about twice the users of 1.0).
    pub coefficient: f64,
    /// Shadowsocks only: the 2022 method.
    pub method: Option<String>,
    /// The route holding it, if any.
    pub route_id: Option<Id>,
    /// Unix ms.
    pub created_ms: i64,
}

/// Secrets of an inbound, generated by the panel, never shown by the API.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct InboundSecrets {
    /// Shadowsocks server key (base64).
    pub ss_server_key: Option<String>,
    /// Self-signed certificate (PEM), shown to clients to pin.
    pub tls_cert_pem: Option<String>,
    /// Its key (PEM).
    pub tls_key_pem: Option<String>,
}

impl std::fmt::Debug for InboundSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InboundSecrets(<redacted>)")
    }
}

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
    /// The clusters whose routes the user sees; all when unset.
    pub clusters: Option<Vec<Id>>,
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

/// An operator who may log in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Admin {
    /// Id.
    pub id: Id,
    /// Login name.
    pub username: String,
    /// Unix ms.
    pub created_ms: i64,
}

/// Checks a display name: 1–64 characters, no control characters.
pub fn check_name(field: &str, name: &str) -> Result<(), FieldError> {
    let n = name.chars().count();
    if name.trim().is_empty() {
        return Err(FieldError::new(field, "must not be empty"));
    }
    if n > 64 {
        return Err(FieldError::new(field, "must be at most 64 characters"));
    }
    if name.chars().any(char::is_control) {
        return Err(FieldError::new(
            field,
            "must not contain control characters",
        ));
    }
    Ok(())
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

/// What an inbound may look like, checked as a whole (so the error names the field).
pub fn check_inbound(
    protocol: Protocol,
    port: u16,
    transport: &InboundTransport,
    security: &InboundSecurity,
    method: Option<&str>,
    coefficient: f64,
) -> Result<(), FieldError> {
    if port == 0 {
        return Err(FieldError::new("port", "must be 1 to 65535"));
    }
    if !(coefficient.is_finite() && coefficient > 0.0 && coefficient <= 1000.0) {
        return Err(FieldError::new(
            "coefficient",
            "must be greater than 0 and at most 1000",
        ));
    }
    if let InboundTransport::Ws { path, host } = transport {
        if !path.starts_with('/') || path.len() > 256 || path.chars().any(char::is_control) {
            return Err(FieldError::new(
                "transport.path",
                "must start with / and be at most 256 characters",
            ));
        }
        if let Some(h) = host {
            check_host("transport.host", h)?;
        }
    }
    match (protocol, method) {
        (Protocol::Shadowsocks, None) => {
            return Err(FieldError::new(
                "method",
                "a Shadowsocks inbound needs a 2022 method",
            ));
        }
        (Protocol::Shadowsocks, Some(m)) if ss_key_len(m).is_none() => {
            return Err(FieldError::new(
                "method",
                format!(
                    "{m:?} is not one of {}",
                    SS_METHODS.map(|(m, _)| m).join(", ")
                ),
            ));
        }
        (Protocol::Vless | Protocol::Trojan, Some(_)) => {
            return Err(FieldError::new(
                "method",
                "only Shadowsocks inbounds have a method",
            ));
        }
        _ => {}
    }
    if protocol == Protocol::Shadowsocks && *security != InboundSecurity::None {
        return Err(FieldError::new(
            "security",
            "Shadowsocks brings its own encryption: security must be none",
        ));
    }
    if protocol == Protocol::Shadowsocks && *transport != InboundTransport::Tcp {
        return Err(FieldError::new(
            "transport",
            "Shadowsocks inbounds run over tcp",
        ));
    }
    if let InboundSecurity::Tls {
        certificate: TlsCertificate::Files { cert, key },
    } = security
    {
        for (field, p) in [
            ("security.certificate.cert", cert),
            ("security.certificate.key", key),
        ] {
            if p.is_empty() || !p.starts_with('/') {
                return Err(FieldError::new(
                    field,
                    "must be an absolute path on the node",
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inbound_errors_name_the_field() {
        let ws = InboundTransport::Ws {
            path: "nope".into(),
            host: None,
        };
        let none = InboundSecurity::None;
        let e = |r: Result<(), FieldError>| r.unwrap_err().field;
        assert_eq!(
            e(check_inbound(
                Protocol::Vless,
                0,
                &InboundTransport::Tcp,
                &none,
                None,
                1.0
            )),
            "port"
        );
        assert_eq!(
            e(check_inbound(Protocol::Vless, 443, &ws, &none, None, 1.0)),
            "transport.path"
        );
        assert_eq!(
            e(check_inbound(
                Protocol::Vless,
                443,
                &InboundTransport::Tcp,
                &none,
                None,
                0.0
            )),
            "coefficient"
        );
        assert_eq!(
            e(check_inbound(
                Protocol::Vless,
                443,
                &InboundTransport::Tcp,
                &none,
                None,
                f64::NAN
            )),
            "coefficient"
        );
        assert_eq!(
            e(check_inbound(
                Protocol::Shadowsocks,
                443,
                &InboundTransport::Tcp,
                &none,
                None,
                1.0
            )),
            "method"
        );
        assert_eq!(
            e(check_inbound(
                Protocol::Shadowsocks,
                443,
                &InboundTransport::Tcp,
                &none,
                Some("aes-128-gcm"),
                1.0
            )),
            "method"
        );
        assert_eq!(
            e(check_inbound(
                Protocol::Trojan,
                443,
                &InboundTransport::Tcp,
                &none,
                Some("2022-blake3-aes-128-gcm"),
                1.0
            )),
            "method"
        );
        let tls = InboundSecurity::Tls {
            certificate: TlsCertificate::SelfSigned,
        };
        assert_eq!(
            e(check_inbound(
                Protocol::Shadowsocks,
                443,
                &InboundTransport::Tcp,
                &tls,
                Some("2022-blake3-aes-128-gcm"),
                1.0
            )),
            "security"
        );
        let files = InboundSecurity::Tls {
            certificate: TlsCertificate::Files {
                cert: "cert.pem".into(),
                key: "/k.pem".into(),
            },
        };
        assert_eq!(
            e(check_inbound(
                Protocol::Trojan,
                443,
                &InboundTransport::Tcp,
                &files,
                None,
                1.0
            )),
            "security.certificate.cert"
        );
        assert!(
            check_inbound(
                Protocol::Vless,
                443,
                &InboundTransport::Tcp,
                &tls,
                None,
                2.0
            )
            .is_ok()
        );
    }

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
