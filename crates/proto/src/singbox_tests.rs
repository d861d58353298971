use serde_json::json;

use super::*;

/// One outbound as JSON.
fn outbound(entry: &Entry, tag: &str) -> Value {
    serde_json::to_value(super::outbound(entry, tag)).unwrap()
}
use crate::entry::EntryTransport;
use crate::testing::entries::{
    PBK, PEM, UUID, entry, grpc, httpupgrade, merged, shadowsocks, tls, trojan,
    vision_over_insecure_ws, vision_over_reality, vless, ws,
};

#[test]
fn outbounds_of_each_protocol_transport_and_tls() {
    let tls_json = json!({
        "enabled": true,
        "server_name": "sni.example.com",
        "alpn": ["h2", "http/1.1"],
        "certificate": PEM,
    });
    let ws_json = json!({ "type": "ws", "path": "/ws", "headers": { "Host": "cdn.example.com" } });
    let base = |kind: &str| json!({ "type": kind, "tag": "t", "server": "node.example.com", "server_port": 443 });
    let vless_base = merged(base("vless"), json!({ "uuid": UUID }));
    let trojan_base = merged(base("trojan"), json!({ "password": "pw" }));
    let cases = [
        (
            entry("t", vless(), EntryTransport::Tcp, None),
            vless_base.clone(),
        ),
        (
            entry("t", vless(), EntryTransport::Tcp, tls()),
            merged(vless_base.clone(), json!({ "tls": tls_json })),
        ),
        (
            entry("t", vless(), ws(), None),
            merged(vless_base.clone(), json!({ "transport": ws_json })),
        ),
        (
            entry("t", vless(), ws(), tls()),
            merged(
                vless_base.clone(),
                json!({ "tls": tls_json, "transport": ws_json }),
            ),
        ),
        (
            entry("t", trojan(), EntryTransport::Tcp, None),
            trojan_base.clone(),
        ),
        (
            entry("t", trojan(), EntryTransport::Tcp, tls()),
            merged(trojan_base.clone(), json!({ "tls": tls_json })),
        ),
        (
            entry("t", trojan(), ws(), None),
            merged(trojan_base.clone(), json!({ "transport": ws_json })),
        ),
        (
            entry("t", trojan(), ws(), tls()),
            merged(
                trojan_base.clone(),
                json!({ "tls": tls_json, "transport": ws_json }),
            ),
        ),
        (
            entry("t", shadowsocks(), EntryTransport::Tcp, None),
            merged(
                base("shadowsocks"),
                json!({ "method": "2022-blake3-aes-128-gcm", "password": "c2VydmVy:dXNlcg==" }),
            ),
        ),
    ];
    for (entry, expected) in cases {
        assert_eq!(outbound(&entry, "t"), expected, "{entry:?}");
    }
}

#[test]
fn flow_insecure_and_early_data() {
    let e = vision_over_insecure_ws();
    let out = outbound(&e, "t");
    assert_eq!(out["flow"], json!("xtls-rprx-vision"));
    assert_eq!(out["tls"], json!({ "enabled": true, "insecure": true }));
    assert_eq!(
        out["transport"],
        json!({
            "type": "ws", "path": "/v",
            "max_early_data": 2048, "early_data_header_name": "Sec-WebSocket-Protocol",
        })
    );
    assert_eq!(split_early_data("/v?x=1"), ("/v?x=1", None));
    assert_eq!(split_early_data("/v?ed=lots"), ("/v?ed=lots", None));
}

#[test]
fn a_whole_config() {
    let entries = [
        entry("Tokyo", vless(), EntryTransport::Tcp, None),
        entry("Tokyo", trojan(), EntryTransport::Tcp, tls()),
        entry("", trojan(), EntryTransport::Tcp, None),
        entry("direct", trojan(), EntryTransport::Tcp, None),
    ];
    let config = client_config(&entries, &SingBoxOptions::default());
    let tags = ["Tokyo", "Tokyo 2", "server", "direct 2"];
    assert_eq!(
        config,
        json!({
            "log": { "level": "warn", "timestamp": true },
            "dns": { "servers": [{ "type": "local", "tag": "local" }] },
            "inbounds": [{ "type": "mixed", "tag": "mixed-in", "listen": "127.0.0.1", "listen_port": 2080 }],
            "outbounds": [
                {
                    "type": "selector", "tag": "Switchyard",
                    "outbounds": ["Fastest", "Tokyo", "Tokyo 2", "server", "direct 2"],
                    "default": "Fastest",
                },
                {
                    "type": "urltest", "tag": "Fastest", "outbounds": tags,
                    "url": "https://www.gstatic.com/generate_204", "interval": "3m",
                },
                outbound(&entries[0], "Tokyo"),
                outbound(&entries[1], "Tokyo 2"),
                outbound(&entries[2], "server"),
                outbound(&entries[3], "direct 2"),
                { "type": "direct", "tag": "direct" },
            ],
            "route": { "final": "Switchyard", "default_domain_resolver": "local" },
        })
    );
}

