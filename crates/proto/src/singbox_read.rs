//! Reading entries back out of a sing-box client config: the `vless`, `trojan`,
//! `shadowsocks` and `hysteria2` outbounds, each an [`Entry`] named by its tag, in order. Other
//! outbounds (selectors, `urltest`, `direct`) are skipped. TLS's `utls` and
//! `reality` are read into [`EntryTls::fingerprint`] and [`EntryTls::reality`]. The reverse of
//! [`client_config`](super::client_config) for what entries hold: a config written
//! from entries reads back as the same entries (early data, `/ws?ed=N`, included;
//! HTTPUpgrade's `host` and `path` too; gRPC's `service_name`, which sing-box speaks
//! as plain gun only, so an entry's multi mode and authority are not in the config
//! and read back as none),
//! route ids too (read from the route rules that carry them); Hysteria 2's
//! `hop_interval` in whole seconds.

use serde::Deserialize;
use serde_json::Value;

use crate::entry::{Entry, EntryProtocol, EntryReality, EntryTls, EntryTransport};

/// Why a sing-box config could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// No `outbounds` array.
    #[error("a sing-box config has an `outbounds` array; this has none")]
    NoOutbounds,
    /// An outbound of a kind read here is malformed.
    #[error("outbounds[{index}]: {problem}")]
    Outbound {
        /// Its place in `outbounds`.
        index: usize,
        /// What is wrong.
        problem: OutboundProblem,
    },
}

/// What is wrong with one outbound of a sing-box config.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OutboundProblem {
    /// Its fields are not those of its type (what the JSON reader said).
    #[error("{0}")]
    Fields(String),
    /// A transport other than WebSocket, HTTPUpgrade and gRPC.
    #[error("transport {0:?} is not read (only ws, httpupgrade and grpc)")]
    Transport(String),
    /// `server_port` is 0.
    #[error("server_port 0")]
    PortZero,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum Out {
    Vless {
        tag: String,
        server: String,
        server_port: u16,
        uuid: String,
        #[serde(default)]
        flow: Option<String>,
        #[serde(default)]
        tls: Option<Tls>,
        #[serde(default)]
        transport: Option<Transport>,
    },
    Trojan {
        tag: String,
        server: String,
        server_port: u16,
        password: String,
        #[serde(default)]
        tls: Option<Tls>,
        #[serde(default)]
        transport: Option<Transport>,
    },
    Shadowsocks {
        tag: String,
        server: String,
        server_port: u16,
        method: String,
        password: String,
    },
    Hysteria2 {
        tag: String,
        server: String,
        server_port: u16,
        /// One range or a list of them (sing-box's JSON lets one item stand
        /// alone); only one range is read.
        #[serde(default)]
        server_ports: Option<Value>,
        /// A Go duration (`"30s"`); read only with a hop range.
        #[serde(default)]
        hop_interval: Option<String>,
        #[serde(default)]
        up_mbps: Option<u32>,
        #[serde(default)]
        down_mbps: Option<u32>,
        #[serde(default)]
        obfs: Option<Obfs>,
        password: String,
        #[serde(default)]
        tls: Option<Tls>,
    },
}

#[derive(Deserialize)]
struct Obfs {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    password: String,
}

#[derive(Deserialize)]
struct Tls {
    #[serde(default)]
    enabled: bool,
    #[serde(default)]
    server_name: Option<String>,
    #[serde(default)]
    insecure: bool,
    #[serde(default)]
    alpn: Vec<String>,
    #[serde(default)]
    certificate: Option<Certificate>,
    #[serde(default)]
    utls: Option<Utls>,
    #[serde(default)]
    reality: Option<Reality>,
}

#[derive(Deserialize)]
struct Utls {
    #[serde(default)]
    enabled: bool,
    #[serde(default)]
    fingerprint: Option<String>,
}

#[derive(Deserialize)]
struct Reality {
    #[serde(default)]
    enabled: bool,
    public_key: String,
    #[serde(default)]
    short_id: String,
}

/// sing-box takes the PEM as one string or as lines.
#[derive(Deserialize)]
#[serde(untagged)]
enum Certificate {
    One(String),
    Lines(Vec<String>),
}

#[derive(Deserialize)]
struct Transport {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    path: Option<String>,
    /// HTTPUpgrade's `Host` (a string); other transports' (HTTP's list) are not
    /// read, so any JSON is taken here and checked only for HTTPUpgrade.
    #[serde(default)]
    host: Option<Value>,
    #[serde(default)]
    headers: Option<Headers>,
    #[serde(default)]
    max_early_data: Option<u32>,
    /// gRPC's service name (a string; taken as any JSON so an error can name it).
    #[serde(default)]
    service_name: Option<Value>,
}

