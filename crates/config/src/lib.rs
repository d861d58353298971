//! # The node config contract
//!
//! What the panel writes and the node runs: one typed [`NodeConfig`] (inbounds, users,
//! outbounds, routing rules, tunnel halves), read from TOML by hand or JSON from the
//! panel with errors that name the field, and validated as a whole
//! ([`NodeConfig::validate`]) before it replaces the running one. Every default lives
//! here, with the trade-off it makes.
//!
//! Each rule the panel and the node both apply is written here once, so the panel
//! refuses at input what the node would refuse at push:
//! - REALITY inbounds and the Vision flow ([`reality::check_inbound`],
//!   [`reality::check_flow`]; a target's destination through
//!   `switchyard_proto::dest::check`, as everywhere);
//! - the tunnels' limits and defaults ([`MAX_PROFILES`], [`tunnel`]), the values
//!   derived from a tunnel's secret ([`credentials`]) and the pins' syntax
//!   ([`tunnel::parse_pin`]);
//! - what a routing rule matches ([`route`]).
//!
//! No I/O: no files, no sockets, no clock, no tokio; the crate reads strings. The one
//! thing it takes from the system is randomness, for new REALITY keys
//! ([`reality::generate`]).

#![warn(missing_docs)]

pub mod acme;
pub mod credentials;
pub mod hex;
mod inbound;
mod outbound;
mod parse;
pub mod reality;
pub mod route;
mod secret;
pub mod tunnel;
mod user;
mod validate;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use acme::AcmeSettings;
pub use inbound::{
    Flow, Hysteria2Settings, InboundConfig, MAX_HOP_PORTS, MAX_TRUSTED_PROXIES, Protocol, Security,
    SsMethod, TlsSource, Transport,
};
pub use outbound::{OutboundConfig, OutboundKind, RouteConfig, Via};
pub use secret::{REDACTED, Secret, constant_time_eq};
pub use tunnel::{
    Balancing, MAX_PROFILES, OriginHalfConfig, OuterTls, RelayHalfConfig, TunnelConfig, TunnelMode,
    TunnelOrigin, TunnelProfile, TunnelTransport,
};
pub use user::UserConfig;
pub use validate::{ConfigError, MAX_CHACHA_USERS, SsKeyError, parse_uuid, ss_key};

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

    /// Parses JSON without validating it (the node's control API fills in the node's
    /// own fields first); errors name the field as [`Self::from_json`]'s do.
    pub fn parse_json(text: &str) -> Result<Self, ConfigError> {
        parse::json(text)
    }

    /// The state directory a config file's text names, read leniently (for finding the
    /// last good config when the text itself does not parse): `node.state_dir` if it
    /// can be read, else `None`. Reading the file is the node's.
    pub fn state_dir_in(text: &str) -> Option<PathBuf> {
        #[derive(Deserialize)]
        struct Lenient {
            node: Option<LenientNode>,
        }
        #[derive(Deserialize)]
        struct LenientNode {
            state_dir: Option<PathBuf>,
        }
        toml::from_str::<Lenient>(text).ok()?.node?.state_dir
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
            [one] => credentials::tunnel_tag(&one.name),
            _ => "direct".into(),
        }
    }

    /// The tags of the tunnels this node relays.
    pub fn relay_tags(&self) -> Vec<String> {
        self.tunnels
            .iter()
            .filter(|t| t.relay.is_some())
            .map(|t| credentials::tunnel_tag(&t.name))
            .collect()
    }

    /// Where the outbound tagged `tag` sends traffic: a built-in, an `[[outbounds]]`
    /// entry, or a tunnel this node relays.
    pub fn via(&self, tag: &str) -> Option<Via> {
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