#[test]
fn options_and_no_entries() {
    let options = SingBoxOptions {
        listen: "[::1]:1080".parse().unwrap(),
        group_name: "Proxy".into(),
        urltest_interval: Duration::from_secs(90),
        log_level: "info".into(),
        ..SingBoxOptions::default()
    };
    let config = client_config(
        &[entry("Proxy", trojan(), EntryTransport::Tcp, None)],
        &options,
    );
    assert_eq!(config["inbounds"][0]["listen"], json!("::1"));
    assert_eq!(config["inbounds"][0]["listen_port"], json!(1080));
    assert_eq!(config["outbounds"][0]["tag"], json!("Proxy"));
    assert_eq!(config["outbounds"][1]["interval"], json!("90s"));
    assert_eq!(config["outbounds"][2]["tag"], json!("Proxy 2"));
    assert_eq!(config["log"]["level"], json!("info"));

    let empty = client_config(&[], &SingBoxOptions::default());
    assert_eq!(
        empty["outbounds"],
        json!([{ "type": "direct", "tag": "direct" }])
    );
    assert_eq!(
        empty["route"],
        json!({
            "final": "direct",
            "default_domain_resolver": "local",
            "rules": [{ "inbound": ["mixed-in"], "action": "reject" }],
        })
    );
}

#[test]
fn go_durations() {
    assert_eq!(go_duration(Duration::from_secs(180)), "3m");
    assert_eq!(go_duration(Duration::from_secs(61)), "61s");
    assert_eq!(go_duration(Duration::from_millis(1500)), "1500ms");
    assert_eq!(go_duration(Duration::ZERO), "0s");
}

/// What [`client_config`] writes reads back as the same entries, in order; other
/// outbounds are skipped; a malformed one is an error naming its place.
#[test]
fn a_written_config_reads_back_as_its_entries() {
    let mut vision = vision_over_insecure_ws();
    vision.name = "vision".into();
    let entries = vec![
        entry("🇩🇪 Frankfurt", vless(), EntryTransport::Tcp, tls()),
        entry("plain", vless(), EntryTransport::Tcp, None),
        entry("trojan ws", trojan(), ws(), tls()),
        entry("ss", shadowsocks(), EntryTransport::Tcp, None),
        vision,
    ];
    let config = client_config(&entries, &SingBoxOptions::default());
    assert_eq!(entries_of(&config).unwrap(), entries);
    assert_eq!(
        entries_of(&json!({"outbounds": [{"type": "direct", "tag": "direct"}]})).unwrap(),
        vec![]
    );
    assert_eq!(
        entries_of(&json!({"inbounds": []})).unwrap_err(),
        ReadError::NoOutbounds
    );
    let bad = json!({"outbounds": [
        {"type": "direct", "tag": "d"},
        {"type": "vless", "tag": "x", "server": "h", "server_port": 443},
    ]});
    let e = entries_of(&bad).unwrap_err().to_string();
    assert!(e.starts_with("outbounds[1]: missing field `uuid`"), "{e}");
    let grpc = json!({"outbounds": [{"type": "trojan", "tag": "g", "server": "h",
        "server_port": 443, "password": "p", "transport": {"type": "quic"}}]});
    assert_eq!(
        entries_of(&grpc).unwrap_err().to_string(),
        "outbounds[0]: transport \"quic\" is not read (only ws, httpupgrade and grpc)"
    );
}

fn entries_of(config: &Value) -> Result<Vec<Entry>, ReadError> {
    super::entries(config)
}

#[test]
fn reality_with_utls_and_the_flow() {
    let e = vision_over_reality();
    assert_eq!(
        outbound(&e, "r"),
        json!({
            "type": "vless", "tag": "r", "server": "node.example.com", "server_port": 443,
            "uuid": UUID, "flow": "xtls-rprx-vision",
            "tls": {
                "enabled": true,
                "server_name": "www.example.com",
                "utls": { "enabled": true, "fingerprint": "chrome" },
                "reality": { "enabled": true, "public_key": PBK, "short_id": "6ba85179e30d4fc2" },
            },
        })
    );
    // Read back whole, as the client reads a sing-box subscription.
    let config = client_config(std::slice::from_ref(&e), &SingBoxOptions::default());
    assert_eq!(entries(&config), Ok(vec![e]));
    // uTLS without a fingerprint is sing-box's default, Chrome's; REALITY switched
    // off is no REALITY.
    let mut config = config;
    config["outbounds"][2]["tls"]["utls"] = json!({ "enabled": true });
    config["outbounds"][2]["tls"]["reality"]["enabled"] = json!(false);
    let read = entries(&config).unwrap();
    let tls = read[0].tls.as_ref().unwrap();
    assert_eq!(tls.fingerprint.as_deref(), Some("chrome"));
    assert_eq!(tls.reality, None);
}

