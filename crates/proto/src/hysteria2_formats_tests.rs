//! Hysteria 2 entries in every format: sing-box's `hysteria2` outbound and
//! mihomo's `hysteria2` proxy, written exactly and read back; Xray has none.

use serde_json::{Value, json};

use crate::entry::{Entry, EntryProtocol, EntryTls, EntryTransport};
use crate::testing::entries::{PEM, entry};
use crate::{clash, singbox, xray};

/// SHA-256 of the DER in `testing::entries::PEM`.
const PIN: &str = "ccf72380a62a235fbf5474c2a85f6f68d0a1398f2dada1b19df37e10d4aea723";

fn hy2(obfs: Option<&str>, ports: Option<&str>, rates: Option<(u32, u32)>) -> EntryProtocol {
    EntryProtocol::Hysteria2 {
        password: "hunter2".into(),
        obfs_password: obfs.map(str::to_owned),
        ports: ports.map(str::to_owned),
        up_mbps: rates.map(|r| r.0),
        down_mbps: rates.map(|r| r.1),
        hop_interval: None,
    }
}

/// `protocol` hopping every `secs`.
fn every(secs: u32, mut protocol: EntryProtocol) -> EntryProtocol {
    if let EntryProtocol::Hysteria2 { hop_interval, .. } = &mut protocol {
        *hop_interval = Some(secs);
    }
    protocol
}

fn pinned() -> Option<EntryTls> {
    Some(EntryTls {
        server_name: Some("sni.example.com".into()),
        certificate_pem: Some(PEM.into()),
        ..EntryTls::default()
    })
}

fn every_kind() -> Vec<Entry> {
    vec![
        entry(
            "plain",
            hy2(None, None, None),
            EntryTransport::Tcp,
            pinned(),
        ),
        entry(
            "all",
            every(15, hy2(Some("salt"), Some("20000-20010"), Some((10, 50)))),
            EntryTransport::Tcp,
            pinned(),
        ),
        entry(
            "hop",
            hy2(None, Some("30000-30001"), None),
            EntryTransport::Tcp,
            pinned(),
        ),
        entry(
            "insecure",
            hy2(None, None, None),
            EntryTransport::Tcp,
            Some(EntryTls {
                insecure: true,
                ..EntryTls::default()
            }),
        ),
    ]
}

