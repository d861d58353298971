use proptest::prelude::*;

use super::*;
use crate::clash::{ClashOptions, client_config};
use crate::singbox::split_early_data;
use crate::testing::entries::{
    UUID, entry, httpupgrade, shadowsocks, tls, trojan, vision_over_insecure_ws,
    vision_over_reality, vless, ws,
};

/// What a Clash config carries of `entry`: nothing of a Trojan entry without TLS
/// (it has no Clash form), a pinned certificate as its SHA-256 (which then pins
/// whatever `skip-cert-verify` says), early data split out of the path and put back,
/// gRPC as plain gun without an authority (an empty service name is mihomo's
/// `GunService`).
fn clash_limited(entry: &Entry) -> Option<Entry> {
    if matches!(entry.protocol, EntryProtocol::Trojan { .. }) && entry.tls.is_none() {
        return None;
    }
    // mihomo 1.19.2 has no XHTTP: the writer leaves such entries out.
    if matches!(entry.transport, EntryTransport::Xhttp { .. }) {
        return None;
    }
    let mut limited = entry.clone();
    if let Some(tls) = &mut limited.tls {
        let pin = tls.pin_sha256();
        tls.certificate_pem = None;
        tls.certificate_sha256 = pin;
        tls.insecure &= pin.is_none();
    }
    if let EntryTransport::Ws { path, .. } = &mut limited.transport {
        *path = match split_early_data(path) {
            (base, Some(n)) if n > 0 => format!("{base}?ed={n}"),
            (base, Some(_)) => base.to_owned(),
            (_, None) => path.clone(),
        };
    }
    if let EntryTransport::Grpc {
        service_name,
        authority,
        multi,
    } = &mut limited.transport
    {
        if service_name.is_empty() {
            *service_name = "GunService".into();
        }
        *authority = None;
        *multi = false;
    }
    Some(limited)
}

fn config(entries: &[Entry]) -> String {
    client_config(entries, &ClashOptions::default())
}

/// Every shape the writer has a form for, each under its own name.
fn every_shape() -> Vec<Entry> {
    let insecure = Some(EntryTls {
        insecure: true,
        ..EntryTls::default()
    });
    let unpinned = tls().map(|t| EntryTls {
        certificate_pem: None,
        ..t
    });
    let mut out = Vec::new();
    for (p, protocol) in [("vless", vless()), ("trojan", trojan())] {
        for (t, transport) in [
            ("tcp", EntryTransport::Tcp),
            ("ws", ws()),
            ("httpupgrade", httpupgrade()),
        ] {
            for (s, tls) in [
                ("plain", None),
                ("pinned", tls()),
                ("insecure", insecure.clone()),
                ("tls", unpinned.clone()),
            ] {
                out.push(entry(
                    &format!("🇯🇵 {p} {t} {s}"),
                    protocol.clone(),
                    transport.clone(),
                    tls,
                ));
            }
        }
    }
    let mut vision = vision_over_insecure_ws();
    vision.name = "vision".into();
    out.push(vision);
    out.push(vision_over_reality());
    out.push(entry("ss 2022", shadowsocks(), EntryTransport::Tcp, None));
    out
}

/// What [`client_config`] writes reads back as the same entries, in order, less what
/// a Clash config cannot carry; written again, it is the same config byte for byte.
#[test]
fn a_written_config_reads_back_as_its_entries() {
    let entries = every_shape();
    let expected: Vec<Entry> = entries.iter().filter_map(clash_limited).collect();
    let yaml = config(&entries);
    let read_back = read(&yaml).unwrap();
    assert_eq!(read_back.entries, expected);
    assert_eq!(read_back.skipped, vec![]);
    assert_eq!(config(&read_back.entries), yaml);

    // Without a pinned certificate nothing is lost at all.
    let whole: Vec<Entry> = entries
        .iter()
        .filter(|e| e.tls.as_ref().is_none_or(|t| t.certificate_pem.is_none()))
        .filter(|e| !matches!(e.protocol, EntryProtocol::Trojan { .. }) || e.tls.is_some())
        .cloned()
        .collect();
    assert_eq!(super::entries(&config(&whole)).unwrap(), whole);

    // The pin is the certificate's SHA-256; with it the entry is not insecure.
    let pinned = &read_back.entries[1];
    let tls = pinned.tls.as_ref().unwrap();
    assert_eq!(
        tls.certificate_sha256,
        entries[1].tls.as_ref().unwrap().pin_sha256()
    );
    assert!(tls.certificate_sha256.is_some() && !tls.insecure);

    // No entries: an empty list.
    assert_eq!(super::entries(&config(&[])).unwrap(), vec![]);
}