/// Route ids travel as inert route rules (sing-box refuses unknown fields), one per
/// entry that has one, pointing at its tag (made unique); the reader takes them back.
/// A malformed id is not written, and a rule that is not one of ours is no route.
#[test]
fn route_ids_travel_as_inert_rules_and_read_back() {
    let mut a = entry("Frankfurt", vless(), EntryTransport::Tcp, None);
    a.route = Some("7".into());
    let mut b = entry("Frankfurt", trojan(), EntryTransport::Tcp, tls());
    b.route = Some("route-12".into());
    let c = entry("Plain", vless(), EntryTransport::Tcp, None);
    let mut bad = entry("Bad", vless(), EntryTransport::Tcp, None);
    bad.route = Some("not a label".into());
    let entries = vec![a, b, c, bad];
    let config = client_config(&entries, &SingBoxOptions::default());
    assert_eq!(
        config["route"]["rules"],
        json!([
            { "domain": ["7.route.switchyard.invalid"], "action": "route", "outbound": "Frankfurt" },
            { "domain": ["route-12.route.switchyard.invalid"], "action": "route", "outbound": "Frankfurt 2" },
        ])
    );
    let read = entries_of(&config).unwrap();
    assert_eq!(
        read.iter().map(|e| e.route.as_deref()).collect::<Vec<_>>(),
        [Some("7"), Some("route-12"), None, None]
    );
    // Without route ids there is no rule at all, as before.
    let plain = vec![entry("t", vless(), EntryTransport::Tcp, None)];
    assert!(
        client_config(&plain, &SingBoxOptions::default())["route"]
            .get("rules")
            .is_none()
    );
    // Other rules (another panel's) are no route ids.
    let mut other = config.clone();
    other["route"]["rules"] = json!([
        { "domain": ["example.com"], "outbound": "Frankfurt" },
        { "domain": ["x y.route.switchyard.invalid"], "outbound": "Plain" },
        { "domain_suffix": ["9.route.switchyard.invalid"], "outbound": "Plain" },
    ]);
    assert!(
        entries_of(&other)
            .unwrap()
            .iter()
            .all(|e| e.route.is_none())
    );
}

/// HTTPUpgrade is sing-box's `httpupgrade` transport (1.8+): `host` and `path`
/// beside the type, no `headers`, no early data; it reads back as it went in, and a
/// `Host` header or an empty `host` as other writers put them reads as sing-box
/// takes them.
#[test]
fn httpupgrade_transport() {
    let up = |path: &str, host: Option<&str>| EntryTransport::HttpUpgrade {
        path: path.into(),
        host: host.map(str::to_owned),
    };
    assert_eq!(
        outbound(&entry("t", vless(), httpupgrade(), None), "t"),
        json!({
            "type": "vless", "tag": "t", "server": "node.example.com", "server_port": 443,
            "uuid": UUID,
            "transport": { "type": "httpupgrade", "host": "cdn.example.com", "path": "/up" },
        })
    );
    assert_eq!(
        outbound(&entry("t", trojan(), up("/a?b", None), None), "t")["transport"],
        json!({ "type": "httpupgrade", "path": "/a?b" })
    );
    let entries = vec![
        entry("up tls", vless(), httpupgrade(), tls()),
        entry("up", trojan(), up("/t", None), None),
    ];
    let config = client_config(&entries, &SingBoxOptions::default());
    assert_eq!(entries_of(&config).unwrap(), entries);
    let foreign = |transport: Value| {
        let config = json!({"outbounds": [{"type": "trojan", "tag": "x", "server": "h",
            "server_port": 443, "password": "p", "transport": transport}]});
        entries_of(&config).map(|e| e[0].transport.clone())
    };
    assert_eq!(foreign(json!({"type": "httpupgrade"})), Ok(up("/", None)));
    assert_eq!(
        foreign(json!({"type": "httpupgrade", "host": "", "path": "/p",
            "headers": {"Host": "h.example.com"}})),
        Ok(up("/p", Some("h.example.com")))
    );
    assert_eq!(
        foreign(json!({"type": "httpupgrade", "host": "a.example.com",
            "headers": {"Host": "b.example.com"}})),
        Ok(up("/", Some("a.example.com")))
    );
    assert_eq!(
        foreign(json!({"type": "httpupgrade", "host": ["a"]}))
            .unwrap_err()
            .to_string(),
        "outbounds[0]: transport.host: expected a string"
    );
}

