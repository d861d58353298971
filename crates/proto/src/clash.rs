//! A Clash (mihomo) client config for a list of entries.
//!
//! [`client_config`] renders a complete config as YAML text, in the fields of
//! mihomo (Clash Meta) 1.19, the core of Clash Verge, FlClash, Clash Meta for
//! Android and the like (checked with `mihomo -t` of the pinned 1.19.2 in the
//! tests). It mirrors [`crate::singbox`]:
//!
//! ```text
//! mixed-port: options.mixed_port (SOCKS5 + HTTP), allow-lan: false, mode: rule
//! proxies:      one per entry, named with its name (made unique)
//! proxy-groups: select `group_name`    -> [url-test `urltest_name`, entry 1, entry 2, ...]
//!               url-test `urltest_name` -> [entry 1, entry 2, ...] (url, interval)
//! rules:        MATCH -> the select group
//! ```
//!
//! With `options.vpn`, a `dns` section, a `tun` section for the app's switch and
//! private addresses direct ([`crate::clash_vpn`]).
//!
//! A pinned certificate ([`EntryTls::certificate_pem`], or
//! [`EntryTls::certificate_sha256`] when only its hash is known) becomes mihomo's
//! `fingerprint`: the SHA-256 of the certificate's DER, in hex. mihomo then accepts
//! exactly that certificate and no other, whatever signed it; verification is not
//! skipped (`skip-cert-verify` is only written for [`EntryTls::insecure`]).
//! [`EntryTls::fingerprint`] is `client-fingerprint` (uTLS), and REALITY is
//! `reality-opts` (`public-key`, `short-id`) beside `tls: true` and `servername`.
//! HTTPUpgrade is mihomo's `network: ws` with `ws-opts.v2ray-http-upgrade: true`
//! (`path`, `headers.Host`); gRPC is `network: grpc` with
//! `grpc-opts.grpc-service-name`, plain gun (mihomo has neither multi mode nor an
//! authority). Hysteria 2 is `type: hysteria2` with `password`, `ports` (the hop
//! range, `first-last`) and `hop-interval` (seconds), `obfs: salamander` and `obfs-password`, `up`/`down`
//! (Mbit/s), `sni` and the pin as above. An entry's route id is the proxy's `switchyard-route`
//! ([`ROUTE_KEY`]), a key mihomo ignores.
//!
//! [`entries`] and [`read`] are the reverse: the entries of a Clash config, ours or
//! another panel's (`clash_read.rs`).
//!
//! A Trojan entry without TLS has no Clash form (mihomo's Trojan always speaks TLS)
//! and is left out. With no entries left there is nothing to select: the select
//! group holds only `REJECT`, so nothing leaves unproxied.
//!
//! The YAML is written by a small writer of this crate (`yaml.rs` says why): every
//! string double-quoted, keys of a mapping in alphabetical order.

use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::entry::{Entry, EntryProtocol, EntryTls, EntryTransport};
use crate::singbox::{split_early_data, unique_names};
use crate::yaml;

/// The key of a proxy that holds its entry's route id ([`Entry::route`]).
pub const ROUTE_KEY: &str = "switchyard-route";

/// The names mihomo gives its built-in proxies and groups; no entry may take one.
const BUILT_IN: [&str; 6] = [
    "DIRECT",
    "REJECT",
    "REJECT-DROP",
    "PASS",
    "COMPATIBLE",
    "GLOBAL",
];

/// Choices of a rendered config. `Default` gives the documented defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClashOptions {
    /// The `mixed-port` (SOCKS5 and HTTP proxy) on 127.0.0.1 (`allow-lan` is off,
    /// so the proxy is not open to the network). Default 7890, Clash's usual port.
    pub mixed_port: u16,
    /// The `select` group's name, the group the user picks a server in. Default
    /// `"Switchyard"`.
    pub group_name: String,
    /// The `url-test` group's name. Default `"Fastest"` (it picks the lowest
    /// latency).
    pub urltest_name: String,
    /// The URL the `url-test` group fetches. Default
    /// `https://www.gstatic.com/generate_204`, an empty answer most clients use.
    pub urltest_url: String,
    /// How often the `url-test` group tests, in whole seconds (mihomo's unit).
    /// Default 3 minutes: often enough to leave a dead server soon, rare enough to
    /// cost next to nothing.
    pub urltest_interval: Duration,
    /// mihomo's `log-level` (`silent`, `error`, `warning`, `info`, `debug`). Default
    /// `"warning"`.
    pub log_level: String,
    /// DNS through the proxy and a `tun` section for the app's TUN switch
    /// ([`crate::clash_vpn`]). Default `None`: a local proxy.
    pub vpn: Option<crate::vpn::VpnOptions>,
    /// Split tunnelling ([`crate::routing`]): the panel's rule providers and the
    /// rules that name them, before `MATCH`. Default `None`.
    pub routing: Option<crate::routing::Routing>,
}

