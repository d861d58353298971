//! The node's configuration: one typed structure, read from TOML by hand or JSON from
//! the panel, validated as a whole before it replaces the running one.
//!
//! Every default lives here, with the trade-off it makes.

mod parse;
mod secret;
mod tunnel;
mod validate;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use secret::{REDACTED, Secret, constant_time_eq};
pub use tunnel::{
    OriginHalfConfig, RelayHalfConfig, TunnelConfig, TunnelMode, TunnelOrigin, TunnelProfile,
    TunnelTransport,
};
pub use validate::{ConfigError, MAX_CHACHA_USERS, parse_uuid, ss_key};

/// The whole node configuration.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    /// Set by whoever writes the config (the panel counts up); informational for the
    /// node, reported in status so the writer knows what is applied.
    #[serde(default)]
    pub version: u64,
    /// Node-wide settings.
    #[serde(default)]
    pub node: NodeSettings,
    /// The control API.
    #[serde(default)]
    pub control: ControlSettings,
    /// User-facing listeners.
    #[serde(default)]
    pub inbounds: Vec<InboundConfig>,
    /// Users and their credentials.
    #[serde(default)]
    pub users: Vec<UserConfig>,
    /// Where traffic can go. `direct` and `block` exist even when not listed.
    #[serde(default)]
    pub outbounds: Vec<OutboundConfig>,
    /// Which outbound carries what.
    #[serde(default)]
    pub route: RouteConfig,
    /// Tunnel halves on this node.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tunnels: Vec<TunnelConfig>,
}

/// Node-wide settings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NodeSettings {
    /// Where the node keeps its last good config and its traffic journal.
    pub state_dir: PathBuf,
    /// Let users reach loopback, private, link-local and other non-global addresses.
    /// Off by default: a user must not reach the node's admin ports or its LAN.
    pub allow_private_destinations: bool,
    /// A client must finish its handshake (TLS, WebSocket, protocol header) within this
    /// many seconds. 10 s: a slow mobile link finishes well inside it, a prober that
    /// trickles bytes is cut soon.
    pub handshake_timeout_s: u64,
    /// A proxied connection with no traffic either way for this many seconds is closed.
    /// 300 s: long enough for idle keep-alive connections of apps, short enough to free
    /// the memory of dead ones.
    pub idle_timeout_s: u64,
    /// A connection that fails authentication and has no fallback is held this many
    /// seconds, then closed without a word, so probers learn nothing from timing.
    pub unauthenticated_hold_s: u64,
    /// Connections of one inbound that may be in their handshake (or held after a
    /// failed one) at once; past it new connections are closed at once. 4096: real
    /// handshakes take milliseconds, so only a flood reaches it.
    pub max_unauthenticated: usize,
    /// Of those, from one source address. 256: one phone opening a page's worth of
    /// connections over a slow link, or many users behind one CGNAT address, stay well
    /// inside it; one prober holding idle sockets takes at most a sixteenth.
    pub max_unauthenticated_per_source: usize,
}

impl Default for NodeSettings {
    fn default() -> Self {
        Self {
            state_dir: PathBuf::from("switchyard-node-state"),
            allow_private_destinations: false,
            handshake_timeout_s: 10,
            idle_timeout_s: 300,
            unauthenticated_hold_s: 30,
            max_unauthenticated: 4096,
            max_unauthenticated_per_source: 256,
        }
    }
}

/// The control API (status, stats, config, metrics).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ControlSettings {
    /// Address of the HTTP API. Must be a loopback address: remote control arrives over
    /// the channel the node dials to the panel (a later part), never an open port.
    pub listen: SocketAddr,
    /// Serve `GET /metrics` without the bearer token, for a Prometheus that can't send
    /// one. Off by default: the metrics name every inbound and their traffic.
    pub metrics_without_token: bool,
}

impl Default for ControlSettings {
    fn default() -> Self {
        Self {
            listen: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 9090),
            metrics_without_token: false,
        }
    }
}

