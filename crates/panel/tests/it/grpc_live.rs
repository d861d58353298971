//! The panel's gRPC subscriptions in real client programs, through a real node: a
//! panel on 127.0.0.1 with one node joined over the real channel, two gRPC routes
//! (VLESS+TLS in multi mode, Trojan+TLS in plain gun), one user. The subscription
//! fetched over HTTP in each format runs in the client that reads it, which
//! downloads through each route from a local target, byte for byte: sing-box over
//! plain gun (all it speaks), mihomo likewise through the Trojan route (1.19.2
//! checks no pin on VLESS over gRPC, and the entry does not give the check up), Xray
//! in multi mode for the VLESS route.

use crate::live;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchyard_panel::Panel;
use switchyard_panel::config::{ChannelSettings, PanelConfig};
use switchyard_panel::model::{
    Algorithm, InboundSecurity, InboundTransport, Protocol, ServerState, TlsCertificate,
};
use switchyard_panel::store::{InboundInput, RouteInput, ServerInput};
use switchyard_testkit::{HttpTarget, SingBox, free_port};

const MIB: u64 = 1 << 20;

/// The routes' entries, in route order: VLESS in multi mode, Trojan in plain gun.
const ENTRIES: [&str; 2] = ["gRPC VLESS", "gRPC Trojan"];

struct World {
    panel: Panel,
    node: switchyard_node::channel::EnrolledNode,
    http: SocketAddr,
    path: String,
    _dir: tempfile::TempDir,
}

async fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let http = SocketAddr::from(([127, 0, 0, 1], free_port().unwrap()));
    let panel = Panel::start(PanelConfig {
        listen: http,
        data_dir: dir.path().join("panel"),
        channel: ChannelSettings {
            listen: SocketAddr::from(([127, 0, 0, 1], free_port().unwrap())),
            ..ChannelSettings::default()
        },
        ..PanelConfig::default()
    })
    .await
    .unwrap();
    let service = panel.state.service().clone();
    let store = panel.state.store().clone();
    let cluster = store.create_cluster("c", live::now()).await.unwrap();
    let server = service
        .create_server(
            &ServerInput {
                cluster_id: cluster.id,
                name: "local".into(),
                address: "127.0.0.1".into(),
                allow_private_destinations: true,
            },
            live::now(),
        )
        .await
        .unwrap();
    let kinds = [
        (ENTRIES[0], Protocol::Vless, "tun.v1", true),
        (ENTRIES[1], Protocol::Trojan, "trojan-gun", false),
    ];
    for (i, (name, protocol, service_name, multi_mode)) in kinds.into_iter().enumerate() {
        let inbound = service
            .create_inbound(
                &InboundInput {
                    server_id: server.id,
                    name: name.into(),
                    protocol,
                    port: free_port().unwrap(),
                    transport: InboundTransport::Grpc {
                        service_name: service_name.into(),
                        multi_mode,
                    },
                    security: InboundSecurity::Tls {
                        certificate: TlsCertificate::SelfSigned,
                    },
                    host: None,
                    sni: Some("localhost".into()),
                    coefficient: 1.0,
                    method: None,
                    flow: None,
                    hysteria2: None,
                    trusted_proxies: Vec::new(),
                    rules: Default::default(),
                },
                live::now(),
            )
            .await
            .unwrap();
        // The first went into the default route; the other gets its own.
        if i > 0 {
            store
                .create_route(
                    cluster.id,
                    &RouteInput {
                        name: name.into(),
                        flag: None,
                        algorithm: Algorithm::LeastLoaded,
                        inbound_ids: Some(vec![inbound.id]),
                    },
                    live::now(),
                )
                .await
                .unwrap();
        }
    }
    let user = service
        .create_user(&live::user("alice"), live::now())
        .await
        .unwrap();
    let token = panel.join_token(server.id).await.unwrap();
    let node = live::join(&dir.path().join("node"), &token).await;
    live::wait_until("the node is online", 20, || {
        let store = store.clone();
        async move { store.server(server.id).await.unwrap().state == ServerState::Online }
    })
    .await;
    World {
        panel,
        node,
        http,
        path: user.subscription_path,
        _dir: dir,
    }
}

/// The subscription in `format`, fetched over HTTP (`Connection: close`).
async fn fetch(w: &World, format: &str) -> String {
    let path = format!("{}?format={format}", w.path);
    let (status, _, body) = live::get_raw(w.http, &path, "").await;
    assert!(status.starts_with("HTTP/1.1 200"), "{format}: {status}");
    body
}