impl Default for ClashOptions {
    fn default() -> Self {
        Self {
            mixed_port: 7890,
            group_name: "Switchyard".to_owned(),
            urltest_name: "Fastest".to_owned(),
            urltest_url: "https://www.gstatic.com/generate_204".to_owned(),
            urltest_interval: Duration::from_secs(180),
            log_level: "warning".to_owned(),
            vpn: None,
            routing: None,
        }
    }
}

/// The complete Clash config for `entries`, as YAML text (see the
/// [module docs](self)).
pub fn client_config(entries: &[Entry], options: &ClashOptions) -> String {
    yaml::to_string(&config_value(entries, options))
}

/// [`client_config`] in an operator's template ([`crate::template::clash`]).
pub fn client_config_in(entries: &[Entry], options: &ClashOptions, template: &Value) -> String {
    let ours = config_value(entries, options);
    yaml::to_string(&crate::template::clash(
        template,
        &ours,
        &options.group_name,
    ))
}

/// The config as a JSON value, before it is written as YAML.
pub(crate) fn config_value(entries: &[Entry], options: &ClashOptions) -> Value {
    let owned: Vec<Entry> = entries
        .iter()
        .filter(|e| has_clash_form(e))
        .cloned()
        .collect();
    let mut reserved = vec![options.group_name.as_str(), options.urltest_name.as_str()];
    reserved.extend(BUILT_IN);
    let names = unique_names(&owned, reserved);
    let proxies: Vec<Value> = owned.iter().zip(&names).map(|(e, n)| proxy(e, n)).collect();
    let groups = if owned.is_empty() {
        json!([{ "name": options.group_name, "type": "select", "proxies": ["REJECT"] }])
    } else {
        let mut choices = vec![options.urltest_name.clone()];
        choices.extend(names.iter().cloned());
        json!([
            { "name": options.group_name, "type": "select", "proxies": choices },
            {
                "name": options.urltest_name,
                "type": "url-test",
                "proxies": names,
                "url": options.urltest_url,
                "interval": options.urltest_interval.as_secs(),
            },
        ])
    };
    let mut rules: Vec<String> = Vec::new();
    if options.vpn.is_some() && !owned.is_empty() {
        rules.extend(crate::clash_vpn::private_rules().map(str::to_owned));
    }
    let routing = options
        .routing
        .as_ref()
        .filter(|r| !owned.is_empty() && !r.is_global());
    if let Some(r) = routing {
        rules.extend(r.clash_rules(&options.group_name));
    }
    rules.push(format!("MATCH,{}", options.group_name));
    let mut config = json!({
        "mixed-port": options.mixed_port,
        "allow-lan": false,
        "mode": "rule",
        "log-level": options.log_level,
        "proxies": proxies,
        "proxy-groups": groups,
        "rules": rules,
    });
    if let Some(r) = routing {
        config["rule-providers"] = Value::Object(r.clash_providers());
    }
    if let Some(vpn) = &options.vpn {
        config["dns"] = crate::clash_vpn::dns(vpn);
        config["tun"] = crate::clash_vpn::tun();
        if let Some(r) = routing {
            crate::clash_vpn::direct_names_locally(&mut config["dns"], r);
        }
    }
    config
}

/// Whether mihomo can express `entry` (a Trojan or Hysteria 2 entry needs TLS).
fn has_clash_form(entry: &Entry) -> bool {
    // mihomo 1.19.2 has no XHTTP: such an entry is left out (the panel leaves it
    // out before, with the reason in the subscription's announce).
    if matches!(entry.transport, EntryTransport::Xhttp { .. }) {
        return false;
    }
    !matches!(
        entry.protocol,
        EntryProtocol::Trojan { .. } | EntryProtocol::Hysteria2 { .. }
    ) || entry.tls.is_some()
}

