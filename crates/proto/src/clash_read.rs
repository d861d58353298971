//! Reading entries back out of a Clash (mihomo) config: the `vless`, `trojan`, `ss`
//! and `hysteria2` proxies of its `proxies` list, each an [`Entry`] named by its name, in order.
//! The reverse of [`client_config`](super::client_config) for what entries hold: a
//! config written from entries reads back as the same entries (early data,
//! `/ws?ed=N`, included; HTTPUpgrade, `ws` with `v2ray-http-upgrade: true`, too,
//! its fast open read and taken as the plain upgrade; gRPC, `network: grpc` with
//! `grpc-opts.grpc-service-name`, plain gun, as mihomo has neither multi mode nor
//! an authority),
//! except that a pinned certificate comes back as the
//! `fingerprint` the config holds ([`EntryTls::certificate_sha256`]), not as the PEM.
//! It reads the configs other panels serve in the same format too (Marzban,
//! Remnawave): the fields as mihomo reads them, numbers and booleans as mihomo's
//! weakly typed decoder takes them (`port: "443"`, a password of digits), `<<` merge
//! keys and aliases.
//!
//! A proxy this crate has no form for is skipped and listed in
//! [`Proxies::skipped`] with the reason: another type (`vmess`, `hysteria2`...),
//! another transport (`h2`, `http`...), ECH, a Shadowsocks plugin, VLESS
//! encryption, Trojan's `ss-opts`, a `dialer-proxy` chain. Dropping such a setting
//! would connect differently from what the config says, so the proxy is left out
//! rather than read without it. `client-fingerprint` (uTLS) and `reality-opts`
//! (REALITY's `public-key` and `short-id`) are read; `udp`, `smux` and the like
//! change nothing an entry holds and are ignored.
//!
//! A proxy of a type read here that is malformed (no `server`, a `port` that is no
//! port, a `uuid` that is a list...) is a [`ReadError::Proxy`] naming its place, its
//! name and the field, never the value (it may be a credential).
//!
//! The YAML is read within bounds whatever the input: at most [`MAX_YAML`] bytes,
//! then through yaml-rust2's event parser into a tree of at most [`MAX_DEPTH`]
//! levels, [`MAX_NODES`] nodes and [`MAX_TEXT`] bytes of text once aliases are
//! expanded (so no "billion laughs"; `yaml_read.rs`).

use std::fmt;

use yaml_rust2::yaml::{Hash, Yaml};

use crate::entry::{Entry, EntryProtocol, EntryReality, EntryTls, EntryTransport};
use crate::yaml_read::{LoadError, load};
pub use crate::yaml_read::{MAX_DEPTH, MAX_NODES, MAX_TEXT};

/// The largest config read, in bytes: what the client reads of a subscription body.
pub const MAX_YAML: usize = 4 << 20;
/// The most characters of a name or value an error or skip reason repeats.
const EXCERPT: usize = 64;

/// The proxy types read, as mihomo names them.
const READ: [&str; 4] = ["vless", "trojan", "ss", "hysteria2"];

/// Why a Clash config could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The text is larger than [`MAX_YAML`].
    #[error("a Clash config of {0} bytes is larger than the {MAX_YAML} read")]
    TooLarge(usize),
    /// The text is not YAML.
    #[error("not YAML: {0}")]
    Yaml(String),
    /// The YAML nests deeper than [`MAX_DEPTH`].
    #[error("the YAML nests deeper than {MAX_DEPTH} levels")]
    TooDeep,
    /// The YAML is larger than [`MAX_NODES`] or [`MAX_TEXT`] once its aliases are
    /// expanded.
    #[error(
        "the YAML holds more than {MAX_NODES} nodes or {MAX_TEXT} bytes of text once its aliases are expanded"
    )]
    TooBig,
    /// The document is not a mapping with a `proxies` list.
    #[error("a Clash config is a mapping with a `proxies` list; this has none")]
    NoProxies,
    /// An item of `proxies` is not a mapping.
    #[error("proxies[{0}] is not a mapping")]
    NotAProxy(usize),
    /// A proxy of a type read here is malformed.
    #[error("proxies[{index}] ({name:?}): `{field}` {problem}")]
    Proxy {
        /// Its place in `proxies`.
        index: usize,
        /// Its name (its first 64 characters; empty when it has none).
        name: String,
        /// The field, `ws-opts.path` for a nested one.
        field: String,
        /// What is wrong (never the value).
        problem: String,
    },
}

