//! Inbounds: the user-facing listeners, their protocol, transport and security.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::{AcmeSettings, Secret};

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
    /// Hysteria 2: QUIC on the inbound's UDP port, under TLS, with HTTP/3
    /// authentication (users' `hysteria2` passwords); its own settings are
    /// [`InboundConfig::hysteria2`].
    Hysteria2,
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
    /// HTTPUpgrade: an HTTP/1.1 upgrade request for `path` (and `host`, when set),
    /// answered `101`, then the bytes as they are (no WebSocket framing).
    HttpUpgrade {
        /// The request path, starting with `/`.
        path: String,
        /// The expected `Host` header; any when unset.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        host: Option<String>,
    },
    /// gRPC ("gun"): HTTP/2 requests for `/{service_name}/Tun` (and, Xray's multi mode,
    /// `/{service_name}/TunMulti`), each one a stream carried in gRPC messages;
    /// several streams share one connection.
    Grpc {
        /// The gRPC service name: letters, digits, `_`, `.` and `-`.
        service_name: String,
    },
    /// XHTTP: the stream in ordinary HTTP/1.1 or HTTP/2 requests under `path`
    /// (`switchyard_proto::xhttp`), as Xray speaks it.
    Xhttp(switchyard_proto::xhttp::Settings),
}

/// What protects the transport.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum Security {
    /// Nothing (Shadowsocks brings its own encryption; others only for tests or behind
    /// a TLS-terminating proxy).
    #[default]
    None,
    /// TLS 1.2/1.3 with a certificate chain and key: from PEM files (`cert`, `key`),
    /// inline PEM (`cert_pem`, `key_pem`, as the panel pushes them) or an ACME server
    /// (`acme`); exactly one of the three forms (see [`Security::tls_source`]).
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
        /// A certificate the node obtains and renews itself from an ACME server,
        /// answering its TLS-ALPN-01 challenge on this inbound's port (public ACME
        /// servers validate on port 443). Until the first one arrives, handshakes
        /// other than the challenge's fail.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        acme: Option<AcmeSettings>,
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
    /// An ACME server.
    Acme(&'a AcmeSettings),
}

