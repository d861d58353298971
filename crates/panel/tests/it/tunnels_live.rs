//! A tunnel made through the panel's API, on three real nodes joined to one panel on
//! 127.0.0.1 (a relay and two origins): the panel renders each node's half (derived
//! credentials, its own certificate, the pins), the links come up, a real sing-box
//! client's download goes user → relay → tunnel → origin → local target, and changes
//! made in the API (an origin removed, the tunnel disabled, deleted) reach the nodes
//! live.

use crate::live;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchyard_node::channel::EnrolledNode;
use switchyard_panel::Panel;
use switchyard_panel::config::{ChannelSettings, PanelConfig};
use switchyard_panel::model::{
    InboundSecurity, InboundTransport, Protocol, ServerState, TlsCertificate,
};
use switchyard_panel::store::{InboundInput, ServerInput};
use switchyard_testkit::{HttpTarget, SingBox, free_port};

const MIB: u64 = 1 << 20;

/// The links the tunnel `name` has up on `node` (0 when it has no half).
async fn links(node: &EnrolledNode, name: &str) -> u64 {
    node.node()
        .tunnel(name)
        .await
        .and_then(|s| s["links"].as_u64())
        .unwrap_or(0)
}

async fn wait_links(node: &EnrolledNode, name: &str, want: u64, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let now = links(node, name).await;
        if now == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: {now} links, not {want}: {:?}",
            node.node().tunnel(name).await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn download(target: &HttpTarget, proxy: SocketAddr, log: impl Fn() -> String) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match target.download_via_socks(proxy, 2 * MIB).await {
            Ok(()) => return,
            Err(e) if Instant::now() > deadline => panic!("download: {e:#}\n{}", log()),
            Err(_) => tokio::time::sleep(Duration::from_millis(300)).await,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tunnel_made_in_the_api_carries_a_real_client_s_traffic() {
    let target = HttpTarget::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let http = SocketAddr::from(([127, 0, 0, 1], free_port().unwrap()));
    let data = dir.path().join("panel");
    let panel = Panel::start(PanelConfig {
        listen: http,
        data_dir: data.clone(),
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
    let mut servers = Vec::new();
    for name in ["relay", "origin-a", "origin-b"] {
        let s = service
            .create_server(
                &ServerInput {
                    cluster_id: cluster.id,
                    name: name.into(),
                    address: "127.0.0.1".into(),
                    allow_private_destinations: true,
                },
                live::now(),
            )
            .await
            .unwrap();
        servers.push(s.id);
    }
    let (relay, a, b) = (servers[0], servers[1], servers[2]);
    service
        .create_inbound(
            &InboundInput {
                server_id: relay,
                name: "Relay".into(),
                protocol: Protocol::Vless,
                port: free_port().unwrap(),
                transport: InboundTransport::Tcp,
                security: InboundSecurity::Tls {
                    certificate: TlsCertificate::SelfSigned,
                },
                host: None,
                sni: Some("localhost".into()),
                coefficient: 1.0,
                method: None,
            },
            live::now(),
        )
        .await
        .unwrap();
    let user = service
        .create_user(&live::user("alice"), live::now())
        .await
        .unwrap();
    let mut nodes = Vec::new();
    for (i, id) in servers.iter().enumerate() {
        let token = panel.join_token(*id).await.unwrap();
        nodes.push(live::join(&dir.path().join(format!("node-{i}")), &token).await);
    }
    for id in &servers {
        live::wait_until("the node is online", 20, || {
            let store = store.clone();
            let id = *id;
            async move { store.server(id).await.unwrap().state == ServerState::Online }
        })
        .await;
    }
    let auth = live::api_token(http, &data).await;

    // The operator fills in a name, the relay, the origins and a port: nothing else.
    let port = free_port().unwrap();
    let input = json!({
        "name": "exit", "relay_server_id": relay, "origin_server_ids": [a, b],
        "links": 2, "profiles": [{"port": port}],
    });
    let (status, tunnel) = live::http(http, "POST", "/api/v1/tunnels", &auth, Some(&input)).await;
    assert_eq!(status, 201, "{tunnel}");
    let id = tunnel["id"].as_i64().unwrap();
    // Every origin keeps 2 links to the relay.
    wait_links(&nodes[0], "exit", 4, "the relay").await;
    wait_links(&nodes[1], "exit", 2, "origin a").await;
    wait_links(&nodes[2], "exit", 2, "origin b").await;
    let relay_status = nodes[0].node().tunnel("exit").await.unwrap();
    assert_eq!(relay_status["state"], "Connections: 4", "{relay_status}");

    // A real client, through the relay's inbound; the relay's one tunnel is its final
    // outbound, so the bytes cross the tunnel.
    let (_, body) = {
        let (s, b) = live::http(
            http,
            "GET",
            &format!("{}?format=sing-box", user.subscription_path),
            "",
            None,
        )
        .await;
        (s, b)
    };
    let mut config: Value = body;
    for o in config["outbounds"].as_array_mut().unwrap() {
        if o["type"] == "urltest" {
            o["url"] = json!(format!("http://{}/bytes/0", target.addr()));
        }
    }
    config["route"]["final"] = json!("Relay");
    config["inbounds"][0]["listen_port"] = json!(free_port().unwrap());
    let client = SingBox::start(config).await.unwrap();
    let proxy = client.proxy_addr().unwrap();
    download(&target, proxy, || client.log_tail()).await;
    let carried = nodes[0].node().tunnel("exit").await.unwrap()["payload_bytes"]
        .as_u64()
        .unwrap();
    assert!(
        carried >= 2 * MIB,
        "the relay's tunnel carried {carried} bytes"
    );

    // An origin removed in the API: its half goes, the relay keeps the other's links.
    let mut change = input.clone();
    change["origin_server_ids"] = json!([a]);
    let (status, body) = live::http(
        http,
        "PUT",
        &format!("/api/v1/tunnels/{id}"),
        &auth,
        Some(&change),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    wait_links(&nodes[0], "exit", 2, "the relay, one origin left").await;
    live::wait_until("origin b has no half", 20, || {
        let n = nodes[2].node().clone();
        async move { n.tunnel("exit").await.is_none() }
    })
    .await;
    download(&target, proxy, || client.log_tail()).await;

    // Disabled: no node runs it; deleted: gone from the API.
    change["enabled"] = json!(false);
    let (status, body) = live::http(
        http,
        "PUT",
        &format!("/api/v1/tunnels/{id}"),
        &auth,
        Some(&change),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    for n in &nodes[..2] {
        live::wait_until("the half is gone", 20, || {
            let n = n.node().clone();
            async move { n.tunnel("exit").await.is_none() }
        })
        .await;
    }
    let (status, _) = live::http(
        http,
        "DELETE",
        &format!("/api/v1/tunnels/{id}"),
        &auth,
        None,
    )
    .await;
    assert_eq!(status, 204);
    let (status, list) = live::http(http, "GET", "/api/v1/tunnels", &auth, None).await;
    assert_eq!((status, list), (200, json!([])));
    drop(client);
    for n in nodes {
        n.shutdown().await;
    }
    drop(panel);
}
