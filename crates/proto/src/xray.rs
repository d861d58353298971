//! Xray client configs for a list of entries, one complete config per entry.
//!
//! [`client_configs`] renders a JSON array of Xray-core configs (Xray 1.8 and later;
//! checked with `xray run -test` of the pinned 24.11.21 in the tests), the form
//! v2rayN, v2rayNG, Happ and Streisand import as a subscription of full configs:
//! each names itself with `remarks` (the entry's name), and each is
//!
//! ```text
//! inbounds:  socks (with UDP) on 127.0.0.1:options.socks_port, http on 127.0.0.1:options.http_port
//! outbounds: proxy (the entry: vless vnext / trojan servers / shadowsocks servers,
//!            streamSettings tcp|ws|httpupgrade|grpc|xhttp and tls), direct (freedom), block (blackhole)
//! routing:   AsIs; both inbounds -> proxy
//! ```
//!
//! With `options.vpn` ([`crate::vpn::VpnOptions`]): a `dns` section asking the remote
//! resolver through the proxy (`https://` as DNS over HTTPS, `tcp://` as DNS over TCP,
//! `udp://` plain; Xray has no DNS over TLS, so `tls://` is asked over TCP at port
//! 53), IPv4 answers only, and private, loopback and link-local addresses routed
//! direct before everything else (the apps that run these configs, Happ, v2rayNG,
//! v2RayTun, Streisand, carry their VPN's traffic into the SOCKS inbound).
//!
//! Xray reads the early-data form of a WebSocket path (`/ws?ed=2048`) itself, so the
//! path is written as the entry holds it. A pinned certificate
//! ([`EntryTls::certificate_pem`]) becomes the only root Xray trusts for that
//! outbound (`certificates` with `usage: verify` and `disableSystemRoot`): the
//! certificate is verified, host name included, never skipped. A Shadowsocks 2022
//! multi-user password is the entry's `"serverkey:userkey"`, which Xray reads as
//! the SIP022 identity header. A REALITY entry is `security: reality` with
//! `realitySettings` (`serverName`, `fingerprint`, `publicKey`, `shortId`,
//! `spiderX: "/"`); its VLESS user carries the flow.
//!
//! A Hysteria 2 entry has no Xray form (Xray 24.11.21 has no Hysteria 2 outbound):
//! [`client_configs`] leaves it out, and [`outbound`] of one is a `blackhole`, so
//! nothing leaves unproxied. With no entries there is no config: the array is
//! empty.

use std::net::Ipv4Addr;

use serde_json::{Value, json};

use crate::entry::{Entry, EntryProtocol, EntryReality, EntryTls, EntryTransport};

/// The tag of the entry's outbound, the one everything is routed to.
pub const PROXY_TAG: &str = "proxy";
/// The tag of the `freedom` outbound.
pub const DIRECT_TAG: &str = "direct";
/// The tag of the `blackhole` outbound.
pub const BLOCK_TAG: &str = "block";
/// The tag of the SOCKS inbound.
pub const SOCKS_TAG: &str = "socks";
/// The tag of the HTTP inbound.
pub const HTTP_TAG: &str = "http";

/// Choices of the rendered configs. `Default` gives the documented defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XrayOptions {
    /// The SOCKS5 inbound's port on 127.0.0.1. Default 10808, v2rayN's.
    pub socks_port: u16,
    /// The HTTP proxy inbound's port on 127.0.0.1. Default 10809, v2rayN's.
    pub http_port: u16,
    /// Xray's `loglevel` (`debug`, `info`, `warning`, `error`, `none`). Default
    /// `"warning"`.
    pub log_level: String,
    /// DNS through the proxy and the local network direct (see the module docs).
    /// Default `None`: a local proxy.
    pub vpn: Option<crate::vpn::VpnOptions>,
    /// Split tunnelling ([`crate::routing`]): rules with the apps' `geosite:` and
    /// `geoip:` codes and the custom rules, after the local network's. Default `None`.
    pub routing: Option<crate::routing::Routing>,
}

impl Default for XrayOptions {
    fn default() -> Self {
        Self {
            socks_port: 10808,
            http_port: 10809,
            log_level: "warning".to_owned(),
            vpn: None,
            routing: None,
        }
    }
}

/// One complete Xray config per entry, as a JSON array (see the
/// [module docs](self)).
pub fn client_configs(entries: &[Entry], options: &XrayOptions) -> Value {
    Value::Array(
        entries
            .iter()
            .filter(|e| has_xray_form(e))
            .map(|e| client_config(e, options))
            .collect(),
    )
}

