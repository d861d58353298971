//! The inbounds' section: tags, ports, transports, TLS, REALITY, the protocols'
//! own fields and the flow.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;

use base64::Engine as _;

use super::{ConfigError, invalid, tag_ok};
use crate::reality::RealityInbound;
use crate::{InboundConfig, NodeConfig, Protocol, Security, SsMethod, Transport};

/// Most users with Shadowsocks keys a `2022-blake3-chacha20-poly1305` inbound serves.
/// Without identity headers every new TCP connection and every new UDP session is
/// opened by trying each user's key in turn (one ChaCha20-Poly1305 open of a 27-byte
/// chunk, about a microsecond each), so a prober's connection costs at most 1,000 of
/// them, about a millisecond of CPU.
pub const MAX_CHACHA_USERS: usize = 1000;

pub use switchyard_proto::vless::parse_uuid;

/// Why a Shadowsocks 2022 key was refused. Never the key nor a character of it: it is
/// a secret.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SsKeyError {
    /// A character that is not base64.
    #[error("not base64 (a bad character at offset {0})")]
    BadCharacter(usize),
    /// A length base64 can't have.
    #[error("not base64 ({0} characters)")]
    BadLength(usize),
    /// Padding in the wrong place.
    #[error("not base64 (bad padding)")]
    BadPadding,
    /// A key of another length than the method's.
    #[error(
        "decodes to {len} bytes; {method:?} needs {} (generate one with `openssl rand -base64 {}`)",
        method.key_len(),
        method.key_len()
    )]
    WrongLength {
        /// The decoded key's length.
        len: usize,
        /// The method it is for.
        method: SsMethod,
    },
}

/// Decodes a Shadowsocks 2022 key (standard base64) and checks its length.
pub fn ss_key(text: &str, method: SsMethod) -> Result<Vec<u8>, SsKeyError> {
    let key = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| {
            use base64::DecodeError as E;
            match e {
                E::InvalidByte(at, _) | E::InvalidLastSymbol(at, _) => SsKeyError::BadCharacter(at),
                E::InvalidLength(n) => SsKeyError::BadLength(n),
                E::InvalidPadding => SsKeyError::BadPadding,
            }
        })?;
    if key.len() != method.key_len() {
        return Err(SsKeyError::WrongLength {
            len: key.len(),
            method,
        });
    }
    Ok(key)
}

/// A REALITY inbound's fields: the rules the panel checks too
/// ([`crate::reality::check_inbound`]), then the node's own (the private key, at least
/// one short id, the client versions). `f` names a field of the inbound;
/// `allow_private` is `node.allow_private_destinations`.
/// The longest HTTPUpgrade path accepted: it is one line of a request head the
/// node reads at most 8 KiB of.
const MAX_HTTP_UPGRADE_PATH: usize = 1024;

/// An HTTPUpgrade transport's path (`/` first, visible ASCII, no query: HTTPUpgrade
/// has no early data here) and host (a DNS name or an IP address).
fn validate_http_upgrade(
    path: &str,
    host: Option<&str>,
    f: &impl Fn(&str) -> String,
) -> Result<(), ConfigError> {
    if !path.starts_with('/') {
        return Err(invalid(f("transport.path"), "must start with '/'"));
    }
    if path.len() > MAX_HTTP_UPGRADE_PATH {
        return Err(invalid(
            f("transport.path"),
            format!("longer than {MAX_HTTP_UPGRADE_PATH} bytes"),
        ));
    }
    if !path.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(invalid(
            f("transport.path"),
            "use visible ASCII only (no spaces or control characters; percent-encode the rest)",
        ));
    }
    if path.contains('?') {
        return Err(invalid(
            f("transport.path"),
            "a query is not part of the path (HTTPUpgrade takes no early-data hint)",
        ));
    }
    if let Some(host) = host
        && !host_ok(host)
    {
        return Err(invalid(
            f("transport.host"),
            format!("{host:?} is not a host name or IP address (give it without port)"),
        ));
    }
    Ok(())
}