/// gRPC is sing-box's `grpc` transport with `service_name`: plain gun, so an entry's
/// multi mode and authority are left out (every node serves gun too) and read back
/// as none; a config another writer made reads with sing-box's defaults, and a
/// service name that is no string is an error naming the field.
#[test]
fn grpc_transport() {
    let grpc_of = |name: &str, authority: Option<&str>, multi| EntryTransport::Grpc {
        service_name: name.into(),
        authority: authority.map(str::to_owned),
        multi,
    };
    assert_eq!(
        outbound(&entry("t", vless(), grpc(), tls()), "t")["transport"],
        json!({ "type": "grpc", "service_name": "tun" })
    );
    let multi = entry(
        "m",
        trojan(),
        grpc_of("m", Some("cdn.example.com"), true),
        tls(),
    );
    assert_eq!(
        outbound(&multi, "m")["transport"],
        json!({ "type": "grpc", "service_name": "m" })
    );
    let entries = vec![
        entry("g tls", vless(), grpc(), tls()),
        entry("g", trojan(), grpc_of("a.b_c-d", None, false), None),
    ];
    let config = client_config(&entries, &SingBoxOptions::default());
    assert_eq!(entries_of(&config).unwrap(), entries);
    let config = client_config(std::slice::from_ref(&multi), &SingBoxOptions::default());
    assert_eq!(
        entries_of(&config).unwrap()[0].transport,
        grpc_of("m", None, false)
    );
    let foreign = |transport: Value| {
        let config = json!({"outbounds": [{"type": "trojan", "tag": "x", "server": "h",
            "server_port": 443, "password": "p", "transport": transport}]});
        entries_of(&config).map(|e| e[0].transport.clone())
    };
    assert_eq!(
        foreign(json!({"type": "grpc"})),
        Ok(grpc_of("", None, false))
    );
    assert_eq!(
        foreign(
            json!({"type": "grpc", "service_name": "svc", "idle_timeout": "15s",
            "ping_timeout": "15s", "permit_without_stream": false})
        ),
        Ok(grpc_of("svc", None, false))
    );
    assert_eq!(
        foreign(json!({"type": "grpc", "service_name": 7}))
            .unwrap_err()
            .to_string(),
        "outbounds[0]: transport.service_name: expected a string"
    );
}

#[test]
fn a_vpn_config_has_a_tun_dns_through_the_proxy_and_its_rules() {
    let entries = [entry("Tokyo", vless(), EntryTransport::Tcp, None)];
    let options = SingBoxOptions {
        vpn: Some(crate::vpn::VpnOptions {
            remote_dns: crate::vpn::RemoteDns::parse("tcp://10.77.1.2:5353").unwrap(),
        }),
        ..SingBoxOptions::default()
    };
    let config = client_config(&entries, &options);
    assert_eq!(
        config["inbounds"][1],
        json!({
            "type": "tun", "tag": "tun-in",
            "address": ["172.19.0.1/30", "fdfe:dcba:9876::1/126"],
            "auto_route": true, "strict_route": true, "stack": "system",
        })
    );
    assert_eq!(
        config["dns"],
        json!({
            "servers": [
                { "type": "tcp", "tag": "remote", "server": "10.77.1.2", "server_port": 5353, "detour": "Switchyard" },
                { "type": "local", "tag": "local" },
            ],
            "final": "remote",
        })
    );
    assert_eq!(
        config["route"],
        json!({
            "default_domain_resolver": "local",
            "auto_detect_interface": true,
            "final": "Switchyard",
            "rules": [
                { "action": "sniff" },
                { "protocol": "dns", "action": "hijack-dns" },
                { "ip_is_private": true, "action": "route", "outbound": "direct" },
            ],
        })
    );
    // The default resolver: Cloudflare's over HTTPS, default port and path left out.
    let default = client_config(
        &entries,
        &SingBoxOptions {
            vpn: Some(crate::vpn::VpnOptions::default()),
            ..SingBoxOptions::default()
        },
    );
    assert_eq!(
        default["dns"]["servers"][0],
        json!({ "type": "https", "tag": "remote", "server": "1.1.1.1", "detour": "Switchyard" })
    );
    // No entries: both inbounds rejected, only the local resolver.
    let empty = client_config(&[], &options);
    assert_eq!(
        empty["dns"],
        json!({ "servers": [{ "type": "local", "tag": "local" }] })
    );
    assert_eq!(
        empty["route"]["rules"][3],
        json!({ "inbound": ["mixed-in", "tun-in"], "action": "reject" })
    );
    assert_eq!(empty["route"]["final"], json!("direct"));
}