/// [`client_configs`], each in an operator's template ([`crate::template::xray`]).
pub fn client_configs_in(entries: &[Entry], options: &XrayOptions, template: &Value) -> Value {
    match client_configs(entries, options) {
        Value::Array(configs) => Value::Array(
            configs
                .iter()
                .map(|c| crate::template::xray(template, c))
                .collect(),
        ),
        other => other,
    }
}

/// Whether Xray can run `entry`: not Hysteria 2, which it has no outbound for.
pub fn has_xray_form(entry: &Entry) -> bool {
    !matches!(entry.protocol, EntryProtocol::Hysteria2 { .. })
}

/// The complete Xray config for one entry.
pub fn client_config(entry: &Entry, options: &XrayOptions) -> Value {
    let listen = Ipv4Addr::LOCALHOST.to_string();
    let mut rules = Vec::new();
    if options.vpn.is_some() {
        rules.push(json!({
            "type": "field",
            "ip": PRIVATE_CIDRS,
            "outboundTag": DIRECT_TAG,
        }));
    }
    let routing = options.routing.as_ref().filter(|r| !r.is_global());
    if let Some(r) = routing {
        rules.extend(r.xray_rules(PROXY_TAG, DIRECT_TAG, BLOCK_TAG));
    }
    rules.push(json!({
        "type": "field",
        "inboundTag": [SOCKS_TAG, HTTP_TAG],
        "outboundTag": PROXY_TAG,
    }));
    // Domain rules need the name: taken from what the app sends, for routing only.
    let sniffing = if routing.is_some() {
        json!({ "enabled": true, "destOverride": ["http", "tls", "quic"], "routeOnly": true })
    } else {
        json!({ "enabled": false })
    };
    let mut config = json!({
        "remarks": entry.name,
        "log": { "loglevel": options.log_level },
        "inbounds": [
            {
                "tag": SOCKS_TAG,
                "protocol": "socks",
                "listen": listen,
                "port": options.socks_port,
                "settings": { "auth": "noauth", "udp": true },
                "sniffing": sniffing,
            },
            {
                "tag": HTTP_TAG,
                "protocol": "http",
                "listen": listen,
                "port": options.http_port,
                "settings": {},
                "sniffing": sniffing,
            },
        ],
        "outbounds": [
            outbound(entry),
            { "tag": DIRECT_TAG, "protocol": "freedom" },
            { "tag": BLOCK_TAG, "protocol": "blackhole" },
        ],
        "routing": {
            "domainStrategy": if routing.is_some() { "IPIfNonMatch" } else { "AsIs" },
            "rules": rules,
        },
    });
    if let Some(vpn) = &options.vpn {
        config["dns"] = json!({
            "servers": [dns_server(&vpn.remote_dns)],
            "queryStrategy": "UseIPv4",
        });
    }
    config
}

/// Private, loopback and link-local addresses: the local network, routed direct.
pub const PRIVATE_CIDRS: [&str; 8] = [
    "10.0.0.0/8",
    "172.16.0.0/12",
    "192.168.0.0/16",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "fc00::/7",
    "fe80::/10",
    "::1/128",
];

/// The remote resolver in Xray's words: asked through the routing (the proxy, the
/// first outbound), never `+local`.
fn dns_server(dns: &crate::vpn::RemoteDns) -> Value {
    use crate::vpn::DnsKind;
    let ip = dns.server;
    match dns.kind {
        DnsKind::Https | DnsKind::Tcp => json!(dns.url()),
        // No DNS over TLS in Xray: the same resolver over TCP.
        DnsKind::Tls => json!(format!("tcp://{}", std::net::SocketAddr::new(ip, 53))),
        DnsKind::Udp => json!({ "address": ip.to_string(), "port": dns.port }),
    }
}