/// A subscription as Marzban's Clash Meta template writes it (PyYAML, plain
/// scalars, sequences not indented under their key): read where it has a form,
/// skipped with the reason where not.
#[test]
fn a_marzban_style_config() {
    let yaml = r#"mixed-port: 7890
mode: rule
proxies:
- name: 🇩🇪 Germany WS
  type: vless
  server: de.example.com
  port: 443
  network: ws
  ws-opts:
    path: /vless
    headers:
      Host: cdn.example.com
    max-early-data: 2048
    early-data-header-name: Sec-WebSocket-Protocol
  udp: true
  tls: true
  servername: de.example.com
  alpn:
  - h2
  - http/1.1
  client-fingerprint: chrome
  uuid: b831381d-6324-4d53-ad4f-8cda48b30811
- name: 🇩🇪 Germany Vision
  type: vless
  server: 203.0.113.7
  port: 8443
  network: tcp
  tcp-opts: {}
  udp: true
  tls: true
  servername: de.example.com
  skip-cert-verify: true
  uuid: b831381d-6324-4d53-ad4f-8cda48b30811
  flow: xtls-rprx-vision
- name: Plain
  type: vless
  server: de.example.com
  port: 80
  network: tcp
  tcp-opts: {}
  udp: true
  uuid: b831381d-6324-4d53-ad4f-8cda48b30811
  flow: ''
- name: Trojan
  type: trojan
  server: tr.example.com
  port: 443
  network: tcp
  tcp-opts: {}
  udp: true
  tls: true
  sni: tr.example.com
  password: 123456
  flow: ''
- name: VMess
  type: vmess
  server: vm.example.com
  port: 443
  network: ws
  uuid: b831381d-6324-4d53-ad4f-8cda48b30811
  alterId: 0
  cipher: auto
- name: gRPC
  type: vless
  server: grpc.example.com
  port: 443
  network: grpc
  grpc-opts:
    grpc-service-name: gun
  tls: true
  uuid: b831381d-6324-4d53-ad4f-8cda48b30811
- name: Reality
  type: vless
  server: r.example.com
  port: 443
  network: tcp
  tls: true
  servername: www.example.com
  reality-opts:
    public-key: abc
    short-id: '01'
  uuid: b831381d-6324-4d53-ad4f-8cda48b30811
- name: SS
  type: ss
  server: ss.example.com
  port: '8388'
  network: tcp
  tcp-opts: {}
  udp: true
  password: c2VydmVy:dXNlcg==
  cipher: 2022-blake3-aes-256-gcm
proxy-groups:
- name: Proxy
  type: select
  proxies:
  - 🇩🇪 Germany WS
rules:
- MATCH,Proxy
"#;
    let read_back = read(yaml).unwrap();
    let tls = |name: &str, alpn: Vec<String>, insecure| {
        Some(EntryTls {
            server_name: Some(name.into()),
            insecure,
            alpn,
            ..EntryTls::default()
        })
    };
    let vision = EntryProtocol::Vless {
        uuid: UUID.into(),
        flow: Some("xtls-rprx-vision".into()),
    };
    let at = |server: &str, port, mut e: Entry| {
        e.server = server.into();
        e.port = port;
        e
    };
    assert_eq!(
        read_back.entries,
        vec![
            at(
                "de.example.com",
                443,
                entry(
                    "🇩🇪 Germany WS",
                    vless(),
                    EntryTransport::Ws {
                        path: "/vless?ed=2048".into(),
                        host: Some("cdn.example.com".into()),
                    },
                    tls(
                        "de.example.com",
                        vec!["h2".into(), "http/1.1".into()],
                        false
                    )
                    .map(|t| EntryTls {
                        fingerprint: Some("chrome".into()),
                        ..t
                    }),
                )
            ),
            at(
                "203.0.113.7",
                8443,
                entry(
                    "🇩🇪 Germany Vision",
                    vision,
                    EntryTransport::Tcp,
                    tls("de.example.com", vec![], true),
                )
            ),
            at(
                "de.example.com",
                80,
                entry("Plain", vless(), EntryTransport::Tcp, None)
            ),
            at(
                "tr.example.com",
                443,
                entry(
                    "Trojan",
                    EntryProtocol::Trojan {
                        password: "123456".into()
                    },
                    EntryTransport::Tcp,
                    tls("tr.example.com", vec![], false),
                )
            ),
            at(
                "grpc.example.com",
                443,
                entry(
                    "gRPC",
                    vless(),
                    EntryTransport::Grpc {
                        service_name: "gun".into(),
                        authority: None,
                        multi: false,
                    },
                    Some(EntryTls::default()),
                )
            ),
            // Read whole, though Switchyard's client cannot use it (it leaves it out).
            at(
                "r.example.com",
                443,
                entry(
                    "Reality",
                    vless(),
                    EntryTransport::Tcp,
                    tls("www.example.com", vec![], false).map(|t| EntryTls {
                        reality: Some(EntryReality {
                            public_key: "abc".into(),
                            short_id: "01".into(),
                        }),
                        ..t
                    }),
                )
            ),
            at(
                "ss.example.com",
                8388,
                entry(
                    "SS",
                    EntryProtocol::Shadowsocks {
                        method: "2022-blake3-aes-256-gcm".into(),
                        password: "c2VydmVy:dXNlcg==".into(),
                    },
                    EntryTransport::Tcp,
                    None,
                )
            ),
        ]
    );
    let skipped: Vec<String> = read_back.skipped.iter().map(Skipped::to_string).collect();
    assert_eq!(
        skipped,
        [
            r#"proxies[4] ("VMess"): type "vmess" is not read (only vless, trojan, ss and hysteria2)"#,
        ]
    );
}

