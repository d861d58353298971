//! A sing-box client config for a list of entries.
//!
//! [`client_config`] renders a complete config in the format of sing-box 1.12 and
//! later (checked with `sing-box check` of the pinned 1.14 in the tests), with no
//! deprecated field:
//!
//! ```text
//! inbounds:  mixed (SOCKS5 + HTTP proxy) on options.listen; with `options.vpn`, a
//!            tun and DNS through the proxy too (crate::singbox_vpn)
//! outbounds: selector `group_name` -> [urltest `urltest_name`, entry 1, entry 2, ...]
//!            urltest `urltest_name` -> [entry 1, entry 2, ...] (url, interval)
//!            one outbound per entry, tagged with its name (made unique)
//!            direct
//! route:     final = the selector; names resolved with the local resolver;
//!            one inert rule per entry with a route id, carrying it (ROUTE_DOMAIN)
//! ```
//!
//! With no entries there is nothing to select: the config has only `direct`, and a
//! route rule rejects every connection of the proxy inbound, so nothing leaves
//! unproxied.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::time::Duration;

use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::entry::{Entry, EntryProtocol, EntryTransport};
use crate::routing::Routing;
use crate::singbox_vpn::{REMOTE_DNS_TAG, RemoteServer, TUN_TAG, Tun, VpnRule};
use crate::vpn::VpnOptions;

/// The tag of the `mixed` inbound.
pub const MIXED_TAG: &str = "mixed-in";
/// The tag of the `direct` outbound.
pub const DIRECT_TAG: &str = "direct";
/// The tag of the local DNS server that resolves the servers' names.
pub const DNS_TAG: &str = "local";
/// What an entry with an empty name is tagged.
const UNNAMED: &str = "server";
/// The domain under which a config carries its entries' route ids
/// ([`Entry::route`]): sing-box refuses unknown fields, so each id travels as a
/// route rule `{"domain": ["ID.route.switchyard.invalid"], "action": "route",
/// "outbound": TAG}`. `.invalid` is reserved (RFC 2606) and never resolves, so no
/// connection ever matches it: the rule is inert in every sing-box app, and
/// Switchyard's client reads the id from it ([`entries`]).
pub const ROUTE_DOMAIN: &str = "route.switchyard.invalid";

/// Choices of a rendered config. `Default` gives the documented defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SingBoxOptions {
    /// Where the `mixed` proxy listens. Default `127.0.0.1:2080`: loopback only, so
    /// the proxy is not open to the network.
    pub listen: SocketAddr,
    /// The selector's tag, the group the user picks a server in. Default
    /// `"Switchyard"`.
    pub group_name: String,
    /// The `urltest` group's tag. Default `"Fastest"` (it picks the lowest
    /// latency; Switchyard's own Auto is the client's, not sing-box's).
    pub urltest_name: String,
    /// The URL the `urltest` group fetches. Default
    /// `https://www.gstatic.com/generate_204`, an empty answer most clients use.
    pub urltest_url: String,
    /// How often the `urltest` group tests. Default 3 minutes: often enough to leave
    /// a dead server soon, rare enough to cost next to nothing.
    pub urltest_interval: Duration,
    /// sing-box's log level (`trace` ... `panic`). Default `"warn"`.
    pub log_level: String,
    /// A VPN config, for the apps that build their VPN from it (a `tun` inbound, DNS
    /// through the proxy, [`crate::singbox_vpn`]). Default `None`: a local proxy.
    pub vpn: Option<VpnOptions>,
    /// Split tunnelling ([`crate::routing`]): the panel's rule sets and the rules that
    /// name them, after the VPN's own. Default `None`: everything through the group.
    pub routing: Option<Routing>,
}

impl Default for SingBoxOptions {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 2080)),
            group_name: "Switchyard".to_owned(),
            urltest_name: "Fastest".to_owned(),
            urltest_url: "https://www.gstatic.com/generate_204".to_owned(),
            urltest_interval: Duration::from_secs(180),
            log_level: "warn".to_owned(),
            vpn: None,
            routing: None,
        }
    }
}

/// The complete sing-box client config for `entries` (see the [module docs](self)), as
/// a JSON value to inspect or edit. [`ClientConfig`] writes the same JSON without
/// building the value first (what the panel serves on every fetch).
pub fn client_config(entries: &[Entry], options: &SingBoxOptions) -> Value {
    serde_json::to_value(ClientConfig::new(entries, options)).unwrap_or(Value::Null)
}