/// Downloads through `proxy` until it works (the node may still be applying its
/// config), then checks a 2 MiB download byte for byte.
async fn download(target: &HttpTarget, proxy: SocketAddr, what: &str, log: impl Fn() -> String) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        match target.download_via_socks(proxy, 2 * MIB).await {
            Ok(()) => return,
            Err(e) if Instant::now() > deadline => panic!("{what}: {e:#}\n{}", log()),
            Err(_) => tokio::time::sleep(Duration::from_millis(300)).await,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sing_box_runs_the_grpc_subscription() {
    let target = HttpTarget::start().await.unwrap();
    let w = world().await;
    let mut config: Value = serde_json::from_str(&fetch(&w, "sing-box").await).unwrap();
    for o in config["outbounds"].as_array_mut().unwrap() {
        if o["type"] == "urltest" {
            o["url"] = json!(format!("http://{}/bytes/0", target.addr()));
        }
    }
    for tag in ENTRIES {
        config["inbounds"][0]["listen_port"] = json!(free_port().unwrap());
        config["route"]["final"] = json!(tag);
        let client = SingBox::start(config.clone())
            .await
            .unwrap_or_else(|e| panic!("sing-box runs the subscription: {e:#}"));
        let proxy = client.proxy_addr().unwrap();
        download(&target, proxy, tag, || client.log_tail()).await;
    }
    w.node.shutdown().await;
    w.panel.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mihomo_runs_the_grpc_subscription() {
    let target = HttpTarget::start().await.unwrap();
    let w = world().await;
    let yaml = live::through_the_node(&fetch(&w, "clash").await).replace(
        "\"https://www.gstatic.com/generate_204\"",
        &format!("\"http://{}/bytes/0\"", target.addr()),
    );
    // mihomo 1.19.2 leaves the certificate pin out of VLESS over gRPC and refuses the
    // panel's self-signed certificate there; the entry keeps its pin (no
    // `skip-cert-verify`), so only the Trojan route runs in it.
    assert!(!yaml.contains("skip-cert-verify"), "{yaml}");
    for name in &ENTRIES[1..] {
        let port = free_port().unwrap();
        let config = yaml
            .replace("\"MATCH,Switchyard\"", &format!("\"MATCH,{name}\""))
            .replace("\"mixed-port\": 7890", &format!("\"mixed-port\": {port}"))
            .replace("\"log-level\": \"warning\"", "\"log-level\": \"info\"");
        assert!(config.contains(&format!("\"MATCH,{name}\"")), "{config}");
        let client =
            switchyard_testkit::Mihomo::start(&config, SocketAddr::from(([127, 0, 0, 1], port)))
                .await
                .unwrap_or_else(|e| panic!("mihomo runs the subscription: {e:#}"));
        download(&target, client.proxy_addr(), name, || client.log_tail()).await;
    }
    w.node.shutdown().await;
    w.panel.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xray_runs_the_grpc_subscription_in_multi_mode_too() {
    let target = HttpTarget::start().await.unwrap();
    let w = world().await;
    let configs: Value = serde_json::from_str(&fetch(&w, "xray").await).unwrap();
    let configs = configs.as_array().unwrap();
    let multi: Vec<&Value> = configs
        .iter()
        .map(|c| &c["outbounds"][0]["streamSettings"]["grpcSettings"]["multiMode"])
        .collect();
    assert_eq!(multi, [&json!(true), &json!(false)]);
    for config in configs {
        let mut config = config.clone();
        live::xray_through_the_node(&mut config);
        let mut taken = std::collections::HashSet::new();
        for inbound in config["inbounds"].as_array_mut().unwrap() {
            let port = std::iter::repeat_with(|| free_port().unwrap())
                .find(|p| taken.insert(*p))
                .unwrap();
            inbound["port"] = json!(port);
        }
        let client = switchyard_testkit::Xray::start(config.clone())
            .await
            .unwrap_or_else(|e| panic!("xray runs the subscription: {e:#}"));
        let socks = client.inbound_addr("socks").unwrap();
        let name = config["remarks"].as_str().unwrap().to_owned();
        download(&target, socks, &name, || client.log_tail()).await;
    }
    w.node.shutdown().await;
    w.panel.shutdown().await;
}