#[derive(Deserialize)]
struct Headers {
    #[serde(rename = "Host", default)]
    host: Option<String>,
}

const READ: [&str; 4] = ["vless", "trojan", "shadowsocks", "hysteria2"];

/// The entries of a sing-box client config, in order.
pub fn entries(config: &Value) -> Result<Vec<Entry>, ReadError> {
    let outbounds = config["outbounds"]
        .as_array()
        .ok_or(ReadError::NoOutbounds)?;
    let mut out = Vec::new();
    for (index, o) in outbounds.iter().enumerate() {
        if !READ.contains(&o["type"].as_str().unwrap_or_default()) {
            continue;
        }
        let problem = |p: OutboundProblem| ReadError::Outbound { index, problem: p };
        let parsed: Out = serde_json::from_value(o.clone())
            .map_err(|e| problem(OutboundProblem::Fields(e.to_string())))?;
        let entry = match parsed {
            Out::Vless {
                tag,
                server,
                server_port,
                uuid,
                flow,
                tls,
                transport,
            } => Entry {
                name: tag,
                server,
                port: server_port,
                protocol: EntryProtocol::Vless { uuid, flow },
                transport: transport_of(transport).map_err(problem)?,
                tls: tls_of(tls),
                route: None,
            },
            Out::Trojan {
                tag,
                server,
                server_port,
                password,
                tls,
                transport,
            } => Entry {
                name: tag,
                server,
                port: server_port,
                protocol: EntryProtocol::Trojan { password },
                transport: transport_of(transport).map_err(problem)?,
                tls: tls_of(tls),
                route: None,
            },
            Out::Shadowsocks {
                tag,
                server,
                server_port,
                method,
                password,
            } => Entry {
                name: tag,
                server,
                port: server_port,
                protocol: EntryProtocol::Shadowsocks { method, password },
                transport: EntryTransport::Tcp,
                tls: None,
                route: None,
            },
            Out::Hysteria2 {
                tag,
                server,
                server_port,
                server_ports,
                hop_interval,
                up_mbps,
                down_mbps,
                obfs,
                password,
                tls,
            } => {
                let ports = hop_ports_of(server_ports).map_err(problem)?;
                let hop_interval = hop_interval_of(hop_interval.as_deref()).map_err(problem)?;
                Entry {
                    name: tag,
                    server,
                    port: server_port,
                    protocol: EntryProtocol::Hysteria2 {
                        password,
                        obfs_password: obfs_of(obfs).map_err(problem)?,
                        hop_interval: hop_interval.filter(|_| ports.is_some()),
                        ports,
                        up_mbps: up_mbps.filter(|n| *n > 0),
                        down_mbps: down_mbps.filter(|n| *n > 0),
                    },
                    transport: EntryTransport::Tcp,
                    // QUIC always speaks TLS, whatever `enabled` says.
                    tls: Some(tls_of(tls.map(|t| Tls { enabled: true, ..t })).unwrap_or_default()),
                    route: None,
                }
            }
        };
        if entry.port == 0 {
            return Err(problem(OutboundProblem::PortZero));
        }
        out.push(entry);
    }
    let routes = routes(config);
    if !routes.is_empty() {
        for entry in &mut out {
            entry.route = routes.get(entry.name.as_str()).map(|r| (*r).to_owned());
        }
    }
    Ok(out)
}

/// The route ids the config's route rules carry, by outbound tag: a rule
/// `{"domain": ["ID.route.switchyard.invalid"], "outbound": TAG}` says the outbound
/// TAG stands for route ID ([`super::ROUTE_DOMAIN`]). Anything else is no route.
fn routes(config: &Value) -> std::collections::HashMap<&str, &str> {
    let mut out = std::collections::HashMap::new();
    let Some(rules) = config["route"]["rules"].as_array() else {
        return out;
    };
    for rule in rules {
        let (Some([domain]), Some(tag)) = (
            rule["domain"].as_array().map(Vec::as_slice),
            rule["outbound"].as_str(),
        ) else {
            continue;
        };
        if let Some(id) = domain
            .as_str()
            .and_then(|d| d.strip_suffix(super::ROUTE_DOMAIN))
            .and_then(|d| d.strip_suffix('.'))
            .filter(|id| crate::entry::is_route_id(id))
        {
            out.entry(tag).or_insert(id);
        }
    }
    out
}

