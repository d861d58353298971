use switchyard_config::{TunnelMode as NodeMode, TunnelTransport};
use switchyard_tunnel::credentials::{Credential, origin_credential};

use super::*;
use crate::model::snapshot::ServerSnapshot;
use crate::model::tunnel::LinkSecurity;
use crate::model::tunnel::{Tunnel, TunnelCertificate};
use crate::model::tunnel::{TunnelInput, TunnelOrigin, TunnelRules};
use crate::render::render;

const NOW: i64 = 1_796_121_000_000;
const SECRET: TunnelSecret = TunnelSecret([9; 32]);

fn server(id: i64, address: &str) -> Server {
    Server {
        id,
        name: format!("s{id}"),
        address: address.into(),
        allow_private_destinations: false,
        ..crate::render::tests::server()
    }
}

/// Tunnel `name` from server 1 (at 198.51.100.1) to servers 2 and 3.
fn tunnel(id: i64, name: &str, input: impl FnOnce(&mut TunnelInput)) -> SnapshotTunnel {
    let mut i: TunnelInput = serde_json::from_value(serde_json::json!({
        "name": name, "relay_server_id": 1, "origin_server_ids": [2, 3],
    }))
    .unwrap();
    input(&mut i);
    let issued = switchyard_tunnel::link::cert::issue(name).unwrap();
    let keys = switchyard_config::reality::generate().unwrap();
    SnapshotTunnel {
        tunnel: Tunnel {
            id,
            name: i.name.clone(),
            tag: tunnel_tag(&i.name),
            certificate_name: String::new(),
            certificate_pin: issued.pin.to_string(),
            previous_pin: None,
            credential_epoch: 0,
            previous_credential_epoch: None,
            reality_public_key: Some(keys.public_key.clone()),
            relay_server_id: i.relay_server_id,
            origins: i
                .origin_server_ids
                .iter()
                .map(|s| TunnelOrigin {
                    server_id: *s,
                    name: origin_name(*s),
                    addresses: i.addresses_of(*s).to_vec(),
                })
                .collect(),
            mode: i.mode,
            balancing: i.balancing,
            links: i.links,
            window_mib: i.window_mib,
            profiles: i.profiles,
            rules: i.rules,
            enabled: i.enabled,
            created_ms: 0,
        },
        certificate: TunnelCertificate {
            cert_pem: issued.cert_pem,
            key_pem: issued.key_pem,
            pin: issued.pin.to_string(),
        },
        reality: Some(TunnelRealityKeys {
            private_key: keys.private_key,
            public_key: keys.public_key,
            short_id: keys.short_id,
        }),
        relay: server(1, "198.51.100.1"),
        origins: vec![server(2, "198.51.100.2"), server(3, "2001:db8::3")],
    }
}

fn config_of(id: i64, tunnels: Vec<SnapshotTunnel>) -> switchyard_config::NodeConfig {
    let address = match id {
        1 => "198.51.100.1",
        2 => "198.51.100.2",
        _ => "2001:db8::3",
    };
    render(
        &ServerSnapshot {
            server: server(id, address),
            inbounds: Vec::new(),
            users: Vec::new(),
            tunnels,
            tunnel_secret: Some(SECRET),
        },
        NOW,
    )
    .unwrap()
}

fn credential(tunnel: &str, origin: i64) -> String {
    origin_credential(&SECRET, tunnel, &origin_name(origin)).to_hex()
}