fn sing_box_outbound(config: &Value, tag: &str) -> Value {
    config["outbounds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["tag"] == tag)
        .cloned()
        .unwrap()
}

#[test]
fn sing_box_outbound_exactly_and_back() {
    let entries = every_kind();
    let config = singbox::client_config(&entries, &singbox::SingBoxOptions::default());
    assert_eq!(
        sing_box_outbound(&config, "all"),
        json!({
            "type": "hysteria2",
            "tag": "all",
            "server": "node.example.com",
            "server_port": 443,
            "server_ports": ["20000:20010"],
            "hop_interval": "15s",
            "up_mbps": 10,
            "down_mbps": 50,
            "obfs": { "type": "salamander", "password": "salt" },
            "password": "hunter2",
            "tls": { "enabled": true, "server_name": "sni.example.com", "certificate": PEM },
        })
    );
    assert_eq!(
        sing_box_outbound(&config, "plain"),
        json!({
            "type": "hysteria2",
            "tag": "plain",
            "server": "node.example.com",
            "server_port": 443,
            "password": "hunter2",
            "tls": { "enabled": true, "server_name": "sni.example.com", "certificate": PEM },
        })
    );
    // A range without an interval: sing-box's default, nothing written.
    assert_eq!(sing_box_outbound(&config, "hop").get("hop_interval"), None);
    assert_eq!(singbox::entries(&config), Ok(entries));
}

#[test]
fn sing_box_outbounds_of_other_writers() {
    let read = |extra: Value| {
        let mut o = json!({"type": "hysteria2", "tag": "x", "server": "h", "server_port": 1,
            "password": "p"});
        o.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        singbox::entries(&json!({ "outbounds": [o] })).map(|mut e| e.remove(0))
    };
    // No TLS object is still TLS; one range alone, in either form.
    let e = read(json!({"server_ports": "5:6"})).unwrap();
    assert_eq!(e.tls, Some(EntryTls::default()));
    assert_eq!(e.protocol, hy2_ports("5-6"));
    // The interval in any Go form, whole seconds rounded up; zero is the default,
    // and without a range there is nothing to hop.
    for (interval, secs) in [
        ("1m30s", Some(90)),
        ("2500ms", Some(3)),
        ("0s", None),
        ("", None),
    ] {
        let e = read(json!({"server_ports": "5:6", "hop_interval": interval})).unwrap();
        let want = match secs {
            Some(s) => every(s, hy2_ports("5-6")),
            None => hy2_ports("5-6"),
        };
        assert_eq!(e.protocol, want, "{interval}");
    }
    let alone = read(json!({"hop_interval": "10s"})).unwrap();
    assert!(matches!(
        alone.protocol,
        EntryProtocol::Hysteria2 {
            hop_interval: None,
            ..
        }
    ));
    assert_eq!(
        read(json!({"server_ports": ["5-6"]})).unwrap().protocol,
        hy2_ports("5-6")
    );
    for (extra, problem) in [
        (
            json!({"server_ports": ["1:2", "5:6"]}),
            "server_ports: only one range first:last is read",
        ),
        (
            json!({"server_ports": "6:5"}),
            "server_ports: only one range first:last is read",
        ),
        (
            json!({"obfs": {"type": "other", "password": "o"}}),
            "obfs.type: only salamander is read",
        ),
        (
            json!({"obfs": {"type": "salamander"}}),
            "obfs.password: missing for salamander",
        ),
        (
            json!({"server_ports": "5:6", "hop_interval": "30"}),
            "hop_interval: a duration such as \"30s\"",
        ),
    ] {
        assert_eq!(
            read(extra).unwrap_err().to_string(),
            format!("outbounds[0]: {problem}")
        );
    }
}

fn hy2_ports(ports: &str) -> EntryProtocol {
    EntryProtocol::Hysteria2 {
        password: "p".into(),
        obfs_password: None,
        ports: Some(ports.into()),
        up_mbps: None,
        down_mbps: None,
        hop_interval: None,
    }
}

#[test]
fn clash_proxy_exactly_and_back() {
    let entries = every_kind();
    assert_eq!(
        clash::proxy(&entries[1], "all"),
        json!({
            "name": "all",
            "type": "hysteria2",
            "server": "node.example.com",
            "port": 443,
            "udp": true,
            "password": "hunter2",
            "ports": "20000-20010",
            "hop-interval": 15,
            "obfs": "salamander",
            "obfs-password": "salt",
            "up": "10",
            "down": "50",
            "sni": "sni.example.com",
            "fingerprint": PIN,
        })
    );
    assert_eq!(clash::proxy(&entries[2], "hop").get("hop-interval"), None);
    let yaml = clash::client_config(&entries, &clash::ClashOptions::default());
    assert!(yaml.contains("\"hop-interval\": 15"), "{yaml}");
    // A pinned PEM reads back as its hash.
    let expected: Vec<Entry> = entries
        .into_iter()
        .map(|mut e| {
            if let Some(tls) = &mut e.tls {
                tls.certificate_sha256 = tls.pin_sha256();
                tls.certificate_pem = None;
            }
            e
        })
        .collect();
    assert_eq!(clash::entries(&yaml), Ok(expected));
}

#[test]
fn clash_proxies_of_other_writers() {
    let read = |extra: &str| {
        clash::read(&format!(
            "proxies: [{{name: x, type: hysteria2, server: h, port: 1, password: p, {extra}}}]"
        ))
    };
    let p = read("up: '30 Mbps', down: 2 Gbps, ports: 443-8443").unwrap();
    assert_eq!(
        p.entries[0].protocol,
        EntryProtocol::Hysteria2 {
            password: "p".into(),
            obfs_password: None,
            ports: Some("443-8443".into()),
            up_mbps: Some(30),
            down_mbps: Some(2000),
            hop_interval: None,
        }
    );
    // `hop-interval`: whole seconds, as a number or text; newer mihomo's random
    // range is read as its first; 0 is mihomo's default; no range, no hopping.
    for (extra, secs) in [
        ("hop-interval: 15", Some(15)),
        ("hop-interval: '20'", Some(20)),
        ("hop-interval: 15-30", Some(15)),
        ("hop-interval: 0", None),
    ] {
        let p = read(&format!("ports: 443-8443, {extra}")).unwrap();
        let want = match secs {
            Some(s) => every(s, hy2_ports("443-8443")),
            None => hy2_ports("443-8443"),
        };
        assert_eq!(p.entries[0].protocol, want, "{extra}");
    }
    let alone = read("hop-interval: 15").unwrap();
    assert_eq!(
        alone.entries[0].protocol,
        EntryProtocol::Hysteria2 {
            password: "p".into(),
            obfs_password: None,
            ports: None,
            up_mbps: None,
            down_mbps: None,
            hop_interval: None,
        }
    );
    for bad in [
        "hop-interval: fast",
        "hop-interval: -5",
        "hop-interval: 30-15",
    ] {
        assert_eq!(
            read(&format!("ports: 443-8443, {bad}"))
                .unwrap_err()
                .to_string(),
            "proxies[0] (\"x\"): `hop-interval` must be a whole number of seconds (or a range first-last)",
            "{bad}"
        );
    }
    assert_eq!(p.entries[0].tls, Some(EntryTls::default()));
    let skipped = read("ports: '443,8000-9000'").unwrap().skipped;
    assert_eq!(
        skipped[0].reason.to_string(),
        "Hysteria 2 ports \"443,8000-9000\" are not read (only one range, first-last)"
    );
    let skipped = read("obfs: gecko").unwrap().skipped;
    assert_eq!(
        skipped[0].reason.to_string(),
        "Hysteria 2 obfs \"gecko\" is not read (only salamander)"
    );
    assert_eq!(
        read("obfs: salamander").unwrap_err().to_string(),
        "proxies[0] (\"x\"): `obfs-password` is missing"
    );
    assert_eq!(
        read("up: fast").unwrap_err().to_string(),
        "proxies[0] (\"x\"): `up` must be a bandwidth such as 100 or \"100 Mbps\""
    );
}

#[test]
fn xray_has_no_hysteria2() {
    let entries = every_kind();
    assert!(!xray::has_xray_form(&entries[0]));
    assert_eq!(
        xray::client_configs(&entries, &xray::XrayOptions::default()),
        json!([])
    );
    assert_eq!(xray::outbound(&entries[0])["protocol"], "blackhole");
}