/// An inbound's `trusted_proxies`: only on transports that carry HTTP headers, at
/// most [`crate::MAX_TRUSTED_PROXIES`], each a network or an address.
fn validate_trusted_proxies(
    ib: &InboundConfig,
    f: &impl Fn(&str) -> String,
) -> Result<(), ConfigError> {
    if ib.trusted_proxies.is_empty() {
        return Ok(());
    }
    let headers = matches!(
        ib.transport,
        Transport::Ws { .. }
            | Transport::HttpUpgrade { .. }
            | Transport::Xhttp(_)
            | Transport::Grpc { .. }
    );
    if !headers || ib.protocol == Protocol::Hysteria2 {
        return Err(invalid(
            f("trusted_proxies"),
            "is for ws, httpupgrade, xhttp and grpc inbounds (their requests carry X-Forwarded-For)",
        ));
    }
    let max = crate::MAX_TRUSTED_PROXIES;
    if ib.trusted_proxies.len() > max {
        return Err(invalid(
            f("trusted_proxies"),
            format!("at most {max} networks"),
        ));
    }
    for (j, net) in ib.trusted_proxies.iter().enumerate() {
        net.parse::<switchyard_proto::forwarded::Cidr>()
            .map_err(|e| invalid(f(&format!("trusted_proxies[{j}]")), e.to_string()))?;
    }
    Ok(())
}

/// The longest gRPC service name.
const MAX_GRPC_SERVICE_NAME: usize = 128;

/// A gRPC inbound: a service name of letters, digits, `_`, `.` and `-` (it is the
/// first segment of the request path), under nothing, TLS or REALITY (REALITY's rules
/// are checked with REALITY's). Its protocol (VLESS or Trojan) is checked with the
/// protocols': SOCKS and Shadowsocks take plain TCP only.
fn validate_grpc(service_name: &str, f: &impl Fn(&str) -> String) -> Result<(), ConfigError> {
    if service_name.is_empty() {
        return Err(invalid(f("transport.service_name"), "must not be empty"));
    }
    if service_name.len() > MAX_GRPC_SERVICE_NAME {
        return Err(invalid(
            f("transport.service_name"),
            format!("longer than {MAX_GRPC_SERVICE_NAME} characters"),
        ));
    }
    if !service_name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
    {
        return Err(invalid(
            f("transport.service_name"),
            "use letters, digits, '_', '.' and '-' only",
        ));
    }
    Ok(())
}

/// The longest `x_padding_bytes` an XHTTP inbound may ask for (16 KiB: the padding
/// travels in request lines and response headers).
const MAX_XHTTP_PADDING: u32 = 16 * 1024;
/// The largest `sc_max_each_post_bytes` (16 MiB: one POST is held whole).
const MAX_XHTTP_POST: u32 = 16 * 1024 * 1024;
/// The most `sc_max_buffered_posts`.
const MAX_XHTTP_BUFFERED_POSTS: u32 = 1024;