/// The complete sing-box client config for a list of entries, serialized straight
/// from the entries it borrows: `serde_json::to_string(&ClientConfig::new(..))`.
#[derive(Debug, Clone)]
pub struct ClientConfig<'a> {
    /// The entries sing-box can run ([`has_singbox_form`]).
    entries: Vec<&'a Entry>,
    tags: Vec<String>,
    options: &'a SingBoxOptions,
}

impl<'a> ClientConfig<'a> {
    /// The config of `entries` with `options`; each entry's tag is made unique here.
    pub fn new(entries: &'a [Entry], options: &'a SingBoxOptions) -> Self {
        let entries: Vec<&Entry> = entries.iter().filter(|e| has_singbox_form(e)).collect();
        Self {
            tags: unique_tags(entries.iter().copied(), options),
            entries,
            options,
        }
    }
}

/// Whether sing-box can run `entry`: not over XHTTP, which sing-box lacks (the panel
/// leaves such entries out before, with the reason in the subscription's announce).
pub fn has_singbox_form(entry: &Entry) -> bool {
    !matches!(entry.transport, EntryTransport::Xhttp { .. })
}

impl Serialize for ClientConfig<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let o = self.options;
        let empty = self.entries.is_empty();
        // The remote resolver needs the selector to reach it by.
        let remote = o.vpn.as_ref().filter(|_| !empty).map(|v| RemoteServer {
            dns: &v.remote_dns,
            detour: &o.group_name,
        });
        // Routing needs servers to route to; direct names are asked locally only when
        // another resolver answers the rest.
        let routing = o.routing.as_ref().filter(|r| !empty && !r.is_global());
        let dns_rules = routing
            .filter(|_| remote.is_some())
            .map(|r| r.singbox_dns_rules(DNS_TAG))
            .unwrap_or_default();
        Document {
            log: Log {
                level: &o.log_level,
                timestamp: true,
            },
            dns: Dns {
                rules: dns_rules,
                r#final: remote.as_ref().map(|_| REMOTE_DNS_TAG),
                servers: (
                    remote,
                    DnsServer {
                        kind: "local",
                        tag: DNS_TAG,
                    },
                ),
            },
            inbounds: (
                Mixed {
                    kind: "mixed",
                    tag: MIXED_TAG,
                    listen: o.listen.ip().to_string(),
                    listen_port: o.listen.port(),
                },
                o.vpn.as_ref().map(|_| Tun::new()),
            ),
            outbounds: Outbounds(self),
            route: Route {
                default_domain_resolver: DNS_TAG,
                auto_detect_interface: o.vpn.is_some(),
                r#final: if empty { DIRECT_TAG } else { &o.group_name },
                rule_set: routing.map(Routing::singbox_rule_sets).unwrap_or_default(),
                rules: Rules(self),
            },
        }
        .serialize(serializer)
    }
}

/// Two things serialized as a list, the second left out when `None`.
struct Pair<A, B>(A, Option<B>);

impl<A: Serialize, B: Serialize> Serialize for Pair<A, B> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = serializer.serialize_seq(None)?;
        seq.serialize_element(&self.0)?;
        if let Some(b) = &self.1 {
            seq.serialize_element(b)?;
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct Document<'a> {
    log: Log<'a>,
    dns: Dns<'a>,
    #[serde(serialize_with = "pair")]
    inbounds: (Mixed, Option<Tun>),
    outbounds: Outbounds<'a>,
    route: Route<'a>,
}

fn pair<S: Serializer, A: Serialize, B: Serialize>(
    (a, b): &(A, Option<B>),
    serializer: S,
) -> Result<S::Ok, S::Error> {
    Pair(a, b.as_ref()).serialize(serializer)
}

fn pair_last<S: Serializer, A: Serialize, B: Serialize>(
    (a, b): &(Option<A>, B),
    serializer: S,
) -> Result<S::Ok, S::Error> {
    // The optional one first: the remote resolver, then the local one.
    match a {
        Some(a) => Pair(a, Some(b)).serialize(serializer),
        None => Pair(b, None::<&B>).serialize(serializer),
    }
}

#[derive(Serialize)]
struct Log<'a> {
    level: &'a str,
    timestamp: bool,
}

#[derive(Serialize)]
struct Dns<'a> {
    #[serde(serialize_with = "pair_last")]
    servers: (Option<RemoteServer<'a>>, DnsServer),
    #[serde(skip_serializing_if = "Vec::is_empty")]
    rules: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    r#final: Option<&'static str>,
}