/// The protocol an inbound speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// VLESS (no flow), TCP and UDP.
    Vless,
    /// Trojan, CONNECT and UDP ASSOCIATE.
    Trojan,
    /// Shadowsocks 2022, multi-user.
    Shadowsocks,
    /// SOCKS5 with username/password, for local use and tests.
    Socks,
}

/// How bytes travel under the protocol.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum Transport {
    /// Raw TCP.
    #[default]
    Tcp,
    /// WebSocket: the upgrade request must ask for `path` (and `host`, when set).
    Ws {
        /// The request path, starting with `/`.
        path: String,
        /// The expected `Host` header; any when unset.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        host: Option<String>,
    },
}

/// What protects the transport.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum Security {
    /// Nothing (Shadowsocks brings its own encryption; others only for tests or behind
    /// a TLS-terminating proxy).
    #[default]
    None,
    /// TLS 1.2/1.3 with a certificate chain and key: from PEM files (`cert`, `key`) or
    /// inline PEM (`cert_pem`, `key_pem`, as the panel pushes them); exactly one of
    /// the two forms (see [`Security::tls_source`]).
    Tls {
        /// The certificate chain, a PEM file.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cert: Option<PathBuf>,
        /// The private key, a PEM file.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<PathBuf>,
        /// The certificate chain, PEM text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cert_pem: Option<String>,
        /// The private key, PEM text (a secret: reads show `"<redacted>"`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key_pem: Option<Secret>,
    },
    /// REALITY (VLESS over TCP only): clients whose ClientHello carries valid REALITY
    /// auth get a TLS 1.3 session with the node; every other connection is spliced
    /// byte for byte to `dest`, so a prober sees that site (docs/node.md, "REALITY").
    Reality {
        /// The target site, `host:port` (a name or an address; `[v6]:port`): a real
        /// HTTPS server with TLS 1.3 whose names are `server_names`.
        dest: String,
        /// The SNI names a client may ask for, the target's own; `""` accepts a
        /// hello without SNI. Compared without regard to ASCII case.
        server_names: Vec<String>,
        /// The X25519 private key, base64url without padding (`switchyard node
        /// reality-keys` makes one; a secret: reads show `"<redacted>"`).
        private_key: Secret,
        /// Short ids clients may present: 0 to 16 hex digits each (an even number),
        /// `""` included; at least one.
        short_ids: Vec<String>,
        /// The largest difference allowed between a client's clock and the node's, in
        /// milliseconds; 0 (the default, as Xray's) leaves it unchecked. A limit
        /// (say 60000) also bounds how long replayed hellos must be remembered.
        #[serde(default)]
        max_time_diff_ms: u64,
        /// The oldest client version accepted (Xray's `x.y.z`), if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min_client_version: Option<String>,
        /// The newest client version accepted, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_client_version: Option<String>,
    },
}

/// Where a TLS inbound's certificate and key come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsSource<'a> {
    /// PEM files.
    Files {
        /// The certificate chain's file.
        cert: &'a std::path::Path,
        /// The key's file.
        key: &'a std::path::Path,
    },
    /// PEM text in the config.
    Inline {
        /// The certificate chain.
        cert_pem: &'a str,
        /// The key.
        key_pem: &'a Secret,
    },
}