/// An XHTTP inbound: a path (`/` first, visible ASCII, at most one `?` followed by
/// `name=value` pairs sent with every request, `x_padding` not among them), a host,
/// and its ranges within bounds. Its protocol (VLESS or Trojan) is checked with the
/// protocols': SOCKS and Shadowsocks take plain TCP only.
fn validate_xhttp(
    settings: &switchyard_proto::xhttp::Settings,
    f: &impl Fn(&str) -> String,
) -> Result<(), ConfigError> {
    let path = settings.path.as_str();
    if !path.starts_with('/') {
        return Err(invalid(f("transport.path"), "must start with '/'"));
    }
    if path.len() > MAX_HTTP_UPGRADE_PATH {
        return Err(invalid(
            f("transport.path"),
            format!("longer than {MAX_HTTP_UPGRADE_PATH} bytes"),
        ));
    }
    if !path.bytes().all(|b| b.is_ascii_graphic()) || path.contains('#') {
        return Err(invalid(
            f("transport.path"),
            "use visible ASCII only, no '#' (no spaces or control characters; percent-encode the rest)",
        ));
    }
    if let Some((_, query)) = path.split_once('?') {
        let pairs_ok = !query.is_empty()
            && !query.contains('?')
            && query.split('&').all(|pair| {
                pair.split_once('=').is_some_and(|(name, _)| {
                    !name.is_empty() && name != switchyard_proto::xhttp::PADDING_PARAM
                })
            });
        if !pairs_ok {
            return Err(invalid(
                f("transport.path"),
                "after '?' only name=value pairs joined by '&' (sent with every request; x_padding is the node's)",
            ));
        }
    }
    if let Some(host) = settings.host.as_deref()
        && !host_ok(host)
    {
        return Err(invalid(
            f("transport.host"),
            format!("{host:?} is not a host name or IP address (give it without port)"),
        ));
    }
    if settings.x_padding_bytes.to > MAX_XHTTP_PADDING {
        return Err(invalid(
            f("transport.x_padding_bytes"),
            format!("at most {MAX_XHTTP_PADDING} bytes"),
        ));
    }
    let post = settings.sc_max_each_post_bytes;
    if post.to == 0 || post.to > MAX_XHTTP_POST {
        return Err(invalid(
            f("transport.sc_max_each_post_bytes"),
            format!("the largest must be 1 to {MAX_XHTTP_POST} bytes"),
        ));
    }
    if !(1..=MAX_XHTTP_BUFFERED_POSTS).contains(&settings.sc_max_buffered_posts) {
        return Err(invalid(
            f("transport.sc_max_buffered_posts"),
            format!("must be 1 to {MAX_XHTTP_BUFFERED_POSTS}"),
        ));
    }
    if settings.xmux.max_concurrency.is_some() && settings.xmux.max_connections.is_some() {
        return Err(invalid(
            f("transport.xmux.max_connections"),
            "give max_concurrency or max_connections, not both",
        ));
    }
    Ok(())
}

/// The highest rate a Hysteria 2 inbound may name, Mbit/s: 100 Gbit/s.
const MAX_HYSTERIA2_MBPS: u64 = 100_000;

/// A Hysteria 2 inbound: QUIC under TLS on its UDP port, nothing under it (no
/// transport, fallback or REALITY), its obfs password non-empty and its rates
/// 1 to [`MAX_HYSTERIA2_MBPS`] Mbit/s.
fn validate_hysteria2(ib: &InboundConfig, f: &impl Fn(&str) -> String) -> Result<(), ConfigError> {
    if !matches!(ib.security, Security::Tls { .. }) {
        return Err(invalid(
            f("security"),
            "hysteria2 runs over QUIC, which needs TLS: give a certificate (type = \"tls\")",
        ));
    }
    if ib.transport != Transport::Tcp {
        return Err(invalid(
            f("transport"),
            "hysteria2 is its own transport (QUIC over UDP): leave transport unset",
        ));
    }
    if ib.fallback.is_some() {
        return Err(invalid(
            f("fallback"),
            "hysteria2 has no fallback: a client that does not authenticate gets a web server's 404",
        ));
    }
    let Some(h) = &ib.hysteria2 else {
        return Ok(());
    };
    if h.obfs_password
        .as_ref()
        .is_some_and(|p| p.expose().is_empty())
    {
        return Err(invalid(
            f("hysteria2.obfs_password"),
            "must not be empty (leave it out for no obfuscation)",
        ));
    }
    if let Some(url) = &h.masquerade
        && !masquerade_ok(url)
    {
        return Err(invalid(
            f("hysteria2.masquerade"),
            "a web site's URL, http://host[:port] or https://host[:port] (no user name)",
        ));
    }
    for (field, rate) in [
        ("hysteria2.up_mbps", h.up_mbps),
        ("hysteria2.down_mbps", h.down_mbps),
    ] {
        if let Some(rate) = rate
            && !(1..=MAX_HYSTERIA2_MBPS).contains(&rate)
        {
            return Err(invalid(
                f(field),
                format!("must be 1-{MAX_HYSTERIA2_MBPS} Mbit/s (leave it out for no limit)"),
            ));
        }
    }
    Ok(())
}

