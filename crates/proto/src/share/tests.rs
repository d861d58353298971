use proptest::prelude::*;

use super::*;
use crate::entry::{EntryReality, EntryTls};

const UUID: &str = "b831381d-6324-4d53-ad4f-8cda48b30811";

fn entry(protocol: EntryProtocol, transport: EntryTransport, tls: Option<EntryTls>) -> Entry {
    Entry {
        name: "Tokyo 🇯🇵 #1".into(),
        server: "node.example.com".into(),
        port: 443,
        protocol,
        transport,
        tls,
        route: None,
    }
}

fn vless(flow: Option<&str>) -> EntryProtocol {
    EntryProtocol::Vless {
        uuid: UUID.into(),
        flow: flow.map(str::to_owned),
    }
}

fn trojan() -> EntryProtocol {
    EntryProtocol::Trojan {
        password: "p@ss:w/rd+1".into(),
    }
}

fn ws() -> EntryTransport {
    EntryTransport::Ws {
        path: "/ws?ed=2048".into(),
        host: Some("cdn.example.com".into()),
    }
}

fn tls() -> Option<EntryTls> {
    Some(EntryTls {
        server_name: Some("sni.example.com".into()),
        insecure: false,
        certificate_pem: None,
        certificate_sha256: None,
        alpn: vec!["h2".into(), "http/1.1".into()],
        ..EntryTls::default()
    })
}

/// The fragment every test entry ends with: the name, emoji and `#` escaped.
const NAME: &str = "#Tokyo%20%F0%9F%87%AF%F0%9F%87%B5%20%231";