#[test]
fn a_reverse_tunnel_gives_each_side_only_its_half() {
    let t = tunnel(1, "eu", |i| {
        i.links = 3;
        i.window_mib = 2;
        i.balancing = TunnelBalancing::Priority;
        i.profiles.push(TunnelProfile {
            port: 8443,
            security: Some(LinkSecurity::Tls),
            transport: LinkTransport::Ws {
                path: "/t".into(),
                host: "cdn.example.com".into(),
                outer_tls: None,
            },
            addresses: vec!["cdn.example.com:443".into()],
            reality_dest: None,
            reality_server_name: None,
            links: None,
        });
    });
    let relay = config_of(1, vec![t.clone()]);
    let [half] = relay.tunnels.as_slice() else {
        panic!("{:?}", relay.tunnels)
    };
    assert_eq!(
        (half.name.as_str(), half.mode, half.links, half.window_mib),
        ("eu", NodeMode::Reverse, 3, 2)
    );
    assert_eq!(half.balancing, switchyard_tunnel::pool::Balancing::Priority);
    let r = half.relay.as_ref().unwrap();
    assert!(half.origin.is_none());
    assert_eq!(r.cert_pem.as_deref(), Some(t.certificate.cert_pem.as_str()));
    assert_eq!(
        r.key_pem.as_ref().map(|k| k.expose()),
        Some(t.certificate.key_pem.as_str())
    );
    assert_eq!(r.listen.to_string(), "0.0.0.0");
    assert!(
        r.reality_private_key.is_none(),
        "no REALITY profile, no REALITY key"
    );
    let origins: Vec<(&str, &str)> = r
        .origins
        .iter()
        .map(|o| (o.name.as_str(), o.credential.expose()))
        .collect();
    assert_eq!(
        origins,
        [
            ("server-2", credential("eu", 2).as_str()),
            ("server-3", credential("eu", 3).as_str())
        ]
    );
    assert!(r.origins.iter().all(|o| o.all_hosts().is_empty()));
    // The relay listens: no addresses to dial.
    assert!(half.profiles.iter().all(|p| p.addresses.is_empty()));
    // With one tunnel the node makes it the final outbound; no rules are rendered.
    assert_eq!(relay.final_tag(), tunnel_tag("eu"));
    assert!(relay.route.rules.is_empty());

    let origin = config_of(3, vec![t.clone()]);
    let half = &origin.tunnels[0];
    assert!(half.relay.is_none());
    let o = half.origin.as_ref().unwrap();
    assert_eq!(
        (o.name.as_str(), o.credential.expose()),
        ("server-3", credential("eu", 3).as_str())
    );
    assert_eq!(o.all_pins(), std::slice::from_ref(&t.certificate.pin));
    assert!(
        o.cert_pem.is_none() && o.key_pem.is_none(),
        "the dialing side gets no key"
    );
    assert_eq!(half.profiles[0].addresses, ["198.51.100.1:7443"]);
    assert_eq!(half.profiles[1].addresses, ["cdn.example.com:443"]);
    assert_eq!(
        half.profiles[1].transport,
        TunnelTransport::Ws {
            path: "/t".into(),
            host: "cdn.example.com".into(),
            outer_tls: None,
        }
    );
    // Each origin has its own credential; none is another's.
    assert_ne!(credential("eu", 2), credential("eu", 3));
    assert!(Credential::from_hex(&credential("eu", 2)).is_some());
    // A server in no tunnel gets none.
    assert!(config_of(4, vec![]).tunnels.is_empty());
}

#[test]
fn only_the_dialing_side_gets_the_cdns_tls() {
    let outer = crate::model::tunnel::OuterTls {
        server_name: "cdn.example.com".into(),
        ca_pem: None,
    };
    let t = tunnel(1, "eu", |i| {
        i.profiles.push(TunnelProfile {
            port: 8080,
            security: Some(LinkSecurity::Tls),
            transport: LinkTransport::HttpUpgrade {
                path: "/eu".into(),
                host: "cdn.example.com".into(),
                outer_tls: Some(outer.clone()),
            },
            addresses: vec!["cdn.example.com:443".into()],
            ..TunnelProfile::default()
        });
    });
    let relay = config_of(1, vec![t.clone()]);
    assert_eq!(
        relay.tunnels[0].profiles[1].transport,
        TunnelTransport::HttpUpgrade {
            path: "/eu".into(),
            host: "cdn.example.com".into(),
            outer_tls: None,
        },
        "the relay serves plain HTTP behind the CDN"
    );
    let origin = config_of(2, vec![t]);
    assert_eq!(
        origin.tunnels[0].profiles[1].transport,
        TunnelTransport::HttpUpgrade {
            path: "/eu".into(),
            host: "cdn.example.com".into(),
            outer_tls: Some(switchyard_config::OuterTls {
                server_name: "cdn.example.com".into(),
                ca_pem: None,
            }),
        }
    );
}

