//! sing-box 1.14 configs for the tests, as `serde_json::Value`s.
//!
//! Every config logs at `warn`, resolves names only with the machine's own resolver
//! (`"dns": {"servers": [{"type": "local"}]}`, which for the tests' IP literals means
//! never), and listens on 127.0.0.1. Each builder below was checked with the pinned
//! sing-box (`sing-box check`), and the crate's tests run them.
//!
//! The pieces are plain JSON: set a field with `value["tls"] = tls_client(&cert)` or
//! `value["transport"] = ws_transport("/ws")` before passing it on.
//!
//! ```
//! use serde_json::json;
//! use switchyard_testkit::{config, local};
//!
//! let mut outbound = config::vless_outbound(local(8443), "bf000d23-0752-40b4-affe-68f7707a9661");
//! outbound["transport"] = config::ws_transport("/ws");
//! let client = config::client(1080, outbound);
//! assert_eq!(client["route"]["final"], json!(config::PROXY_TAG));
//! ```

use std::net::SocketAddr;

use serde_json::{Value, json};

use crate::TestCert;

/// The tag of the client's `mixed` (SOCKS5 + HTTP proxy) inbound.
pub const MIXED_TAG: &str = "mixed-in";
/// The tag given to the client's outbound when it has none.
pub const PROXY_TAG: &str = "proxy";
/// The tag of the server's inbound when it has none.
pub const SERVER_TAG: &str = "server-in";
/// The tag of the `direct` outbound of a server config.
pub const DIRECT_TAG: &str = "direct";

/// A client: a `mixed` inbound (SOCKS5 with UDP ASSOCIATE, and HTTP proxy) on
/// `127.0.0.1:mixed_port` tagged [`MIXED_TAG`], and `outbound` as the one outbound
/// every connection takes (tagged [`PROXY_TAG`] unless it has a tag).
pub fn client(mixed_port: u16, outbound: Value) -> Value {
    let outbound = tagged(outbound, PROXY_TAG);
    let tag = outbound["tag"].clone();
    json!({
        "log": log(),
        "dns": dns(),
        "inbounds": [{
            "type": "mixed",
            "tag": MIXED_TAG,
            "listen": "127.0.0.1",
            "listen_port": mixed_port,
        }],
        "outbounds": [outbound],
        "route": { "final": tag },
    })
}

/// A server: `inbound` (tagged [`SERVER_TAG`] unless it has a tag) and a `direct`
/// outbound that every connection takes. For benchmarks against sing-box as the
/// server, and for tests of our client.
pub fn server(inbound: Value) -> Value {
    json!({
        "log": log(),
        "dns": dns(),
        "inbounds": [tagged(inbound, SERVER_TAG)],
        "outbounds": [direct_outbound()],
        "route": { "final": DIRECT_TAG },
    })
}

/// The `direct` outbound: connections leave sing-box as they came.
pub fn direct_outbound() -> Value {
    json!({ "type": "direct", "tag": DIRECT_TAG })
}

/// A VLESS outbound to `server` with user `uuid`, over plain TCP (add `tls`,
/// `transport` or `flow` as needed).
///
/// UDP: with no `packet_encoding` field (as here) sing-box 1.14 sends XUDP, a VLESS
/// request with command 3 (Mux) carrying mux.cool frames; `"packet_encoding": ""`
/// gives plain VLESS UDP (command 2, length-prefixed packets to one destination);
/// `"packetaddr"` is command 2 to `sp.packet-addr.v2fly.arpa`.
pub fn vless_outbound(server: SocketAddr, uuid: &str) -> Value {
    json!({
        "type": "vless",
        "server": server.ip().to_string(),
        "server_port": server.port(),
        "uuid": uuid,
    })
}

/// A Trojan outbound to `server`; Trojan runs over TLS, so `tls` is required (see
/// [`tls_client`]).
pub fn trojan_outbound(server: SocketAddr, password: &str, tls: Value) -> Value {
    json!({
        "type": "trojan",
        "server": server.ip().to_string(),
        "server_port": server.port(),
        "password": password,
        "tls": tls,
    })
}

/// A Shadowsocks outbound. For Shadowsocks-2022 `method` is e.g.
/// `2022-blake3-aes-128-gcm` and `password` the base64 of a 16-byte key (32 bytes
/// for the 256-bit methods).
pub fn shadowsocks_outbound(server: SocketAddr, method: &str, password: &str) -> Value {
    json!({
        "type": "shadowsocks",
        "server": server.ip().to_string(),
        "server_port": server.port(),
        "method": method,
        "password": password,
    })
}

/// A VLESS inbound on `127.0.0.1:port` with one user.
pub fn vless_inbound(port: u16, uuid: &str) -> Value {
    json!({
        "type": "vless",
        "listen": "127.0.0.1",
        "listen_port": port,
        "users": [{ "name": "user", "uuid": uuid }],
    })
}

/// A Trojan inbound on `127.0.0.1:port` with one user and TLS (see [`tls_server`]).
pub fn trojan_inbound(port: u16, password: &str, tls: Value) -> Value {
    json!({
        "type": "trojan",
        "listen": "127.0.0.1",
        "listen_port": port,
        "users": [{ "name": "user", "password": password }],
        "tls": tls,
    })
}

/// A single-user Shadowsocks inbound on `127.0.0.1:port` (TCP and UDP).
pub fn shadowsocks_inbound(port: u16, method: &str, password: &str) -> Value {
    json!({
        "type": "shadowsocks",
        "listen": "127.0.0.1",
        "listen_port": port,
        "method": method,
        "password": password,
    })
}

/// Client TLS that trusts exactly `cert` (by its PEM file) and sends its name as SNI.
pub fn tls_client(cert: &TestCert) -> Value {
    json!({
        "enabled": true,
        "server_name": cert.name(),
        "certificate_path": cert.cert_path(),
    })
}

/// Server TLS presenting `cert`.
pub fn tls_server(cert: &TestCert) -> Value {
    json!({
        "enabled": true,
        "server_name": cert.name(),
        "certificate_path": cert.cert_path(),
        "key_path": cert.key_path(),
    })
}

/// The WebSocket transport on `path` (the same value on both sides).
pub fn ws_transport(path: &str) -> Value {
    json!({ "type": "ws", "path": path })
}

/// The HTTPUpgrade transport on `path`, with `host` as its `Host` header when given
/// (the same values on both sides).
pub fn httpupgrade_transport(path: &str, host: Option<&str>) -> Value {
    let mut transport = json!({ "type": "httpupgrade", "path": path });
    if let Some(host) = host {
        transport["host"] = json!(host);
    }
    transport
}

fn log() -> Value {
    json!({ "level": "warn" })
}

fn dns() -> Value {
    json!({ "servers": [{ "type": "local", "tag": "local" }] })
}

fn tagged(mut value: Value, tag: &str) -> Value {
    if value.get("tag").is_none() {
        value["tag"] = json!(tag);
    }
    value
}
