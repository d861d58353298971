//! A server's desired node config, rendered from a snapshot of the model. Pure: the
//! same snapshot and `now` give the same config, byte for byte, and the same version.
//!
//! - Every inbound of the server, tagged `in-{id}`. It listens on all addresses,
//!   except on a server whose address is a loopback IP (a demo on one machine), where
//!   it listens on that address only. A REALITY inbound gets its private key (the
//!   panel's secret, sent only to its node); a VLESS inbound its flow.
//! - Every user who may see the server's cluster and whose status lets them connect
//!   (active or on hold), named `u{id}` (the journal counts traffic under that name),
//!   with their VLESS UUID, Trojan password and Shadowsocks key. Users who are limited,
//!   expired or disabled are left out: the node closes their connections when the
//!   config without them is applied.
//! - `node.allow_private_destinations` from the server; the node keeps its own
//!   `state_dir` and control settings whatever the panel sends.
//! - The server's tunnel halves, and the route rules of a relay with several tunnels
//!   ([`tunnels`]).
//! - `version`: the first 53 bits of the SHA-256 of the config rendered with version
//!   0, so it is the same on every panel instance, changes when anything in it does,
//!   and stays exact as a JSON number.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use switchyard_config::{ConfigError, NodeConfig};

use crate::model::inbound_rules::split;
use crate::model::snapshot::ServerSnapshot;
use crate::model::{InboundHysteria2, InboundSecurity, InboundTransport, Protocol, TlsCertificate};
use crate::service::{hysteria2_password, ss_user_key};

use switchyard_tunnel::credentials::tunnel_tag;

pub mod tunnels;

/// The node's name for the panel user `id`.
pub fn node_user(id: i64) -> String {
    format!("u{id}")
}

/// The panel user id of the node user `name`.
pub fn panel_user(name: &str) -> Option<i64> {
    name.strip_prefix('u')?.parse().ok()
}

/// The node's tag for the inbound `id`.
pub fn inbound_tag(id: i64) -> String {
    format!("in-{id}")
}