/// What [`read`] found: the entries, and the proxies it left out.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Proxies {
    /// The proxies read, in order.
    pub entries: Vec<Entry>,
    /// The proxies left out (see [`read`]), in order.
    pub skipped: Vec<Skipped>,
}

/// A proxy [`read`] left out, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// Its place in `proxies`.
    pub index: usize,
    /// Its name (its first 64 characters; empty when it has none).
    pub name: String,
    /// Why, e.g. `type "vmess" is not read (only vless, trojan, ss and hysteria2)`.
    pub reason: SkipReason,
}

/// Why [`read`] left a proxy out: a setting this crate has no form for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SkipReason {
    /// A proxy type other than vless, trojan, ss and hysteria2 (its first 64
    /// characters).
    #[error("type {0:?} is not read (only vless, trojan, ss and hysteria2)")]
    Type(String),
    /// A `dialer-proxy` chain.
    #[error("dialer-proxy chains are not read")]
    DialerProxy,
    /// A Shadowsocks plugin (its first 64 characters).
    #[error("Shadowsocks plugin {0:?} is not read")]
    ShadowsocksPlugin(String),
    /// ECH (`ech-opts.enable`).
    #[error("ECH is not read")]
    Ech,
    /// A transport other than tcp, ws and grpc (its first 64 characters).
    #[error("network {0:?} is not read (only tcp, ws and grpc)")]
    Network(String),
    /// VLESS encryption other than `none` (its first 64 characters).
    #[error("VLESS encryption {0:?} is not read (only none)")]
    VlessEncryption(String),
    /// Trojan's `ss-opts`.
    #[error("Trojan's ss-opts are not read")]
    TrojanSsOpts,
    /// A Trojan `flow`.
    #[error("Trojan flows are not read")]
    TrojanFlow,
    /// Hysteria 2 `obfs` other than `salamander` (its first 64 characters).
    #[error("Hysteria 2 obfs {0:?} is not read (only salamander)")]
    Hysteria2Obfs(String),
    /// Hysteria 2 `ports` other than one range `first-last` or one port (its first
    /// 64 characters).
    #[error("Hysteria 2 ports {0:?} are not read (only one range, first-last)")]
    Hysteria2Ports(String),
}

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "proxies[{}] ({:?}): {}",
            self.index, self.name, self.reason
        )
    }
}

/// The entries of a Clash config, in order; the proxies left out are dropped (see
/// [`read`] for them).
pub fn entries(yaml: &str) -> Result<Vec<Entry>, ReadError> {
    read(yaml).map(|p| p.entries)
}

