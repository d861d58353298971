use super::*;

#[test]
fn reality_and_flow_errors_name_the_field() {
    let reality =
        |dest: &str, names: &[&str], ids: &[&str], diff: u64, fp: &str| InboundSecurity::Reality {
            dest: dest.into(),
            server_names: names.iter().map(|n| (*n).to_owned()).collect(),
            short_ids: ids.iter().map(|n| (*n).to_owned()).collect(),
            max_time_diff_ms: diff,
            fingerprint: fp.into(),
        };
    let good = reality(
        "www.example.com:443",
        &["www.example.com"],
        &[],
        60_000,
        "chrome",
    );
    let tcp = InboundTransport::Tcp;
    let check = |protocol, transport: &InboundTransport, security: &InboundSecurity, flow, sni| {
        check_reality_and_flow(protocol, transport, security, flow, sni).map_err(|e| e.field)
    };
    let vision = Some(Flow::Vision);
    assert_eq!(check(Protocol::Vless, &tcp, &good, vision, None), Ok(()));
    assert_eq!(check(Protocol::Vless, &tcp, &good, None, None), Ok(()));
    let tls = InboundSecurity::Tls {
        certificate: TlsCertificate::SelfSigned,
    };
    assert_eq!(check(Protocol::Vless, &tcp, &tls, vision, None), Ok(()));
    for ok in [
        reality(
            "[2001:db8::1]:8443",
            &["a.example"],
            &["", "6ba85179e30d4fc2"],
            0,
            "firefox",
        ),
        reality(
            "127.0.0.1:443",
            &["a.example", "b.example"],
            &["ab"],
            3_600_000,
            "random",
        ),
    ] {
        assert_eq!(
            check(Protocol::Vless, &tcp, &ok, None, None),
            Ok(()),
            "{ok:?}"
        );
    }
    let ws = InboundTransport::Ws {
        path: "/".into(),
        host: None,
    };
    let none = InboundSecurity::None;
    let cases = [
        (check(Protocol::Vless, &tcp, &none, vision, None), "flow"),
        (check(Protocol::Vless, &ws, &tls, vision, None), "flow"),
        (check(Protocol::Trojan, &tcp, &tls, vision, None), "flow"),
        (check(Protocol::Trojan, &tcp, &good, None, None), "security"),
        (check(Protocol::Vless, &ws, &good, None, None), "security"),
        (
            check(Protocol::Vless, &tcp, &good, None, Some("x.example")),
            "sni",
        ),
    ];
    for (got, field) in cases {
        assert_eq!(got, Err(field.to_owned()));
    }
    let bad = [
        (
            reality("www.example.com", &["a.example"], &[], 0, "chrome"),
            "security.dest",
        ),
        (
            reality("www.example.com:0", &["a.example"], &[], 0, "chrome"),
            "security.dest",
        ),
        (
            reality("2001:db8::1:443", &["a.example"], &[], 0, "chrome"),
            "security.dest",
        ),
        (
            reality("bad host:443", &["a.example"], &[], 0, "chrome"),
            "security.dest",
        ),
        (
            reality("a.example:443", &[], &[], 0, "chrome"),
            "security.server_names",
        ),
        (
            reality("a.example:443", &["a.example", "-x"], &[], 0, "chrome"),
            "security.server_names[1]",
        ),
        (
            reality("a.example:443", &["10.0.0.1"], &[], 0, "chrome"),
            "security.server_names[0]",
        ),
        (
            reality("a.example:443", &["a.example"], &["ab", "abc"], 0, "chrome"),
            "security.short_ids[1]",
        ),
        (
            reality(
                "a.example:443",
                &["a.example"],
                &["0123456789abcdef01"],
                0,
                "chrome",
            ),
            "security.short_ids[0]",
        ),
        (
            reality("a.example:443", &["a.example"], &["zz"], 0, "chrome"),
            "security.short_ids[0]",
        ),
        (
            reality("a.example:443", &["a.example"], &[], 3_600_001, "chrome"),
            "security.max_time_diff_ms",
        ),
        (
            reality("a.example:443", &["a.example"], &[], 0, "netscape"),
            "security.fingerprint",
        ),
    ];
    for (security, field) in bad {
        assert_eq!(
            check(Protocol::Vless, &tcp, &security, None, None),
            Err(field.to_owned()),
            "{security:?}"
        );
    }
}

