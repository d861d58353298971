//! The tunnel half's config: pin and host lists next to the single values, per-user
//! bounds with their defaults, and errors that name the field.

use switchyard_node::NodeConfig;

const CRED: &str = "1111111111111111111111111111111111111111111111111111111111111111";

fn pin(b: &str) -> String {
    format!("key:{}", b.repeat(32))
}

fn direct_relay(relay: &str, origin: &str) -> String {
    format!(
        "[[tunnels]]\nname = \"t\"\nmode = \"direct\"\n[[tunnels.profiles]]\nport = 7443\n[tunnels.relay]\n{relay}[[tunnels.relay.origins]]\nname = \"o\"\ncredential = \"{CRED}\"\n{origin}"
    )
}

fn reverse_origin(pins: &str) -> String {
    format!(
        "[[tunnels]]\nname = \"t\"\n[[tunnels.profiles]]\nport = 7443\naddresses = [\"r:7443\"]\n[tunnels.origin]\nname = \"o\"\ncredential = \"{CRED}\"\n{pins}"
    )
}

fn err(text: &str) -> String {
    NodeConfig::from_toml(text).unwrap_err().to_string()
}

#[test]
fn lists_of_pins_and_hosts_are_taken_next_to_the_single_values() {
    let c = NodeConfig::from_toml(&direct_relay(
        &format!("pins = [\"{}\", \"{}\"]\n", pin("aa"), pin("bb")),
        "hosts = [\"o.example\", \"2001:db8::1\"]\n",
    ))
    .unwrap();
    let t = &c.tunnels[0];
    let relay = t.relay.as_ref().unwrap();
    assert_eq!(relay.all_pins(), [pin("aa"), pin("bb")]);
    assert_eq!(relay.origins[0].all_hosts(), ["o.example", "2001:db8::1"]);
    assert_eq!(
        (
            t.links,
            t.window_mib,
            relay.max_streams_per_user,
            relay.max_udp_per_user
        ),
        (4, 16, 1024, 256)
    );
    let c = NodeConfig::from_toml(&reverse_origin(&format!(
        "pin = \"{}\"\npins = [\"{}\"]\n",
        pin("aa"),
        pin("bb")
    )))
    .unwrap();
    let origin = c.tunnels[0].origin.as_ref().unwrap();
    assert_eq!(origin.all_pins(), [pin("aa"), pin("bb")]);
}

#[test]
fn each_tunnel_problem_names_its_field() {
    let p = format!("pin = \"{}\"\n", pin("aa"));
    let host = "host = \"o.example\"\n";
    let cases = [
        (
            direct_relay(&format!("{p}max_streams_per_user = 0\n"), host),
            "tunnels[0].relay.max_streams_per_user:",
        ),
        (
            direct_relay(&format!("{p}max_udp_per_user = 0\n"), host),
            "tunnels[0].relay.max_udp_per_user:",
        ),
        (direct_relay(&p, ""), "tunnels[0].relay.origins[0].host:"),
        (
            direct_relay(&format!("pins = [\"{}\", \"nope\"]\n", pin("aa")), host),
            "tunnels[0].relay.pin:",
        ),
        (reverse_origin(""), "tunnels[0].origin.pin:"),
        (
            reverse_origin(&p).replace("name = \"t\"\n", "name = \"t\"\nwindow_mib = 0\n"),
            "tunnels[0].window_mib:",
        ),
        (
            reverse_origin(&p).replace("name = \"t\"\n", "name = \"t\"\nwindow_mib = 65\n"),
            "tunnels[0].window_mib:",
        ),
        (
            reverse_origin(&format!("pins = [\"{}\", \"cert:zz\"]\n", pin("aa"))),
            "tunnels[0].origin.pin:",
        ),
    ];
    for (text, field) in cases {
        let e = err(&text);
        assert!(e.starts_with(field), "{field}: got {e:?} for\n{text}");
    }
}

fn reverse_relay(certificate: &str) -> String {
    format!(
        "[[tunnels]]\nname = \"t\"\n[[tunnels.profiles]]\nport = 7443\n[tunnels.relay]\n{certificate}[[tunnels.relay.origins]]\nname = \"o\"\ncredential = \"{CRED}\"\n"
    )
}

/// The listening side's certificate comes from files or inline (as the panel pushes
/// it), one pair, whole; the inline key is a secret, redacted like the others.
#[test]
fn the_listening_side_takes_files_or_inline_pem() {
    let inline = "cert_pem = \"C\"\nkey_pem = \"K\"\n";
    let c = NodeConfig::from_toml(&reverse_relay(inline)).unwrap();
    let relay = c.tunnels[0].relay.as_ref().unwrap();
    assert_eq!(relay.cert_pem.as_deref(), Some("C"));
    assert_eq!(relay.key_pem.as_ref().map(|k| k.expose()), Some("K"));
    let shown = c.redacted();
    assert_eq!(
        shown.tunnels[0]
            .relay
            .as_ref()
            .unwrap()
            .key_pem
            .as_ref()
            .map(|k| k.expose()),
        Some("<redacted>")
    );
    assert!(!format!("{c:?}").contains("\"K\""));
    NodeConfig::from_toml(&reverse_relay("cert = \"c.pem\"\nkey = \"k.pem\"\n")).unwrap();
    for certificate in [
        "",
        "cert_pem = \"C\"\n",
        "key = \"k.pem\"\n",
        "cert = \"c.pem\"\nkey_pem = \"K\"\n",
        "cert = \"c.pem\"\nkey = \"k.pem\"\ncert_pem = \"C\"\nkey_pem = \"K\"\n",
    ] {
        let e = err(&reverse_relay(certificate));
        assert!(
            e.starts_with("tunnels[0].relay.cert:"),
            "{certificate:?}: {e}"
        );
    }
    let direct_origin = |certificate: &str| {
        format!(
            "[[tunnels]]\nname = \"t\"\nmode = \"direct\"\n[[tunnels.profiles]]\nport = 7443\n[tunnels.origin]\nname = \"o\"\ncredential = \"{CRED}\"\n{certificate}"
        )
    };
    let c = NodeConfig::from_toml(&direct_origin(inline)).unwrap();
    assert_eq!(
        c.redacted().tunnels[0]
            .origin
            .as_ref()
            .unwrap()
            .key_pem
            .as_ref()
            .map(|k| k.expose()),
        Some("<redacted>")
    );
    let e = err(&direct_origin("cert_pem = \"C\"\n"));
    assert!(e.starts_with("tunnels[0].origin.cert:"), "{e}");
}

