use serde_json::json;

use super::*;
use crate::entry::EntryTransport;
use crate::testing::entries::{
    PBK, UUID, entry, grpc, httpupgrade, merged, shadowsocks, tls, trojan, vision_over_insecure_ws,
    vision_over_reality, vless, ws,
};

fn tls_json() -> Value {
    json!({
        "security": "tls",
        "tlsSettings": {
            "allowInsecure": false,
            "serverName": "sni.example.com",
            "alpn": ["h2", "http/1.1"],
            "disableSystemRoot": true,
            "certificates": [{
                "usage": "verify",
                "certificate": ["-----BEGIN CERTIFICATE-----", "MIIB", "-----END CERTIFICATE-----"],
            }],
        },
    })
}

#[test]
fn outbounds_of_each_protocol_transport_and_tls() {
    let vless_settings = json!({ "vnext": [{
        "address": "node.example.com", "port": 443,
        "users": [{ "id": UUID, "encryption": "none" }],
    }]});
    let trojan_settings = json!({ "servers": [{
        "address": "node.example.com", "port": 443, "password": "pw",
    }]});
    let tcp = json!({ "network": "tcp" });
    let ws_json =
        json!({ "network": "ws", "wsSettings": { "path": "/ws", "host": "cdn.example.com" } });
    let none = json!({ "security": "none" });
    let out = |protocol: &str, settings: &Value, stream: Value| json!({ "tag": "proxy", "protocol": protocol, "settings": settings, "streamSettings": stream });
    let mut cases = Vec::new();
    for (protocol, name, settings) in [
        (vless(), "vless", &vless_settings),
        (trojan(), "trojan", &trojan_settings),
    ] {
        for (transport, stream) in [(EntryTransport::Tcp, &tcp), (ws(), &ws_json)] {
            cases.push((
                entry("t", protocol.clone(), transport.clone(), None),
                out(name, settings, merged(stream.clone(), none.clone())),
            ));
            cases.push((
                entry("t", protocol.clone(), transport, tls()),
                out(name, settings, merged(stream.clone(), tls_json())),
            ));
        }
    }
    cases.push((
        entry("t", shadowsocks(), EntryTransport::Tcp, None),
        out(
            "shadowsocks",
            &json!({ "servers": [{
                "address": "node.example.com", "port": 443,
                "method": "2022-blake3-aes-128-gcm", "password": "c2VydmVy:dXNlcg==",
            }]}),
            json!({ "network": "tcp", "security": "none" }),
        ),
    ));
    for (entry, expected) in cases {
        assert_eq!(outbound(&entry), expected, "{entry:?}");
    }
}

#[test]
fn flow_insecure_and_early_data_path() {
    let e = vision_over_insecure_ws();
    let out = outbound(&e);
    assert_eq!(
        out["settings"]["vnext"][0]["users"][0]["flow"],
        json!("xtls-rprx-vision")
    );
    assert_eq!(
        out["streamSettings"],
        json!({
            "network": "ws",
            // Xray reads its own early-data form from the path.
            "wsSettings": { "path": "/v?ed=2048" },
            "security": "tls",
            "tlsSettings": { "allowInsecure": true },
        })
    );
}