/// The entries of a Clash config, in order, and the proxies left out.
///
/// Read: the `vless`, `trojan` and `ss` proxies of `proxies`, with `name`, `server`,
/// `port`, `uuid`, `flow`, `password`, `cipher`, `tls`, `servername` (VLESS) or
/// `sni` (Trojan), `skip-cert-verify`, `alpn`, `fingerprint` (a certificate's
/// SHA-256, which pins it: [`EntryTls::certificate_sha256`]), `network: ws` with
/// `ws-opts` (`path`, `headers.Host`, `max-early-data` with
/// `early-data-header-name: Sec-WebSocket-Protocol`; with `v2ray-http-upgrade: true`
/// it is HTTPUpgrade, [`EntryTransport::HttpUpgrade`], `v2ray-http-upgrade-fast-open`
/// read and taken as the plain upgrade: it only changes when the client sends its
/// first bytes), `network: grpc` with `grpc-opts.grpc-service-name`
/// ([`EntryTransport::Grpc`], plain gun; none or an empty one is mihomo's default,
/// `GunService`). Numbers and booleans are
/// taken as mihomo's weakly typed decoder takes them, `<<` merge keys and aliases
/// are followed; `client-fingerprint` and `reality-opts` (`public-key`,
/// `short-id`) too. Left out, with the reason ([`Proxies::skipped`]): other types,
/// other transports, ECH, Shadowsocks plugins, VLESS encryption,
/// Trojan's `ss-opts` and `dialer-proxy` chains, which an entry cannot express and
/// which would connect differently without. Ignored: what changes nothing an entry
/// holds (`udp`, `smux`, `packet-encoding`...). A malformed proxy of a type read is a
/// [`ReadError::Proxy`] naming the field, never its value. Bounded whatever the
/// text: [`MAX_YAML`] bytes, [`MAX_DEPTH`] levels, [`MAX_NODES`] nodes and
/// [`MAX_TEXT`] bytes of text once aliases are expanded.
pub fn read(yaml: &str) -> Result<Proxies, ReadError> {
    if yaml.len() > MAX_YAML {
        return Err(ReadError::TooLarge(yaml.len()));
    }
    let document = load(yaml).map_err(|e| match e {
        LoadError::Yaml(problem) => ReadError::Yaml(problem),
        LoadError::TooDeep => ReadError::TooDeep,
        LoadError::TooBig => ReadError::TooBig,
    })?;
    let proxies = match document.as_hash().and_then(|m| m.get(&key("proxies"))) {
        Some(Yaml::Array(items)) => items.as_slice(),
        Some(Yaml::Null) => &[],
        _ => return Err(ReadError::NoProxies),
    };
    let mut out = Proxies::default();
    for (index, item) in proxies.iter().enumerate() {
        let map = item.as_hash().ok_or(ReadError::NotAProxy(index))?;
        let name = match text(map, "name") {
            Ok(Some(name)) => name,
            _ => String::new(),
        };
        let at = At { index, name: &name };
        match proxy(map, &at)? {
            Ok(entry) => out.entries.push(entry),
            Err(reason) => out.skipped.push(Skipped {
                index,
                name: excerpt(&name),
                reason,
            }),
        }
    }
    Ok(out)
}

/// Where a proxy is, for its errors.
struct At<'a> {
    index: usize,
    name: &'a str,
}

impl At<'_> {
    fn error(&self, field: &str, problem: &str) -> ReadError {
        ReadError::Proxy {
            index: self.index,
            name: excerpt(self.name),
            field: field.to_owned(),
            problem: problem.to_owned(),
        }
    }
}

/// One proxy: its entry, or why it is left out (`Err(reason)`), or a
/// [`ReadError`] when it is malformed.
fn proxy(map: &Hash, at: &At<'_>) -> Result<Result<Entry, SkipReason>, ReadError> {
    let bad = |f: &'static str| move |problem: &str| at.error(f, problem);
    let kind = text(map, "type")
        .map_err(bad("type"))?
        .ok_or_else(|| at.error("type", MISSING))?;
    if !READ.contains(&kind.as_str()) {
        return Ok(Err(SkipReason::Type(excerpt(&kind))));
    }
    let name = text(map, "name")
        .map_err(bad("name"))?
        .ok_or_else(|| at.error("name", MISSING))?;
    let server = text(map, "server")
        .map_err(bad("server"))?
        .filter(|s| !s.is_empty())
        .ok_or_else(|| at.error("server", MISSING))?;
    let port = port(map).map_err(bad("port"))?;
    if let Some(reason) = unsupported(map, &kind).map_err(|(f, p)| at.error(&f, p))? {
        return Ok(Err(reason));
    }
    let required = |f: &'static str| {
        text(map, f)
            .map_err(bad(f))?
            .ok_or_else(|| at.error(f, MISSING))
    };
    let protocol = match kind.as_str() {
        "vless" => EntryProtocol::Vless {
            uuid: required("uuid")?,
            flow: text(map, "flow")
                .map_err(bad("flow"))?
                .filter(|f| !f.is_empty()),
        },
        "trojan" => EntryProtocol::Trojan {
            password: required("password")?,
        },
        "hysteria2" => {
            hysteria2_of(map, required("password")?).map_err(|(f, p)| at.error(&f, p))?
        }
        _ => EntryProtocol::Shadowsocks {
            method: required("cipher")?,
            password: required("password")?,
        },
    };
    let (transport, tls) = match kind.as_str() {
        // Shadowsocks runs on plain TCP here; mihomo's `ss` has no TLS either.
        "ss" => (EntryTransport::Tcp, None),
        // mihomo's Trojan always speaks TLS, whatever `tls` says.
        "trojan" => (
            transport_of(map).map_err(|(f, p)| at.error(&f, p))?,
            Some(tls_of(map, "sni").map_err(|(f, p)| at.error(&f, p))?),
        ),
        // Hysteria 2 is QUIC: always TLS, no transport of its own.
        "hysteria2" => (
            EntryTransport::Tcp,
            Some(tls_of(map, "sni").map_err(|(f, p)| at.error(&f, p))?),
        ),
        _ => {
            let on = flag(map, "tls").map_err(bad("tls"))?;
            (
                transport_of(map).map_err(|(f, p)| at.error(&f, p))?,
                if on {
                    Some(tls_of(map, "servername").map_err(|(f, p)| at.error(&f, p))?)
                } else {
                    None
                },
            )
        }
    };
    // A route id that is not one is ignored, as an unknown key is.
    let route = text(map, super::ROUTE_KEY)
        .ok()
        .flatten()
        .filter(|r| crate::entry::is_route_id(r));
    Ok(Ok(Entry {
        name,
        server,
        port,
        protocol,
        transport,
        tls,
        route,
    }))
}

