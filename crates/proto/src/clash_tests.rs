use serde_json::json;
use yaml_rust2::{Yaml, YamlLoader};

use super::*;
use crate::entry::EntryTransport;
use crate::testing::entries::{
    PBK, UUID, entry, httpupgrade, merged, shadowsocks, tls, trojan, vision_over_insecure_ws,
    vision_over_reality, vless, ws,
};

/// SHA-256 of the DER in `testing::entries::PEM`.
const PIN: &str = "ccf72380a62a235fbf5474c2a85f6f68d0a1398f2dada1b19df37e10d4aea723";

/// `yaml` read back by a YAML parser, as JSON.
fn parsed(yaml: &str) -> Value {
    let docs = YamlLoader::load_from_str(yaml).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
    assert_eq!(docs.len(), 1, "{yaml}");
    to_json(&docs[0])
}

fn to_json(yaml: &Yaml) -> Value {
    match yaml {
        Yaml::String(s) => json!(s),
        Yaml::Integer(n) => json!(n),
        Yaml::Boolean(b) => json!(b),
        Yaml::Null => Value::Null,
        Yaml::Array(items) => Value::Array(items.iter().map(to_json).collect()),
        Yaml::Hash(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.as_str().expect("string keys").to_owned(), to_json(v)))
                .collect(),
        ),
        other => panic!("unexpected YAML node {other:?}"),
    }
}

#[test]
fn proxies_of_each_protocol_transport_and_tls() {
    let base = |kind: &str| json!({ "name": "t", "type": kind, "server": "node.example.com", "port": 443, "udp": true });
    let ws_opts = json!({ "path": "/ws", "headers": { "Host": "cdn.example.com" } });
    let vless_base = merged(base("vless"), json!({ "uuid": UUID }));
    let vless_tls = json!({
        "tls": true, "servername": "sni.example.com", "alpn": ["h2", "http/1.1"], "fingerprint": PIN,
    });
    let trojan_base = merged(base("trojan"), json!({ "password": "pw" }));
    let trojan_tls =
        json!({ "sni": "sni.example.com", "alpn": ["h2", "http/1.1"], "fingerprint": PIN });
    let cases = [
        (
            entry("t", vless(), EntryTransport::Tcp, None),
            merged(vless_base.clone(), json!({ "network": "tcp" })),
        ),
        (
            entry("t", vless(), EntryTransport::Tcp, tls()),
            merged(
                merged(vless_base.clone(), vless_tls.clone()),
                json!({ "network": "tcp" }),
            ),
        ),
        (
            entry("t", vless(), ws(), None),
            merged(
                vless_base.clone(),
                json!({ "network": "ws", "ws-opts": ws_opts }),
            ),
        ),
        (
            entry("t", vless(), ws(), tls()),
            merged(
                merged(vless_base.clone(), vless_tls),
                json!({ "network": "ws", "ws-opts": ws_opts }),
            ),
        ),
        (
            entry("t", trojan(), EntryTransport::Tcp, tls()),
            merged(
                merged(trojan_base.clone(), trojan_tls.clone()),
                json!({ "network": "tcp" }),
            ),
        ),
        (
            entry("t", trojan(), ws(), tls()),
            merged(
                merged(trojan_base.clone(), trojan_tls),
                json!({ "network": "ws", "ws-opts": ws_opts }),
            ),
        ),
        (
            entry("t", shadowsocks(), EntryTransport::Tcp, None),
            merged(
                base("ss"),
                json!({ "cipher": "2022-blake3-aes-128-gcm", "password": "c2VydmVy:dXNlcg==" }),
            ),
        ),
    ];
    for (entry, expected) in cases {
        assert_eq!(proxy(&entry, "t"), expected, "{entry:?}");
    }
}

#[test]
fn flow_insecure_early_data_and_an_unreadable_pin() {
    let e = vision_over_insecure_ws();
    let out = proxy(&e, "t");
    assert_eq!(out["flow"], json!("xtls-rprx-vision"));
    assert_eq!(out["skip-cert-verify"], json!(true));
    assert_eq!(out.get("servername"), None);
    assert_eq!(
        out["ws-opts"],
        json!({
            "path": "/v", "max-early-data": 2048, "early-data-header-name": "Sec-WebSocket-Protocol",
        })
    );
    // A pin that is not PEM pins nothing, and verification stays on: it fails closed.
    let mut garbled = tls();
    garbled.as_mut().unwrap().certificate_pem = Some("not a certificate".into());
    let out = proxy(&entry("t", trojan(), EntryTransport::Tcp, garbled), "t");
    assert_eq!(out.get("fingerprint"), None);
    assert_eq!(out.get("skip-cert-verify"), None);
}

