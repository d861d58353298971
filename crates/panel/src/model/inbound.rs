//! Inbounds: a server's listeners, the things a client dials. Their protocol,
//! transport and security, the secrets the panel makes for them, and the rules that
//! check an inbound as a whole (each error names the field).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub use super::certificate::TlsCertificate;
use super::{FieldError, Id, check_host};

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
    /// Hysteria 2: QUIC under TLS ([`super::hysteria2`]).
    Hysteria2,
}

impl Protocol {
    /// Its name in the API and the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Vless => "vless",
            Self::Trojan => "trojan",
            Self::Shadowsocks => "shadowsocks",
            Self::Hysteria2 => "hysteria2",
        }
    }

    /// The protocol named `s`.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "vless" => Self::Vless,
            "trojan" => Self::Trojan,
            "shadowsocks" => Self::Shadowsocks,
            "hysteria2" => Self::Hysteria2,
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
    /// HTTPUpgrade: an HTTP/1.1 upgrade request, answered `101`, then the bytes as
    /// they are (no WebSocket framing). Every client app family of the
    /// subscription formats speaks it (Xray-based apps, sing-box 1.8+, mihomo).
    #[serde(rename = "httpupgrade")]
    HttpUpgrade {
        /// The request path, starting with `/`, without a query.
        #[schema(max_length = 256, pattern = r"^/[^?\x00-\x1f\x7f-\x9f]*$")]
        path: String,
        /// The `Host` the node expects and clients send; any when unset.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        host: Option<String>,
    },
    /// gRPC ("gun"): each stream an HTTP/2 request to `/{service_name}/Tun`, several
    /// on one connection. VLESS or Trojan, plain or TLS (not REALITY). Every client
    /// app family speaks plain gun; Xray's multi mode (`/{service_name}/TunMulti`)
    /// reaches Xray-based apps only, the others get plain gun, which the node
    /// serves as well.
    Grpc {
        /// The gRPC service name: 1 to 128 letters, digits, `_`, `.` and `-`.
        #[schema(min_length = 1, max_length = 128, pattern = r"^[A-Za-z0-9_.-]{1,128}$")]
        service_name: String,
        /// Xray's multi mode for the apps that speak it (default false).
        #[serde(default)]
        multi_mode: bool,
    },
    /// XHTTP: the stream as HTTP requests under a path ([`super::xhttp`]).
    Xhttp(super::xhttp::InboundXhttp),
}

/// Whether `name` is a gRPC service name the panel accepts: 1 to 128 letters, digits,
/// `_`, `.` and `-` (what gRPC's own service names use, so it passes every app's
/// path handling and a CDN unescaped).
pub fn is_grpc_service_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
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
    /// REALITY (VLESS over TCP only): the node borrows a real site, the target
    /// (`dest`); clients that prove they know the inbound's key get a TLS 1.3 session
    /// with the node, every other connection is spliced to the target, so a prober
    /// sees that site. The panel makes the X25519 key pair: the private key goes only
    /// to the node, the public key is the inbound's `reality_public_key`.
    Reality {
        /// The target, `host:port` (a name, an IPv4 address or `[v6]:port`): a real
        /// HTTPS site with TLS 1.3 whose names are `server_names`.
        #[schema(max_length = 260, example = "www.example.com:443")]
        dest: String,
        /// The SNI names clients may use, the target's own; at least one. Clients get
        /// the first.
        #[schema(min_items = 1, max_items = 32)]
        server_names: Vec<String>,
        /// The short ids clients may present, each 0 to 16 hex digits (an even
        /// number); clients get the first. None given: the panel makes one (8
        /// random bytes) and keeps it across changes.
        #[serde(default)]
        #[schema(max_items = 16)]
        short_ids: Vec<String>,
        /// The most a client's clock may differ from the node's, in ms; 0 leaves it
        /// unchecked (default 60000: see `REALITY_MAX_TIME_DIFF_MS`).
        #[serde(default = "default_max_time_diff_ms")]
        #[schema(maximum = 3600000)]
        max_time_diff_ms: u64,
        /// The browser whose TLS hello clients imitate (uTLS), default `chrome`.
        #[serde(default = "default_fingerprint")]
        fingerprint: String,
    },
}