/// In direct mode the relay dials each origin, so the relay gets the CDN's TLS (a CDN
/// in front of the origins) and the origins, which listen, serve plain HTTP.
#[test]
fn in_direct_mode_the_relay_dials_and_gets_the_cdns_tls() {
    let outer = crate::model::tunnel::OuterTls {
        server_name: "cdn.example.com".into(),
        ca_pem: None,
    };
    let t = tunnel(1, "eu", |i| {
        i.mode = crate::model::tunnel::TunnelMode::Direct;
        i.profiles.push(TunnelProfile {
            port: 8080,
            security: Some(LinkSecurity::Tls),
            transport: LinkTransport::Grpc {
                service_name: "eu.Tunnel".into(),
                host: "cdn.example.com".into(),
                outer_tls: Some(outer),
            },
            ..TunnelProfile::default()
        });
    });
    let plain = TunnelTransport::Grpc {
        service_name: "eu.Tunnel".into(),
        host: "cdn.example.com".into(),
        outer_tls: None,
    };
    let relay = config_of(1, vec![t.clone()]);
    assert_eq!(
        relay.tunnels[0].profiles[1].transport,
        TunnelTransport::Grpc {
            service_name: "eu.Tunnel".into(),
            host: "cdn.example.com".into(),
            outer_tls: Some(switchyard_config::OuterTls {
                server_name: "cdn.example.com".into(),
                ca_pem: None,
            }),
        }
    );
    let origin = config_of(2, vec![t]);
    assert_eq!(
        origin.tunnels[0].profiles[1].transport, plain,
        "the origin serves plain HTTP behind the CDN"
    );
}

/// XHTTP and gRPC profiles behind a CDN: the listening relay gets the transport
/// without the CDN's TLS, the dialing origin with it (as for WebSocket).
#[test]
fn xhttp_and_grpc_reach_both_halves_and_only_the_dialing_side_gets_the_cdns_tls() {
    let outer = crate::model::tunnel::OuterTls {
        server_name: "cdn.example.com".into(),
        ca_pem: None,
    };
    let t = tunnel(1, "eu", |i| {
        let transports = [
            LinkTransport::Xhttp {
                path: "/eu-xh".into(),
                host: "cdn.example.com".into(),
                mode: "stream-up".into(),
                outer_tls: Some(outer.clone()),
            },
            LinkTransport::Grpc {
                service_name: "eu.Tunnel".into(),
                host: "cdn.example.com".into(),
                outer_tls: Some(outer.clone()),
            },
        ];
        for (port, transport) in [8080, 8081].into_iter().zip(transports) {
            i.profiles.push(TunnelProfile {
                port,
                security: Some(LinkSecurity::Tls),
                transport,
                addresses: vec!["cdn.example.com:443".into()],
                ..TunnelProfile::default()
            });
        }
    });
    let node_outer = switchyard_config::OuterTls {
        server_name: "cdn.example.com".into(),
        ca_pem: None,
    };
    let want = |outer_tls: Option<switchyard_config::OuterTls>| {
        vec![
            TunnelTransport::Xhttp {
                path: "/eu-xh".into(),
                host: "cdn.example.com".into(),
                mode: switchyard_proto::xhttp::Mode::StreamUp,
                outer_tls: outer_tls.clone(),
            },
            TunnelTransport::Grpc {
                service_name: "eu.Tunnel".into(),
                host: "cdn.example.com".into(),
                outer_tls,
            },
        ]
    };
    let transports = |id: i64| -> Vec<TunnelTransport> {
        config_of(id, vec![t.clone()]).tunnels[0].profiles[1..]
            .iter()
            .map(|p| p.transport.clone())
            .collect()
    };
    assert_eq!(
        transports(1),
        want(None),
        "the relay serves plain HTTP behind the CDN"
    );
    assert_eq!(
        transports(2),
        want(Some(node_outer)),
        "the origin speaks TLS to the CDN first"
    );
    let origin = config_of(2, vec![t.clone()]);
    assert_eq!(
        origin.tunnels[0].profiles[1].addresses,
        ["cdn.example.com:443"]
    );
}