/// A subscription as Remnawave's mihomo generator writes it (the `yaml` package:
/// flow-free, an empty SNI, `client-fingerprint` on every proxy, `packet-encoding`,
/// empty `headers`, HTTPUpgrade as `ws` with a flag, VLESS encryption).
#[test]
fn a_remnawave_style_config() {
    let yaml = r#"proxies:
  - name: "🇳🇱 Amsterdam"
    type: vless
    server: nl.example.com
    port: 443
    network: ws
    udp: true
    tls: true
    servername: ""
    ws-opts:
      headers: {}
    client-fingerprint: chrome
    uuid: b831381d-6324-4d53-ad4f-8cda48b30811
    packet-encoding: xudp
  - name: Upgrade
    type: vless
    server: nl.example.com
    port: 443
    network: ws
    udp: true
    ws-opts:
      path: /up
      headers:
        Host: nl.example.com
      v2ray-http-upgrade: true
      v2ray-http-upgrade-fast-open: true
    client-fingerprint: chrome
    uuid: b831381d-6324-4d53-ad4f-8cda48b30811
  - name: PQ
    type: vless
    server: nl.example.com
    port: 443
    network: tcp
    udp: true
    encryption: mlkem768x25519plus.native.0rtt.abc
    client-fingerprint: chrome
    uuid: b831381d-6324-4d53-ad4f-8cda48b30811
  - name: Legacy SS
    type: ss
    server: 2001:db8::5
    port: 8388
    network: tcp
    udp: true
    client-fingerprint: chrome
    password: secret
    cipher: chacha20-ietf-poly1305
proxy-groups:
  - name: "→ Remnawave"
    type: select
    proxies:
      - "🇳🇱 Amsterdam"
"#;
    let read_back = read(yaml).unwrap();
    let mut first = entry(
        "🇳🇱 Amsterdam",
        vless(),
        EntryTransport::Ws {
            path: "/".into(),
            host: None,
        },
        Some(EntryTls {
            fingerprint: Some("chrome".into()),
            ..EntryTls::default()
        }),
    );
    first.server = "nl.example.com".into();
    let mut ss = entry(
        "Legacy SS",
        EntryProtocol::Shadowsocks {
            method: "chacha20-ietf-poly1305".into(),
            password: "secret".into(),
        },
        EntryTransport::Tcp,
        None,
    );
    ss.server = "2001:db8::5".into();
    ss.port = 8388;
    // HTTPUpgrade's fast open only changes when the client sends: read as the upgrade.
    let mut upgrade = entry(
        "Upgrade",
        vless(),
        EntryTransport::HttpUpgrade {
            path: "/up".into(),
            host: Some("nl.example.com".into()),
        },
        None,
    );
    upgrade.server = "nl.example.com".into();
    assert_eq!(read_back.entries, vec![first, upgrade, ss]);
    let skipped: Vec<String> = read_back.skipped.iter().map(Skipped::to_string).collect();
    assert_eq!(
        skipped,
        [
            r#"proxies[2] ("PQ"): VLESS encryption "mlkem768x25519plus.native.0rtt.abc" is not read (only none)"#,
        ]
    );
}

