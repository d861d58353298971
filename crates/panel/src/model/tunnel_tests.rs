use super::*;

fn input() -> TunnelInput {
    serde_json::from_value(serde_json::json!({
        "name": "eu-exit",
        "relay_server_id": 1,
        "origin_server_ids": [2, 3],
    }))
    .unwrap()
}

/// A change to the valid input.
type Change = Box<dyn Fn(&mut TunnelInput)>;

fn field_of(t: &TunnelInput) -> Option<String> {
    t.check().err().map(|e| e.field)
}

#[test]
fn defaults_are_the_spec_s() {
    let t = input();
    assert_eq!(t.mode, TunnelMode::Reverse);
    assert_eq!(t.balancing, TunnelBalancing::Distribute);
    assert_eq!((t.links, t.window_mib), (4, 16));
    assert_eq!(
        t.profiles,
        vec![TunnelProfile {
            port: 7443,
            security: None,
            transport: LinkTransport::Tcp,
            addresses: vec![],
            reality_dest: None,
            reality_server_name: None,
            links: None,
        }]
    );
    assert!(t.rules.is_empty());
    assert!(t.enabled);
    assert_eq!(t.check(), Ok(()));
    // A new tunnel's first profile is REALITY in front of the default target.
    let mut t = input();
    t.fill_defaults(None, DEFAULT_REALITY_DEST);
    assert_eq!(
        t.profiles,
        vec![TunnelProfile {
            port: 7443,
            security: Some(LinkSecurity::Reality),
            transport: LinkTransport::Tcp,
            addresses: vec![],
            reality_dest: Some("www.microsoft.com:443".into()),
            reality_server_name: Some("www.microsoft.com".into()),
            links: Some(4),
        }]
    );
    assert_eq!(t.check(), Ok(()));
    assert_eq!(origin_name(42), "server-42");
}

