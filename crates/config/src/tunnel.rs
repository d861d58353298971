//! Tunnel halves in the node's config. The panel (or `switchyard tunnel init`) fills
//! these in; credentials ([`crate::credentials`]) and pins are derived there. The
//! tunnel's limits and defaults live here, the one place the panel, the node and the
//! tunnel crate read them from.

use std::net::IpAddr;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::Secret;

/// Most profiles (ways into the tunnel) one tunnel has: each adds a port the listening
/// side binds and its links to every origin. The panel's UI keeps a copy of it
/// (`crates/panel/ui/js/tunnels.js`).
pub const MAX_PROFILES: usize = 8;

/// Links an origin keeps per profile by default. Links set a profile's weight in the
/// pool; four spreads streams over four congestion windows at the cost of four TLS
/// sessions.
pub const LINKS_PER_PROFILE: usize = 4;

/// The largest receive window a stream of a tunnel grows to by default, in bytes: 16
/// MiB fills 1 Gbit/s at 130 ms of round trip. A tunnel's `window_mib` sets it for
/// both halves; it is shape (a change rebuilds the half).
pub const DEFAULT_WINDOW: u32 = 16 * 1024 * 1024;

/// Default most streams (TCP and UDP together) per user in one tunnel. 1024: a
/// browser with many tabs holds a few hundred connections; a quarter of one link's
/// 4096 slots.
pub const STREAMS_PER_USER: usize = 1024;

/// Default most UDP associations per user in one tunnel. 256: each is a stream with
/// its own reply task on the relay and a socket on the origin; QUIC and DNS need a
/// handful per application.
pub const UDP_PER_USER: usize = 256;

/// How the relay uses several profiles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Balancing {
    /// Every connected profile; a new stream takes the link with the fewest open
    /// streams across them.
    #[default]
    Distribute,
    /// The first connected profile in list order; the next only when it has no links.
    Priority,
}

/// What a pin names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PinKind {
    /// One certificate: the SHA-256 of its DER.
    Certificate,
    /// One key: the SHA-256 of the certificate's SubjectPublicKeyInfo, which survives
    /// re-issuing the certificate with the same key.
    PublicKey,
}

/// Reads a pin as configs write it, `cert:<64 hex>` or `key:<64 hex>`: its kind and
/// its hash; `None` when it is neither.
pub fn parse_pin(text: &str) -> Option<(PinKind, [u8; 32])> {
    let (kind, hex) = text.split_once(':')?;
    let kind = match kind {
        "cert" => PinKind::Certificate,
        "key" => PinKind::PublicKey,
        _ => return None,
    };
    Some((kind, crate::hex::decode32(hex)?))
}

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
    /// Links each origin keeps per profile, spread over the profile's addresses (at
    /// least one on each), for every profile that names no `links` of its own. Default
    /// 4 ([`LINKS_PER_PROFILE`]).
    #[serde(default = "four")]
    pub links: usize,
    /// The largest receive window a stream grows to, in MiB, on both halves (1 to
    /// 64). Default 16: fills 1 Gbit/s at 130 ms of round trip; a smaller one bounds
    /// the memory a slow reader holds. Shape: a change rebuilds the half.
    #[serde(default = "sixteen")]
    pub window_mib: u32,
    /// Up to [`MAX_PROFILES`] ways into the tunnel.
    pub profiles: Vec<TunnelProfile>,
    /// Set on the relay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relay: Option<RelayHalfConfig>,
    /// Set on an origin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<OriginHalfConfig>,
}

fn four() -> usize {
    LINKS_PER_PROFILE
}

fn sixteen() -> u32 {
    DEFAULT_WINDOW >> 20
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
    /// Links each origin keeps on this profile (1 to 64), spread over its addresses;
    /// unset: the tunnel's `links`. A profile's links are its weight: one with six
    /// takes three times the streams of one with two.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub links: Option<usize>,
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
        /// The dialing side only: TLS to the CDN or reverse proxy in front of the
        /// listening side, under the upgrade.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outer_tls: Option<OuterTls>,
    },
    /// An HTTP/1.1 upgrade on `path` answered `101`, then the bytes as they are
    /// (HTTPUpgrade), pinned TLS inside: what a CDN that passes upgrades but not
    /// WebSocket framing carries.
    HttpUpgrade {
        /// The request path.
        path: String,
        /// The `Host` the dialing side sends.
        #[serde(default)]
        host: String,
        /// The dialing side only: TLS to the CDN or reverse proxy in front of the
        /// listening side, under the upgrade.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outer_tls: Option<OuterTls>,
    },
    /// XHTTP on `path`: the link's bytes in ordinary HTTP requests (a download and
    /// uploads, or one request each way on HTTP/2), pinned TLS inside: what a CDN
    /// that carries no upgrades at all still passes.
    Xhttp {
        /// The path the requests go under.
        path: String,
        /// The `Host` the dialing side sends.
        #[serde(default)]
        host: String,
        /// How the upload travels (`auto`: stream-up when the CDN's TLS agrees on
        /// HTTP/2, packet-up otherwise).
        #[serde(default)]
        mode: switchyard_proto::xhttp::Mode,
        /// The dialing side only: TLS to the CDN or reverse proxy in front of the
        /// listening side, under the requests.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outer_tls: Option<OuterTls>,
    },
    /// gRPC ("gun") on `/{service_name}/Tun`: each link a gRPC stream on HTTP/2
    /// (cleartext to the listening side, a CDN's TLS in front), pinned TLS inside.
    Grpc {
        /// The gRPC service name: letters, digits, `_`, `.` and `-`.
        service_name: String,
        /// The `:authority` the dialing side sends.
        #[serde(default)]
        host: String,
        /// The dialing side only: TLS to the CDN or reverse proxy in front of the
        /// listening side, under HTTP/2.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outer_tls: Option<OuterTls>,
    },
    /// TLS 1.3 with REALITY on TCP: the listening side answers only the tunnel's
    /// dialing side (its hello sealed with the listening side's key) and splices
    /// everyone else, byte for byte, to `dest`; the public key is the dialing side's
    /// pin. The listening half holds the private key (`reality_private_key`).
    Reality {
        /// The SNI sent: one of the target site's names.
        server_name: String,
        /// The target site, `host:port`.
        dest: String,
        /// The listening side's X25519 public key, base64url (Xray's form).
        public_key: String,
        /// The short id the dialing side presents, 0 to 16 hex digits.
        #[serde(default)]
        short_id: String,
    },
}