#[test]
fn direct_mode_swaps_who_listens() {
    let mut t = tunnel(1, "dx", |i| {
        i.mode = crate::model::tunnel::TunnelMode::Direct
    });
    t.tunnel.previous_pin = Some(format!("cert:{}", "ab".repeat(32)));
    let relay = config_of(1, vec![t.clone()]);
    let r = relay.tunnels[0].relay.as_ref().unwrap();
    assert!(r.cert_pem.is_none() && r.key_pem.is_none());
    assert_eq!(
        r.all_pins(),
        [
            t.certificate.pin.clone(),
            format!("cert:{}", "ab".repeat(32))
        ]
    );
    assert_eq!(r.origins[0].all_hosts(), ["198.51.100.2"]);
    assert_eq!(r.origins[1].all_hosts(), ["2001:db8::3"]);
    let origin = config_of(2, vec![t.clone()]);
    let o = origin.tunnels[0].origin.as_ref().unwrap();
    assert_eq!(o.cert_pem.as_deref(), Some(t.certificate.cert_pem.as_str()));
    assert!(o.all_pins().is_empty());
    assert_eq!(origin.tunnels[0].mode, NodeMode::Direct);
}

#[test]
fn a_rotation_gives_the_listening_side_both_credentials_and_the_dialing_side_the_new() {
    let at = |name: &str, origin: i64, epoch: u64| {
        switchyard_tunnel::credentials::origin_credential_at(
            &SECRET,
            name,
            &origin_name(origin),
            epoch,
        )
        .to_hex()
    };
    // Reverse: the relay listens.
    let mut t = tunnel(1, "eu", |_| {});
    t.tunnel.credential_epoch = 2;
    t.tunnel.previous_credential_epoch = Some(1);
    let relay = config_of(1, vec![t.clone()]);
    let r = relay.tunnels[0].relay.as_ref().unwrap();
    let seen: Vec<(String, Option<String>)> = r
        .origins
        .iter()
        .map(|o| {
            (
                o.credential.expose().to_owned(),
                o.previous_credential
                    .as_ref()
                    .map(|p| p.expose().to_owned()),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (at("eu", 2, 2), Some(at("eu", 2, 1))),
            (at("eu", 3, 2), Some(at("eu", 3, 1)))
        ]
    );
    let o = config_of(2, vec![t.clone()]);
    let o = o.tunnels[0].origin.as_ref().unwrap();
    assert_eq!(
        (o.credential.expose(), o.previous_credential.is_none()),
        (at("eu", 2, 2).as_str(), true)
    );
    // The overlap over: the previous credentials are gone; epoch 0 is the first.
    t.tunnel.previous_credential_epoch = None;
    let relay = config_of(1, vec![t.clone()]);
    let r = relay.tunnels[0].relay.as_ref().unwrap();
    assert!(r.origins.iter().all(|o| o.previous_credential.is_none()));
    assert_eq!(at("eu", 2, 0), credential("eu", 2));

    // Direct: the origins listen.
    let mut d = tunnel(1, "dx", |i| {
        i.mode = crate::model::tunnel::TunnelMode::Direct
    });
    d.tunnel.credential_epoch = 1;
    d.tunnel.previous_credential_epoch = Some(0);
    let relay = config_of(1, vec![d.clone()]);
    let r = relay.tunnels[0].relay.as_ref().unwrap();
    assert_eq!(r.origins[0].credential.expose(), at("dx", 2, 1));
    assert!(r.origins.iter().all(|o| o.previous_credential.is_none()));
    let o = config_of(3, vec![d]);
    let o = o.tunnels[0].origin.as_ref().unwrap();
    assert_eq!(
        (
            o.credential.expose(),
            o.previous_credential.as_ref().map(|p| p.expose())
        ),
        (at("dx", 3, 1).as_str(), Some(credential("dx", 3).as_str()))
    );
}

#[test]
fn a_relay_of_two_tunnels_routes_by_their_rules_and_disabled_ones_are_left_out() {
    let a = tunnel(1, "a", |i| {
        i.rules = TunnelRules {
            suffixes: vec!["example.org".into()],
            cidrs: vec!["10.0.0.0/8".into()],
            ports: vec![8080],
            ..TunnelRules::default()
        }
    });
    let b = tunnel(2, "b", |i| i.profiles[0].port = 7444);
    let off = tunnel(3, "off", |i| {
        i.enabled = false;
        i.profiles[0].port = 7445;
    });
    let relay = config_of(1, vec![a, b, off.clone()]);
    let names: Vec<&str> = relay.tunnels.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    let rules = serde_json::to_value(&relay.route.rules).unwrap();
    assert_eq!(
        rules,
        serde_json::json!([{
            "domain_suffix": ["example.org"], "ip_cidr": ["10.0.0.0/8"], "port": [8080],
            "outbound": tunnel_tag("a"),
        }])
    );
    assert_eq!(relay.final_tag(), "direct");
    assert!(config_of(2, vec![off]).tunnels.is_empty());
}

#[test]
fn no_secret_no_tunnel_and_the_version_follows_the_tunnels() {
    let t = tunnel(1, "eu", |_| {});
    let mut snapshot = ServerSnapshot {
        server: server(2, "198.51.100.2"),
        inbounds: Vec::new(),
        users: Vec::new(),
        tunnels: vec![t.clone()],
        tunnel_secret: None,
    };
    assert!(render(&snapshot, NOW).unwrap().tunnels.is_empty());
    snapshot.tunnel_secret = Some(SECRET);
    let one = render(&snapshot, NOW).unwrap();
    snapshot.tunnels[0].tunnel.links = 5;
    let two = render(&snapshot, NOW).unwrap();
    assert_ne!(one.version, two.version);
}

#[test]
fn a_copy_for_another_relay_shares_no_credential_tag_or_certificate() {
    // Duplicate makes a tunnel with another name (and certificate): for the same
    // origin, nothing the first relay admits is in the copy's halves.
    let first = tunnel(1, "eu", |_| {});
    let copy = tunnel(2, "eu-r2", |_| {});
    let a = config_of(2, vec![first.clone()]);
    let b = config_of(2, vec![copy.clone()]);
    let (ha, hb) = (&a.tunnels[0], &b.tunnels[0]);
    let (oa, ob) = (ha.origin.as_ref().unwrap(), hb.origin.as_ref().unwrap());
    assert_eq!(oa.name, ob.name, "the same origin server");
    assert_ne!(oa.credential.expose(), ob.credential.expose());
    assert_ne!(tunnel_tag(&ha.name), tunnel_tag(&hb.name));
    assert_ne!(oa.all_pins(), ob.all_pins());
    let relay = config_of(1, vec![first]);
    let admitted: Vec<&str> = relay.tunnels[0]
        .relay
        .as_ref()
        .unwrap()
        .origins
        .iter()
        .map(|o| o.credential.expose())
        .collect();
    assert!(!admitted.contains(&ob.credential.expose()));
}

/// Profile 0 REALITY in front of www.example.org, profile 1 TLS.
fn with_reality(i: &mut TunnelInput) {
    i.profiles[0].security = Some(LinkSecurity::Reality);
    i.profiles[0].reality_dest = Some("www.example.org:443".into());
    i.profiles[0].reality_server_name = Some("cdn.example.org".into());
    i.profiles.push(TunnelProfile {
        port: 8443,
        security: Some(LinkSecurity::Tls),
        ..TunnelProfile::default()
    });
}

#[test]
fn a_reality_profile_reaches_both_halves_and_only_the_listening_one_gets_the_private_key() {
    let t = tunnel(1, "eu", with_reality);
    let keys = t.reality.clone().unwrap();
    let expected = TunnelTransport::Reality {
        server_name: "cdn.example.org".into(),
        dest: "www.example.org:443".into(),
        public_key: keys.public_key.clone(),
        short_id: keys.short_id.clone(),
    };
    assert_eq!(keys.short_id.len(), 16, "8 bytes in hex");

    // Reverse: the relay listens and holds the private key.
    let relay = config_of(1, vec![t.clone()]);
    let half = &relay.tunnels[0];
    assert_eq!(half.profiles[0].transport, expected);
    assert_eq!(half.profiles[1].transport, TunnelTransport::Tls);
    let r = half.relay.as_ref().unwrap();
    assert_eq!(
        r.reality_private_key.as_ref().map(|k| k.expose()),
        Some(keys.private_key.as_str())
    );
    // Its certificate stays for the TLS profile.
    assert_eq!(r.cert_pem.as_deref(), Some(t.certificate.cert_pem.as_str()));
    for id in [2, 3] {
        let origin = config_of(id, vec![t.clone()]);
        let half = &origin.tunnels[0];
        assert_eq!(half.profiles[0].transport, expected);
        assert_eq!(half.profiles[1].transport, TunnelTransport::Tls);
        assert_eq!(
            (
                half.profiles[0].addresses.as_slice(),
                half.profiles[1].addresses.as_slice()
            ),
            (
                ["198.51.100.1:7443".to_owned()].as_slice(),
                ["198.51.100.1:8443".to_owned()].as_slice()
            )
        );
        let o = half.origin.as_ref().unwrap();
        assert!(o.reality_private_key.is_none(), "the dialing side never");
        assert!(o.key_pem.is_none());
        assert_eq!(o.all_pins(), std::slice::from_ref(&t.certificate.pin));
    }

    // Direct: the origins listen and hold it; the relay dials without it.
    let d = tunnel(1, "dx", |i| {
        with_reality(i);
        i.mode = crate::model::tunnel::TunnelMode::Direct;
    });
    let dkeys = d.reality.clone().unwrap();
    let relay = config_of(1, vec![d.clone()]);
    let half = &relay.tunnels[0];
    assert_eq!(
        half.profiles[0].transport,
        TunnelTransport::Reality {
            server_name: "cdn.example.org".into(),
            dest: "www.example.org:443".into(),
            public_key: dkeys.public_key.clone(),
            short_id: dkeys.short_id.clone(),
        }
    );
    assert!(half.relay.as_ref().unwrap().reality_private_key.is_none());
    for id in [2, 3] {
        let origin = config_of(id, vec![d.clone()]);
        let o = origin.tunnels[0].origin.as_ref().unwrap();
        assert_eq!(
            o.reality_private_key.as_ref().map(|k| k.expose()),
            Some(dkeys.private_key.as_str())
        );
        assert_eq!(o.cert_pem.as_deref(), Some(d.certificate.cert_pem.as_str()));
    }
    // The private key is in no rendered config's reading (the node redacts it).
    let shown = format!("{:?}", config_of(1, vec![t]));
    assert!(!shown.contains(&keys.private_key), "{shown}");
}

#[test]
fn a_reality_tunnel_without_keys_is_left_out_and_a_tls_one_needs_none() {
    let mut t = tunnel(1, "eu", with_reality);
    t.reality = None;
    let mut tls = tunnel(2, "tls", |i| i.profiles[0].port = 7444);
    tls.reality = None;
    let relay = config_of(1, vec![t, tls]);
    let names: Vec<&str> = relay.tunnels.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["tls"]);
    assert_eq!(relay.tunnels[0].profiles[0].transport, TunnelTransport::Tls);
}