/// A profile's own `links` beside the tunnel's (the default of profiles that name
/// none), bounded and named by its profile.
#[test]
fn a_profile_names_its_own_links_or_takes_the_tunnels() {
    let p = format!("pin = \"{}\"\n", pin("aa"));
    let two = |links: &str| {
        reverse_origin(&p).replace(
            "addresses = [\"r:7443\"]\n",
            &format!(
                "addresses = [\"r:7443\"]\nlinks = 6\n[[tunnels.profiles]]\nport = 8443\naddresses = [\"r:8443\"]\n{links}"
            ),
        )
    };
    let c = NodeConfig::from_toml(&two("")).unwrap();
    let t = &c.tunnels[0];
    let links: Vec<Option<usize>> = t.profiles.iter().map(|p| p.links).collect();
    assert_eq!((t.links, links), (4, vec![Some(6), None]));
    for bad in ["links = 0\n", "links = 65\n"] {
        let e = err(&two(bad));
        assert!(e.starts_with("tunnels[0].profiles[1].links:"), "{e:?}");
    }
}

#[test]
fn an_upgrade_profile_and_its_cdn_tls_name_their_fields() {
    let p = format!("pin = \"{}\"\n", pin("aa"));
    let with = |transport: &str| {
        reverse_origin(&p).replace(
            "addresses = [\"r:7443\"]\n",
            &format!("addresses = [\"r:7443\"]\ntransport = {transport}\n"),
        )
    };
    let good = with(
        "{ type = \"httpupgrade\", path = \"/t\", host = \"cdn.example\", outer_tls = { server_name = \"cdn.example\" } }",
    );
    let c = NodeConfig::from_toml(&good).unwrap();
    assert_eq!(
        c.tunnels[0].profiles[0].transport,
        switchyard_node::config::TunnelTransport::HttpUpgrade {
            path: "/t".into(),
            host: "cdn.example".into(),
            outer_tls: Some(switchyard_node::config::OuterTls {
                server_name: "cdn.example".into(),
                ca_pem: None,
            }),
        }
    );
    let xhttp = with(
        "{ type = \"xhttp\", path = \"/t\", mode = \"packet-up\", outer_tls = { server_name = \"cdn.example\" } }",
    );
    assert!(matches!(
        &NodeConfig::from_toml(&xhttp).unwrap().tunnels[0].profiles[0].transport,
        switchyard_node::config::TunnelTransport::Xhttp { path, mode, outer_tls: Some(_), .. }
            if path == "/t" && *mode == switchyard_proto::xhttp::Mode::PacketUp
    ));
    let grpc = with("{ type = \"grpc\", service_name = \"eu.Tunnel\" }");
    assert!(matches!(
        &NodeConfig::from_toml(&grpc).unwrap().tunnels[0].profiles[0].transport,
        switchyard_node::config::TunnelTransport::Grpc { service_name, outer_tls: None, .. }
            if service_name == "eu.Tunnel"
    ));
    let cases = [
        (
            "{ type = \"httpupgrade\", path = \"t\" }",
            "tunnels[0].profiles[0].transport.path:",
        ),
        (
            "{ type = \"ws\", path = \"/a b\" }",
            "tunnels[0].profiles[0].transport.path:",
        ),
        (
            "{ type = \"ws\", path = \"/t\", host = \"a b\" }",
            "tunnels[0].profiles[0].transport.host:",
        ),
        (
            "{ type = \"ws\", path = \"/t\", outer_tls = { server_name = \"\" } }",
            "tunnels[0].profiles[0].transport.outer_tls.server_name:",
        ),
        (
            "{ type = \"httpupgrade\", path = \"/t\", outer_tls = { server_name = \"cdn.example\", ca_pem = \"not a certificate\" } }",
            "tunnels[0].profiles[0].transport.outer_tls.ca_pem:",
        ),
        (
            "{ type = \"xhttp\", path = \"/t?x=1\" }",
            "tunnels[0].profiles[0].transport.path:",
        ),
        (
            "{ type = \"xhttp\", path = \"t\" }",
            "tunnels[0].profiles[0].transport.path:",
        ),
        (
            "{ type = \"xhttp\", path = \"/t\", outer_tls = { server_name = \"a b\" } }",
            "tunnels[0].profiles[0].transport.outer_tls.server_name:",
        ),
        (
            "{ type = \"grpc\", service_name = \"a/b\" }",
            "tunnels[0].profiles[0].transport.service_name:",
        ),
        (
            "{ type = \"grpc\", service_name = \"\" }",
            "tunnels[0].profiles[0].transport.service_name:",
        ),
        (
            "{ type = \"grpc\", service_name = \"eu.Tunnel\", host = \"a b\" }",
            "tunnels[0].profiles[0].transport.host:",
        ),
    ];
    for (transport, field) in cases {
        let e = err(&with(transport));
        assert!(e.starts_with(field), "{field}: got {e:?} for {transport}");
    }
}