/// Hand-written configs: merge keys and aliases, mihomo's weak typing, a pin with
/// colons in capitals, a pin that wins over `skip-cert-verify`.
#[test]
fn merge_keys_weak_types_and_pins() {
    let pin = "CC:F7:23:80:A6:2A:23:5F:BF:54:74:C2:A8:5F:6F:68:D0:A1:39:8F:2D:AD:A1:B1:9D:F3:7E:10:D4:AE:A7:23";
    let yaml = format!(
        r#"
base: &base
  type: trojan
  server: node.example.com
  port: "443"
  sni: sni.example.com
  skip-cert-verify: "true"
proxies:
  - <<: *base
    name: 1
    password: !!str 0x1F
    fingerprint: "{pin}"
  - {{<<: *base, name: two, password: pw, skip-cert-verify: 0, alpn: [h2]}}
  - {{<<: [*base], name: three, password: pw, tls: false}}
"#
    );
    let read_back = entries(&yaml).unwrap();
    let expected_pin = tls().unwrap().pin_sha256();
    let tls_of = |insecure, sha, alpn: &[&str]| {
        Some(EntryTls {
            server_name: Some("sni.example.com".into()),
            insecure,
            certificate_pem: None,
            certificate_sha256: sha,
            alpn: alpn.iter().map(|a| (*a).to_owned()).collect(),
            ..EntryTls::default()
        })
    };
    let trojan_with = |password: &str| EntryProtocol::Trojan {
        password: password.into(),
    };
    assert_eq!(
        read_back,
        vec![
            entry(
                "1",
                trojan_with("0x1F"),
                EntryTransport::Tcp,
                tls_of(false, expected_pin, &[])
            ),
            entry(
                "two",
                trojan_with("pw"),
                EntryTransport::Tcp,
                tls_of(false, None, &["h2"])
            ),
            // mihomo's Trojan speaks TLS whatever `tls` says.
            entry(
                "three",
                trojan_with("pw"),
                EntryTransport::Tcp,
                tls_of(true, None, &[])
            ),
        ]
    );
}

