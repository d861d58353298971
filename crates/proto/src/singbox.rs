//! A sing-box client config for a list of entries.
//!
//! [`client_config`] renders a complete config in the format of sing-box 1.12 and
//! later (checked with `sing-box check` of the pinned 1.14 in the tests), with no
//! deprecated field:
//!
//! ```text
//! inbounds:  mixed (SOCKS5 + HTTP proxy) on options.listen
//! outbounds: selector `group_name` -> [urltest `urltest_name`, entry 1, entry 2, ...]
//!            urltest `urltest_name` -> [entry 1, entry 2, ...] (url, interval)
//!            one outbound per entry, tagged with its name (made unique)
//!            direct
//! route:     final = the selector; names resolved with the local resolver
//! ```
//!
//! With no entries there is nothing to select: the config has only `direct`, and a
//! route rule rejects every connection of the proxy inbound, so nothing leaves
//! unproxied.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::entry::{Entry, EntryProtocol, EntryTls, EntryTransport};

/// The tag of the `mixed` inbound.
pub const MIXED_TAG: &str = "mixed-in";
/// The tag of the `direct` outbound.
pub const DIRECT_TAG: &str = "direct";
/// The tag of the local DNS server that resolves the servers' names.
pub const DNS_TAG: &str = "local";
/// What an entry with an empty name is tagged.
const UNNAMED: &str = "server";

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
        }
    }
}

/// The complete sing-box client config for `entries` (see the [module docs](self)).
pub fn client_config(entries: &[Entry], options: &SingBoxOptions) -> Value {
    let tags = unique_tags(entries, options);
    let mut outbounds: Vec<Value> = Vec::with_capacity(entries.len() + 3);
    let mut route = json!({ "default_domain_resolver": DNS_TAG });
    if entries.is_empty() {
        route["final"] = json!(DIRECT_TAG);
        route["rules"] = json!([{ "inbound": [MIXED_TAG], "action": "reject" }]);
    } else {
        let mut choices = vec![options.urltest_name.clone()];
        choices.extend(tags.iter().cloned());
        outbounds.push(json!({
            "type": "selector",
            "tag": options.group_name,
            "outbounds": choices,
            "default": options.urltest_name,
        }));
        outbounds.push(json!({
            "type": "urltest",
            "tag": options.urltest_name,
            "outbounds": tags,
            "url": options.urltest_url,
            "interval": go_duration(options.urltest_interval),
        }));
        outbounds.extend(entries.iter().zip(&tags).map(|(e, tag)| outbound(e, tag)));
        route["final"] = json!(options.group_name);
    }
    outbounds.push(json!({ "type": "direct", "tag": DIRECT_TAG }));
    json!({
        "log": { "level": options.log_level, "timestamp": true },
        "dns": { "servers": [{ "type": "local", "tag": DNS_TAG }] },
        "inbounds": [{
            "type": "mixed",
            "tag": MIXED_TAG,
            "listen": options.listen.ip().to_string(),
            "listen_port": options.listen.port(),
        }],
        "outbounds": outbounds,
        "route": route,
    })
}

/// One tag per entry (see [`unique_names`]), the groups' tags and `direct` taken.
fn unique_tags(entries: &[Entry], options: &SingBoxOptions) -> Vec<String> {
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
pub(crate) fn unique_names<'a>(
    entries: &[Entry],
    reserved: impl IntoIterator<Item = &'a str>,
) -> Vec<String> {
    let mut taken: HashSet<String> = reserved.into_iter().map(str::to_owned).collect();
    entries
        .iter()
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
pub fn outbound(entry: &Entry, tag: &str) -> Value {
    let mut out = Map::new();
    let mut put = |key: &str, value: Value| {
        out.insert(key.to_owned(), value);
    };
    match &entry.protocol {
        EntryProtocol::Vless { uuid, flow } => {
            put("type", json!("vless"));
            put("tag", json!(tag));
            put("server", json!(entry.server));
            put("server_port", json!(entry.port));
            put("uuid", json!(uuid));
            if let Some(flow) = flow {
                put("flow", json!(flow));
            }
        }
        EntryProtocol::Trojan { password } => {
            put("type", json!("trojan"));
            put("tag", json!(tag));
            put("server", json!(entry.server));
            put("server_port", json!(entry.port));
            put("password", json!(password));
        }
        EntryProtocol::Shadowsocks { method, password } => {
            // sing-box takes a SIP022 multi-user password as "serverkey:userkey",
            // as the entry holds it. Shadowsocks has no transport or TLS here.
            return json!({
                "type": "shadowsocks",
                "tag": tag,
                "server": entry.server,
                "server_port": entry.port,
                "method": method,
                "password": password,
            });
        }
    }
    if let Some(tls) = &entry.tls {
        put("tls", tls_object(tls));
    }
    if let EntryTransport::Ws { path, host } = &entry.transport {
        put("transport", ws_transport(path, host.as_deref()));
    }
    Value::Object(out)
}

fn tls_object(tls: &EntryTls) -> Value {
    let mut out = json!({ "enabled": true });
    if let Some(name) = &tls.server_name {
        out["server_name"] = json!(name);
    }
    if tls.insecure {
        out["insecure"] = json!(true);
    }
    if !tls.alpn.is_empty() {
        out["alpn"] = json!(tls.alpn);
    }
    if let Some(pem) = &tls.certificate_pem {
        // The outbound TLS `certificate`: PEM text trusted instead of the system roots.
        out["certificate"] = json!(pem);
    }
    out
}

/// The `ws` transport. Xray's early-data path (`/ws?ed=2048`: the first bytes go in
/// `Sec-WebSocket-Protocol`) becomes sing-box's `max_early_data` with that header.
fn ws_transport(path: &str, host: Option<&str>) -> Value {
    let (path, early) = split_early_data(path);
    let mut out = json!({ "type": "ws", "path": path });
    if let Some(host) = host {
        out["headers"] = json!({ "Host": host });
    }
    if let Some(bytes) = early {
        out["max_early_data"] = json!(bytes);
        out["early_data_header_name"] = json!("Sec-WebSocket-Protocol");
    }
    out
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

#[cfg(test)]
#[path = "singbox_tests.rs"]
mod tests;