/// Each case: the entry, its exact link; each must read back to the same entry.
fn cases() -> Vec<(Entry, String)> {
    let insecure = Some(EntryTls {
        server_name: None,
        insecure: true,
        certificate_pem: None,
        certificate_sha256: None,
        alpn: Vec::new(),
        ..EntryTls::default()
    });
    vec![
        (
            entry(vless(None), EntryTransport::Tcp, None),
            format!(
                "vless://{UUID}@node.example.com:443?type=tcp&security=none&encryption=none{NAME}"
            ),
        ),
        (
            entry(vless(Some("xtls-rprx-vision")), EntryTransport::Tcp, tls()),
            format!(
                "vless://{UUID}@node.example.com:443?type=tcp&security=tls&sni=sni.example.com\
                 &alpn=h2%2Chttp%2F1.1&encryption=none&flow=xtls-rprx-vision{NAME}"
            ),
        ),
        (
            entry(
                vless(Some("xtls-rprx-vision")),
                EntryTransport::Tcp,
                Some(EntryTls {
                    server_name: Some("www.example.com".into()),
                    fingerprint: Some("chrome".into()),
                    reality: Some(EntryReality {
                        public_key: "PoZajx_KjTmvtUinsv-XAZ2fEqOvCoRtTvg7WEtZ_Q0".into(),
                        short_id: "6ba85179e30d4fc2".into(),
                    }),
                    ..EntryTls::default()
                }),
            ),
            format!(
                "vless://{UUID}@node.example.com:443?type=tcp&security=reality&sni=www.example.com\
                 &fp=chrome&pbk=PoZajx_KjTmvtUinsv-XAZ2fEqOvCoRtTvg7WEtZ_Q0&sid=6ba85179e30d4fc2\
                 &encryption=none&flow=xtls-rprx-vision{NAME}"
            ),
        ),
        (
            // The empty short id is a valid one: no `sid`.
            entry(
                vless(None),
                EntryTransport::Tcp,
                Some(EntryTls {
                    server_name: Some("www.example.com".into()),
                    fingerprint: Some("firefox".into()),
                    reality: Some(EntryReality {
                        public_key: "PoZajx_KjTmvtUinsv-XAZ2fEqOvCoRtTvg7WEtZ_Q0".into(),
                        short_id: String::new(),
                    }),
                    ..EntryTls::default()
                }),
            ),
            format!(
                "vless://{UUID}@node.example.com:443?type=tcp&security=reality&sni=www.example.com\
                 &fp=firefox&pbk=PoZajx_KjTmvtUinsv-XAZ2fEqOvCoRtTvg7WEtZ_Q0&encryption=none{NAME}"
            ),
        ),
        (
            entry(vless(None), ws(), None),
            format!(
                "vless://{UUID}@node.example.com:443?type=ws&path=%2Fws%3Fed%3D2048\
                 &host=cdn.example.com&security=none&encryption=none{NAME}"
            ),
        ),
        (
            entry(vless(None), ws(), insecure.clone()),
            format!(
                "vless://{UUID}@node.example.com:443?type=ws&path=%2Fws%3Fed%3D2048\
                 &host=cdn.example.com&security=tls&allowInsecure=1&encryption=none{NAME}"
            ),
        ),
        (
            entry(trojan(), EntryTransport::Tcp, None),
            format!(
                "trojan://p%40ss%3Aw%2Frd%2B1@node.example.com:443?type=tcp&security=none{NAME}"
            ),
        ),
        (
            entry(trojan(), EntryTransport::Tcp, tls()),
            format!(
                "trojan://p%40ss%3Aw%2Frd%2B1@node.example.com:443?type=tcp&security=tls\
                 &sni=sni.example.com&alpn=h2%2Chttp%2F1.1{NAME}"
            ),
        ),
        (
            entry(trojan(), ws(), None),
            format!(
                "trojan://p%40ss%3Aw%2Frd%2B1@node.example.com:443?type=ws&path=%2Fws%3Fed%3D2048\
                 &host=cdn.example.com&security=none{NAME}"
            ),
        ),
        (
            entry(
                trojan(),
                EntryTransport::Ws {
                    path: "/t".into(),
                    host: None,
                },
                Some(EntryTls::default()),
            ),
            format!(
                "trojan://p%40ss%3Aw%2Frd%2B1@node.example.com:443?type=ws&path=%2Ft&security=tls{NAME}"
            ),
        ),
        (
            entry(
                EntryProtocol::Shadowsocks {
                    method: "2022-blake3-aes-128-gcm".into(),
                    password: "c3dpdGNoeWFyZC1zcy0xNg==:YWxpY2Utc3Mta2V5LTE2Yg==".into(),
                },
                EntryTransport::Tcp,
                None,
            ),
            format!(
                "ss://2022-blake3-aes-128-gcm:c3dpdGNoeWFyZC1zcy0xNg%3D%3D%3AYWxpY2Utc3Mta2V5LTE2Yg%3D%3D\
                 @node.example.com:443{NAME}"
            ),
        ),
        (
            entry(
                EntryProtocol::Shadowsocks {
                    method: "aes-256-gcm".into(),
                    password: "test/pass?".into(),
                },
                EntryTransport::Tcp,
                None,
            ),
            // base64url("aes-256-gcm:test/pass?") without padding.
            format!("ss://YWVzLTI1Ni1nY206dGVzdC9wYXNzPw@node.example.com:443{NAME}"),
        ),
    ]
}

#[test]
fn exact_links_and_back() {
    for (entry, link) in cases() {
        assert_eq!(to_link(&entry), link, "{entry:?}");
        assert_eq!(parse_link(&link), Ok(entry), "{link}");
    }
}

#[test]
fn ipv6_servers_are_bracketed() {
    let mut e = entry(vless(None), EntryTransport::Tcp, None);
    e.server = "2001:db8::1".into();
    e.name = String::new();
    let link = to_link(&e);
    assert_eq!(
        link,
        format!("vless://{UUID}@[2001:db8::1]:443?type=tcp&security=none&encryption=none#")
    );
    assert_eq!(parse_link(&link), Ok(e));
}

#[test]
fn shadowsocks_links_carry_no_transport_or_tls() {
    let ss = EntryProtocol::Shadowsocks {
        method: "2022-blake3-aes-256-gcm".into(),
        password: "a2V5".into(),
    };
    let plain = to_link(&entry(ss.clone(), EntryTransport::Tcp, None));
    assert_eq!(to_link(&entry(ss, ws(), tls())), plain);
}