fn body(snapshot: &ServerSnapshot, now_ms: i64) -> Value {
    let server = &snapshot.server;
    let listen = match server.address.parse::<std::net::IpAddr>() {
        Ok(ip) if ip.is_loopback() => ip.to_string(),
        _ => "0.0.0.0".to_owned(),
    };
    let inbounds: Vec<Value> = snapshot
        .inbounds
        .iter()
        .map(|(i, secrets)| {
            let mut v = json!({
                "tag": inbound_tag(i.id),
                "name": i.name,
                "protocol": match i.protocol {
                    Protocol::Vless => "vless",
                    Protocol::Trojan => "trojan",
                    Protocol::Shadowsocks => "shadowsocks",
                    Protocol::Hysteria2 => "hysteria2",
                },
                "listen": listen,
                "port": i.port,
            });
            v["transport"] = match &i.transport {
                InboundTransport::Tcp => json!({ "type": "tcp" }),
                InboundTransport::Ws { path, host } => match host {
                    Some(h) => json!({ "type": "ws", "path": path, "host": h }),
                    None => json!({ "type": "ws", "path": path }),
                },
                InboundTransport::HttpUpgrade { path, host } => match host {
                    Some(h) => json!({ "type": "httpupgrade", "path": path, "host": h }),
                    None => json!({ "type": "httpupgrade", "path": path }),
                },
                // The node serves plain gun and multi mode on the one service name;
                // multi mode is the clients' choice (their subscription entries).
                InboundTransport::Grpc { service_name, .. } => {
                    json!({ "type": "grpc", "service_name": service_name })
                }
                InboundTransport::Xhttp(x) => {
                    let mut v = json!({ "type": "xhttp", "path": x.path, "mode": x.mode().name() });
                    if let Some(h) = &x.host {
                        v["host"] = json!(h);
                    }
                    v
                }
            };
            v["security"] = match &i.security {
                InboundSecurity::None => json!({ "type": "none" }),
                InboundSecurity::Tls {
                    certificate: TlsCertificate::SelfSigned,
                } => json!({
                    "type": "tls",
                    "cert_pem": secrets.tls_cert_pem,
                    "key_pem": secrets.tls_key_pem,
                }),
                InboundSecurity::Tls {
                    certificate: TlsCertificate::Files { cert, key },
                } => json!({ "type": "tls", "cert": cert, "key": key }),
                // For the name clients ask for, as their entries say it.
                InboundSecurity::Tls {
                    certificate: acme @ TlsCertificate::Acme { .. },
                } => {
                    let name = i
                        .sni
                        .clone()
                        .or_else(|| i.host.clone())
                        .unwrap_or_else(|| server.address.clone());
                    json!({ "type": "tls", "acme": acme.acme_settings(&name) })
                }
                InboundSecurity::Reality {
                    dest,
                    server_names,
                    short_ids,
                    max_time_diff_ms,
                    fingerprint: _,
                } => json!({
                    "type": "reality",
                    "dest": dest,
                    "server_names": server_names,
                    "private_key": secrets.reality_private_key,
                    "short_ids": short_ids,
                    "max_time_diff_ms": max_time_diff_ms,
                }),
            };
            if let Some(flow) = i.flow {
                v["flow"] = json!(flow.as_str());
            }
            if i.protocol == Protocol::Shadowsocks {
                v["method"] = json!(i.method);
                v["password"] = json!(secrets.ss_server_key);
            }
            if i.protocol == Protocol::Hysteria2 {
                let settings = i.hysteria2.clone().unwrap_or_default();
                v["hysteria2"] =
                    hysteria2_settings(&settings, secrets.hy2_obfs_password.as_deref());
            }
            // Left out when empty, as the node writes its own config.
            if !i.trusted_proxies.is_empty() {
                v["trusted_proxies"] = json!(i.trusted_proxies);
            }
            v
        })
        .collect();
    let ss_methods: Vec<&str> = snapshot
        .inbounds
        .iter()
        .filter_map(|(i, _)| i.method.as_deref())
        .collect();
    let has_hysteria2 = snapshot
        .inbounds
        .iter()
        .any(|(i, _)| i.protocol == Protocol::Hysteria2);
    let users: Vec<Value> = snapshot
        .users
        .iter()
        .filter(|(u, _)| u.standing().status(now_ms).may_connect())
        .map(|(u, c)| {
            let mut v = json!({
                "name": node_user(u.id),
                "vless": c.vless_uuid,
                "trojan": c.trojan_password,
            });
            // Enforced by the node where the user connects; a tunnel's origin never
            // counts it (the source there is the relay).
            if let Some(limit) = u.address_limit {
                v["address_limit"] = json!(limit);
            }
            if has_hysteria2 {
                v["hysteria2"] = json!(hysteria2_password(c));
            }
            // One key for every Shadowsocks inbound of the server: the longest
            // method's length; shorter methods would need their own key, so a server
            // runs Shadowsocks inbounds of one key length (see `validate`).
            if let Some(m) = ss_methods.first()
                && let Some(k) = ss_user_key(c, m)
            {
                v["shadowsocks"] = json!(k);
            }
            v
        })
        .collect();
    let (tunnels, rules) = tunnels::halves(
        server,
        &listen,
        &snapshot.tunnels,
        snapshot.tunnel_secret.as_ref(),
    );
    let mut config = json!({
        "version": 0,
        "node": { "allow_private_destinations": server.allow_private_destinations },
        "inbounds": inbounds,
        "users": users,
    });
    if !tunnels.is_empty() {
        config["tunnels"] = json!(tunnels);
    }
    let mut rules_of_inbounds = inbound_rules(snapshot, &tunnels);
    rules_of_inbounds.extend(rules);
    if !rules_of_inbounds.is_empty() {
        config["route"] = json!({ "rules": rules_of_inbounds });
    }
    config
}