#[derive(Serialize)]
struct DnsServer {
    #[serde(rename = "type")]
    kind: &'static str,
    tag: &'static str,
}

#[derive(Serialize)]
struct Mixed {
    #[serde(rename = "type")]
    kind: &'static str,
    tag: &'static str,
    listen: String,
    listen_port: u16,
}

#[derive(Serialize)]
struct Route<'a> {
    default_domain_resolver: &'static str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    auto_detect_interface: bool,
    r#final: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    rule_set: Vec<Value>,
    #[serde(skip_serializing_if = "Rules::is_empty")]
    rules: Rules<'a>,
}

/// The route rules: with no entries, the one that rejects everything from the proxy
/// inbound; else one per entry with a route id, which carries it (see
/// [`ROUTE_DOMAIN`]).
struct Rules<'a>(&'a ClientConfig<'a>);

impl Rules<'_> {
    fn carried(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0
            .entries
            .iter()
            .zip(&self.0.tags)
            .filter_map(|(e, tag)| {
                let route = e
                    .route
                    .as_deref()
                    .filter(|r| crate::entry::is_route_id(r))?;
                Some((route, tag.as_str()))
            })
    }

    fn is_empty(&self) -> bool {
        self.0.options.vpn.is_none()
            && !self.0.entries.is_empty()
            && self.carried().next().is_none()
            && self.routing().is_empty()
    }

    /// The routing's rules (none with no entries: everything is rejected then).
    fn routing(&self) -> Vec<Value> {
        let o = self.0.options;
        match &o.routing {
            Some(r) if !self.0.entries.is_empty() => r.singbox_rules(&o.group_name, DIRECT_TAG),
            _ => Vec::new(),
        }
    }
}

impl Serialize for Rules<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let vpn = self.0.options.vpn.is_some();
        let first = vpn
            .then(|| crate::singbox_vpn::rules(DIRECT_TAG))
            .into_iter()
            .flatten()
            .map(Rule::Vpn);
        if self.0.entries.is_empty() {
            let inbound: &'static [&'static str] = if vpn {
                &[MIXED_TAG, TUN_TAG]
            } else {
                &[MIXED_TAG]
            };
            return serializer.collect_seq(first.chain([Rule::Reject {
                inbound,
                action: "reject",
            }]));
        }
        let carried = self.carried().map(|(route, tag)| Rule::Route {
            domain: [format!("{route}.{ROUTE_DOMAIN}")],
            action: "route",
            outbound: tag,
        });
        serializer.collect_seq(
            first
                .chain(carried)
                .chain(self.routing().into_iter().map(Rule::Routing)),
        )
    }
}

#[derive(Serialize)]
#[serde(untagged)]
enum Rule<'a> {
    Vpn(VpnRule),
    Routing(Value),
    Reject {
        inbound: &'static [&'static str],
        action: &'static str,
    },
    Route {
        domain: [String; 1],
        action: &'static str,
        outbound: &'a str,
    },
}

/// The outbounds: the selector and the urltest group (when there are entries), one
/// per entry, then `direct`.
struct Outbounds<'a>(&'a ClientConfig<'a>);

impl Serialize for Outbounds<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let ClientConfig {
            entries,
            tags,
            options: o,
        } = self.0;
        let groups = (!entries.is_empty()).then(|| {
            [
                Outbound::Selector {
                    tag: &o.group_name,
                    outbounds: Choices {
                        first: &o.urltest_name,
                        tags,
                    },
                    default: &o.urltest_name,
                },
                Outbound::Urltest {
                    tag: &o.urltest_name,
                    outbounds: tags,
                    url: &o.urltest_url,
                    interval: go_duration(o.urltest_interval),
                },
            ]
        });
        let each = entries.iter().zip(tags).map(|(e, tag)| outbound(e, tag));
        let direct = Outbound::Direct { tag: DIRECT_TAG };
        serializer.collect_seq(
            groups
                .into_iter()
                .flatten()
                .chain(each)
                .chain(std::iter::once(direct)),
        )
    }
}

/// The selector's choices: the urltest group first, then every entry.
struct Choices<'a> {
    first: &'a str,
    tags: &'a [String],
}

impl Serialize for Choices<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer
            .collect_seq(std::iter::once(self.first).chain(self.tags.iter().map(String::as_str)))
    }
}