const MISSING: &str = "is missing";
const LIST: &str = "must be a list of strings";

/// A field's problem, the field named in full (`ws-opts.path`).
type Problem = (String, &'static str);

/// Why a proxy of a type read here is still left out, when it is.
fn unsupported(map: &Hash, kind: &str) -> Result<Option<SkipReason>, Problem> {
    let top = |f: &'static str| move |p: &'static str| (f.to_owned(), p);
    if text(map, "dialer-proxy")
        .map_err(top("dialer-proxy"))?
        .is_some_and(|d| !d.is_empty())
    {
        return Ok(Some(SkipReason::DialerProxy));
    }
    if kind == "hysteria2" {
        if let Some(obfs) = text(map, "obfs")
            .map_err(top("obfs"))?
            .filter(|o| !o.is_empty() && o != "salamander")
        {
            return Ok(Some(SkipReason::Hysteria2Obfs(excerpt(&obfs))));
        }
        if let Some(ports) = text(map, "ports")
            .map_err(top("ports"))?
            .filter(|p| !p.is_empty() && crate::entry::hysteria2::hop_range(p).is_none())
        {
            return Ok(Some(SkipReason::Hysteria2Ports(excerpt(&ports))));
        }
        return Ok(None);
    }
    if kind == "ss" {
        return Ok(text(map, "plugin")
            .map_err(top("plugin"))?
            .filter(|p| !p.is_empty())
            .map(|p| SkipReason::ShadowsocksPlugin(excerpt(&p))));
    }
    if let Some(ech) = submap(map, "ech-opts").map_err(top("ech-opts"))?
        && flag(ech, "enable").map_err(top("ech-opts.enable"))?
    {
        return Ok(Some(SkipReason::Ech));
    }
    let network = text(map, "network").map_err(top("network"))?;
    if let Some(n) = network
        .as_deref()
        .filter(|n| !["", "tcp", "ws", "grpc"].contains(n))
    {
        return Ok(Some(SkipReason::Network(excerpt(n))));
    }
    match kind {
        "vless" => {
            if let Some(e) = text(map, "encryption")
                .map_err(top("encryption"))?
                .filter(|e| !e.is_empty() && e != "none")
            {
                return Ok(Some(SkipReason::VlessEncryption(excerpt(&e))));
            }
        }
        _ => {
            if let Some(ss) = submap(map, "ss-opts").map_err(top("ss-opts"))?
                && flag(ss, "enabled").map_err(top("ss-opts.enabled"))?
            {
                return Ok(Some(SkipReason::TrojanSsOpts));
            }
            if text(map, "flow")
                .map_err(top("flow"))?
                .is_some_and(|f| !f.is_empty())
            {
                return Ok(Some(SkipReason::TrojanFlow));
            }
        }
    }
    Ok(None)
}

/// A `hysteria2` proxy's protocol: `obfs-password` when `obfs: salamander`,
/// `ports` as one range (checked by [`unsupported`]) with its `hop-interval`,
/// `up`/`down` in mihomo's units (a bare number is Mbit/s) as whole Mbit/s.
fn hysteria2_of(map: &Hash, password: String) -> Result<EntryProtocol, Problem> {
    let top = |f: &'static str| move |p: &'static str| (f.to_owned(), p);
    let salamander = text(map, "obfs")
        .map_err(top("obfs"))?
        .is_some_and(|o| o == "salamander");
    let obfs_password = if salamander {
        Some(
            text(map, "obfs-password")
                .map_err(top("obfs-password"))?
                .filter(|p| !p.is_empty())
                .ok_or(top("obfs-password")(MISSING))?,
        )
    } else {
        None
    };
    let ports = text(map, "ports")
        .map_err(top("ports"))?
        .and_then(|p| crate::entry::hysteria2::hop_range(&p))
        .map(|(first, last)| format!("{first}-{last}"));
    let rate = |f: &'static str| -> Result<Option<u32>, Problem> {
        match text(map, f).map_err(top(f))? {
            None => Ok(None),
            Some(t) if t.trim().is_empty() => Ok(None),
            Some(t) => crate::entry::hysteria2::mbps(&t)
                .map(|n| (n > 0).then_some(n))
                .ok_or(top(f)("must be a bandwidth such as 100 or \"100 Mbps\"")),
        }
    };
    let hop_interval = match field(map, "hop-interval") {
        None => None,
        Some(v) => hop_interval_of(v).ok_or(top("hop-interval")(
            "must be a whole number of seconds (or a range first-last)",
        ))?,
    };
    Ok(EntryProtocol::Hysteria2 {
        password,
        obfs_password,
        hop_interval: hop_interval.filter(|_| ports.is_some()),
        ports,
        up_mbps: rate("up")?,
        down_mbps: rate("down")?,
    })
}