#[test]
fn links_written_by_other_apps() {
    // v2rayN's base64 userinfo (standard alphabet, padded), with a `/` before `?`.
    let e = parse_link("ss://YWVzLTI1Ni1nY206dGVzdC9wYXNzPw==@1.2.3.4:8388/?#x").unwrap();
    assert_eq!(
        e.protocol,
        EntryProtocol::Shadowsocks {
            method: "aes-256-gcm".into(),
            password: "test/pass?".into()
        }
    );
    assert_eq!(
        (e.server.as_str(), e.port, e.name.as_str()),
        ("1.2.3.4", 8388, "x")
    );
    // The old whole-base64 form: base64("aes-128-gcm:test@192.168.100.1:8888").
    let e = parse_link("ss://YWVzLTEyOC1nY206dGVzdEAxOTIuMTY4LjEwMC4xOjg4ODg#Example").unwrap();
    assert_eq!((e.server.as_str(), e.port), ("192.168.100.1", 8888));
    // A Trojan link without `security` is TLS; `fp` is the uTLS fingerprint;
    // `peer` is an old name for `sni`.
    let e = parse_link("TROJAN://pw@h.example:443?peer=s.example&fp=chrome&allowInsecure=true")
        .unwrap();
    assert_eq!(
        e.tls,
        Some(EntryTls {
            server_name: Some("s.example".into()),
            insecure: true,
            fingerprint: Some("chrome".into()),
            ..EntryTls::default()
        })
    );
    assert_eq!(e.name, "");
    // A WebSocket link without a path means `/`; VLESS without `security` no TLS.
    let e = parse_link(&format!("vless://{UUID}@h:80?type=ws&encryption=none")).unwrap();
    assert_eq!(
        e.transport,
        EntryTransport::Ws {
            path: "/".into(),
            host: None
        }
    );
    assert_eq!(e.tls, None);
    // REALITY as 3x-ui and Marzban write it: parameters in another order,
    // `headerType`, `spx` (the spider's path, left to the client's default).
    let e = parse_link(&format!(
        "vless://{UUID}@h.example:443?security=reality&encryption=none\
         &pbk=PoZajx_KjTmvtUinsv-XAZ2fEqOvCoRtTvg7WEtZ_Q0&headerType=none&fp=chrome&type=tcp\
         &flow=xtls-rprx-vision&sni=www.example.com&sid=e5c4d84fb339fb92&spx=%2F#R"
    ))
    .unwrap();
    assert_eq!(
        e.protocol,
        EntryProtocol::Vless {
            uuid: UUID.into(),
            flow: Some("xtls-rprx-vision".into())
        }
    );
    assert_eq!(e.transport, EntryTransport::Tcp);
    assert_eq!(
        e.tls,
        Some(EntryTls {
            server_name: Some("www.example.com".into()),
            fingerprint: Some("chrome".into()),
            reality: Some(EntryReality {
                public_key: "PoZajx_KjTmvtUinsv-XAZ2fEqOvCoRtTvg7WEtZ_Q0".into(),
                short_id: "e5c4d84fb339fb92".into(),
            }),
            ..EntryTls::default()
        })
    );
}

