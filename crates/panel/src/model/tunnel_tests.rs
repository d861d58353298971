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
            security: LinkSecurity::Tls,
            transport: LinkTransport::Tcp,
            addresses: vec![],
        }]
    );
    assert!(t.rules.is_empty());
    assert!(t.enabled);
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
                }
            }),
            "profiles[0].transport.path",
        ),
        (
            Box::new(|t| {
                t.profiles[0].transport = LinkTransport::Ws {
                    path: "/ws".into(),
                    host: "bad host".into(),
                }
            }),
            "profiles[0].transport.host",
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
            },
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