/// mihomo's `hop-interval`: whole seconds, a number or its text, `0` for its
/// default (none); newer mihomo's random interval `first-last` is read as `first`
/// (an entry holds one interval). `None` (the outer) for anything else.
fn hop_interval_of(value: &Yaml) -> Option<Option<u32>> {
    let secs = |t: &str| t.trim().parse::<u32>().ok();
    let n = match value {
        Yaml::Integer(n) => u32::try_from(*n).ok()?,
        Yaml::String(t) => match t.split_once('-') {
            Some((first, last)) => secs(first).filter(|f| secs(last).is_some_and(|l| l >= *f))?,
            None => secs(t)?,
        },
        _ => return None,
    };
    Some((n > 0).then_some(n))
}

/// `network` and `ws-opts`. Early data (`max-early-data` with the
/// `Sec-WebSocket-Protocol` header, as the writer puts it) becomes Xray's path form,
/// `/ws?ed=2048`; early data in another header is left unused, which servers accept.
/// With `v2ray-http-upgrade: true` it is HTTPUpgrade, its path taken as it is and
/// its early data left unused; its fast open (the client sends before the `101`)
/// is checked and taken as the plain upgrade, which every server accepts the same.
/// `network: grpc` is gRPC ([`grpc_of`]).
fn transport_of(map: &Hash) -> Result<EntryTransport, Problem> {
    let top = |f: &'static str| move |p: &'static str| (f.to_owned(), p);
    match text(map, "network").map_err(top("network"))?.as_deref() {
        Some("ws") => {}
        Some("grpc") => return grpc_of(map),
        _ => return Ok(EntryTransport::Tcp),
    }
    let Some(ws) = submap(map, "ws-opts").map_err(top("ws-opts"))? else {
        return Ok(EntryTransport::Ws {
            path: "/".into(),
            host: None,
        });
    };
    let mut path = text(ws, "path")
        .map_err(top("ws-opts.path"))?
        .unwrap_or_else(|| "/".into());
    let host = match submap(ws, "headers").map_err(top("ws-opts.headers"))? {
        Some(headers) => {
            let host = headers
                .iter()
                .find(|(k, _)| k.as_str().is_some_and(|k| k.eq_ignore_ascii_case("host")))
                .map(|(_, v)| v);
            match host {
                Some(v) => scalar_text(v).map_err(top("ws-opts.headers.Host"))?,
                None => None,
            }
        }
        None => None,
    };
    let host = host.filter(|h| !h.is_empty());
    if flag(ws, "v2ray-http-upgrade").map_err(top("ws-opts.v2ray-http-upgrade"))? {
        flag(ws, "v2ray-http-upgrade-fast-open")
            .map_err(top("ws-opts.v2ray-http-upgrade-fast-open"))?;
        return Ok(EntryTransport::HttpUpgrade { path, host });
    }
    let early = match field(ws, "max-early-data") {
        None => 0,
        Some(v) => whole(v).and_then(|n| u32::try_from(n).ok()).ok_or((
            "ws-opts.max-early-data".to_owned(),
            "must be a whole number",
        ))?,
    };
    let header =
        text(ws, "early-data-header-name").map_err(top("ws-opts.early-data-header-name"))?;
    if early > 0
        && header.is_some_and(|h| h.eq_ignore_ascii_case("Sec-WebSocket-Protocol"))
        && !path.contains('?')
    {
        path = format!("{path}?ed={early}");
    }
    Ok(EntryTransport::Ws { path, host })
}