#[test]
fn errors_name_what_is_wrong() {
    let cases: &[(&str, LinkError)] = &[
        ("", LinkError::NotALink),
        ("hello", LinkError::NotALink),
        ("vmess://eyJ9", LinkError::UnsupportedScheme("vmess".into())),
        ("vless://@h:1", LinkError::MissingCredentials("vless")),
        ("trojan://h:1", LinkError::MissingCredentials("trojan")),
        ("trojan://pw@:1", LinkError::MissingHost),
        ("trojan://pw@h", LinkError::MissingPort),
        ("trojan://pw@[::1", LinkError::UnclosedIpv6),
        ("trojan://pw@h:0", LinkError::BadPort("0".into())),
        ("trojan://pw@h:65536", LinkError::BadPort("65536".into())),
        ("trojan://pw@h:+1", LinkError::BadPort("+1".into())),
        ("trojan://pw@h:1/x", LinkError::UnexpectedPath("/x".into())),
        ("trojan://p%zz@h:1", LinkError::BadEncoding("password")),
        (
            "trojan://pw@h:1#%FF",
            LinkError::BadEncoding("name (#fragment)"),
        ),
        (
            "trojan://pw@h:1?type=h2",
            LinkError::UnsupportedTransport("h2".into()),
        ),
        (
            "trojan://pw@h:1?type=grpc&mode=guna",
            LinkError::UnsupportedGrpcMode("guna".into()),
        ),
        (
            "vless://u@h:1?security=xtls",
            LinkError::UnsupportedSecurity("xtls".into()),
        ),
        ("vless://u@h:1?security=reality", LinkError::BadRealityKey),
        (
            "vless://u@h:1?security=reality&pbk=c2hvcnQ",
            LinkError::BadRealityKey,
        ),
        (
            "vless://u@h:1?security=reality&pbk=PoZajx_KjTmvtUinsv-XAZ2fEqOvCoRtTvg7WEtZ_Q0&sid=abc",
            LinkError::BadShortId,
        ),
        (
            "vless://u@h:1?security=reality&pbk=PoZajx_KjTmvtUinsv-XAZ2fEqOvCoRtTvg7WEtZ_Q0&sid=0123456789abcdef01",
            LinkError::BadShortId,
        ),
        (
            "vless://u@h:1?encryption=mlkem",
            LinkError::UnsupportedEncryption("mlkem".into()),
        ),
        (
            "ss://YWVzLTI1Ni1nY206dA@h:1/?plugin=v2ray-plugin%3Bmode%3Dwebsocket",
            LinkError::UnsupportedPlugin("v2ray-plugin;mode=websocket".into()),
        ),
        ("ss://!!!@h:1", LinkError::BadShadowsocksUserinfo),
        ("ss://bm9jb2xvbg@h:1", LinkError::BadShadowsocksUserinfo),
        ("ss://:pw@h:1", LinkError::BadShadowsocksUserinfo),
        ("ss://2022-a%3Ab:pw@h:1", LinkError::BadShadowsocksUserinfo),
        (
            "ss://2022-blake3-aes-128-gcm:@h:1",
            LinkError::BadShadowsocksUserinfo,
        ),
    ];
    for (link, error) in cases {
        assert_eq!(parse_link(link).as_ref(), Err(error), "{link}");
    }
}

#[test]
fn errors_never_repeat_credentials() {
    let err = parse_link("trojan://very-secret-password@h:1?security=quic").unwrap_err();
    assert!(!err.to_string().contains("very-secret"), "{err}");
}

#[test]
fn subscriptions_in_every_form() {
    let entries: Vec<Entry> = cases().into_iter().map(|(e, _)| e).collect();
    let plain = links(&entries);
    assert_eq!(plain.lines().count(), entries.len());
    assert!(!plain.ends_with('\n'));
    let b64 = subscription_base64(&entries);
    assert_eq!(b64, crate::base64::encode_standard(plain.as_bytes()));
    let url_safe: String = b64
        .trim_end_matches('=')
        .chars()
        .map(|c| match c {
            '+' => '-',
            '/' => '_',
            c => c,
        })
        .collect();
    // Wrapped at 76 columns, as some servers send it.
    let wrapped: String = b64
        .as_bytes()
        .chunks(76)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect::<Vec<_>>()
        .join("\r\n");
    let crlf = plain.replace('\n', "\r\n\r\n") + "\r\n";
    for body in [&plain, &b64, &url_safe, &wrapped, &crlf] {
        assert_eq!(parse_subscription(body).as_ref(), Ok(&entries), "{body}");
    }
    assert_eq!(parse_subscription(""), Ok(Vec::new()));
    assert_eq!(parse_subscription("  \n"), Ok(Vec::new()));
    assert_eq!(subscription_base64(&[]), "");
}