#[test]
fn a_whole_config_as_exact_yaml() {
    let entries = [
        entry("Tokyo", vless(), EntryTransport::Tcp, None),
        entry("Tokyo", shadowsocks(), EntryTransport::Tcp, None),
        // No Clash form: left out.
        entry("plain trojan", trojan(), EntryTransport::Tcp, None),
        entry("DIRECT", trojan(), ws(), tls()),
    ];
    let yaml = client_config(&entries, &ClashOptions::default());
    let expected = r#""allow-lan": false
"log-level": "warning"
"mixed-port": 7890
"mode": "rule"
"proxies":
  - "name": "Tokyo"
    "network": "tcp"
    "port": 443
    "server": "node.example.com"
    "type": "vless"
    "udp": true
    "uuid": "b831381d-6324-4d53-ad4f-8cda48b30811"
  - "cipher": "2022-blake3-aes-128-gcm"
    "name": "Tokyo 2"
    "password": "c2VydmVy:dXNlcg=="
    "port": 443
    "server": "node.example.com"
    "type": "ss"
    "udp": true
  - "alpn":
      - "h2"
      - "http/1.1"
    "fingerprint": "ccf72380a62a235fbf5474c2a85f6f68d0a1398f2dada1b19df37e10d4aea723"
    "name": "DIRECT 2"
    "network": "ws"
    "password": "pw"
    "port": 443
    "server": "node.example.com"
    "sni": "sni.example.com"
    "type": "trojan"
    "udp": true
    "ws-opts":
      "headers":
        "Host": "cdn.example.com"
      "path": "/ws"
"proxy-groups":
  - "name": "Switchyard"
    "proxies":
      - "Fastest"
      - "Tokyo"
      - "Tokyo 2"
      - "DIRECT 2"
    "type": "select"
  - "interval": 180
    "name": "Fastest"
    "proxies":
      - "Tokyo"
      - "Tokyo 2"
      - "DIRECT 2"
    "type": "url-test"
    "url": "https://www.gstatic.com/generate_204"
"rules":
  - "MATCH,Switchyard"
"#;
    assert_eq!(yaml, expected);
    assert_eq!(
        parsed(&yaml),
        config_value(&entries, &ClashOptions::default())
    );
}

#[test]
fn any_name_survives_the_yaml() {
    let names = [
        "Tokyo 🇯🇵 #1",
        "a: b",
        "- [x]",
        "\"quoted\" and 'single'",
        "back\\slash",
        "no",
        "0x1F",
        "~",
        "*alias &anchor !tag %dir @at `tick`",
        "tab\tnew\nline\u{7f}\u{85}\u{feff}",
        " padded ",
        "",
    ];
    let entries: Vec<Entry> = names
        .iter()
        .map(|n| entry(n, vless(), EntryTransport::Tcp, None))
        .collect();
    let options = ClashOptions {
        group_name: "Grüppe: #1 🚀".into(),
        ..ClashOptions::default()
    };
    let value = config_value(&entries, &options);
    let back = parsed(&client_config(&entries, &options));
    assert_eq!(back, value);
    for (i, name) in names.iter().enumerate() {
        let expected = if name.is_empty() { "server" } else { name };
        assert_eq!(back["proxies"][i]["name"], json!(expected));
    }
    assert_eq!(back["rules"], json!(["MATCH,Grüppe: #1 🚀"]));
}

#[test]
fn options_and_no_entries() {
    let options = ClashOptions {
        mixed_port: 17890,
        group_name: "Proxy".into(),
        urltest_interval: Duration::from_secs(90),
        log_level: "info".into(),
        ..ClashOptions::default()
    };
    let config = config_value(
        &[entry("Proxy", trojan(), EntryTransport::Tcp, tls())],
        &options,
    );
    assert_eq!(config["mixed-port"], json!(17890));
    assert_eq!(config["log-level"], json!("info"));
    assert_eq!(config["proxy-groups"][0]["name"], json!("Proxy"));
    assert_eq!(config["proxy-groups"][1]["interval"], json!(90));
    assert_eq!(config["proxies"][0]["name"], json!("Proxy 2"));
    assert_eq!(config["rules"], json!(["MATCH,Proxy"]));

    for entries in [
        vec![],
        vec![entry("t", trojan(), EntryTransport::Tcp, None)],
    ] {
        let empty = config_value(&entries, &ClashOptions::default());
        assert_eq!(empty["proxies"], json!([]));
        assert_eq!(
            empty["proxy-groups"],
            json!([{ "name": "Switchyard", "type": "select", "proxies": ["REJECT"] }])
        );
        assert_eq!(empty["rules"], json!(["MATCH,Switchyard"]));
    }
}

#[test]
fn reality_with_the_fingerprint_and_the_flow() {
    let e = vision_over_reality();
    assert_eq!(
        proxy(&e, "r"),
        json!({
            "name": "r", "type": "vless", "server": "node.example.com", "port": 443,
            "udp": true, "uuid": UUID, "flow": "xtls-rprx-vision",
            "tls": true, "servername": "www.example.com",
            "client-fingerprint": "chrome",
            "reality-opts": { "public-key": PBK, "short-id": "6ba85179e30d4fc2" },
            "network": "tcp",
        })
    );
    // Through the YAML and back, by another parser and by our reader.
    let yaml = client_config(std::slice::from_ref(&e), &ClashOptions::default());
    assert_eq!(parsed(&yaml)["proxies"][0], proxy(&e, "r"));
    assert_eq!(read(&yaml).map(|p| p.entries), Ok(vec![e]));
}