/// The default clock difference a REALITY inbound allows its clients, in ms: one
/// minute. A client whose clock is further off gets the target site instead of the
/// VPN; in return replayed hellos are refused for good (the node remembers the
/// hellos of twice this window), where 0 (unchecked, Xray's default) leaves a hello
/// replayed more than 10 to 20 minutes later accepted again.
pub const REALITY_MAX_TIME_DIFF_MS: u64 = 60_000;

/// The default uTLS fingerprint of REALITY clients.
pub const REALITY_FINGERPRINT: &str = "chrome";

/// The uTLS fingerprints every client app of the subscription formats knows (Xray,
/// mihomo, sing-box).
pub const FINGERPRINTS: [&str; 9] = [
    "chrome", "firefox", "safari", "ios", "android", "edge", "360", "qq", "random",
];

fn default_max_time_diff_ms() -> u64 {
    REALITY_MAX_TIME_DIFF_MS
}

fn default_fingerprint() -> String {
    REALITY_FINGERPRINT.to_owned()
}

impl InboundSecurity {
    /// Whether clients speak TLS or REALITY to it.
    pub fn encrypts(&self) -> bool {
        !matches!(self, Self::None)
    }
}

/// A VLESS flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
pub enum Flow {
    /// XTLS Vision (VLESS over TCP with TLS or REALITY).
    #[serde(rename = "xtls-rprx-vision")]
    Vision,
}

impl Flow {
    /// Its name in the API, the node's config and client apps.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Vision => "xtls-rprx-vision",
        }
    }
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
    /// VLESS over TCP with TLS or REALITY only: the flow its users must use.
    pub flow: Option<Flow>,
    /// Hysteria 2 only: its own settings (its obfs password never shown).
    pub hysteria2: Option<super::InboundHysteria2>,
    /// WebSocket, HTTPUpgrade, XHTTP and gRPC only: the CDN's or proxy's networks whose
    /// `X-Forwarded-For` names the user's address ([`super::trusted_proxies`]).
    #[serde(default)]
    #[schema(max_items = 256)]
    pub trusted_proxies: Vec<String>,
    /// What the node does with its users' connections before they leave
    /// ([`super::inbound_rules`]).
    #[serde(default)]
    pub rules: super::InboundRules,
    /// REALITY only: the X25519 public key the panel made (base64url; clients'
    /// `publicKey`, `pbk`). Its private key is never shown.
    pub reality_public_key: Option<String>,
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
    /// REALITY's X25519 private key (base64url), sent only to the node.
    pub reality_private_key: Option<String>,
    /// Its public half: no secret, made with it and shown as
    /// [`Inbound::reality_public_key`].
    pub reality_public_key: Option<String>,
    /// Hysteria 2's Salamander password, when the inbound obfuscates.
    pub hy2_obfs_password: Option<String>,
}

