//! Criterion benchmark of the subscription's CPU part: 10,000 users' subscriptions
//! rendered over a cluster of 5 online servers and 20 routes × 5 inbounds (VLESS+TLS,
//! Trojan+TLS, Shadowsocks-2022, VLESS+WebSocket+TLS in turn), every route's inbound
//! chosen by the balancer (least loaded, from the servers' measurements, with the
//! user's previous choice), the entries built and the body written. `cargo xtask
//! bench` runs it with the other criterion benchmarks.
//!
//! - `subscriptions_10000/links` and `/sing-box`: choice, entries and body for every
//!   user, in that format.
//! - `subscriptions_10000/reference`: `serde_json::to_vec` of the same users' entries
//!   made beforehand: the least any panel pays to write that much.
//!
//! Inputs are deterministic but for the self-signed certificate, made once.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use switchyard_balance::{Previous, Reason, Settings};
use switchyard_panel::model::{
    Algorithm, Credentials, HealthSettings, Inbound, InboundSecrets, InboundSecurity,
    InboundTransport, Protocol, Route, Server, ServerState, TlsCertificate,
};
use switchyard_panel::subscription::agents::Format;
use switchyard_panel::subscription::choice::{Pool, pick};
use switchyard_panel::subscription::entries::entry;
use switchyard_proto::entry::Entry;

const USERS: usize = 10_000;
const ROUTES: i64 = 20;
const POOL: i64 = 5;

fn server(id: i64) -> Server {
    Server {
        id,
        cluster_id: 1,
        name: format!("pool-{id}"),
        address: format!("pool-{id}.example.com"),
        allow_private_destinations: false,
        state: ServerState::Online,
        state_reason: String::new(),
        state_since_ms: 0,
        refreshed_ms: Some(0),
        joined: true,
        hostname: None,
        node_version: None,
        binary_sha256: None,
        upgrade_available: false,
        config_version: None,
        users_online: 100 + id as u64 * 7,
        up_bytes_per_s: 1_000_000 * id as u64,
        down_bytes_per_s: 9_000_000 * id as u64,
        capacity_bytes_per_s: Some(125_000_000),
        capacity: Default::default(),
        created_ms: 0,
    }
}

struct Topology {
    servers: Vec<Server>,
    inbounds: Vec<(Inbound, InboundSecrets)>,
    routes: Vec<Route>,
    users: Vec<Credentials>,
}

fn topology() -> Topology {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let servers: Vec<Server> = (1..=POOL).map(server).collect();
    let mut inbounds = Vec::new();
    let mut routes = Vec::new();
    for r in 1..=ROUTES {
        let mut ids = Vec::new();
        for k in 1..=POOL {
            let id = r * 100 + k;
            let tls = InboundSecurity::Tls {
                certificate: TlsCertificate::SelfSigned,
            };
            let (protocol, transport, security, method) = match r % 4 {
                1 => (Protocol::Vless, InboundTransport::Tcp, tls, None),
                2 => (Protocol::Trojan, InboundTransport::Tcp, tls, None),
                3 => (
                    Protocol::Shadowsocks,
                    InboundTransport::Tcp,
                    InboundSecurity::None,
                    Some("2022-blake3-aes-128-gcm".to_owned()),
                ),
                _ => (
                    Protocol::Vless,
                    InboundTransport::Ws {
                        path: "/ws".into(),
                        host: None,
                    },
                    tls,
                    None,
                ),
            };
            inbounds.push((
                Inbound {
                    id,
                    server_id: k,
                    name: format!("Route {r} · server {k}"),
                    protocol,
                    port: 20_000 + id as u16,
                    transport,
                    security,
                    host: None,
                    sni: None,
                    coefficient: 1.0,
                    method,
                    flow: None,
                    reality_public_key: None,
                    route_id: Some(r),
                    created_ms: 0,
                    hysteria2: None,
                    trusted_proxies: Vec::new(),
                    rules: Default::default(),
                },
                InboundSecrets {
                    ss_server_key: Some("AAECAwQFBgcICQoLDA0ODw==".into()),
                    tls_cert_pem: Some(cert.cert.pem()),
                    tls_key_pem: None,
                    ..InboundSecrets::default()
                },
            ));
            ids.push(id);
        }
        routes.push(Route {
            id: r,
            cluster_id: 1,
            name: format!("Route {r}"),
            flag: None,
            algorithm: Algorithm::LeastLoaded,
            position: r,
            is_default: false,
            inbound_ids: ids,
        });
    }
    let users = (0..USERS)
        .map(|i| Credentials {
            vless_uuid: format!("00000000-0000-4000-8000-{i:012}"),
            trojan_password: format!("trojan-password-{i:08}"),
            ss_seed: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=".into(),
        })
        .collect();
    Topology {
        servers,
        inbounds,
        routes,
        users,
    }
}

/// One user's entries, as the endpoint makes them.
fn entries(t: &Topology, user: usize, credentials: &Credentials, format: Format) -> Vec<Entry> {
    let settings = Settings::default();
    t.routes
        .iter()
        .filter_map(|route| {
            // A previous choice, as most fetches have.
            let previous = Some(Previous {
                inbound: route.inbound_ids[user % route.inbound_ids.len()],
                counted: true,
            });
            let pool = Pool {
                inbounds: &t.inbounds,
                servers: &t.servers,
                now_ms: 0,
                health: HealthSettings::default(),
            };
            let p = pick(route, pool, previous, &settings)?;
            entry(p.inbound, p.secrets, p.server, credentials, format)
        })
        .collect()
}

fn subscriptions_10000(c: &mut Criterion) {
    let t = topology();
    // The servers are online: the balancer's normal path is measured.
    let pool = Pool {
        inbounds: &t.inbounds,
        servers: &t.servers,
        now_ms: 0,
        health: HealthSettings::default(),
    };
    let first = pick(&t.routes[0], pool, None, &Settings::default()).unwrap();
    assert_eq!(first.choice.reason, Reason::Best);
    assert_eq!(
        entries(&t, 0, &t.users[0], Format::Links).len(),
        ROUTES as usize
    );
    let made: Vec<Vec<Entry>> = t
        .users
        .iter()
        .enumerate()
        .map(|(i, u)| entries(&t, i, u, Format::SingBox))
        .collect();
    let options = switchyard_proto::singbox::SingBoxOptions::default();
    let mut g = c.benchmark_group("subscriptions_10000");
    g.sample_size(10);
    g.bench_function("links", |b| {
        b.iter(|| {
            for (i, u) in t.users.iter().enumerate() {
                let e = entries(black_box(&t), i, u, Format::Links);
                black_box(switchyard_proto::share::subscription_base64(&e));
            }
        })
    });
    g.bench_function("sing-box", |b| {
        b.iter(|| {
            for (i, u) in t.users.iter().enumerate() {
                let e = entries(black_box(&t), i, u, Format::SingBox);
                let config = switchyard_proto::singbox::ClientConfig::new(&e, &options);
                black_box(serde_json::to_vec(&config).unwrap());
            }
        })
    });
    g.bench_function("reference", |b| {
        b.iter(|| {
            for e in &made {
                black_box(serde_json::to_vec(black_box(e)).unwrap());
            }
        })
    });
    g.finish();
}

criterion_group!(benches, subscriptions_10000);
criterion_main!(benches);