#[test]
fn profiles_carry_their_own_links_and_a_direct_origin_its_listed_addresses() {
    use crate::model::tunnel::{OriginAddresses, TunnelMode};
    let t = tunnel(1, "weights", |i| {
        i.mode = TunnelMode::Direct;
        i.links = 3;
        i.profiles[0].links = Some(6);
        i.profiles.push(TunnelProfile {
            port: 8443,
            security: Some(LinkSecurity::Tls),
            links: Some(2),
            ..TunnelProfile::default()
        });
        i.profiles.push(TunnelProfile {
            port: 9443,
            security: Some(LinkSecurity::Tls),
            ..TunnelProfile::default()
        });
        i.origin_addresses = vec![OriginAddresses {
            server_id: 3,
            addresses: vec!["198.51.100.30".into(), "origin-3.example.org".into()],
        }];
    });
    for id in [1, 2, 3] {
        let config = config_of(id, vec![t.clone()]);
        let links: Vec<Option<usize>> =
            config.tunnels[0].profiles.iter().map(|p| p.links).collect();
        // Each profile its own; one that names none, the tunnel's.
        assert_eq!(links, [Some(6), Some(2), Some(3)], "server {id}");
    }
    let relay = config_of(1, vec![t]);
    let r = relay.tunnels[0].relay.as_ref().unwrap();
    // An origin not listed: its server's address; a listed one: its addresses alone.
    assert_eq!(r.origins[0].all_hosts(), ["198.51.100.2"]);
    assert_eq!(
        r.origins[1].all_hosts(),
        ["198.51.100.30", "origin-3.example.org"]
    );
}