#[test]
fn inbound_errors_name_the_field() {
    let ws = InboundTransport::Ws {
        path: "nope".into(),
        host: None,
    };
    let none = InboundSecurity::None;
    let e = |r: Result<(), FieldError>| r.unwrap_err().field;
    assert_eq!(
        e(check_inbound(
            Protocol::Vless,
            0,
            &InboundTransport::Tcp,
            &none,
            None,
            1.0
        )),
        "port"
    );
    assert_eq!(
        e(check_inbound(Protocol::Vless, 443, &ws, &none, None, 1.0)),
        "transport.path"
    );
    assert_eq!(
        e(check_inbound(
            Protocol::Vless,
            443,
            &InboundTransport::Tcp,
            &none,
            None,
            0.0
        )),
        "coefficient"
    );
    assert_eq!(
        e(check_inbound(
            Protocol::Vless,
            443,
            &InboundTransport::Tcp,
            &none,
            None,
            f64::NAN
        )),
        "coefficient"
    );
    assert_eq!(
        e(check_inbound(
            Protocol::Shadowsocks,
            443,
            &InboundTransport::Tcp,
            &none,
            None,
            1.0
        )),
        "method"
    );
    assert_eq!(
        e(check_inbound(
            Protocol::Shadowsocks,
            443,
            &InboundTransport::Tcp,
            &none,
            Some("aes-128-gcm"),
            1.0
        )),
        "method"
    );
    assert_eq!(
        e(check_inbound(
            Protocol::Trojan,
            443,
            &InboundTransport::Tcp,
            &none,
            Some("2022-blake3-aes-128-gcm"),
            1.0
        )),
        "method"
    );
    let tls = InboundSecurity::Tls {
        certificate: TlsCertificate::SelfSigned,
    };
    assert_eq!(
        e(check_inbound(
            Protocol::Shadowsocks,
            443,
            &InboundTransport::Tcp,
            &tls,
            Some("2022-blake3-aes-128-gcm"),
            1.0
        )),
        "security"
    );
    let files = InboundSecurity::Tls {
        certificate: TlsCertificate::Files {
            cert: "cert.pem".into(),
            key: "/k.pem".into(),
        },
    };
    assert_eq!(
        e(check_inbound(
            Protocol::Trojan,
            443,
            &InboundTransport::Tcp,
            &files,
            None,
            1.0
        )),
        "security.certificate.cert"
    );
    let acme = InboundSecurity::Tls {
        certificate: TlsCertificate::Acme {
            email: None,
            directory: None,
            directory_root_pem: None,
        },
    };
    assert_eq!(
        e(check_inbound(
            Protocol::Hysteria2,
            443,
            &InboundTransport::Tcp,
            &acme,
            None,
            1.0
        )),
        "security.certificate"
    );
    assert!(
        check_inbound(
            Protocol::Vless,
            443,
            &InboundTransport::Tcp,
            &tls,
            None,
            2.0
        )
        .is_ok()
    );
}

#[test]
fn httpupgrade_errors_name_the_field() {
    let up = |path: &str, host: Option<&str>| InboundTransport::HttpUpgrade {
        path: path.into(),
        host: host.map(str::to_owned),
    };
    let none = InboundSecurity::None;
    let check = |protocol, transport: &InboundTransport| {
        check_inbound(protocol, 443, transport, &none, None, 1.0).map_err(|e| e.field)
    };
    assert_eq!(
        check(Protocol::Vless, &up("/up", Some("cdn.example.com"))),
        Ok(())
    );
    assert_eq!(check(Protocol::Trojan, &up("/", None)), Ok(()));
    for path in [
        "up",
        "/up?ed=2048",
        "/a\u{7}",
        &format!("/{}", "a".repeat(256)),
    ] {
        let e = check_inbound(Protocol::Vless, 443, &up(path, None), &none, None, 1.0).unwrap_err();
        assert_eq!(e.field, "transport.path", "{path:?}");
        assert_eq!(
            e.message,
            "must start with /, have no query and be at most 256 characters"
        );
    }
    assert_eq!(
        check(Protocol::Vless, &up("/up", Some("bad host"))),
        Err("transport.host".to_owned())
    );
    let ss = check_inbound(
        Protocol::Shadowsocks,
        443,
        &up("/up", None),
        &none,
        Some("2022-blake3-aes-128-gcm"),
        1.0,
    );
    assert_eq!(ss.map_err(|e| e.field), Err("transport".to_owned()));
    // Vision is for VLESS over TCP only.
    let tls = InboundSecurity::Tls {
        certificate: TlsCertificate::SelfSigned,
    };
    assert_eq!(
        check_reality_and_flow(
            Protocol::Vless,
            &up("/up", None),
            &tls,
            Some(Flow::Vision),
            None
        )
        .map_err(|e| e.field),
        Err("flow".to_owned())
    );
}