#[test]
fn every_error_names_its_field() {
    let cases: Vec<(Change, &str)> = vec![
        (Box::new(|t| t.name = String::new()), "name"),
        (Box::new(|t| t.name = "a b".into()), "name"),
        (Box::new(|t| t.name = "x".repeat(65)), "name"),
        (
            Box::new(|t| t.origin_server_ids.clear()),
            "origin_server_ids",
        ),
        (
            Box::new(|t| t.origin_server_ids = vec![2, 1]),
            "origin_server_ids[1]",
        ),
        (
            Box::new(|t| t.origin_server_ids = vec![2, 3, 2]),
            "origin_server_ids[2]",
        ),
        (Box::new(|t| t.links = 0), "links"),
        (Box::new(|t| t.links = 17), "links"),
        (Box::new(|t| t.window_mib = 0), "window_mib"),
        (Box::new(|t| t.window_mib = 65), "window_mib"),
        (Box::new(|t| t.profiles.clear()), "profiles"),
        (
            Box::new(|t| {
                t.profiles = (1..=9)
                    .map(|p| TunnelProfile {
                        port: p,
                        ..TunnelProfile::default()
                    })
                    .collect()
            }),
            "profiles",
        ),
        (Box::new(|t| t.profiles[0].port = 0), "profiles[0].port"),
        (
            Box::new(|t| t.profiles.push(TunnelProfile::default())),
            "profiles[1].port",
        ),
        (
            Box::new(|t| {
                t.profiles[0].transport = LinkTransport::Ws {
                    path: "ws".into(),
                    host: String::new(),
                    outer_tls: None,
                }
            }),
            "profiles[0].transport.path",
        ),
        (
            Box::new(|t| {
                t.profiles[0].transport = LinkTransport::Ws {
                    path: "/ws".into(),
                    host: "bad host".into(),
                    outer_tls: None,
                }
            }),
            "profiles[0].transport.host",
        ),
        (
            Box::new(|t| {
                t.profiles[0].transport = LinkTransport::HttpUpgrade {
                    path: "/up".into(),
                    host: String::new(),
                    outer_tls: Some(crate::model::tunnel::OuterTls {
                        server_name: "bad name".into(),
                        ca_pem: None,
                    }),
                }
            }),
            "profiles[0].transport.outer_tls.server_name",
        ),
        (
            Box::new(|t| {
                t.profiles[0].transport = LinkTransport::Ws {
                    path: "/ws".into(),
                    host: String::new(),
                    outer_tls: Some(crate::model::tunnel::OuterTls {
                        server_name: "cdn.example.com".into(),
                        ca_pem: Some("not pem".into()),
                    }),
                }
            }),
            "profiles[0].transport.outer_tls.ca_pem",
        ),
        (
            Box::new(|t| t.profiles[0].transport = xhttp("xh", "", "auto", None)),
            "profiles[0].transport.path",
        ),
        (
            Box::new(|t| t.profiles[0].transport = xhttp("/x h", "", "auto", None)),
            "profiles[0].transport.path",
        ),
        (
            Box::new(|t| t.profiles[0].transport = xhttp("/xh?a=1", "", "auto", None)),
            "profiles[0].transport.path",
        ),
        (
            Box::new(|t| t.profiles[0].transport = xhttp("/xh#a", "", "auto", None)),
            "profiles[0].transport.path",
        ),
        (
            Box::new(|t| {
                t.profiles[0].transport = xhttp(&format!("/{}", "a".repeat(256)), "", "auto", None)
            }),
            "profiles[0].transport.path",
        ),
        (
            Box::new(|t| t.profiles[0].transport = xhttp("/xh", "bad host", "auto", None)),
            "profiles[0].transport.host",
        ),
        (
            Box::new(|t| t.profiles[0].transport = xhttp("/xh", "", "", None)),
            "profiles[0].transport.mode",
        ),
        (
            Box::new(|t| t.profiles[0].transport = xhttp("/xh", "", "packet_up", None)),
            "profiles[0].transport.mode",
        ),
        (
            Box::new(|t| {
                t.profiles[0].transport = xhttp("/xh", "", "auto", Some(outer("bad name", None)))
            }),
            "profiles[0].transport.outer_tls.server_name",
        ),
        (
            Box::new(|t| {
                t.profiles[0].transport = xhttp(
                    "/xh",
                    "",
                    "auto",
                    Some(outer("cdn.example.com", Some("not pem"))),
                )
            }),
            "profiles[0].transport.outer_tls.ca_pem",
        ),
        (
            Box::new(|t| t.profiles[0].transport = grpc("", "", None)),
            "profiles[0].transport.service_name",
        ),
        (
            Box::new(|t| t.profiles[0].transport = grpc("eu/Tunnel", "", None)),
            "profiles[0].transport.service_name",
        ),
        (
            Box::new(|t| t.profiles[0].transport = grpc(&"a".repeat(129), "", None)),
            "profiles[0].transport.service_name",
        ),
        (
            Box::new(|t| t.profiles[0].transport = grpc("eu.Tunnel", "bad host", None)),
            "profiles[0].transport.host",
        ),
        (
            Box::new(|t| {
                t.profiles[0].transport = grpc("eu.Tunnel", "", Some(outer("-bad.example", None)))
            }),
            "profiles[0].transport.outer_tls.server_name",
        ),
        (
            Box::new(|t| {
                t.profiles[0].transport = grpc(
                    "eu.Tunnel",
                    "",
                    Some(outer("cdn.example.com", Some("not pem"))),
                )
            }),
            "profiles[0].transport.outer_tls.ca_pem",
        ),
        (
            Box::new(|t| {
                t.profiles[0] = reality("www.example.org:443");
                t.profiles[0].transport = xhttp("/xh", "", "auto", None);
            }),
            "profiles[0].transport",
        ),
        (
            Box::new(|t| {
                t.profiles[0] = reality("www.example.org:443");
                t.profiles[0].transport = grpc("eu.Tunnel", "", None);
            }),
            "profiles[0].transport",
        ),
        (
            Box::new(|t| t.profiles[0].addresses = vec!["relay.example.com".into()]),
            "profiles[0].addresses[0]",
        ),
        (
            Box::new(|t| {
                t.profiles[0].addresses = vec!["relay.example.com:7443".into(), "::1:7443".into()]
            }),
            "profiles[0].addresses[1]",
        ),
        (
            Box::new(|t| t.rules.domains = vec!["10.0.0.1".into()]),
            "rules.domains[0]",
        ),
        (
            Box::new(|t| t.rules.suffixes = vec!["ok.example".into(), "-bad".into()]),
            "rules.suffixes[1]",
        ),
        (
            Box::new(|t| t.rules.cidrs = vec!["10.0.0.0/33".into()]),
            "rules.cidrs[0]",
        ),
        (
            Box::new(|t| t.rules.cidrs = vec!["10.0.0.0".into()]),
            "rules.cidrs[0]",
        ),
        (Box::new(|t| t.rules.ports = vec![443, 0]), "rules.ports[1]"),
        (
            Box::new(|t| {
                t.profiles[0] = reality("www.example.org:443");
                t.profiles[0].transport = LinkTransport::Ws {
                    path: "/t".into(),
                    host: String::new(),
                    outer_tls: None,
                };
            }),
            "profiles[0].transport",
        ),
        (
            Box::new(|t| {
                t.profiles[0] = reality("www.example.org:443");
                t.profiles[0].reality_dest = None;
            }),
            "profiles[0].reality_dest",
        ),
        (
            Box::new(|t| t.profiles[0] = reality("www.example.org")),
            "profiles[0].reality_dest",
        ),
        (
            Box::new(|t| t.profiles[0] = reality("bad host:443")),
            "profiles[0].reality_dest",
        ),
        (
            Box::new(|t| {
                t.profiles[0] = reality("www.example.org:443");
                t.profiles[0].reality_server_name = None;
            }),
            "profiles[0].reality_server_name",
        ),
        (
            Box::new(|t| {
                t.profiles[0] = reality("10.0.0.1:443");
                t.profiles[0].reality_server_name = Some("10.0.0.1".into());
            }),
            "profiles[0].reality_server_name",
        ),
        (
            Box::new(|t| {
                t.profiles[0] = reality("www.example.org:443");
                t.profiles[0].reality_server_name = Some("-x.example".into());
            }),
            "profiles[0].reality_server_name",
        ),
        (
            Box::new(|t| t.profiles[0].reality_dest = Some("www.example.org:443".into())),
            "profiles[0].reality_dest",
        ),
        (
            Box::new(|t| {
                t.profiles[0].security = Some(LinkSecurity::Tls);
                t.profiles[0].reality_server_name = Some("www.example.org".into());
            }),
            "profiles[0].reality_server_name",
        ),
        (
            Box::new(|t| t.rules.ports = vec![1; MAX_RULES + 1]),
            "rules.ports",
        ),
    ];
    for (change, field) in cases {
        let mut t = input();
        change(&mut t);
        assert_eq!(field_of(&t).as_deref(), Some(field), "{t:?}");
    }
}

