//! Tunnel halves in the node's config (`spec/tunnel.md`). The panel (or
//! `switchyard tunnel init`) fills these in; credentials and pins are derived there.

use std::net::IpAddr;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use switchyard_tunnel::pool::Balancing;

use super::Secret;

/// One tunnel's half on this node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TunnelConfig {
    /// The tunnel's name; its tag (`tunnel-…`, what routes name), credentials and
    /// certificate name are derived from it, so it never changes.
    pub name: String,
    /// Who listens: `reverse` (the relay listens, origins dial; the default).
    #[serde(default)]
    pub mode: TunnelMode,
    /// How the relay uses several profiles.
    #[serde(default)]
    pub balancing: Balancing,
    /// Links each origin keeps per profile address. Default 4.
    #[serde(default = "four")]
    pub links: usize,
    /// Up to eight ways into the tunnel.
    pub profiles: Vec<TunnelProfile>,
    /// Set on the relay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relay: Option<RelayHalfConfig>,
    /// Set on an origin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<OriginHalfConfig>,
}

fn four() -> usize {
    4
}

/// Which side listens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TunnelMode {
    /// The relay listens and origins dial it (origins need no open port).
    #[default]
    Reverse,
    /// The relay dials the origins.
    Direct,
}

/// One profile: a port, a transport, and where the dialing side finds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TunnelProfile {
    /// The listening side's port.
    pub port: u16,
    /// TLS, or TLS inside WebSocket (through an HTTP reverse proxy or CDN).
    #[serde(default)]
    pub transport: TunnelTransport,
    /// `host:port` addresses the dialing side connects to, all at once.
    #[serde(default)]
    pub addresses: Vec<String>,
}

/// A profile's transport.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum TunnelTransport {
    /// TLS 1.3 on TCP, certificate pinned.
    #[default]
    Tls,
    /// An HTTP/1.1 WebSocket upgrade on `path` (with `host` sent), pinned TLS inside.
    Ws {
        /// The request path.
        path: String,
        /// The `Host` the dialing side sends.
        #[serde(default)]
        host: String,
    },
}

/// The relay's half.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelayHalfConfig {
    /// Reverse mode: address the profiles listen on.
    #[serde(default = "unspecified")]
    pub listen: IpAddr,
    /// Reverse mode: the tunnel certificate (PEM), issued for the tunnel's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert: Option<PathBuf>,
    /// Reverse mode: its key (PEM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<PathBuf>,
    /// Direct mode: the pin of the tunnel certificate the origins present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin: Option<String>,
    /// Origins admitted (reverse) or dialed (direct), with their derived credentials.
    pub origins: Vec<TunnelOrigin>,
}

fn unspecified() -> IpAddr {
    IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED)
}

/// An origin as the relay admits it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TunnelOrigin {
    /// The origin's name.
    pub name: String,
    /// Its credential (64 hex digits).
    pub credential: Secret,
    /// Direct mode: the origin's host name or address (profiles' ports are dialed there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// An origin's half.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OriginHalfConfig {
    /// This origin's name.
    pub name: String,
    /// Its credential (64 hex digits).
    pub credential: Secret,
    /// Reverse mode: the relay certificate's pin, `cert:<hex>` or `key:<hex>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin: Option<String>,
    /// Direct mode: address the profiles listen on.
    #[serde(default = "unspecified")]
    pub listen: IpAddr,
    /// Direct mode: the tunnel certificate (PEM) this origin presents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert: Option<PathBuf>,
    /// Direct mode: its key (PEM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<PathBuf>,
}