#[test]
fn subscription_errors() {
    assert_eq!(
        parse_subscription("not base64!"),
        Err(LinkError::NotASubscription)
    );
    // base64 of "hello world"
    assert_eq!(
        parse_subscription("aGVsbG8gd29ybGQ="),
        Err(LinkError::NotASubscription)
    );
    let body = format!("{}\n\nvmess://x\n", to_link(&cases()[0].0));
    assert_eq!(
        parse_subscription(&body),
        Err(LinkError::Line {
            line: 3,
            error: Box::new(LinkError::UnsupportedScheme("vmess".into()))
        })
    );
    assert_eq!(
        parse_subscription(&body).unwrap_err().to_string(),
        "subscription line 3: unsupported link scheme \"vmess\": only vless://, trojan://, ss:// and hysteria2:// are read"
    );
}

/// Entries a link can carry whole: no pinned certificate, no empty optional
/// strings, no port 0, ALPN items without commas, and Shadowsocks only on TCP
/// without TLS.
pub(crate) fn linkable_entry() -> impl Strategy<Value = Entry> {
    let text = "\\PC{0,24}";
    let some_text = "\\PC{1,24}";
    let server = prop_oneof![
        "[a-z0-9][a-z0-9.-]{0,40}",
        any::<[u8; 4]>().prop_map(|ip| std::net::Ipv4Addr::from(ip).to_string()),
        any::<[u8; 16]>().prop_map(|ip| std::net::Ipv6Addr::from(ip).to_string()),
    ];
    let reality = proptest::option::of((
        any::<[u8; 32]>(),
        proptest::collection::vec(any::<u8>(), 0..=8),
    ))
    .prop_map(|r| {
        r.map(|(key, id)| EntryReality {
            public_key: crate::reality::PublicKey(key).encode(),
            short_id: id.iter().map(|b| format!("{b:02x}")).collect(),
        })
    });
    let tls = proptest::option::of((
        proptest::option::of(some_text),
        any::<bool>(),
        proptest::collection::vec("[a-z0-9/.-]{1,10}", 0..3),
        proptest::option::of("[a-z0-9]{1,10}"),
        reality,
    ))
    .prop_map(|tls| {
        tls.map(
            |(server_name, insecure, alpn, fingerprint, reality)| EntryTls {
                server_name,
                insecure,
                certificate_pem: None,
                certificate_sha256: None,
                alpn,
                fingerprint,
                reality,
            },
        )
    });
    let transport = prop_oneof![
        Just(EntryTransport::Tcp),
        (text, proptest::option::of(some_text))
            .prop_map(|(path, host)| EntryTransport::Ws { path, host }),
        (text, proptest::option::of(some_text))
            .prop_map(|(path, host)| EntryTransport::HttpUpgrade { path, host }),
        (text, proptest::option::of(some_text), any::<bool>()).prop_map(
            |(service_name, authority, multi)| EntryTransport::Grpc {
                service_name,
                authority,
                multi
            }
        ),
        (
            text,
            proptest::option::of(some_text),
            proptest::sample::select(crate::xhttp::Mode::ALL.to_vec()),
            proptest::option::of((1u32..=2000, 0u32..=100, proptest::option::of(1u32..=64))),
        )
            .prop_map(|(path, host, mode, extra)| EntryTransport::Xhttp {
                path,
                host,
                mode,
                extra: extra.map(|(padding, interval, concurrency)| {
                    crate::entry::xhttp::XhttpExtra {
                        x_padding_bytes: Some(
                            crate::xhttp::Range::new(1, padding)
                                .unwrap_or(crate::xhttp::Range::fixed(padding)),
                        ),
                        sc_min_posts_interval_ms: Some(crate::xhttp::Range::fixed(interval)),
                        max_concurrency: concurrency.map(crate::xhttp::Range::fixed),
                        ..Default::default()
                    }
                }),
            }),
    ];
    let protocol = prop_oneof![
        (some_text, proptest::option::of(some_text))
            .prop_map(|(uuid, flow)| EntryProtocol::Vless { uuid, flow }),
        some_text.prop_map(|password| EntryProtocol::Trojan { password }),
        (
            prop_oneof![
                Just("2022-blake3-aes-128-gcm".to_owned()),
                Just("2022-blake3-chacha20-poly1305".to_owned()),
                "[a-z0-9-]{1,20}",
            ],
            some_text
        )
            .prop_map(|(method, password)| EntryProtocol::Shadowsocks { method, password }),
    ];
    let route = proptest::option::of("[A-Za-z0-9-]{1,63}");
    (text, server, 1..=u16::MAX, protocol, transport, tls, route).prop_map(
        |(name, server, port, protocol, transport, tls, route)| {
            let ss = matches!(protocol, EntryProtocol::Shadowsocks { .. });
            Entry {
                name,
                server,
                port,
                protocol,
                transport: if ss { EntryTransport::Tcp } else { transport },
                tls: if ss { None } else { tls },
                route,
            }
        },
    )
}