#[test]
fn whole_configs() {
    let entries = [
        entry("Tokyo 🇯🇵", vless(), EntryTransport::Tcp, None),
        entry("Tokyo 🇯🇵", trojan(), ws(), tls()),
    ];
    let configs = client_configs(&entries, &XrayOptions::default());
    let expected = |name: &str, e: &Entry| {
        json!({
            "remarks": name,
            "log": { "loglevel": "warning" },
            "inbounds": [
                {
                    "tag": "socks", "protocol": "socks", "listen": "127.0.0.1", "port": 10808,
                    "settings": { "auth": "noauth", "udp": true }, "sniffing": { "enabled": false },
                },
                {
                    "tag": "http", "protocol": "http", "listen": "127.0.0.1", "port": 10809,
                    "settings": {}, "sniffing": { "enabled": false },
                },
            ],
            "outbounds": [
                outbound(e),
                { "tag": "direct", "protocol": "freedom" },
                { "tag": "block", "protocol": "blackhole" },
            ],
            "routing": {
                "domainStrategy": "AsIs",
                "rules": [{ "type": "field", "inboundTag": ["socks", "http"], "outboundTag": "proxy" }],
            },
        })
    };
    assert_eq!(
        configs,
        json!([
            expected("Tokyo 🇯🇵", &entries[0]),
            expected("Tokyo 🇯🇵", &entries[1])
        ])
    );
    assert_eq!(client_configs(&[], &XrayOptions::default()), json!([]));

    let options = XrayOptions {
        socks_port: 1080,
        http_port: 8080,
        log_level: "info".into(),
        vpn: None,
        routing: None,
    };
    let config = client_config(&entries[0], &options);
    assert_eq!(config["inbounds"][0]["port"], json!(1080));
    assert_eq!(config["inbounds"][1]["port"], json!(8080));
    assert_eq!(config["log"]["loglevel"], json!("info"));
}

#[test]
fn reality_and_the_flow() {
    let e = vision_over_reality();
    let out = outbound(&e);
    assert_eq!(
        out["settings"],
        json!({ "vnext": [{
            "address": "node.example.com", "port": 443,
            "users": [{ "id": UUID, "encryption": "none", "flow": "xtls-rprx-vision" }],
        }]})
    );
    assert_eq!(
        out["streamSettings"],
        json!({
            "network": "tcp",
            "security": "reality",
            "realitySettings": {
                "serverName": "www.example.com",
                "fingerprint": "chrome",
                "publicKey": PBK,
                "shortId": "6ba85179e30d4fc2",
                "spiderX": "/",
            },
        })
    );
    // Xray needs a fingerprint for REALITY: Chrome's when the entry has none.
    let mut bare = e.clone();
    bare.tls.as_mut().unwrap().fingerprint = None;
    assert_eq!(
        outbound(&bare)["streamSettings"]["realitySettings"]["fingerprint"],
        json!("chrome")
    );
    // A fingerprint on ordinary TLS goes into tlsSettings.
    let mut t = tls();
    t.as_mut().unwrap().fingerprint = Some("firefox".into());
    let out = outbound(&entry("t", trojan(), EntryTransport::Tcp, t));
    assert_eq!(
        out["streamSettings"]["tlsSettings"]["fingerprint"],
        json!("firefox")
    );
}

/// HTTPUpgrade is Xray's `httpupgrade` network with `httpupgradeSettings`
/// (`path`, and `host` when the entry has one), as Xray 1.8.9+ reads it.
#[test]
fn httpupgrade_stream_settings() {
    let e = entry("t", vless(), httpupgrade(), tls());
    assert_eq!(
        outbound(&e)["streamSettings"],
        merged(
            json!({
                "network": "httpupgrade",
                "httpupgradeSettings": { "path": "/up", "host": "cdn.example.com" },
            }),
            tls_json()
        )
    );
    let bare = EntryTransport::HttpUpgrade {
        path: "/t".into(),
        host: None,
    };
    assert_eq!(
        outbound(&entry("t", trojan(), bare, None))["streamSettings"],
        json!({
            "network": "httpupgrade",
            "httpupgradeSettings": { "path": "/t" },
            "security": "none",
        })
    );
}

/// gRPC is Xray's `grpc` network with `grpcSettings`: `serviceName`, `multiMode`
/// always, `authority` when the entry has one (else Xray sends the TLS server name).
#[test]
fn grpc_stream_settings() {
    let e = entry("t", vless(), grpc(), tls());
    assert_eq!(
        outbound(&e)["streamSettings"],
        merged(
            json!({
                "network": "grpc",
                "grpcSettings": { "serviceName": "tun", "multiMode": false },
            }),
            tls_json()
        )
    );
    let multi = EntryTransport::Grpc {
        service_name: "m".into(),
        authority: Some("cdn.example.com".into()),
        multi: true,
    };
    assert_eq!(
        outbound(&entry("t", trojan(), multi, None))["streamSettings"],
        json!({
            "network": "grpc",
            "grpcSettings": {
                "serviceName": "m", "multiMode": true, "authority": "cdn.example.com",
            },
            "security": "none",
        })
    );
}