/// One sing-box outbound.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum Outbound<'a> {
    Selector {
        tag: &'a str,
        outbounds: Choices<'a>,
        default: &'a str,
    },
    Urltest {
        tag: &'a str,
        outbounds: &'a [String],
        url: &'a str,
        interval: String,
    },
    Vless {
        tag: &'a str,
        server: &'a str,
        server_port: u16,
        uuid: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        flow: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        tls: Option<Tls<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        transport: Option<Ws<'a>>,
    },
    Trojan {
        tag: &'a str,
        server: &'a str,
        server_port: u16,
        password: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        tls: Option<Tls<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        transport: Option<Ws<'a>>,
    },
    Shadowsocks {
        tag: &'a str,
        server: &'a str,
        server_port: u16,
        method: &'a str,
        password: &'a str,
    },
    Hysteria2 {
        tag: &'a str,
        server: &'a str,
        server_port: u16,
        /// The hop range, `first:last` (sing-box's form of a range).
        #[serde(skip_serializing_if = "Option::is_none")]
        server_ports: Option<[String; 1]>,
        /// How often to hop, a Go duration in seconds (`"30s"`); only with
        /// `server_ports`.
        #[serde(skip_serializing_if = "Option::is_none")]
        hop_interval: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        up_mbps: Option<u32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        down_mbps: Option<u32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        obfs: Option<Obfs<'a>>,
        password: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        tls: Option<Tls<'a>>,
    },
    Direct {
        tag: &'a str,
    },
}

/// Hysteria 2's obfuscation: Salamander with its password.
#[derive(Serialize)]
struct Obfs<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    password: &'a str,
}

/// An outbound's TLS.
#[derive(Serialize)]
struct Tls<'a> {
    enabled: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_name: Option<&'a str>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    insecure: bool,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    alpn: &'a [String],
    /// PEM text trusted instead of the system roots.
    #[serde(skip_serializing_if = "Option::is_none")]
    certificate: Option<&'a str>,
    /// The browser ClientHello imitated (sing-box needs a build with uTLS).
    #[serde(skip_serializing_if = "Option::is_none")]
    utls: Option<Utls<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reality: Option<Reality<'a>>,
}

#[derive(Serialize)]
struct Utls<'a> {
    enabled: bool,
    fingerprint: &'a str,
}

#[derive(Serialize)]
struct Reality<'a> {
    enabled: bool,
    public_key: &'a str,
    short_id: &'a str,
}

/// The `ws`, `httpupgrade` and `grpc` transports. Xray's early-data path (`/ws?ed=2048`: the first bytes go in
/// `Sec-WebSocket-Protocol`) becomes sing-box's `max_early_data` with that header.
#[derive(Serialize)]
struct Ws<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    /// HTTPUpgrade's `Host` (WebSocket's goes in `headers`).
    #[serde(skip_serializing_if = "Option::is_none")]
    host: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<&'a str>,
    /// gRPC's service name.
    #[serde(skip_serializing_if = "Option::is_none")]
    service_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    headers: Option<Host<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_early_data: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    early_data_header_name: Option<&'static str>,
}

#[derive(Serialize)]
struct Host<'a> {
    #[serde(rename = "Host")]
    host: &'a str,
}

/// One tag per entry (see [`unique_names`]), the groups' tags and `direct` taken.
fn unique_tags<'e>(
    entries: impl IntoIterator<Item = &'e Entry>,
    options: &SingBoxOptions,
) -> Vec<String> {
    unique_names(
        entries,
        [
            options.group_name.as_str(),
            options.urltest_name.as_str(),
            DIRECT_TAG,
        ],
    )
}

/// One name per entry: its name, or `"server"` when empty, with ` 2`, ` 3`, ...
/// added when a name is taken (by an earlier entry or one of `reserved`). The
/// Clash config uses it too.
pub(crate) fn unique_names<'a, 'e>(
    entries: impl IntoIterator<Item = &'e Entry>,
    reserved: impl IntoIterator<Item = &'a str>,
) -> Vec<String> {
    let mut taken: HashSet<String> = reserved.into_iter().map(str::to_owned).collect();
    entries
        .into_iter()
        .map(|entry| {
            let base = if entry.name.is_empty() {
                UNNAMED
            } else {
                entry.name.as_str()
            };
            let mut tag = base.to_owned();
            let mut n = 2u64;
            while taken.contains(&tag) {
                tag = format!("{base} {n}");
                n += 1;
            }
            taken.insert(tag.clone());
            tag
        })
        .collect()
}