/// mihomo's proxy for `entry`, named `name`.
pub fn proxy(entry: &Entry, name: &str) -> Value {
    let mut out = Map::new();
    let mut put = |key: &str, value: Value| {
        out.insert(key.to_owned(), value);
    };
    put("name", json!(name));
    put("server", json!(entry.server));
    put("port", json!(entry.port));
    put("udp", json!(true));
    if let Some(route) = entry
        .route
        .as_deref()
        .filter(|r| crate::entry::is_route_id(r))
    {
        // mihomo ignores keys it does not know; Switchyard's client keys the
        // server's identity on it.
        put(ROUTE_KEY, json!(route));
    }
    match &entry.protocol {
        EntryProtocol::Vless { uuid, flow } => {
            put("type", json!("vless"));
            put("uuid", json!(uuid));
            if let Some(flow) = flow {
                put("flow", json!(flow));
            }
            if let Some(tls) = &entry.tls {
                put("tls", json!(true));
                if let Some(name) = &tls.server_name {
                    put("servername", json!(name));
                }
                tls_fields(tls, &mut put);
                // mihomo 1.19.2 builds VLESS-over-gRPC's TLS without the pin
                // (`fingerprint`), so it refuses a pinned self-signed certificate
                // there. The entry keeps its pin all the same: an unverified
                // connection is no answer (docs/subscriptions.md, "gRPC").
            }
        }
        EntryProtocol::Trojan { password } => {
            put("type", json!("trojan"));
            put("password", json!(password));
            if let Some(tls) = &entry.tls {
                if let Some(name) = &tls.server_name {
                    put("sni", json!(name));
                }
                tls_fields(tls, &mut put);
            }
        }
        EntryProtocol::Shadowsocks { method, password } => {
            // mihomo takes a SIP022 multi-user password as "serverkey:userkey", as
            // the entry holds it. Shadowsocks has no transport or TLS here.
            put("type", json!("ss"));
            put("cipher", json!(method));
            put("password", json!(password));
            return Value::Object(out);
        }
        EntryProtocol::Hysteria2 {
            password,
            obfs_password,
            ports,
            up_mbps,
            down_mbps,
            hop_interval,
        } => {
            // mihomo's hysteria2: QUIC under TLS, no transport of its own; the hop
            // range as `ports: first-last` and its interval as `hop-interval`
            // (whole seconds), Brutal's rates as whole Mbit/s.
            put("type", json!("hysteria2"));
            put("password", json!(password));
            if let Some(ports) = ports {
                put("ports", json!(ports));
                if let Some(secs) = hop_interval.filter(|s| *s > 0) {
                    put("hop-interval", json!(secs));
                }
            }
            if let Some(obfs) = obfs_password {
                put("obfs", json!("salamander"));
                put("obfs-password", json!(obfs));
            }
            if let Some(up) = up_mbps {
                put("up", json!(up.to_string()));
            }
            if let Some(down) = down_mbps {
                put("down", json!(down.to_string()));
            }
            if let Some(tls) = &entry.tls {
                if let Some(name) = &tls.server_name {
                    put("sni", json!(name));
                }
                tls_fields(tls, &mut put);
            }
            return Value::Object(out);
        }
    }
    match &entry.transport {
        EntryTransport::Tcp => put("network", json!("tcp")),
        EntryTransport::Ws { path, host } => {
            put("network", json!("ws"));
            put("ws-opts", ws_opts(path, host.as_deref()));
        }
        EntryTransport::HttpUpgrade { path, host } => {
            // mihomo speaks HTTPUpgrade as a WebSocket whose upgrade is all there is.
            let mut opts = json!({ "path": path, "v2ray-http-upgrade": true });
            if let Some(host) = host {
                opts["headers"] = json!({ "Host": host });
            }
            put("network", json!("ws"));
            put("ws-opts", opts);
        }
        EntryTransport::Grpc { service_name, .. } => {
            // mihomo speaks plain gun (no multi mode); the node accepts both.
            put("network", json!("grpc"));
            put("grpc-opts", json!({ "grpc-service-name": service_name }));
        }
        // Never reached from a config: `has_clash_form` leaves XHTTP out.
        EntryTransport::Xhttp { .. } => {}
    }
    Value::Object(out)
}

/// The TLS fields VLESS and Trojan share (the SNI's key differs between them).
fn tls_fields(tls: &EntryTls, put: &mut impl FnMut(&str, Value)) {
    if !tls.alpn.is_empty() {
        put("alpn", json!(tls.alpn));
    }
    if tls.insecure {
        put("skip-cert-verify", json!(true));
    }
    if let Some(digest) = tls.pin_sha256() {
        put(
            "fingerprint",
            json!(crate::entry::hysteria2::pin_hex(&digest)),
        );
    }
    if let Some(fp) = &tls.fingerprint {
        put("client-fingerprint", json!(fp));
    }
    if let Some(reality) = &tls.reality {
        put(
            "reality-opts",
            json!({ "public-key": reality.public_key, "short-id": reality.short_id }),
        );
    }
}

/// `ws-opts`. Xray's early-data path (`/ws?ed=2048`) becomes `max-early-data` with
/// the `Sec-WebSocket-Protocol` header, as for sing-box.
fn ws_opts(path: &str, host: Option<&str>) -> Value {
    let (path, early) = split_early_data(path);
    let mut out = json!({ "path": path });
    if let Some(host) = host {
        out["headers"] = json!({ "Host": host });
    }
    if let Some(bytes) = early {
        out["max-early-data"] = json!(bytes);
        out["early-data-header-name"] = json!("Sec-WebSocket-Protocol");
    }
    out
}

#[path = "clash_read.rs"]
mod read;
pub use read::{
    MAX_DEPTH, MAX_NODES, MAX_TEXT, MAX_YAML, Proxies, ReadError, SkipReason, Skipped, entries,
    read,
};

#[cfg(test)]
#[path = "clash_tests.rs"]
mod tests;