/// The node's route rules of the inbounds' own rules ([`crate::model::inbound_rules`]),
/// each naming its inbound, ahead of the tunnels' rules: BitTorrent and the block list
/// refused, the direct list out of the server, each tunnel's list into the tunnel. A
/// tunnel that is not among the `tunnels` rendered with this server as its relay (since
/// disabled, deleted or moved) has its list left out.
fn inbound_rules(snapshot: &ServerSnapshot, tunnels: &[Value]) -> Vec<Value> {
    let relayed: Vec<&str> = tunnels
        .iter()
        .filter(|t| t.get("relay").is_some())
        .filter_map(|t| t["name"].as_str())
        .collect();
    let tag_of = |id: i64| {
        snapshot
            .tunnels
            .iter()
            .find(|t| t.tunnel.id == id && relayed.contains(&t.tunnel.name.as_str()))
            .map(|t| tunnel_tag(&t.tunnel.name))
    };
    let mut out = Vec::new();
    for (i, _) in &snapshot.inbounds {
        let tag = inbound_tag(i.id);
        let r = &i.rules;
        if r.block_bittorrent {
            out.push(json!({ "inbound": [tag], "protocol": ["bittorrent"], "outbound": "block" }));
        }
        let lists = [
            (&r.block, Some("block".to_owned())),
            (&r.direct, Some("direct".to_owned())),
        ]
        .into_iter()
        .chain(
            r.tunnel
                .iter()
                .map(|t| (&t.destinations, tag_of(t.tunnel_id))),
        );
        for (list, outbound) in lists {
            let Some(outbound) = outbound else { continue };
            let d = split(list);
            if d.suffixes.is_empty() && d.cidrs.is_empty() {
                continue;
            }
            // Two rules, not one: a rule's fields must all match.
            if !d.suffixes.is_empty() {
                out.push(
                    json!({ "inbound": [tag], "domain_suffix": d.suffixes, "outbound": outbound }),
                );
            }
            if !d.cidrs.is_empty() {
                out.push(json!({ "inbound": [tag], "ip_cidr": d.cidrs, "outbound": outbound }));
            }
        }
    }
    out
}

/// A Hysteria 2 inbound's `hysteria2` table as the node reads it, its obfs password
/// in the clear (the node's config reads redact it, not this).
fn hysteria2_settings(settings: &InboundHysteria2, obfs_password: Option<&str>) -> Value {
    let node = settings.node_settings(obfs_password);
    let mut v = json!({ "udp": node.udp });
    if let Some(p) = &node.obfs_password {
        v["obfs_password"] = json!(p.expose());
    }
    if let Some(up) = node.up_mbps {
        v["up_mbps"] = json!(up);
    }
    if let Some(down) = node.down_mbps {
        v["down_mbps"] = json!(down);
    }
    if let Some(ports) = &node.ports {
        v["ports"] = json!(ports);
    }
    v
}

/// Why a rendered config is not one the node would take.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RenderError {
    /// The node's validation refused it; the message names the field.
    #[error("server {server}: the rendered config is not valid: {source}")]
    Invalid {
        /// The server.
        server: i64,
        /// The node's reason.
        source: ConfigError,
    },
}