/// Xray's outbound for `entry`, tagged [`PROXY_TAG`].
pub fn outbound(entry: &Entry) -> Value {
    let (protocol, settings) = match &entry.protocol {
        EntryProtocol::Vless { uuid, flow } => {
            let mut user = json!({ "id": uuid, "encryption": "none" });
            if let Some(flow) = flow {
                user["flow"] = json!(flow);
            }
            let server = json!({ "address": entry.server, "port": entry.port, "users": [user] });
            ("vless", json!({ "vnext": [server] }))
        }
        EntryProtocol::Trojan { password } => {
            let server =
                json!({ "address": entry.server, "port": entry.port, "password": password });
            ("trojan", json!({ "servers": [server] }))
        }
        EntryProtocol::Shadowsocks { method, password } => {
            let server = json!({
                "address": entry.server,
                "port": entry.port,
                "method": method,
                "password": password,
            });
            ("shadowsocks", json!({ "servers": [server] }))
        }
        EntryProtocol::Hysteria2 { .. } => {
            return json!({ "tag": PROXY_TAG, "protocol": "blackhole" });
        }
    };
    json!({
        "tag": PROXY_TAG,
        "protocol": protocol,
        "settings": settings,
        "streamSettings": stream_settings(entry),
    })
}

/// `network` and its settings, and `security` with `tlsSettings`. Shadowsocks runs
/// on plain TCP here, whatever the entry says.
fn stream_settings(entry: &Entry) -> Value {
    if matches!(entry.protocol, EntryProtocol::Shadowsocks { .. }) {
        return json!({ "network": "tcp", "security": "none" });
    }
    let mut out = match &entry.transport {
        EntryTransport::Tcp => json!({ "network": "tcp" }),
        EntryTransport::Ws { path, host } => {
            let mut ws = json!({ "path": path });
            if let Some(host) = host {
                ws["host"] = json!(host);
            }
            json!({ "network": "ws", "wsSettings": ws })
        }
        EntryTransport::HttpUpgrade { path, host } => {
            let mut up = json!({ "path": path });
            if let Some(host) = host {
                up["host"] = json!(host);
            }
            json!({ "network": "httpupgrade", "httpupgradeSettings": up })
        }
        EntryTransport::Grpc {
            service_name,
            authority,
            multi,
        } => {
            let mut grpc = json!({ "serviceName": service_name, "multiMode": multi });
            if let Some(authority) = authority {
                grpc["authority"] = json!(authority);
            }
            json!({ "network": "grpc", "grpcSettings": grpc })
        }
        EntryTransport::Xhttp {
            path,
            host,
            mode,
            extra,
        } => {
            let mut xhttp = json!({ "path": path, "mode": mode.name() });
            if let Some(host) = host {
                xhttp["host"] = json!(host);
            }
            if let Some(extra) = extra {
                xhttp["extra"] = extra.to_xray();
            }
            json!({ "network": "xhttp", "xhttpSettings": xhttp })
        }
    };
    match &entry.tls {
        None => out["security"] = json!("none"),
        Some(tls) => match &tls.reality {
            Some(reality) => {
                out["security"] = json!("reality");
                out["realitySettings"] = reality_settings(tls, reality);
            }
            None => {
                out["security"] = json!("tls");
                out["tlsSettings"] = tls_settings(tls);
            }
        },
    }
    out
}

/// `realitySettings`: the borrowed site's name, the fingerprint (Xray requires
/// one: Chrome's when the entry has none), the key, the short id, and `spiderX`
/// `/` (where Xray's client "browses" the site when the server is not REALITY).
fn reality_settings(tls: &EntryTls, reality: &EntryReality) -> Value {
    let mut out = json!({
        "fingerprint": tls.fingerprint.as_deref().unwrap_or("chrome"),
        "publicKey": reality.public_key,
        "shortId": reality.short_id,
        "spiderX": "/",
    });
    if let Some(name) = &tls.server_name {
        out["serverName"] = json!(name);
    }
    out
}

fn tls_settings(tls: &EntryTls) -> Value {
    let mut out = json!({ "allowInsecure": tls.insecure });
    if let Some(name) = &tls.server_name {
        out["serverName"] = json!(name);
    }
    if !tls.alpn.is_empty() {
        out["alpn"] = json!(tls.alpn);
    }
    if let Some(fp) = &tls.fingerprint {
        out["fingerprint"] = json!(fp);
    }
    if let Some(pem) = &tls.certificate_pem {
        // Xray takes a PEM as its lines; with the system roots off, this
        // certificate is the only one the outbound accepts.
        let lines: Vec<&str> = pem.lines().filter(|l| !l.trim().is_empty()).collect();
        out["disableSystemRoot"] = json!(true);
        out["certificates"] = json!([{ "usage": "verify", "certificate": lines }]);
    }
    out
}

#[cfg(test)]
#[path = "xray_tests.rs"]
mod tests;