/// Hysteria 2's `obfs`: Salamander's password, none when `type` is empty.
fn obfs_of(obfs: Option<Obfs>) -> Result<Option<String>, OutboundProblem> {
    match obfs {
        None => Ok(None),
        Some(o) if o.kind.is_empty() => Ok(None),
        Some(o) if o.kind == "salamander" && !o.password.is_empty() => Ok(Some(o.password)),
        Some(o) if o.kind == "salamander" => Err(OutboundProblem::Fields(
            "obfs.password: missing for salamander".into(),
        )),
        Some(_) => Err(OutboundProblem::Fields(
            "obfs.type: only salamander is read".into(),
        )),
    }
}

/// Hysteria 2's `server_ports`: one range `first:last` (or `first-last`, or one
/// port), as the entry's `first-last`.
fn hop_ports_of(ports: Option<Value>) -> Result<Option<String>, OutboundProblem> {
    const ONE: &str = "server_ports: only one range first:last is read";
    let text = match ports {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(one)) => one,
        Some(Value::Array(items)) if items.is_empty() => return Ok(None),
        Some(Value::Array(mut items)) if items.len() == 1 => match items.pop() {
            Some(Value::String(one)) => one,
            _ => return Err(OutboundProblem::Fields(ONE.into())),
        },
        Some(_) => return Err(OutboundProblem::Fields(ONE.into())),
    };
    let (first, last) = crate::entry::hysteria2::hop_range(&text.replacen(':', "-", 1))
        .ok_or_else(|| OutboundProblem::Fields(ONE.into()))?;
    Ok(Some(format!("{first}-{last}")))
}

/// Hysteria 2's `hop_interval`, a Go duration, in whole seconds (rounded up);
/// none when absent, empty or zero (sing-box's default).
fn hop_interval_of(text: Option<&str>) -> Result<Option<u32>, OutboundProblem> {
    match text.map(str::trim) {
        None | Some("") => Ok(None),
        Some(t) => crate::entry::hysteria2::go_duration_secs(t)
            .map(|s| (s > 0).then_some(s))
            .ok_or_else(|| {
                OutboundProblem::Fields("hop_interval: a duration such as \"30s\"".into())
            }),
    }
}

fn tls_of(tls: Option<Tls>) -> Option<EntryTls> {
    let t = tls.filter(|t| t.enabled)?;
    Some(EntryTls {
        server_name: t.server_name,
        insecure: t.insecure,
        certificate_pem: t.certificate.map(|c| match c {
            Certificate::One(s) => s,
            Certificate::Lines(l) => l.join("\n"),
        }),
        certificate_sha256: None,
        alpn: t.alpn,
        // sing-box's uTLS default fingerprint is Chrome's.
        fingerprint: t.utls.filter(|u| u.enabled).map(|u| {
            u.fingerprint
                .filter(|f| !f.is_empty())
                .unwrap_or_else(|| "chrome".into())
        }),
        reality: t.reality.filter(|r| r.enabled).map(|r| EntryReality {
            public_key: r.public_key,
            short_id: r.short_id,
        }),
    })
}

fn transport_of(t: Option<Transport>) -> Result<EntryTransport, OutboundProblem> {
    let Some(t) = t else {
        return Ok(EntryTransport::Tcp);
    };
    match t.kind.as_str() {
        "ws" => {
            let path = t.path.unwrap_or_else(|| "/".into());
            let path = match t.max_early_data {
                Some(n) if n > 0 => format!("{path}?ed={n}"),
                _ => path,
            };
            Ok(EntryTransport::Ws {
                path,
                host: t.headers.and_then(|h| h.host),
            })
        }
        // The `host` field, else a `Host` header (sing-box sends the latter when the
        // former is unset); early data has no HTTPUpgrade form here.
        "httpupgrade" => {
            let host = match t.host {
                None | Some(Value::Null) => None,
                Some(Value::String(h)) => Some(h),
                Some(_) => {
                    return Err(OutboundProblem::Fields(
                        "transport.host: expected a string".into(),
                    ));
                }
            };
            Ok(EntryTransport::HttpUpgrade {
                path: t.path.unwrap_or_else(|| "/".into()),
                host: host
                    .filter(|h| !h.is_empty())
                    .or_else(|| t.headers.and_then(|h| h.host))
                    .filter(|h| !h.is_empty()),
            })
        }
        // Plain gun to `/{service_name}/Tun` (an empty name is sing-box's default);
        // sing-box has neither multi mode nor an authority of its own (it sends the
        // server's address), and its timeouts change nothing an entry holds.
        "grpc" => Ok(EntryTransport::Grpc {
            service_name: match t.service_name {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(name)) => name,
                Some(_) => {
                    return Err(OutboundProblem::Fields(
                        "transport.service_name: expected a string".into(),
                    ));
                }
            },
            authority: None,
            multi: false,
        }),
        other => Err(OutboundProblem::Transport(other.to_owned())),
    }
}