/// Whether `url` is `http://` or `https://`, a host ([`host_ok`]), an optional port
/// 1-65535, then nothing or a path; at most 2048 bytes.
pub(crate) fn masquerade_ok(url: &str) -> bool {
    let Some(rest) = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
    else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => match v6.split_once(']') {
            Some((ip, after)) => (&authority[..ip.len() + 2], after.strip_prefix(':')),
            None => return false,
        },
        None => match authority.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        },
    };
    let port_ok = port.is_none_or(|p| p.parse::<u16>().is_ok_and(|p| p > 0));
    url.len() <= 2048 && port_ok && host_ok(host)
}

/// Whether `host` is an IP address (IPv6 bracketed or not) or a DNS name: labels of
/// 1-63 letters, digits, '-' or '_', not starting or ending with '-', 253 bytes at
/// most.
fn host_ok(host: &str) -> bool {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if bare.parse::<IpAddr>().is_ok() {
        return true;
    }
    super::dns_name(host, true)
}

fn validate_reality(
    ib: &InboundConfig,
    f: &dyn Fn(&str) -> String,
    allow_private: bool,
) -> Result<(), ConfigError> {
    use switchyard_proto::reality::{ClientVersion, PrivateKey};
    let Security::Reality {
        dest,
        server_names,
        private_key,
        short_ids,
        max_time_diff_ms: _,
        min_client_version,
        max_client_version,
    } = &ib.security
    else {
        return Ok(());
    };
    crate::reality::check_inbound(&RealityInbound {
        // gRPC and XHTTP (VLESS or Trojan) run over REALITY too, as Xray's clients
        // speak them: HTTP/2 inside REALITY's TLS.
        vless_tcp: (ib.protocol == Protocol::Vless && ib.transport == Transport::Tcp)
            || matches!(ib.transport, Transport::Grpc { .. } | Transport::Xhttp(_)),
        dest,
        allow_private,
        server_names,
        short_ids,
    })
    .map_err(|p| invalid(f(&p.field), p.problem))?;
    // Never the key itself in the message: it is a secret.
    PrivateKey::parse(private_key.expose()).map_err(|e| {
        invalid(
            f("security.private_key"),
            format!("{e}: an X25519 private key is 32 bytes in base64url (make one with `switchyard node reality-keys`)"),
        )
    })?;
    if short_ids.is_empty() {
        return Err(invalid(
            f("security.short_ids"),
            "needs at least one (\"\" is one)",
        ));
    }
    let version = |text: &Option<String>, field: &str| {
        text.as_deref()
            .map(ClientVersion::parse)
            .transpose()
            .map_err(|e| invalid(f(field), e.to_string()))
    };
    let min = version(min_client_version, "security.min_client_version")?;
    let max = version(max_client_version, "security.max_client_version")?;
    if let (Some(min), Some(max)) = (min, max)
        && min > max
    {
        return Err(invalid(
            f("security.max_client_version"),
            format!("{max} is older than min_client_version {min}"),
        ));
    }
    Ok(())
}

impl NodeConfig {
    /// An inbound's ACME settings: each field, at least one identifier, and a TCP
    /// port for the challenge (a Hysteria 2 inbound, on UDP, shares the certificate
    /// of a TCP inbound with the same settings, which answers for it).
    fn validate_acme(
        &self,
        i: usize,
        acme: &crate::AcmeSettings,
        f: &impl Fn(&str) -> String,
    ) -> Result<(), ConfigError> {
        acme.check()
            .map_err(|p| invalid(f(&format!("security.acme.{}", p.field)), p.problem))?;
        if acme.identifiers.is_empty() {
            return Err(invalid(
                f("security.acme.identifiers"),
                "name at least one DNS name or IP address the certificate is for",
            ));
        }
        if self.inbounds[i].protocol == Protocol::Hysteria2 {
            let answered = self.inbounds.iter().any(|o| {
                o.protocol != Protocol::Hysteria2
                    && matches!(&o.security, Security::Tls { acme: Some(a), .. } if a == acme)
            });
            if !answered {
                return Err(invalid(
                    f("security.acme"),
                    "hysteria2 listens on UDP, and the ACME challenge (TLS-ALPN-01) comes over TCP: add a TCP TLS inbound with the same acme settings (it answers for both), or give cert and key",
                ));
            }
        }
        Ok(())
    }