/// A route id is the proxy's `switchyard-route` key, read back (mihomo ignores it:
/// `mihomo -t` in `tests/sing_box_check.rs` runs configs that carry it).
#[test]
fn route_ids_are_a_key_of_the_proxy() {
    let mut e = entry("t", vless(), EntryTransport::Tcp, None);
    e.route = Some("7".into());
    assert_eq!(proxy(&e, "t")["switchyard-route"], json!("7"));
    let yaml = client_config(std::slice::from_ref(&e), &ClashOptions::default());
    assert!(yaml.contains("\"switchyard-route\": \"7\""), "{yaml}");
    assert_eq!(read(&yaml).map(|p| p.entries), Ok(vec![e.clone()]));
    // Another writer's number reads as the id; something that is no id is ignored.
    let number = yaml.replace("\"switchyard-route\": \"7\"", "\"switchyard-route\": 7");
    assert_eq!(
        read(&number).unwrap().entries[0].route.as_deref(),
        Some("7")
    );
    let odd = yaml.replace(
        "\"switchyard-route\": \"7\"",
        "\"switchyard-route\": \"a b\"",
    );
    assert_eq!(read(&odd).unwrap().entries[0].route, None);
}

/// HTTPUpgrade is mihomo's `ws` with `v2ray-http-upgrade: true`, the `Host` in
/// `headers` as for WebSocket, the path as it is.
#[test]
fn httpupgrade_as_exact_yaml() {
    let up = |path: &str, host: Option<&str>| EntryTransport::HttpUpgrade {
        path: path.into(),
        host: host.map(str::to_owned),
    };
    assert_eq!(
        proxy(&entry("t", vless(), up("/up", None), None), "t")["ws-opts"],
        json!({ "path": "/up", "v2ray-http-upgrade": true })
    );
    let unpinned = tls().map(|t| crate::entry::EntryTls {
        certificate_pem: None,
        ..t
    });
    let entries = [entry("Up", trojan(), httpupgrade(), unpinned)];
    let yaml = client_config(&entries, &ClashOptions::default());
    let expected = r#""allow-lan": false
"log-level": "warning"
"mixed-port": 7890
"mode": "rule"
"proxies":
  - "alpn":
      - "h2"
      - "http/1.1"
    "name": "Up"
    "network": "ws"
    "password": "pw"
    "port": 443
    "server": "node.example.com"
    "sni": "sni.example.com"
    "type": "trojan"
    "udp": true
    "ws-opts":
      "headers":
        "Host": "cdn.example.com"
      "path": "/up"
      "v2ray-http-upgrade": true
"proxy-groups":
  - "name": "Switchyard"
    "proxies":
      - "Fastest"
      - "Up"
    "type": "select"
  - "interval": 180
    "name": "Fastest"
    "proxies":
      - "Up"
    "type": "url-test"
    "url": "https://www.gstatic.com/generate_204"
"rules":
  - "MATCH,Switchyard"
"#;
    assert_eq!(yaml, expected);
    assert_eq!(crate::clash::entries(&yaml), Ok(entries.to_vec()));
}

#[test]
fn a_vpn_config_has_dns_through_the_proxy_a_tun_for_the_app_s_switch_and_lan_direct() {
    let options = ClashOptions {
        vpn: Some(crate::vpn::VpnOptions {
            remote_dns: crate::vpn::RemoteDns::parse("tls://9.9.9.9").unwrap(),
        }),
        ..ClashOptions::default()
    };
    let entries = [entry("Tokyo", vless(), EntryTransport::Tcp, None)];
    let back = parsed(&client_config(&entries, &options));
    assert_eq!(
        back["dns"],
        json!({
            "enable": true, "ipv6": false, "respect-rules": true,
            "enhanced-mode": "fake-ip", "fake-ip-range": "198.18.0.1/16",
            "fake-ip-filter": ["+.lan", "+.local", "+.localdomain", "+.home.arpa"],
            "nameserver": ["tls://9.9.9.9:853"],
            "proxy-server-nameserver": ["system"],
            "direct-nameserver": ["system"],
        })
    );
    assert_eq!(back["tun"]["enable"], json!(false), "the app's switch");
    assert_eq!(back["tun"]["dns-hijack"], json!(["any:53", "tcp://any:53"]));
    let rules = back["rules"].as_array().unwrap();
    assert_eq!(rules[0], json!("IP-CIDR,10.0.0.0/8,DIRECT,no-resolve"));
    assert_eq!(rules.len(), 9);
    assert_eq!(rules[8], json!("MATCH,Switchyard"));
    // No entries: only MATCH (to REJECT), nothing direct.
    let empty = parsed(&client_config(&[], &options));
    assert_eq!(empty["rules"], json!(["MATCH,Switchyard"]));
    assert_eq!(empty["dns"]["enable"], json!(true));
}