impl Security {
    /// TLS from PEM files.
    pub fn tls_files(cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Self {
        Self::Tls {
            cert: Some(cert.into()),
            key: Some(key.into()),
            cert_pem: None,
            key_pem: None,
        }
    }

    /// TLS from inline PEM.
    pub fn tls_inline(cert_pem: impl Into<String>, key_pem: impl Into<String>) -> Self {
        Self::Tls {
            cert: None,
            key: None,
            cert_pem: Some(cert_pem.into()),
            key_pem: Some(Secret::new(key_pem)),
        }
    }

    /// Where the certificate comes from: `None` without TLS, or when the fields are
    /// not exactly one complete form (validation refuses that, naming the field).
    pub fn tls_source(&self) -> Option<TlsSource<'_>> {
        match self {
            Self::Tls {
                cert: Some(cert),
                key: Some(key),
                cert_pem: None,
                key_pem: None,
            } => Some(TlsSource::Files { cert, key }),
            Self::Tls {
                cert: None,
                key: None,
                cert_pem: Some(cert_pem),
                key_pem: Some(key_pem),
            } => Some(TlsSource::Inline { cert_pem, key_pem }),
            _ => None,
        }
    }
}

/// A VLESS flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Flow {
    /// XTLS Vision: padding while the inner TLS handshake runs, then the inner TLS
    /// records go straight over TCP (docs/node.md, "Vision").
    #[serde(rename = "xtls-rprx-vision")]
    Vision,
}

impl Flow {
    /// The flow's name in VLESS requests and share links.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Vision => "xtls-rprx-vision",
        }
    }
}

/// The Shadowsocks 2022 methods the node serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SsMethod {
    /// `2022-blake3-aes-128-gcm` (16-byte keys).
    #[serde(rename = "2022-blake3-aes-128-gcm")]
    Aes128Gcm,
    /// `2022-blake3-aes-256-gcm` (32-byte keys).
    #[serde(rename = "2022-blake3-aes-256-gcm")]
    Aes256Gcm,
    /// `2022-blake3-chacha20-poly1305` (32-byte keys).
    #[serde(rename = "2022-blake3-chacha20-poly1305")]
    Chacha20Poly1305,
}

impl SsMethod {
    /// Key length in bytes.
    pub const fn key_len(self) -> usize {
        match self {
            Self::Aes128Gcm => 16,
            Self::Aes256Gcm | Self::Chacha20Poly1305 => 32,
        }
    }
}

/// One user-facing listener.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InboundConfig {
    /// Unique id (letters, digits, `-`, `_`); names the inbound in stats and the API.
    pub tag: String,
    /// What operators and users see.
    #[serde(default)]
    pub name: String,
    /// The protocol.
    pub protocol: Protocol,
    /// Address to listen on; all addresses by default.
    #[serde(default = "unspecified")]
    pub listen: IpAddr,
    /// Port to listen on.
    pub port: u16,
    /// Transport under the protocol.
    #[serde(default)]
    pub transport: Transport,
    /// TLS, REALITY or nothing.
    #[serde(default)]
    pub security: Security,
    /// Where a connection that fails authentication is handed, byte for byte (a web
    /// server, so an active prober sees an ordinary website).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<SocketAddr>,
    /// VLESS over TCP with TLS or REALITY only: the flow its users must use for TCP
    /// (`"xtls-rprx-vision"`). Without it, Vision is still accepted from clients that
    /// ask for it; with it, a TCP request without Vision is refused like Xray's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<Flow>,
    /// Shadowsocks only: the method.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<SsMethod>,
    /// Shadowsocks only: the server key (base64), the first part of users' passwords.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<Secret>,
}

fn unspecified() -> IpAddr {
    IpAddr::V4(Ipv4Addr::UNSPECIFIED)
}

/// A user and the credentials it may use.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserConfig {
    /// Unique name; traffic is counted under it.
    pub name: String,
    /// A disabled user is refused and its connections are closed.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// VLESS UUID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vless: Option<Secret>,
    /// Trojan password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trojan: Option<Secret>,
    /// Shadowsocks 2022 user key (base64, the method's key length).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shadowsocks: Option<Secret>,
    /// SOCKS5 password (the user name is `name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socks: Option<Secret>,
    /// The most distinct source addresses the user may have online at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address_limit: Option<u32>,
}

fn yes() -> bool {
    true
}

/// Where traffic can go.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutboundConfig {
    /// Unique tag that routes name.
    pub tag: String,
    /// What it does.
    #[serde(rename = "type")]
    pub kind: OutboundKind,
}