/// `grpc-opts.grpc-service-name`: mihomo dials `/{name}/Tun`, `GunService` when
/// the name is missing or empty. mihomo speaks plain gun only and sends its
/// `servername` (else the server) as the authority, so the entry has neither multi
/// mode nor an authority; its other `grpc-opts` (a user agent, pings, connection
/// counts) change nothing an entry holds.
fn grpc_of(map: &Hash) -> Result<EntryTransport, Problem> {
    let top = |f: &'static str| move |p: &'static str| (f.to_owned(), p);
    let name = match submap(map, "grpc-opts").map_err(top("grpc-opts"))? {
        Some(opts) => text(opts, "grpc-service-name")
            .map_err(top("grpc-opts.grpc-service-name"))?
            .filter(|n| !n.is_empty()),
        None => None,
    };
    Ok(EntryTransport::Grpc {
        service_name: name.unwrap_or_else(|| "GunService".into()),
        authority: None,
        multi: false,
    })
}

/// The TLS of a VLESS (SNI in `servername`) or Trojan (`sni`) proxy. A
/// `fingerprint` pins the certificate whatever `skip-cert-verify` says, as in
/// mihomo, so with one the entry is not `insecure`.
fn tls_of(map: &Hash, sni: &'static str) -> Result<EntryTls, Problem> {
    let at = |f: &'static str| move |p: &'static str| (f.to_owned(), p);
    let server_name = text(map, sni).map_err(at(sni))?.filter(|s| !s.is_empty());
    let pin = match text(map, "fingerprint").map_err(at("fingerprint"))? {
        Some(hex) if !hex.is_empty() => {
            Some(sha256_hex(&hex).ok_or(at("fingerprint")("must be a SHA-256 in 64 hex digits"))?)
        }
        _ => None,
    };
    let insecure = flag(map, "skip-cert-verify").map_err(at("skip-cert-verify"))?;
    let alpn = match field(map, "alpn") {
        None => Vec::new(),
        Some(Yaml::Array(items)) => items
            .iter()
            .map(|i| scalar_text(i).ok().flatten())
            .collect::<Option<Vec<String>>>()
            .ok_or(at("alpn")(LIST))?,
        Some(_) => return Err(at("alpn")(LIST)),
    };
    let fingerprint = text(map, "client-fingerprint")
        .map_err(at("client-fingerprint"))?
        .filter(|f| !f.is_empty());
    let reality = match submap(map, "reality-opts").map_err(at("reality-opts"))? {
        None => None,
        Some(opts) => Some(EntryReality {
            public_key: text(opts, "public-key")
                .map_err(at("reality-opts.public-key"))?
                .filter(|k| !k.is_empty())
                .ok_or(at("reality-opts.public-key")(MISSING))?,
            short_id: text(opts, "short-id")
                .map_err(at("reality-opts.short-id"))?
                .unwrap_or_default(),
        }),
    };
    Ok(EntryTls {
        server_name,
        insecure: insecure && pin.is_none(),
        certificate_pem: None,
        certificate_sha256: pin,
        alpn,
        fingerprint,
        reality,
    })
}