#[test]
fn malformed_proxies_are_errors_naming_the_place_and_field_not_the_value() {
    let one = |proxy: &str| format!("proxies:\n  - {{name: n, server: h, port: 443, {proxy}}}\n");
    let cases = [
        ("type: vless", "proxies[0] (\"n\"): `uuid` is missing"),
        (
            "type: vless, uuid: [hunter2]",
            "proxies[0] (\"n\"): `uuid` must be a string",
        ),
        (
            "type: trojan, password: {hunter2: 1}",
            "proxies[0] (\"n\"): `password` must be a string",
        ),
        (
            "type: ss, password: p",
            "proxies[0] (\"n\"): `cipher` is missing",
        ),
        (
            "type: vless, uuid: u, tls: maybe",
            "proxies[0] (\"n\"): `tls` must be true or false",
        ),
        (
            "type: trojan, password: p, fingerprint: abc",
            "proxies[0] (\"n\"): `fingerprint` must be a SHA-256 in 64 hex digits",
        ),
        (
            "type: trojan, password: p, alpn: h2",
            "proxies[0] (\"n\"): `alpn` must be a list of strings",
        ),
        (
            "type: vless, uuid: u, network: ws, ws-opts: /ws",
            "proxies[0] (\"n\"): `ws-opts` must be a mapping",
        ),
        (
            "type: vless, uuid: u, network: ws, ws-opts: {path: [a]}",
            "proxies[0] (\"n\"): `ws-opts.path` must be a string",
        ),
        (
            "type: vless, uuid: u, network: ws, ws-opts: {max-early-data: -1}",
            "proxies[0] (\"n\"): `ws-opts.max-early-data` must be a whole number",
        ),
        (
            "type: [vless]",
            "proxies[0] (\"n\"): `type` must be a string",
        ),
    ];
    for (proxy, expected) in cases {
        let e = entries(&one(proxy)).unwrap_err().to_string();
        assert_eq!(e, expected, "{proxy}");
        assert!(!e.contains("hunter2"), "{e}");
    }
    for (port, field) in [("0", "port"), ("65536", "port"), ("http", "port")] {
        let yaml = format!(
            "proxies: [{{name: n, type: ss, server: h, port: {port}, cipher: c, password: p}}]"
        );
        let e = entries(&yaml).unwrap_err();
        assert_eq!(
            e,
            ReadError::Proxy {
                index: 0,
                name: "n".into(),
                field: field.into(),
                problem: "must be a number from 1 to 65535".into(),
            }
        );
    }
    let no_name = "proxies: [{type: ss, port: 1, cipher: c, password: p}]";
    assert_eq!(
        entries(no_name).unwrap_err().to_string(),
        "proxies[0] (\"\"): `name` is missing"
    );
    let empty_server =
        "proxies: [{name: x, type: ss, server: '', port: 1, cipher: c, password: p}]";
    assert_eq!(
        entries(empty_server).unwrap_err().to_string(),
        "proxies[0] (\"x\"): `server` is missing"
    );
    assert_eq!(entries("proxies: [a]"), Err(ReadError::NotAProxy(0)));
    // A type not read needs nothing else.
    let other = read("proxies: [{type: tuic}]").unwrap();
    assert_eq!(other.entries, vec![]);
    assert_eq!(other.skipped[0].name, "");
    assert_eq!(other.skipped[0].reason, SkipReason::Type("tuic".into()));
}

#[test]
fn what_is_not_a_clash_config() {
    for text in [
        "",
        "# nothing",
        "a: 1",
        "- proxies",
        "proxies: 3",
        "just text",
        "{}",
    ] {
        assert_eq!(entries(text), Err(ReadError::NoProxies), "{text:?}");
    }
    assert_eq!(entries("proxies:\nrules: []"), Ok(vec![]));
    assert_eq!(entries("proxies: []\n---\nproxies: 5"), Ok(vec![]));
    for text in ["proxies: [", "proxies: {a: 1, a: 2}", "x: *nowhere", "\"a"] {
        assert!(
            matches!(entries(text), Err(ReadError::Yaml(_))),
            "{text:?}: {:?}",
            entries(text)
        );
    }
    let big = " ".repeat(MAX_YAML + 1);
    assert_eq!(entries(&big), Err(ReadError::TooLarge(MAX_YAML + 1)));
}

/// The tree's bounds (tested in `yaml_read.rs`) are errors of the reader; a long
/// name is cut short in errors.
#[test]
fn bounds_are_errors() {
    let flow = format!("proxies: {}{}", "[".repeat(200), "]".repeat(200));
    assert_eq!(entries(&flow), Err(ReadError::TooDeep));
    let aliases = format!(
        "a: &a [x, y, z]\nb: [{}]\nproxies: []",
        ["*a"; 400_000].join(",")
    );
    assert_eq!(entries(&aliases), Err(ReadError::TooBig));
    let long = format!(
        "proxies: [{{name: {}, type: vless, server: h, port: 1}}]",
        "n".repeat(10_000)
    );
    let e = entries(&long).unwrap_err().to_string();
    assert!(e.len() < 200, "{e}");
}