/// Kinds of outbound.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutboundKind {
    /// Connect to the destination from this node.
    Direct,
    /// Refuse.
    Block,
}

/// Routing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RouteConfig {
    /// The outbound for what no rule matches. Unset: the tunnel when this node is the
    /// relay of exactly one, else `direct`.
    #[serde(rename = "final", default, skip_serializing_if = "Option::is_none")]
    pub final_outbound: Option<String>,
    /// Rules tried in order; the first that matches picks the outbound.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<crate::route::Rule>,
}

impl NodeConfig {
    /// Parses TOML (a config file) and validates it.
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        let config: Self = parse::toml(text)?;
        config.validate()?;
        Ok(config)
    }

    /// Parses JSON (from the panel or the control API) and validates it.
    pub fn from_json(text: &str) -> Result<Self, ConfigError> {
        let config: Self = parse::json(text)?;
        config.validate()?;
        Ok(config)
    }

    /// Parses JSON without validating it (the control API fills in the node's own
    /// fields first); errors name the field as [`Self::from_json`]'s do.
    pub(crate) fn parse_json(text: &str) -> Result<Self, ConfigError> {
        parse::json(text)
    }

    /// The state directory a config file names, read leniently (for finding the last
    /// good config when the file itself does not parse): `node.state_dir` if it can be
    /// read, else the default, relative to the file's directory either way.
    pub fn default_state_dir_of(path: &std::path::Path) -> PathBuf {
        #[derive(Deserialize)]
        struct Lenient {
            node: Option<LenientNode>,
        }
        #[derive(Deserialize)]
        struct LenientNode {
            state_dir: Option<PathBuf>,
        }
        let dir = std::fs::read_to_string(path)
            .ok()
            .and_then(|t| toml::from_str::<Lenient>(&t).ok())
            .and_then(|l| l.node?.state_dir)
            .unwrap_or_else(|| NodeSettings::default().state_dir);
        path.parent().unwrap_or(std::path::Path::new(".")).join(dir)
    }

    /// The outbound for what no rule matches: `route.final`, else the tunnel when this
    /// node is the relay of exactly one, else `direct`.
    pub fn final_tag(&self) -> String {
        if let Some(tag) = &self.route.final_outbound {
            return tag.clone();
        }
        let relays: Vec<&TunnelConfig> =
            self.tunnels.iter().filter(|t| t.relay.is_some()).collect();
        match relays.as_slice() {
            [one] => switchyard_tunnel::credentials::tunnel_tag(&one.name),
            _ => "direct".into(),
        }
    }

    /// The tags of the tunnels this node relays.
    pub fn relay_tags(&self) -> Vec<String> {
        self.tunnels
            .iter()
            .filter(|t| t.relay.is_some())
            .map(|t| switchyard_tunnel::credentials::tunnel_tag(&t.name))
            .collect()
    }

    /// Where the outbound tagged `tag` sends traffic: a built-in, an `[[outbounds]]`
    /// entry, or a tunnel this node relays.
    pub fn via(&self, tag: &str) -> Option<crate::outbound::Via> {
        use crate::outbound::Via;
        if let Some(kind) = self.outbound(tag) {
            return Some(match kind {
                OutboundKind::Direct => Via::Direct,
                OutboundKind::Block => Via::Block,
            });
        }
        self.relay_tags()
            .into_iter()
            .find(|t| t == tag)
            .map(Via::Tunnel)
    }

    /// The kind of the outbound tagged `tag` (`direct` and `block` are built in).
    pub fn outbound(&self, tag: &str) -> Option<OutboundKind> {
        self.outbounds
            .iter()
            .find(|o| o.tag == tag)
            .map(|o| o.kind)
            .or(match tag {
                "direct" => Some(OutboundKind::Direct),
                "block" => Some(OutboundKind::Block),
                _ => None,
            })
    }
}