/// Link-shaped text as other writers might produce it: any userinfo and host
/// characters, the known parameters with likely and arbitrary values, repeated or
/// missing, and fragments with stray escapes.
fn foreign_link() -> impl Strategy<Value = String> {
    let piece = "[a-zA-Z0-9%:/+=@._~ -]{0,16}";
    let key = prop_oneof![
        Just("type"),
        Just("path"),
        Just("host"),
        Just("security"),
        Just("sni"),
        Just("peer"),
        Just("alpn"),
        Just("allowInsecure"),
        Just("insecure"),
        Just("encryption"),
        Just("flow"),
        Just("plugin"),
        Just("fp"),
        Just("pbk"),
        Just("sid"),
        Just("serviceName"),
        Just("authority"),
        Just("mode"),
    ];
    let known = prop_oneof![
        Just("tcp".to_owned()),
        Just("ws".to_owned()),
        Just("httpupgrade".to_owned()),
        Just("grpc".to_owned()),
        Just("gun".to_owned()),
        Just("multi".to_owned()),
        Just("tls".to_owned()),
        Just("none".to_owned()),
        Just("reality".to_owned()),
        Just("PoZajx_KjTmvtUinsv-XAZ2fEqOvCoRtTvg7WEtZ_Q0".to_owned()),
        Just("6ba85179e30d4fc2".to_owned()),
        Just("1".to_owned()),
        Just(String::new()),
    ];
    let value = prop_oneof![4 => known.boxed(), 1 => "[a-zA-Z0-9%,/+=._~-]{0,12}".boxed()];
    (
        prop_oneof![
            Just("vless://"),
            Just("trojan://"),
            Just("ss://"),
            Just("SS://")
        ],
        piece,
        prop_oneof!["[a-z0-9.%-]{0,12}", "\\[[0-9a-f:%.]{0,20}\\]"],
        prop_oneof![
            4 => (1..=u16::MAX).prop_map(|p| p.to_string()).boxed(),
            1 => "[0-9]{0,6}".boxed(),
        ],
        prop_oneof![Just(""), Just("/")],
        proptest::collection::vec((key, value), 0..6),
        "[a-zA-Z0-9% #]{0,12}",
    )
        .prop_map(|(scheme, user, host, port, slash, params, fragment)| {
            let query: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!(
                "{scheme}{user}@{host}:{port}{slash}?{}#{fragment}",
                query.join("&")
            )
        })
}