/// TLS to a CDN or reverse proxy in front of a profile's listening side: it ends
/// this TLS and passes the upgrade on; the tunnel's own pinned TLS runs inside, end to
/// end, so the proxy never holds the link's key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OuterTls {
    /// The CDN's name: the SNI sent and the name its certificate must carry.
    pub server_name: String,
    /// A root to trust besides the web's (PEM), for a proxy with a private CA; unset:
    /// the web's roots only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_pem: Option<String>,
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
    /// Reverse mode: the certificate as inline PEM (what the panel pushes), instead
    /// of `cert`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_pem: Option<String>,
    /// Reverse mode: its key as inline PEM, instead of `key`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_pem: Option<Secret>,
    /// Reverse mode with REALITY profiles: the X25519 private key (base64url) whose
    /// public key the profiles name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reality_private_key: Option<Secret>,
    /// Direct mode: the pin of the tunnel certificate the origins present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin: Option<String>,
    /// Direct mode: more pins, any of which is accepted (with `pin`, if set): roll a
    /// re-issued certificate out by listing the old and the new pin, then the new.
    /// Pins change live.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pins: Vec<String>,
    /// Origins admitted (reverse) or dialed (direct), with their derived credentials.
    pub origins: Vec<TunnelOrigin>,
    /// Most streams (TCP and UDP) one user may hold in this tunnel. Default 1024
    /// ([`STREAMS_PER_USER`]).
    #[serde(default = "streams_per_user")]
    pub max_streams_per_user: usize,
    /// Most UDP associations one user may hold in this tunnel. Default 256
    /// ([`UDP_PER_USER`]).
    #[serde(default = "udp_per_user")]
    pub max_udp_per_user: usize,
}

fn streams_per_user() -> usize {
    STREAMS_PER_USER
}

fn udp_per_user() -> usize {
    UDP_PER_USER
}

/// `pin` and `pins` together: a single `pin` is still accepted next to the list.
fn all_pins(pin: Option<&String>, pins: &[String]) -> Vec<String> {
    pin.into_iter().chain(pins).cloned().collect()
}

impl RelayHalfConfig {
    /// Direct mode: every pin accepted for the origins' certificate.
    pub fn all_pins(&self) -> Vec<String> {
        all_pins(self.pin.as_ref(), &self.pins)
    }
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
    /// Reverse mode, while credentials rotate: the origin's previous credential,
    /// accepted beside `credential` until the origin runs the new one. Live.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_credential: Option<Secret>,
    /// Direct mode: the origin's host name or address (profiles' ports are dialed there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Direct mode: more hosts of the origin (with `host`, if set): every one is
    /// dialed at every profile's port at once (hot standby), each profile's links
    /// spread over them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
}

impl TunnelOrigin {
    /// Direct mode: every host to dial, `host` first.
    pub fn all_hosts(&self) -> Vec<String> {
        self.host
            .iter()
            .chain(&self.hosts)
            .filter(|h| !h.is_empty())
            .cloned()
            .collect()
    }
}

/// An origin's half.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OriginHalfConfig {
    /// This origin's name.
    pub name: String,
    /// Its credential (64 hex digits). Changes live: new links use it.
    pub credential: Secret,
    /// Direct mode, while credentials rotate: the previous credential, accepted from
    /// the relay beside `credential` until the relay runs the new one. Live.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_credential: Option<Secret>,
    /// Reverse mode: the relay certificate's pin, `cert:<hex>` or `key:<hex>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin: Option<String>,
    /// Reverse mode: more pins, any of which is accepted (with `pin`, if set): roll a
    /// re-issued relay certificate (new key included) out by listing the old and the
    /// new pin, switching the relay, then listing only the new one. Pins change live:
    /// links up stay up.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pins: Vec<String>,
    /// Direct mode: address the profiles listen on.
    #[serde(default = "unspecified")]
    pub listen: IpAddr,
    /// Direct mode: the tunnel certificate (PEM) this origin presents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert: Option<PathBuf>,
    /// Direct mode: its key (PEM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<PathBuf>,
    /// Direct mode: the certificate as inline PEM (what the panel pushes), instead of
    /// `cert`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_pem: Option<String>,
    /// Direct mode: its key as inline PEM, instead of `key`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_pem: Option<Secret>,
    /// Direct mode with REALITY profiles: the X25519 private key (base64url) whose
    /// public key the profiles name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reality_private_key: Option<Secret>,
}

impl OriginHalfConfig {
    /// Reverse mode: every pin accepted for the relay's certificate.
    pub fn all_pins(&self) -> Vec<String> {
        all_pins(self.pin.as_ref(), &self.pins)
    }
}