impl std::fmt::Debug for InboundSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InboundSecrets(<redacted>)")
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
    if let InboundTransport::HttpUpgrade { path, host } = transport {
        if !path.starts_with('/')
            || path.len() > 256
            || path.contains('?')
            || path.chars().any(char::is_control)
        {
            return Err(FieldError::new(
                "transport.path",
                "must start with /, have no query and be at most 256 characters",
            ));
        }
        if let Some(h) = host {
            check_host("transport.host", h)?;
        }
    }
    if let InboundTransport::Grpc { service_name, .. } = transport
        && !is_grpc_service_name(service_name)
    {
        return Err(FieldError::new(
            "transport.service_name",
            "must be 1 to 128 letters, digits, _, . and -",
        ));
    }
    if let InboundTransport::Xhttp(x) = transport {
        super::xhttp::check_xhttp(x, matches!(protocol, Protocol::Vless | Protocol::Trojan))?;
    }
    match (protocol, method) {
        (Protocol::Shadowsocks, None) => {
            return Err(FieldError::new(
                "method",
                "a Shadowsocks inbound needs a 2022 method",
            ));
        }
        (Protocol::Shadowsocks, Some(m)) if super::ss_key_len(m).is_none() => {
            return Err(FieldError::new(
                "method",
                format!(
                    "{m:?} is not one of {}",
                    super::SS_METHODS.map(|(m, _)| m).join(", ")
                ),
            ));
        }
        (Protocol::Vless | Protocol::Trojan | Protocol::Hysteria2, Some(_)) => {
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
    if let InboundSecurity::Tls { certificate } = security {
        if protocol == Protocol::Hysteria2 && matches!(certificate, TlsCertificate::Acme { .. }) {
            return Err(FieldError::new(
                "security.certificate",
                "Hysteria 2 listens on UDP, and the ACME challenge comes over TCP: use certificate files or self-signed",
            ));
        }
        certificate.check()?;
    }
    Ok(())
}

/// Checks REALITY's fields and the flow, the rest of the inbound checked by
/// [`check_inbound`]: the node's rules ([`switchyard_config::reality`]: REALITY and
/// Vision need VLESS over TCP, Vision with TLS or REALITY; the target, the names, the
/// short ids), then the panel's own (a REALITY inbound's SNI is its first server name,
/// not `sni`; limits on names and short ids; the clock difference; the fingerprint).
pub fn check_reality_and_flow(
    protocol: Protocol,
    transport: &InboundTransport,
    security: &InboundSecurity,
    flow: Option<Flow>,
    sni: Option<&str>,
) -> Result<(), FieldError> {
    use switchyard_config::reality;

    let vless_tcp = protocol == Protocol::Vless && *transport == InboundTransport::Tcp;
    let shared = |p: reality::FieldProblem| FieldError::new(p.field, p.problem);
    reality::check_flow(flow.is_some(), vless_tcp, security.encrypts()).map_err(shared)?;
    let InboundSecurity::Reality {
        dest,
        server_names,
        short_ids,
        max_time_diff_ms,
        fingerprint,
    } = security
    else {
        return Ok(());
    };
    // The node's rules, written once for both; `dest` by its form alone: whether it
    // may be private is its server's (`Service::check_inbound_dest`).
    reality::check_inbound(&reality::RealityInbound {
        vless_tcp: vless_tcp
            || matches!(
                transport,
                InboundTransport::Grpc { .. } | InboundTransport::Xhttp(_)
            ),
        dest,
        allow_private: true,
        server_names,
        short_ids,
    })
    .map_err(shared)?;
    if sni.is_some() {
        return Err(FieldError::new(
            "sni",
            "a REALITY inbound's clients use its first server name: leave sni unset",
        ));
    }
    if server_names.len() > 32 {
        return Err(FieldError::new("security.server_names", "at most 32 names"));
    }
    for (i, name) in server_names.iter().enumerate() {
        let field = format!("security.server_names[{i}]");
        if name.parse::<std::net::IpAddr>().is_ok() {
            return Err(FieldError::new(
                field,
                "must be a host name, not an address",
            ));
        }
        check_host(&field, name)?;
    }
    if short_ids.len() > 16 {
        return Err(FieldError::new(
            "security.short_ids",
            "at most 16 short ids",
        ));
    }
    if *max_time_diff_ms > 3_600_000 {
        return Err(FieldError::new(
            "security.max_time_diff_ms",
            "must be 0 (unchecked) to 3600000 (an hour)",
        ));
    }
    if !FINGERPRINTS.contains(&fingerprint.as_str()) {
        return Err(FieldError::new(
            "security.fingerprint",
            format!("must be one of {}", FINGERPRINTS.join(", ")),
        ));
    }
    Ok(())
}

#[cfg(test)]
#[path = "inbound_grpc_tests.rs"]
mod grpc_tests;

#[cfg(test)]
#[path = "inbound_tests.rs"]
mod tests;