/// The desired config of the snapshot's server at `now_ms`, validated as the node will.
pub fn render(snapshot: &ServerSnapshot, now_ms: i64) -> Result<NodeConfig, RenderError> {
    let mut value = body(snapshot, now_ms);
    let digest = Sha256::digest(value.to_string().as_bytes());
    let mut version = [0u8; 8];
    version.copy_from_slice(&digest[..8]);
    value["version"] = json!(u64::from_be_bytes(version) >> 11);
    let invalid = |source| RenderError::Invalid {
        server: snapshot.server.id,
        source,
    };
    NodeConfig::from_json(&value.to_string()).map_err(invalid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{
        Credentials, Inbound, InboundSecrets, ResetStrategy, Server, ServerState, User, UserStatus,
    };

    const NOW: i64 = 1_796_121_000_000;

    /// A server of the tests (the tunnel render's too).
    pub(super) fn server() -> Server {
        Server {
            id: 1,
            cluster_id: 1,
            name: "local".into(),
            address: "127.0.0.1".into(),
            allow_private_destinations: true,
            state: ServerState::Online,
            state_reason: String::new(),
            state_since_ms: 0,
            refreshed_ms: None,
            joined: true,
            hostname: None,
            node_version: None,
            binary_sha256: None,
            upgrade_available: false,
            config_version: None,
            users_online: 0,
            up_bytes_per_s: 0,
            down_bytes_per_s: 0,
            capacity_bytes_per_s: None,
            capacity: Default::default(),
            created_ms: 0,
        }
    }

    fn user(id: i64, enabled: bool, limit: Option<u64>, used: u64) -> (User, Credentials) {
        (
            User {
                id,
                username: format!("user{id}"),
                status: UserStatus::Active,
                enabled,
                note: String::new(),
                traffic_limit: limit,
                reset_strategy: ResetStrategy::None,
                expires_ms: None,
                on_hold_days: None,
                first_connected_ms: None,
                used_up: used,
                used_down: 0,
                period_started_ms: 0,
                lifetime_bytes: used,
                online_ms: None,
                device_limit: None,
                address_limit: None,
                subscription_path: String::new(),
                created_ms: 0,
                clusters: None,
                admin_id: None,
            },
            Credentials {
                vless_uuid: format!("00000000-0000-4000-8000-00000000000{id}"),
                trojan_password: format!("pw{id}"),
                ss_seed: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=".into(),
            },
        )
    }

    pub(super) fn snapshot() -> ServerSnapshot {
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        ServerSnapshot {
            server: server(),
            inbounds: vec![(
                Inbound {
                    id: 7,
                    server_id: 1,
                    name: "Local".into(),
                    protocol: Protocol::Vless,
                    port: 8443,
                    transport: InboundTransport::Tcp,
                    security: InboundSecurity::Tls {
                        certificate: TlsCertificate::SelfSigned,
                    },
                    host: None,
                    sni: Some("localhost".into()),
                    coefficient: 1.0,
                    method: None,
                    flow: None,
                    reality_public_key: None,
                    route_id: None,
                    created_ms: 0,
                    hysteria2: None,
                    trusted_proxies: Vec::new(),
                    rules: Default::default(),
                },
                InboundSecrets {
                    tls_cert_pem: Some(cert.cert.pem()),
                    tls_key_pem: Some(cert.signing_key.serialize_pem()),
                    ..InboundSecrets::default()
                },
            )],
            users: vec![
                user(1, true, None, 0),
                user(2, false, None, 0),
                user(3, true, Some(100), 100),
                user(4, true, Some(100), 99),
            ],
            tunnels: Vec::new(),
            tunnel_secret: None,
        }
    }

    #[test]
    fn only_users_who_may_connect_reach_the_node() {
        let c = render(&snapshot(), NOW).unwrap();
        let names: Vec<_> = c.users.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, ["u1", "u4"]);
        assert_eq!(c.inbounds.len(), 1);
        assert_eq!(c.inbounds[0].tag, "in-7");
        assert_eq!(c.inbounds[0].listen.to_string(), "127.0.0.1");
        assert!(c.node.allow_private_destinations);
    }

    #[test]
    fn the_version_follows_the_content() {
        let s = snapshot();
        let a = render(&s, NOW).unwrap();
        assert_eq!(a.version, render(&s, NOW).unwrap().version);
        assert!(a.version < 1 << 53);
        let mut s2 = s.clone();
        s2.users[3].0.used_up = 100;
        let b = render(&s2, NOW).unwrap();
        assert_ne!(a.version, b.version);
        assert_eq!(b.users.len(), 1);
    }

    #[test]
    fn a_reality_inbound_gets_its_private_key_and_the_flow() {
        use switchyard_config::{Flow as NodeFlow, Security};
        let keys = switchyard_config::reality::generate().unwrap();
        let mut s = snapshot();
        let (inbound, secrets) = &mut s.inbounds[0];
        inbound.security = InboundSecurity::Reality {
            dest: "127.0.0.1:9443".into(),
            server_names: vec!["target.test".into(), "www.target.test".into()],
            short_ids: vec!["6ba85179e30d4fc2".into()],
            max_time_diff_ms: 60_000,
            fingerprint: "chrome".into(),
        };
        inbound.sni = None;
        inbound.flow = Some(crate::model::Flow::Vision);
        inbound.reality_public_key = Some(keys.public_key.clone());
        *secrets = InboundSecrets {
            reality_private_key: Some(keys.private_key.clone()),
            reality_public_key: Some(keys.public_key),
            ..InboundSecrets::default()
        };
        let c = render(&s, NOW).unwrap();
        let ib = &c.inbounds[0];
        assert_eq!(ib.flow, Some(NodeFlow::Vision));
        let Security::Reality {
            dest,
            server_names,
            private_key,
            short_ids,
            max_time_diff_ms,
            min_client_version,
            max_client_version,
        } = &ib.security
        else {
            panic!("{:?}", ib.security);
        };
        assert_eq!(dest, "127.0.0.1:9443");
        assert_eq!(server_names, &["target.test", "www.target.test"]);
        assert_eq!(private_key.expose(), keys.private_key);
        assert_eq!(short_ids, &["6ba85179e30d4fc2"]);
        assert_eq!(*max_time_diff_ms, 60_000);
        assert_eq!((min_client_version, max_client_version), (&None, &None));
        // Without a flow the node's inbound has none.
        s.inbounds[0].0.flow = None;
        assert_eq!(render(&s, NOW).unwrap().inbounds[0].flow, None);
    }

    #[test]
    fn the_address_limit_reaches_the_node_with_the_user() {
        let mut s = snapshot();
        s.users[0].0.address_limit = Some(2);
        let c = render(&s, NOW).unwrap();
        let limits: Vec<_> = c
            .users
            .iter()
            .map(|u| (u.name.as_str(), u.address_limit))
            .collect();
        assert_eq!(limits, [("u1", Some(2)), ("u4", None)]);
    }

    #[test]
    fn transports_reach_the_node_as_its_config_has_them() {
        use switchyard_config::Transport;
        let mut s = snapshot();
        let cases = [
            (
                InboundTransport::HttpUpgrade {
                    path: "/up".into(),
                    host: Some("cdn.example.com".into()),
                },
                Transport::HttpUpgrade {
                    path: "/up".into(),
                    host: Some("cdn.example.com".into()),
                },
            ),
            (
                InboundTransport::HttpUpgrade {
                    path: "/".into(),
                    host: None,
                },
                Transport::HttpUpgrade {
                    path: "/".into(),
                    host: None,
                },
            ),
            (
                InboundTransport::Ws {
                    path: "/ws".into(),
                    host: None,
                },
                Transport::Ws {
                    path: "/ws".into(),
                    host: None,
                },
            ),
            (
                InboundTransport::Grpc {
                    service_name: "tun".into(),
                    multi_mode: true,
                },
                Transport::Grpc {
                    service_name: "tun".into(),
                },
            ),
            (
                InboundTransport::Xhttp(crate::model::xhttp::InboundXhttp {
                    path: "/xh".into(),
                    host: Some("cdn.example.com".into()),
                    mode: "stream-up".into(),
                }),
                Transport::Xhttp({
                    let mut s = switchyard_proto::xhttp::Settings::new("/xh");
                    s.host = Some("cdn.example.com".into());
                    s.mode = switchyard_proto::xhttp::Mode::StreamUp;
                    s
                }),
            ),
        ];
        for (panel, node) in cases {
            s.inbounds[0].0.transport = panel;
            assert_eq!(render(&s, NOW).unwrap().inbounds[0].transport, node);
        }
    }

    #[test]
    fn trusted_proxies_reach_the_node_on_header_transports() {
        let mut s = snapshot();
        let nets = ["173.245.48.0/20", "127.0.0.1", "2400:cb00::/32"];
        s.inbounds[0].0.transport = InboundTransport::Ws {
            path: "/ws".into(),
            host: None,
        };
        s.inbounds[0].0.trusted_proxies = nets.map(str::to_owned).to_vec();
        let c = render(&s, NOW).unwrap();
        assert_eq!(c.inbounds[0].trusted_proxies, nets);
        let read: Vec<String> = c.inbounds[0]
            .trusted_networks()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(read, ["173.245.48.0/20", "127.0.0.1/32", "2400:cb00::/32"]);
        // None given: the node's inbound has none, and its config does not name them.
        s.inbounds[0].0.trusted_proxies.clear();
        let c = render(&s, NOW).unwrap();
        assert!(c.inbounds[0].trusted_proxies.is_empty());
        assert!(!body(&s, NOW).to_string().contains("trusted_proxies"));
    }

    #[test]
    fn node_names_map_back_to_users() {
        assert_eq!(panel_user(&node_user(42)), Some(42));
        assert_eq!(panel_user("alice"), None);
        assert_eq!(panel_user("u"), None);
    }
}