/// A REALITY profile on 7443 in front of `dest`, its server name the host.
fn reality(dest: &str) -> TunnelProfile {
    TunnelProfile {
        security: Some(LinkSecurity::Reality),
        reality_dest: Some(dest.into()),
        reality_server_name: Some(dest.rsplit_once(':').map_or(dest, |(h, _)| h).into()),
        links: Some(DEFAULT_LINKS),
        ..TunnelProfile::default()
    }
}

#[test]
fn defaults_fill_reality_on_the_first_profile_of_a_new_tunnel_and_keep_a_change_s() {
    // New: the first profile REALITY (the config's target), the others TLS; one
    // that says TLS stays TLS; a server name defaults to the target's host.
    let mut t: TunnelInput = serde_json::from_value(serde_json::json!({
        "name": "eu", "relay_server_id": 1, "origin_server_ids": [2],
        "profiles": [{"port": 443}, {"port": 8443}, {"port": 9443, "security": "reality",
            "reality_dest": "[2001:db8::1]:443", "reality_server_name": "www.example.net"}],
    }))
    .unwrap();
    t.fill_defaults(None, "www.example.org:8443");
    let seen: Vec<_> = t
        .profiles
        .iter()
        .map(|p| {
            (
                p.security,
                p.reality_dest.as_deref(),
                p.reality_server_name.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (
                Some(LinkSecurity::Reality),
                Some("www.example.org:8443"),
                Some("www.example.org")
            ),
            (Some(LinkSecurity::Tls), None, None),
            (
                Some(LinkSecurity::Reality),
                Some("[2001:db8::1]:443"),
                Some("www.example.net")
            ),
        ]
    );
    assert_eq!(t.check(), Ok(()));
    let mut tls = input();
    tls.profiles[0].security = Some(LinkSecurity::Tls);
    tls.fill_defaults(None, DEFAULT_REALITY_DEST);
    assert_eq!(
        tls.profiles[0],
        TunnelProfile {
            security: Some(LinkSecurity::Tls),
            links: Some(DEFAULT_LINKS),
            ..TunnelProfile::default()
        }
    );

    // A change that says nothing keeps each port's security and REALITY target; a
    // new port is TLS; a new target takes its own host as server name.
    let mut current = reality("www.example.org:443");
    current.reality_server_name = Some("cdn.example.org".into());
    let current = vec![current];
    let mut change = input();
    change.profiles.push(TunnelProfile {
        port: 8443,
        ..TunnelProfile::default()
    });
    change.fill_defaults(Some(&current), DEFAULT_REALITY_DEST);
    assert_eq!(change.profiles[0], current[0]);
    assert_eq!(change.profiles[1].security, Some(LinkSecurity::Tls));
    let mut moved = input();
    moved.profiles[0].reality_dest = Some("www.example.com:443".into());
    moved.fill_defaults(Some(&current), DEFAULT_REALITY_DEST);
    assert_eq!(moved.profiles[0], reality("www.example.com:443"));
    // The JSON of a TLS profile is what it was before REALITY, with its links.
    assert_eq!(
        serde_json::to_value(&change.profiles[1]).unwrap(),
        serde_json::json!({"port": 8443, "security": "tls", "transport": {"type": "tcp"}, "addresses": [], "links": 4})
    );
}

fn outer(server_name: &str, ca_pem: Option<&str>) -> OuterTls {
    OuterTls {
        server_name: server_name.into(),
        ca_pem: ca_pem.map(str::to_owned),
    }
}

fn xhttp(path: &str, host: &str, mode: &str, outer_tls: Option<OuterTls>) -> LinkTransport {
    LinkTransport::Xhttp {
        path: path.into(),
        host: host.into(),
        mode: mode.into(),
        outer_tls,
    }
}

fn grpc(service_name: &str, host: &str, outer_tls: Option<OuterTls>) -> LinkTransport {
    LinkTransport::Grpc {
        service_name: service_name.into(),
        host: host.into(),
        outer_tls,
    }
}

#[test]
fn xhttp_and_grpc_read_and_write_the_apis_json() {
    let read = |v: serde_json::Value| serde_json::from_value::<LinkTransport>(v).unwrap();
    // XHTTP's mode defaults to auto, as the node's.
    assert_eq!(
        read(serde_json::json!({"type": "xhttp", "path": "/xh"})),
        xhttp("/xh", "", "auto", None)
    );
    assert_eq!(
        read(serde_json::json!({"type": "grpc", "service_name": "eu.Tunnel"})),
        grpc("eu.Tunnel", "", None)
    );
    let x = xhttp(
        "/xh",
        "cdn.example.com",
        "packet-up",
        Some(outer("cdn.example.com", None)),
    );
    assert_eq!(
        serde_json::to_value(&x).unwrap(),
        serde_json::json!({
            "type": "xhttp", "path": "/xh", "host": "cdn.example.com", "mode": "packet-up",
            "outer_tls": {"server_name": "cdn.example.com"},
        })
    );
    assert_eq!(
        serde_json::to_value(grpc("eu.Tunnel", "", None)).unwrap(),
        serde_json::json!({"type": "grpc", "service_name": "eu.Tunnel", "host": ""})
    );
    // gRPC has no path, XHTTP no service name.
    for bad in [
        serde_json::json!({"type": "grpc", "service_name": "a", "path": "/a"}),
        serde_json::json!({"type": "xhttp", "path": "/a", "service_name": "a"}),
    ] {
        assert!(serde_json::from_value::<LinkTransport>(bad).is_err());
    }
}

#[test]
fn good_shapes_pass() {
    let mut t = input();
    t.mode = TunnelMode::Direct;
    t.balancing = TunnelBalancing::Priority;
    t.links = 16;
    t.profiles = vec![
        TunnelProfile {
            addresses: vec!["relay.example.com:7443".into(), "[2001:db8::1]:7443".into()],
            ..TunnelProfile::default()
        },
        TunnelProfile {
            port: 8443,
            transport: LinkTransport::Ws {
                path: "/t".into(),
                host: "cdn.example.com".into(),
                outer_tls: None,
            },
            ..TunnelProfile::default()
        },
        TunnelProfile {
            port: 8080,
            transport: xhttp(
                "/eu-xh",
                "cdn.example.com",
                "stream-one",
                Some(outer("cdn.example.com", None)),
            ),
            ..TunnelProfile::default()
        },
        TunnelProfile {
            port: 8081,
            transport: grpc("eu.Tunnel-2_b", "", Some(outer("cdn.example.com", None))),
            ..TunnelProfile::default()
        },
    ];
    t.rules = TunnelRules {
        domains: vec!["example.com".into()],
        suffixes: vec!["example.org".into()],
        cidrs: vec!["10.0.0.0/8".into(), "2001:db8::/32".into()],
        ports: vec![443],
    };
    assert_eq!(t.check(), Ok(()));
}

#[test]
fn unknown_fields_are_refused() {
    let r: Result<TunnelInput, _> = serde_json::from_value(serde_json::json!({
        "name": "t", "relay_server_id": 1, "origin_server_ids": [2], "secret": "x",
    }));
    assert!(r.unwrap_err().to_string().contains("secret"));
}

#[test]
fn links_are_per_profile_and_origin_addresses_are_checked() {
    // A profile without links takes the tunnel's (what clients that set one value
    // send); one with its own keeps it.
    let mut t = input();
    t.links = 3;
    t.profiles.push(TunnelProfile {
        port: 8443,
        links: Some(6),
        ..TunnelProfile::default()
    });
    t.fill_defaults(None, DEFAULT_REALITY_DEST);
    let links: Vec<Option<usize>> = t.profiles.iter().map(|p| p.links).collect();
    assert_eq!(links, [Some(3), Some(6)]);
    assert_eq!(t.check(), Ok(()));

    let addresses = |server_id: i64, list: &[&str]| OriginAddresses {
        server_id,
        addresses: list.iter().map(|a| (*a).to_owned()).collect(),
    };
    let cases: Vec<(Change, &str)> = vec![
        (
            Box::new(|t| t.profiles[1].links = Some(0)),
            "profiles[1].links",
        ),
        (
            Box::new(|t| t.profiles[1].links = Some(17)),
            "profiles[1].links",
        ),
        (
            Box::new(move |t| t.origin_addresses = vec![addresses(9, &["10.0.0.9"])]),
            "origin_addresses[0].server_id",
        ),
        (
            Box::new(move |t| {
                t.origin_addresses = vec![addresses(2, &["a.example"]), addresses(2, &["b"])]
            }),
            "origin_addresses[1].server_id",
        ),
        (
            Box::new(move |t| t.origin_addresses = vec![addresses(3, &[])]),
            "origin_addresses[0].addresses",
        ),
        (
            Box::new(move |t| {
                let many: Vec<String> = (1..=9).map(|i| format!("10.0.0.{i}")).collect();
                let many: Vec<&str> = many.iter().map(String::as_str).collect();
                t.origin_addresses = vec![addresses(3, &many)];
            }),
            "origin_addresses[0].addresses",
        ),
        (
            Box::new(move |t| {
                t.origin_addresses = vec![addresses(3, &["10.0.0.3", "fi.example:7443"])]
            }),
            "origin_addresses[0].addresses[1]",
        ),
        (
            Box::new(move |t| t.origin_addresses = vec![addresses(3, &["::1", "::1"])]),
            "origin_addresses[0].addresses[1]",
        ),
    ];
    for (change, field) in cases {
        let mut bad = t.clone();
        change(&mut bad);
        assert_eq!(field_of(&bad).as_deref(), Some(field));
    }
    let mut good = t.clone();
    good.origin_addresses = vec![addresses(3, &["2001:db8::3", "127.0.0.2", "fi.example"])];
    assert_eq!(good.check(), Ok(()));
    assert_eq!(good.addresses_of(3).len(), 3);
    assert!(good.addresses_of(2).is_empty());
}