proptest! {
    /// Any entries the writer has a form for read back as they went in, less what a
    /// Clash config cannot carry; pins known only by their hash round-trip whole.
    #[test]
    fn configs_round_trip(
        entries in proptest::collection::vec(crate::share::tests::linkable_entry(), 0..6),
        pins in proptest::collection::vec(proptest::option::of(any::<[u8; 32]>()), 6),
    ) {
        let entries: Vec<Entry> = entries
            .into_iter()
            .zip(pins)
            .enumerate()
            .map(|(i, (mut e, pin))| {
                // Unique names the writer keeps as they are.
                e.name = format!("{i} {}", e.name);
                if let Some(tls) = &mut e.tls {
                    tls.certificate_sha256 = pin;
                }
                e
            })
            .collect();
        let expected: Vec<Entry> = entries.iter().filter_map(clash_limited).collect();
        let yaml = config(&entries);
        prop_assert_eq!(read(&yaml), Ok(Proxies { entries: expected, skipped: vec![] }));
    }

    #[test]
    fn reading_never_panics(text in "\\PC{0,200}") {
        let _ = read(&text);
    }

    #[test]
    fn reading_yaml_like_text_never_panics(
        text in "(proxies:\n)?([-:{}\\[\\],&*!|>'\"%@#?<. \n]|[a-z0-9]{1,6}|  |- |: |tls|type|vless|ss|trojan|ws|network|ws-opts|port){0,60}",
    ) {
        let _ = read(&text);
    }
}

/// HTTPUpgrade as mihomo writes it, `ws` with `v2ray-http-upgrade: true`: the path
/// as it is (no early-data form), the `Host` header in any case, an empty one none;
/// fast open is read and taken as the plain upgrade (it only changes when the
/// client sends its first bytes), a malformed one an error naming it.
#[test]
fn httpupgrade_proxies() {
    let yaml = r#"proxies:
  - {name: up, type: vless, server: h, port: 443, uuid: u, network: ws, tls: true,
     servername: s, ws-opts: {path: /up, headers: {host: cdn.example.com}, v2ray-http-upgrade: true}}
  - {name: bare, type: trojan, server: h, port: 443, password: pw, network: ws,
     ws-opts: {v2ray-http-upgrade: "true", headers: {Host: ""}, max-early-data: 2048,
     early-data-header-name: Sec-WebSocket-Protocol}}
  - {name: fast, type: vless, server: h, port: 443, uuid: u, network: ws,
     ws-opts: {path: /f, v2ray-http-upgrade: true, v2ray-http-upgrade-fast-open: true}}
  - {name: plain ws, type: vless, server: h, port: 443, uuid: u, network: ws,
     ws-opts: {path: /w, v2ray-http-upgrade: false, v2ray-http-upgrade-fast-open: true}}
"#;
    let read_back = read(yaml).unwrap();
    let transports: Vec<(&str, &EntryTransport)> = read_back
        .entries
        .iter()
        .map(|e| (e.name.as_str(), &e.transport))
        .collect();
    assert_eq!(
        transports,
        [
            (
                "up",
                &EntryTransport::HttpUpgrade {
                    path: "/up".into(),
                    host: Some("cdn.example.com".into()),
                }
            ),
            (
                "bare",
                &EntryTransport::HttpUpgrade {
                    path: "/".into(),
                    host: None,
                }
            ),
            (
                "fast",
                &EntryTransport::HttpUpgrade {
                    path: "/f".into(),
                    host: None,
                }
            ),
            (
                "plain ws",
                &EntryTransport::Ws {
                    path: "/w".into(),
                    host: None,
                }
            ),
        ]
    );
    assert_eq!(
        read_back.entries[0].tls,
        Some(EntryTls {
            server_name: Some("s".into()),
            ..EntryTls::default()
        })
    );
    assert_eq!(read_back.skipped, []);
    let fast = "proxies: [{name: x, type: vless, server: h, port: 1, uuid: u, network: ws, \
                ws-opts: {v2ray-http-upgrade: true, v2ray-http-upgrade-fast-open: maybe}}]";
    assert_eq!(
        entries(fast).unwrap_err().to_string(),
        r#"proxies[0] ("x"): `ws-opts.v2ray-http-upgrade-fast-open` must be true or false"#
    );
    let bad = "proxies: [{name: x, type: vless, server: h, port: 1, uuid: u, network: ws, \
               ws-opts: {v2ray-http-upgrade: [1]}}]";
    assert_eq!(
        entries(bad).unwrap_err().to_string(),
        r#"proxies[0] ("x"): `ws-opts.v2ray-http-upgrade` must be true or false"#
    );
}