    pub(super) fn validate_inbounds(&self) -> Result<(), ConfigError> {
        let mut tags = HashSet::new();
        let mut ports: HashMap<u16, Vec<(IpAddr, usize)>> = HashMap::new();
        for (i, ib) in self.inbounds.iter().enumerate() {
            let f = |name: &str| format!("inbounds[{i}].{name}");
            if !tag_ok(&ib.tag) {
                return Err(invalid(f("tag"), "use 1-64 letters, digits, '-' or '_'"));
            }
            if !tags.insert(ib.tag.as_str()) {
                return Err(invalid(
                    f("tag"),
                    format!("{:?} is used by another inbound", ib.tag),
                ));
            }
            if ib.port == 0 {
                return Err(invalid(f("port"), "must be 1-65535"));
            }
            let same_port = ports.entry(ib.port).or_default();
            if let Some((_, j)) = same_port.iter().find(|(ip, _)| {
                *ip == ib.listen || ip.is_unspecified() || ib.listen.is_unspecified()
            }) {
                return Err(invalid(
                    f("port"),
                    format!(
                        "{}:{} overlaps inbounds[{j}] ({:?})",
                        ib.listen, ib.port, self.inbounds[*j].tag
                    ),
                ));
            }
            same_port.push((ib.listen, i));
            // A Hysteria 2 inbound's hopping ports are its ports too.
            let hops = match (&ib.protocol, &ib.hysteria2) {
                (Protocol::Hysteria2, Some(h)) => h
                    .hop_ports()
                    .map_err(|e| invalid(f("hysteria2.ports"), e))?,
                _ => None,
            };
            for port in hops.into_iter().flatten().filter(|p| *p != ib.port) {
                let same_port = ports.entry(port).or_default();
                if let Some((_, j)) = same_port.iter().find(|(ip, _)| {
                    *ip == ib.listen || ip.is_unspecified() || ib.listen.is_unspecified()
                }) {
                    return Err(invalid(
                        f("hysteria2.ports"),
                        format!(
                            "{}:{port} overlaps inbounds[{j}] ({:?})",
                            ib.listen, self.inbounds[*j].tag
                        ),
                    ));
                }
                same_port.push((ib.listen, i));
            }
            if let Transport::Ws { path, .. } = &ib.transport
                && !path.starts_with('/')
            {
                return Err(invalid(f("transport.path"), "must start with '/'"));
            }
            if let Transport::Ws { path, .. } = &ib.transport
                && let Some((_, query)) = path.split_once('?')
                && !query
                    .strip_prefix("ed=")
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            {
                return Err(invalid(
                    f("transport.path"),
                    "a query is not part of the path: only `?ed=N` (the early-data hint of share links, ignored) may follow it",
                ));
            }
            if let Transport::HttpUpgrade { path, host } = &ib.transport {
                validate_http_upgrade(path, host.as_deref(), &f)?;
            }
            if let Transport::Grpc { service_name } = &ib.transport {
                validate_grpc(service_name, &f)?;
            }
            if let Transport::Xhttp(settings) = &ib.transport {
                validate_xhttp(settings, &f)?;
            }
            if let Security::Tls {
                cert,
                key,
                cert_pem,
                key_pem,
                acme,
            } = &ib.security
            {
                let files = cert.is_some() || key.is_some();
                let inline = cert_pem.is_some() || key_pem.is_some();
                if [files, inline, acme.is_some()]
                    .iter()
                    .filter(|x| **x)
                    .count()
                    > 1
                {
                    return Err(invalid(
                        f("security"),
                        "give one of cert and key (PEM files), cert_pem and key_pem (inline PEM) or acme, not more",
                    ));
                }
                if let Some(acme) = acme {
                    self.validate_acme(i, acme, &f)?;
                }
                let missing = if acme.is_some() {
                    None
                } else if files {
                    match (cert, key) {
                        (None, _) => Some("security.cert"),
                        (_, None) => Some("security.key"),
                        _ => None,
                    }
                } else if inline {
                    match (cert_pem, key_pem) {
                        (None, _) => Some("security.cert_pem"),
                        (_, None) => Some("security.key_pem"),
                        _ => None,
                    }
                } else {
                    Some("security.cert")
                };
                if let Some(field) = missing {
                    return Err(invalid(
                        f(field),
                        "missing: TLS needs cert and key (PEM files) or cert_pem and key_pem (inline PEM)",
                    ));
                }
            }
            if let Security::Reality { .. } = &ib.security {
                validate_reality(ib, &f, self.node.allow_private_destinations)?;
            }
            match ib.protocol {
                Protocol::Shadowsocks => {
                    let Some(method) = ib.method else {
                        return Err(invalid(
                            f("method"),
                            "a shadowsocks inbound needs a 2022 method",
                        ));
                    };
                    let Some(password) = &ib.password else {
                        return Err(invalid(
                            f("password"),
                            "a shadowsocks inbound needs the server key",
                        ));
                    };
                    ss_key(password.expose(), method)
                        .map_err(|p| invalid(f("password"), p.to_string()))?;
                    if ib.transport != Transport::Tcp || ib.security != Security::None {
                        return Err(invalid(
                            f("transport"),
                            "shadowsocks runs on plain TCP/UDP (it brings its own encryption)",
                        ));
                    }
                    if ib.fallback.is_some() {
                        return Err(invalid(f("fallback"), "shadowsocks has no fallback"));
                    }
                    let keyed = self
                        .users
                        .iter()
                        .filter(|u| u.shadowsocks.is_some())
                        .count();
                    if method == SsMethod::Chacha20Poly1305 && keyed > MAX_CHACHA_USERS {
                        return Err(invalid(
                            f("method"),
                            format!(
                                "2022-blake3-chacha20-poly1305 finds a connection's user by trying every key, so it serves at most {MAX_CHACHA_USERS} users ({keyed} have keys): use 2022-blake3-aes-128-gcm or -256-gcm, whose identity headers name the user"
                            ),
                        ));
                    }
                }
                Protocol::Socks => {
                    if ib.transport != Transport::Tcp {
                        return Err(invalid(f("transport"), "socks runs on plain TCP"));
                    }
                    if ib.fallback.is_some() {
                        return Err(invalid(f("fallback"), "socks has no fallback"));
                    }
                }
                Protocol::Hysteria2 => validate_hysteria2(ib, &f)?,
                Protocol::Vless | Protocol::Trojan => {}
            }
            validate_trusted_proxies(ib, &f)?;
            if ib.protocol != Protocol::Hysteria2 && ib.hysteria2.is_some() {
                return Err(invalid(f("hysteria2"), "is for hysteria2 inbounds"));
            }
            crate::reality::check_flow(
                ib.flow.is_some(),
                ib.protocol == Protocol::Vless && ib.transport == Transport::Tcp,
                !matches!(ib.security, Security::None),
            )
            .map_err(|p| invalid(f(&p.field), p.problem))?;
            if ib.protocol != Protocol::Shadowsocks
                && (ib.method.is_some() || ib.password.is_some())
            {
                return Err(invalid(
                    f("method"),
                    "method and password are for shadowsocks inbounds",
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "trusted_proxies_tests.rs"]
mod trusted_proxies_tests;
