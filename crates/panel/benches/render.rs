//! Criterion benchmark of the node config push's CPU part: rendering a server's
//! desired config for 10,000 users and serialising it as the panel sends it
//! (`PUT /v1/config`). `cargo xtask bench` runs it with the Auto benchmarks.
//!
//! - `render_10000/render`: `switchyard_panel::render::render` (the config body, its
//!   SHA-256 version, the node's own validation) then `serde_json::to_vec`.
//! - `render_10000/reference`: `serde_json::to_vec` of the same rendered config alone:
//!   the least any panel pays to send it.
//!
//! Inputs are deterministic (credentials from the user's index, a pinned "now"), but
//! the inbound's self-signed certificate, made once outside the measurement.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use switchyard_panel::model::snapshot::ServerSnapshot;
use switchyard_panel::model::{
    Credentials, Inbound, InboundSecrets, InboundSecurity, InboundTransport, Protocol,
    ResetStrategy, Server, ServerState, TlsCertificate, User, UserStatus,
};
use switchyard_panel::render::render;

/// A pinned "now": 2026-12-01 00:00:00 UTC in Unix milliseconds.
const NOW: i64 = 1_796_083_200_000;
const USERS: i64 = 10_000;

fn user(id: i64) -> (User, Credentials) {
    (
        User {
            id,
            username: format!("seed-{id}"),
            status: UserStatus::Active,
            enabled: true,
            note: String::new(),
            traffic_limit: None,
            reset_strategy: ResetStrategy::None,
            expires_ms: None,
            on_hold_days: None,
            first_connected_ms: None,
            used_up: 0,
            used_down: 0,
            period_started_ms: 0,
            lifetime_bytes: 0,
            online_ms: None,
            device_limit: None,
            address_limit: None,
            subscription_path: String::new(),
            created_ms: 0,
            clusters: None,
            admin_id: None,
        },
        Credentials {
            vless_uuid: format!("00000000-0000-4000-8000-{id:012}"),
            trojan_password: format!("trojan-password-{id:08}"),
            ss_seed: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=".into(),
        },
    )
}

fn snapshot() -> ServerSnapshot {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    ServerSnapshot {
        server: Server {
            id: 1,
            cluster_id: 1,
            name: "seed".into(),
            address: "127.0.0.1".into(),
            allow_private_destinations: false,
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
        },
        inbounds: vec![(
            Inbound {
                id: 1,
                server_id: 1,
                name: "Seed".into(),
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
                route_id: Some(1),
                created_ms: 0,
                hysteria2: None,
                trusted_proxies: Vec::new(),
                rules: Default::default(),
            },
            InboundSecrets {
                ss_server_key: None,
                tls_cert_pem: Some(cert.cert.pem()),
                tls_key_pem: Some(cert.signing_key.serialize_pem()),
                ..InboundSecrets::default()
            },
        )],
        users: (1..=USERS).map(user).collect(),
        tunnels: Vec::new(),
        tunnel_secret: None,
    }
}

fn render_10000(c: &mut Criterion) {
    let snapshot = snapshot();
    let rendered = render(&snapshot, NOW).unwrap();
    assert_eq!(rendered.users.len(), USERS as usize);
    let mut g = c.benchmark_group("render_10000");
    g.sample_size(20);
    g.bench_function("render", |b| {
        b.iter(|| {
            let config = render(black_box(&snapshot), NOW).unwrap();
            serde_json::to_vec(&config).unwrap()
        })
    });
    g.bench_function("reference", |b| {
        b.iter(|| serde_json::to_vec(black_box(&rendered)).unwrap())
    });
    g.finish();
}

criterion_group!(benches, render_10000);
criterion_main!(benches);