impl Security {
    /// TLS from PEM files.
    pub fn tls_files(cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Self {
        Self::Tls {
            cert: Some(cert.into()),
            key: Some(key.into()),
            cert_pem: None,
            key_pem: None,
            acme: None,
        }
    }

    /// TLS from inline PEM.
    pub fn tls_inline(cert_pem: impl Into<String>, key_pem: impl Into<String>) -> Self {
        Self::Tls {
            cert: None,
            key: None,
            cert_pem: Some(cert_pem.into()),
            key_pem: Some(Secret::new(key_pem)),
            acme: None,
        }
    }

    /// TLS with a certificate from an ACME server.
    pub fn tls_acme(settings: AcmeSettings) -> Self {
        Self::Tls {
            cert: None,
            key: None,
            cert_pem: None,
            key_pem: None,
            acme: Some(settings),
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
                acme: None,
            } => Some(TlsSource::Files { cert, key }),
            Self::Tls {
                cert: None,
                key: None,
                cert_pem: Some(cert_pem),
                key_pem: Some(key_pem),
                acme: None,
            } => Some(TlsSource::Inline { cert_pem, key_pem }),
            Self::Tls {
                cert: None,
                key: None,
                cert_pem: None,
                key_pem: None,
                acme: Some(acme),
            } => Some(TlsSource::Acme(acme)),
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
    /// Hysteria 2 only: its settings; unset, every default of
    /// [`Hysteria2Settings`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hysteria2: Option<Hysteria2Settings>,
    /// WebSocket, HTTPUpgrade, XHTTP and gRPC only: the CDN or reverse proxy networks
    /// (`"173.245.48.0/20"`, `"2400:cb00::/32"`, a bare address) whose
    /// `X-Forwarded-For` names the user's own address, for the address limit and logs
    /// (docs/node.md, "Behind a CDN: the user's address"). Empty (the default): the
    /// header is ignored. At most [`MAX_TRUSTED_PROXIES`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trusted_proxies: Vec<String>,
}

/// The most networks an inbound's `trusted_proxies` lists.
pub const MAX_TRUSTED_PROXIES: usize = 256;

impl InboundConfig {
    /// The networks of [`Self::trusted_proxies`] (validation refuses one that does not
    /// read; such an entry is left out here).
    pub fn trusted_networks(&self) -> Vec<switchyard_proto::forwarded::Cidr> {
        self.trusted_proxies
            .iter()
            .filter_map(|net| net.parse().ok())
            .collect()
    }
}

/// A Hysteria 2 inbound's own settings (docs/node.md, "Hysteria 2").
///
/// The rates are in megabits per second from the node's side, as the official
/// server's `bandwidth` names them: `up_mbps` is what the node sends a client,
/// `down_mbps` what it takes from one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hysteria2Settings {
    /// Salamander obfuscation: with a password every UDP packet is scrambled with it
    /// (no QUIC or TLS visible on the wire) and clients must give the same one
    /// (`obfs: salamander`); unset, plain QUIC. A secret: reads show `"<redacted>"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub obfs_password: Option<Secret>,
    /// The most the node sends one client, Mbit/s: a client that declares its
    /// download rate gets Brutal at the lower of the two. Unset: the client's rate
    /// as it declares it (BBR for a client that declares none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_mbps: Option<u64>,
    /// The most the node takes from one client, Mbit/s, told to clients at
    /// authentication (`Hysteria-CC-RX`). Unset: no limit (`0`), clients send at
    /// their own declared rate or congestion control.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down_mbps: Option<u64>,
    /// Whether users' UDP is carried (QUIC datagrams). On by default.
    #[serde(default = "yes")]
    pub udp: bool,
    /// Port hopping: more UDP ports the inbound serves besides `port`, `"first-last"`
    /// (at most [`MAX_HOP_PORTS`]), one QUIC endpoint on all of them; clients hop
    /// across them (sing-box `server_ports`, mihomo `ports`). Unset: `port` alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<String>,
    /// The masquerade: a web site (`http://host[:port]` or `https://host[:port]`)
    /// whose answers everyone who does not authenticate gets, passed through over
    /// HTTP/1.1 (`https` checked against the web's roots). Unset: a bare web server's
    /// `404 page not found`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub masquerade: Option<String>,
}

/// The most ports a Hysteria 2 inbound hops across: each is a socket the endpoint
/// polls. A wider range is a firewall's job (a redirect of the range to `port`).
pub const MAX_HOP_PORTS: u32 = 100;

impl Hysteria2Settings {
    /// Whether `url` is a masquerade site the node takes: `http://` or `https://`, a
    /// host name or IP address, an optional port 1-65535, at most 2048 bytes.
    pub fn masquerade_ok(url: &str) -> bool {
        crate::validate::inbounds::masquerade_ok(url)
    }

    /// The hopping range of [`Self::ports`], or why it does not read.
    pub fn hop_ports(&self) -> Result<Option<std::ops::RangeInclusive<u16>>, &'static str> {
        let Some(text) = &self.ports else {
            return Ok(None);
        };
        let form = "write it first-last, e.g. \"20000-20099\"";
        let (first, last) = text.split_once('-').ok_or(form)?;
        let first: u16 = first.trim().parse().map_err(|_| form)?;
        let last: u16 = last.trim().parse().map_err(|_| form)?;
        if first == 0 || first > last {
            return Err("first-last with 1 <= first <= last");
        }
        if u32::from(last - first) + 1 > MAX_HOP_PORTS {
            return Err("at most 100 ports (a wider range: redirect it to `port` in the firewall)");
        }
        Ok(Some(first..=last))
    }
}

impl Default for Hysteria2Settings {
    fn default() -> Self {
        Self {
            obfs_password: None,
            up_mbps: None,
            down_mbps: None,
            udp: true,
            ports: None,
            masquerade: None,
        }
    }
}

fn yes() -> bool {
    true
}

fn unspecified() -> IpAddr {
    IpAddr::V4(Ipv4Addr::UNSPECIFIED)
}