/// XHTTP is Xray's `xhttp` network with `xhttpSettings`: `path` and `mode` always,
/// `host` when the entry has one, `extra` (Xray's names, ranges as strings) when
/// anything differs from Xray's defaults.
#[test]
fn xhttp_stream_settings() {
    let e = entry("x", vless(), crate::testing::entries::xhttp(), tls());
    assert_eq!(
        outbound(&e)["streamSettings"],
        merged(
            json!({
                "network": "xhttp",
                "xhttpSettings": { "path": "/xh", "mode": "auto" },
            }),
            tls_json()
        )
    );
    let extra = crate::entry::xhttp::XhttpExtra {
        x_padding_bytes: Some(crate::xhttp::Range { from: 200, to: 400 }),
        sc_min_posts_interval_ms: Some(crate::xhttp::Range::fixed(10)),
        max_connections: Some(crate::xhttp::Range::fixed(2)),
        c_max_lifetime_ms: Some(crate::xhttp::Range {
            from: 1000,
            to: 2000,
        }),
        ..Default::default()
    };
    let transport = EntryTransport::Xhttp {
        path: "/p".into(),
        host: Some("cdn.example.com".into()),
        mode: crate::xhttp::Mode::PacketUp,
        extra: Some(extra),
    };
    assert_eq!(
        outbound(&entry("t", trojan(), transport, None))["streamSettings"],
        json!({
            "network": "xhttp",
            "xhttpSettings": {
                "path": "/p", "mode": "packet-up", "host": "cdn.example.com",
                "extra": {
                    "xPaddingBytes": "200-400",
                    "scMinPostsIntervalMs": "10",
                    "xmux": { "maxConnections": "2", "cMaxLifetimeMs": "1000-2000" },
                },
            },
            "security": "none",
        })
    );
    // Read back as Xray reads it, and from the settings the node has.
    assert_eq!(
        crate::entry::xhttp::XhttpExtra::from_xray(&extra.to_xray()),
        Some(extra)
    );
    let mut settings = crate::xhttp::Settings::new("/p");
    assert_eq!(
        crate::entry::xhttp::XhttpExtra::from_settings(&settings),
        None
    );
    extra.apply(&mut settings);
    assert_eq!(
        crate::entry::xhttp::XhttpExtra::from_settings(&settings),
        Some(extra)
    );
}

#[test]
fn a_vpn_config_asks_dns_through_the_proxy_and_sends_the_local_network_direct() {
    let entries = [entry("Tokyo", vless(), EntryTransport::Tcp, None)];
    let with = |dns: &str| {
        client_config(
            &entries[0],
            &XrayOptions {
                vpn: Some(crate::vpn::VpnOptions {
                    remote_dns: crate::vpn::RemoteDns::parse(dns).unwrap(),
                }),
                ..XrayOptions::default()
            },
        )
    };
    let config = with("https://1.1.1.1/dns-query");
    assert_eq!(
        config["dns"],
        json!({ "servers": ["https://1.1.1.1:443/dns-query"], "queryStrategy": "UseIPv4" })
    );
    assert_eq!(
        config["routing"]["rules"][0],
        json!({ "type": "field", "ip": PRIVATE_CIDRS, "outboundTag": "direct" })
    );
    assert_eq!(config["routing"]["rules"][1]["outboundTag"], json!("proxy"));
    assert_eq!(
        config["outbounds"][0]["tag"],
        json!("proxy"),
        "the default outbound"
    );
    assert_eq!(
        with("tls://9.9.9.9")["dns"]["servers"],
        json!(["tcp://9.9.9.9:53"]),
        "no DNS over TLS in Xray: TCP"
    );
    assert_eq!(
        with("tcp://[2606:4700::1111]:5353")["dns"]["servers"],
        json!(["tcp://[2606:4700::1111]:5353"])
    );
    assert_eq!(
        with("udp://8.8.8.8")["dns"]["servers"],
        json!([{ "address": "8.8.8.8", "port": 53 }])
    );
}