#[test]
fn an_inbounds_rules_come_first_naming_it_and_a_tunnel_it_does_not_relay_is_left_out() {
    use crate::model::{InboundRules, TunnelDestinations};
    let mut s = crate::render::tests::snapshot();
    s.server = server(1, "198.51.100.1");
    s.tunnels = vec![
        tunnel(1, "a", |i| {
            i.rules = TunnelRules {
                suffixes: vec!["example.org".into()],
                ..TunnelRules::default()
            }
        }),
        tunnel(2, "b", |i| i.profiles[0].port = 7444),
    ];
    s.tunnel_secret = Some(SECRET);
    let list = |items: &[&str]| items.iter().map(|d| (*d).to_owned()).collect::<Vec<_>>();
    s.inbounds[0].0.rules = InboundRules {
        block_bittorrent: true,
        block: list(&["Ads.example", "203.0.113.0/24"]),
        direct: list(&["bank.example"]),
        tunnel: vec![
            TunnelDestinations {
                tunnel_id: 2,
                destinations: list(&["10.9.0.0/16"]),
            },
            // Not a tunnel of this relay (deleted since): left out.
            TunnelDestinations {
                tunnel_id: 9,
                destinations: list(&["gone.example"]),
            },
        ],
    };
    let c = render(&s, NOW).unwrap();
    let rules = serde_json::to_value(&c.route.rules).unwrap();
    assert_eq!(
        rules,
        serde_json::json!([
            { "inbound": ["in-7"], "protocol": ["bittorrent"], "outbound": "block" },
            { "inbound": ["in-7"], "domain_suffix": ["ads.example"], "outbound": "block" },
            { "inbound": ["in-7"], "ip_cidr": ["203.0.113.0/24"], "outbound": "block" },
            { "inbound": ["in-7"], "domain_suffix": ["bank.example"], "outbound": "direct" },
            { "inbound": ["in-7"], "ip_cidr": ["10.9.0.0/16"], "outbound": tunnel_tag("b") },
            { "domain_suffix": ["example.org"], "outbound": tunnel_tag("a") },
        ])
    );
    // With no rules, none is rendered.
    s.inbounds[0].0.rules = InboundRules::default();
    let c = render(&s, NOW).unwrap();
    assert_eq!(c.route.rules.len(), 1);
}