proptest! {
    #[test]
    fn links_round_trip(entry in linkable_entry()) {
        let link = to_link(&entry);
        prop_assert_eq!(parse_link(&link), Ok(entry));
    }

    #[test]
    fn subscriptions_round_trip(entries in proptest::collection::vec(linkable_entry(), 0..6)) {
        prop_assert_eq!(parse_subscription(&subscription_base64(&entries)), Ok(entries.clone()));
        prop_assert_eq!(parse_subscription(&links(&entries)), Ok(entries));
    }

    #[test]
    fn parsing_never_panics(text in "\\PC{0,200}") {
        let _ = parse_link(&text);
        let _ = parse_subscription(&text);
    }

    #[test]
    fn parsing_link_like_text_never_panics(
        scheme in prop_oneof![Just("vless://"), Just("trojan://"), Just("ss://")],
        rest in "[a-zA-Z0-9%@:/?#&=\\[\\]+._~-]{0,120}",
    ) {
        let text = format!("{scheme}{rest}");
        let _ = parse_link(&text);
        let _ = parse_subscription(&text);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn whatever_parses_writes_back_the_same(link in foreign_link()) {
        // About one in 25 of these parses, so this runs more cases than the default; the rest exercise the errors.
        if let Ok(entry) = parse_link(&link) {
            prop_assert_eq!(parse_link(&to_link(&entry)), Ok(entry));
        }
    }
}

/// What a link carries of `entry`: everything but the pinned certificate (see the
/// module docs), so a client that imports it verifies with its system roots.
fn link_limited(entry: &Entry) -> Entry {
    let mut linked = entry.clone();
    if let Some(tls) = &mut linked.tls {
        tls.certificate_pem = None;
    }
    linked
}

/// Every entry shape the panel serves, a pinned certificate included: each link reads
/// back as the entry less what links cannot carry, and the sing-box and Clash configs
/// of the subscription read back are those of the served entries so limited.
#[test]
fn every_served_shape_round_trips_into_the_same_client_configs() {
    use crate::testing::entries::{self as e, shadowsocks};
    use crate::{clash, singbox};

    let mut served = Vec::new();
    for protocol in [e::vless(), e::trojan()] {
        for transport in [EntryTransport::Tcp, e::ws(), e::httpupgrade(), e::grpc()] {
            let insecure = Some(EntryTls {
                insecure: true,
                ..EntryTls::default()
            });
            for tls in [None, e::tls(), insecure] {
                served.push(e::entry(
                    "Tokyo 🇯🇵 #1: \"x\"",
                    protocol.clone(),
                    transport.clone(),
                    tls,
                ));
            }
        }
    }
    served.push(e::entry("ss", shadowsocks(), EntryTransport::Tcp, None));
    served.push(e::vision_over_reality());
    // Route ids travel in every format; one entry has none.
    for (i, entry) in served.iter_mut().enumerate().skip(1) {
        entry.route = Some(format!("r-{i}"));
    }
    let limited: Vec<Entry> = served.iter().map(link_limited).collect();
    for (entry, expected) in served.iter().zip(&limited) {
        assert_eq!(
            parse_link(&to_link(entry)).as_ref(),
            Ok(expected),
            "{entry:?}"
        );
    }
    let read_back = parse_subscription(&subscription_base64(&served)).unwrap();
    assert_eq!(read_back, limited);
    let sing_box = singbox::SingBoxOptions::default();
    assert_eq!(
        singbox::client_config(&read_back, &sing_box),
        singbox::client_config(&limited, &sing_box)
    );
    let clash_options = clash::ClashOptions::default();
    assert_eq!(
        clash::client_config(&read_back, &clash_options),
        clash::client_config(&limited, &clash_options)
    );
}

/// A route id is the link's last parameter (a Shadowsocks link's only one) and reads
/// back; a malformed one is neither written nor read.
#[test]
fn route_ids_are_the_last_parameter() {
    let mut e = entry(vless(None), EntryTransport::Tcp, None);
    e.route = Some("7".into());
    let link = to_link(&e);
    assert!(
        link.ends_with("&encryption=none&route=7#Tokyo%20%F0%9F%87%AF%F0%9F%87%B5%20%231"),
        "{link}"
    );
    assert_eq!(parse_link(&link), Ok(e.clone()));
    let mut ss = entry(
        EntryProtocol::Shadowsocks {
            method: "2022-blake3-aes-128-gcm".into(),
            password: "a:b".into(),
        },
        EntryTransport::Tcp,
        None,
    );
    ss.route = Some("route-3".into());
    let link = to_link(&ss);
    assert!(link.contains(":443?route=route-3#"), "{link}");
    assert_eq!(parse_link(&link), Ok(ss));
    e.route = Some("a b".into());
    assert!(!to_link(&e).contains("route="));
    let odd = link.replace("route=route-3", "route=a%20b");
    assert_eq!(parse_link(&odd).unwrap().route, None);
}