/// `ab:CD:...` or `abcd...`: 32 bytes in hex, with or without colons, either case.
fn sha256_hex(text: &str) -> Option<[u8; 32]> {
    let digits: Vec<u8> = text.bytes().filter(|b| *b != b':').collect();
    if digits.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (byte, pair) in out.iter_mut().zip(digits.chunks(2)) {
        let pair = std::str::from_utf8(pair).ok()?;
        *byte = u8::from_str_radix(pair, 16).ok()?;
    }
    Some(out)
}

/// `port`: a number from 1 to 65535, or text of one.
fn port(map: &Hash) -> Result<u16, &'static str> {
    const BAD: &str = "must be a number from 1 to 65535";
    let value = field(map, "port").ok_or(MISSING)?;
    let n = match value {
        Yaml::String(s) => s.trim().parse::<i64>().ok(),
        other => whole(other),
    };
    n.and_then(|n| u16::try_from(n).ok())
        .filter(|n| *n > 0)
        .ok_or(BAD)
}

/// A whole number (a YAML integer).
fn whole(value: &Yaml) -> Option<i64> {
    match value {
        Yaml::Integer(n) => Some(*n),
        _ => None,
    }
}

/// The YAML key `name`.
fn key(name: &str) -> Yaml {
    Yaml::String(name.to_owned())
}

/// A field of `map`, looked up through `<<` merge keys too (the mapping's own keys
/// win, then the merged mappings in order); `null` is no value.
fn field<'a>(map: &'a Hash, name: &str) -> Option<&'a Yaml> {
    if let Some(v) = map.get(&key(name)) {
        return (!v.is_null()).then_some(v);
    }
    match map.get(&key("<<"))? {
        Yaml::Hash(merged) => field(merged, name),
        Yaml::Array(items) => items
            .iter()
            .filter_map(Yaml::as_hash)
            .find_map(|m| field(m, name)),
        _ => None,
    }
}

/// A text field: a string, or a number as its text (mihomo decodes weakly:
/// `password: 123456` is the password "123456").
fn text(map: &Hash, name: &str) -> Result<Option<String>, &'static str> {
    match field(map, name) {
        None => Ok(None),
        Some(v) => scalar_text(v),
    }
}

fn scalar_text(value: &Yaml) -> Result<Option<String>, &'static str> {
    match value {
        Yaml::String(s) => Ok(Some(s.clone())),
        Yaml::Integer(n) => Ok(Some(n.to_string())),
        Yaml::Null => Ok(None),
        _ => Err("must be a string"),
    }
}

/// A boolean field, false when absent: `true`/`false`, or what mihomo's weak decoder
/// takes for one (`"true"`, `"1"`, `0`...).
fn flag(map: &Hash, name: &str) -> Result<bool, &'static str> {
    const BAD: &str = "must be true or false";
    match field(map, name) {
        None => Ok(false),
        Some(Yaml::Boolean(b)) => Ok(*b),
        Some(Yaml::Integer(n)) => Ok(*n != 0),
        Some(Yaml::String(s)) => match s.as_str() {
            "1" | "t" | "T" | "true" | "True" | "TRUE" => Ok(true),
            "0" | "f" | "F" | "false" | "False" | "FALSE" => Ok(false),
            _ => Err(BAD),
        },
        Some(_) => Err(BAD),
    }
}

/// A mapping field.
fn submap<'a>(map: &'a Hash, name: &str) -> Result<Option<&'a Hash>, &'static str> {
    match field(map, name) {
        None => Ok(None),
        Some(Yaml::Hash(m)) => Ok(Some(m)),
        Some(_) => Err("must be a mapping"),
    }
}

/// The first [`EXCERPT`] characters of `text`.
fn excerpt(text: &str) -> String {
    text.chars().take(EXCERPT).collect()
}

#[cfg(test)]
#[path = "clash_read_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "clash_grpc_tests.rs"]
mod grpc_tests;