/// sing-box's outbound for `entry`, tagged `tag`.
fn outbound<'a>(entry: &'a Entry, tag: &'a str) -> Outbound<'a> {
    let tls = entry.tls.as_ref().map(|tls| Tls {
        enabled: true,
        server_name: tls.server_name.as_deref(),
        insecure: tls.insecure,
        alpn: &tls.alpn,
        certificate: tls.certificate_pem.as_deref(),
        utls: tls.fingerprint.as_deref().map(|fingerprint| Utls {
            enabled: true,
            fingerprint,
        }),
        reality: tls.reality.as_ref().map(|r| Reality {
            enabled: true,
            public_key: &r.public_key,
            short_id: &r.short_id,
        }),
    });
    let transport = match &entry.transport {
        EntryTransport::Ws { path, host } => {
            let (path, early) = split_early_data(path);
            Some(Ws {
                kind: "ws",
                host: None,
                path: Some(path),
                service_name: None,
                headers: host.as_deref().map(|host| Host { host }),
                max_early_data: early,
                early_data_header_name: early.map(|_| "Sec-WebSocket-Protocol"),
            })
        }
        EntryTransport::HttpUpgrade { path, host } => Some(Ws {
            kind: "httpupgrade",
            host: host.as_deref(),
            path: Some(path),
            service_name: None,
            headers: None,
            max_early_data: None,
            early_data_header_name: None,
        }),
        // sing-box speaks plain gun only; every node accepts it next to multi mode.
        EntryTransport::Grpc { service_name, .. } => Some(Ws {
            kind: "grpc",
            host: None,
            path: None,
            service_name: Some(service_name),
            headers: None,
            max_early_data: None,
            early_data_header_name: None,
        }),
        EntryTransport::Tcp => None,
        // Never reached from a config: `has_singbox_form` leaves XHTTP out.
        EntryTransport::Xhttp { .. } => None,
    };
    let (server, server_port) = (entry.server.as_str(), entry.port);
    match &entry.protocol {
        EntryProtocol::Vless { uuid, flow } => Outbound::Vless {
            tag,
            server,
            server_port,
            uuid,
            flow: flow.as_deref(),
            tls,
            transport,
        },
        EntryProtocol::Trojan { password } => Outbound::Trojan {
            tag,
            server,
            server_port,
            password,
            tls,
            transport,
        },
        // sing-box takes a SIP022 multi-user password as "serverkey:userkey", as the
        // entry holds it. Shadowsocks has no transport or TLS here.
        EntryProtocol::Shadowsocks { method, password } => Outbound::Shadowsocks {
            tag,
            server,
            server_port,
            method,
            password,
        },
        // Hysteria 2 is QUIC under the entry's TLS, no transport of its own.
        EntryProtocol::Hysteria2 {
            password,
            obfs_password,
            ports,
            up_mbps,
            down_mbps,
            hop_interval,
        } => {
            let server_ports = ports
                .as_deref()
                .and_then(crate::entry::hysteria2::hop_range)
                .map(|(first, last)| [format!("{first}:{last}")]);
            Outbound::Hysteria2 {
                tag,
                server,
                server_port,
                // sing-box reads `0s` as its default: no interval, nothing written.
                hop_interval: hop_interval
                    .filter(|s| *s > 0 && server_ports.is_some())
                    .map(|s| format!("{s}s")),
                server_ports,
                up_mbps: *up_mbps,
                down_mbps: *down_mbps,
                obfs: obfs_password.as_deref().map(|password| Obfs {
                    kind: "salamander",
                    password,
                }),
                password,
                tls,
            }
        }
    }
}

/// `("/ws", Some(2048))` for `"/ws?ed=2048"`; the path unchanged when its query is
/// anything else. The Clash config splits it the same way.
pub(crate) fn split_early_data(path: &str) -> (&str, Option<u32>) {
    if let Some((base, query)) = path.split_once('?')
        && let Some(bytes) = query.strip_prefix("ed=")
        && let Ok(bytes) = bytes.parse::<u32>()
    {
        return (base, Some(bytes));
    }
    (path, None)
}

/// A Go duration string: `3m`, `90s`, `1500ms`.
fn go_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(60_000) && ms > 0 {
        format!("{}m", ms / 60_000)
    } else if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

#[path = "singbox_read.rs"]
mod read;
pub use read::{OutboundProblem, ReadError, entries};

#[cfg(test)]
#[path = "singbox_tests.rs"]
mod tests;
