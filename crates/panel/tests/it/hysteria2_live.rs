//! The panel's Hysteria 2 subscriptions in real client programs, through a real
//! node: a panel on 127.0.0.1 with one node joined over the real channel, one
//! Hysteria 2 inbound with Salamander (the panel's own password, a self-signed
//! certificate pinned) and port hopping (a range of [`HOP_PORTS`] ports, a hop
//! every [`HOP_SECS`] s), one user. The subscription fetched over HTTP as
//! sing-box's and mihomo's config (range and interval in it) runs in that app,
//! which downloads through it from a local target byte for byte and echoes UDP
//! datagrams off a local echo server (a SOCKS5 UDP ASSOCIATE to the app's proxy),
//! then again after a hop. Xray's config leaves the server out.

use crate::live;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchyard_panel::Panel;
use switchyard_panel::config::{ChannelSettings, PanelConfig};
use switchyard_panel::model::{
    InboundHysteria2, InboundSecurity, InboundTransport, Protocol, ServerState, TlsCertificate,
};
use switchyard_panel::store::{InboundInput, ServerInput};
use switchyard_testkit::socks5::{Dest, UdpAssociation};
use switchyard_testkit::{HttpTarget, SingBox, UdpEcho, free_port};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const MIB: u64 = 1 << 20;
const NAME: &str = "Hysteria QUIC";
/// Ports of the inbound's hop range.
const HOP_PORTS: u16 = 3;
/// The inbound's hop interval, seconds (the shortest the panel takes).
const HOP_SECS: u32 = 5;

/// A free UDP port of 127.0.0.1 with the next `n - 1` free as well.
fn consecutive_free(n: u16) -> u16 {
    for _ in 0..200 {
        let first = free_port().unwrap();
        if first > u16::MAX - n {
            continue;
        }
        if (first..first + n).all(|p| std::net::UdpSocket::bind(("127.0.0.1", p)).is_ok()) {
            return first;
        }
    }
    panic!("no {n} consecutive free UDP ports");
}

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
    service
        .create_inbound(
            &InboundInput {
                server_id: server.id,
                name: NAME.into(),
                protocol: Protocol::Hysteria2,
                port: free_port().unwrap(),
                transport: InboundTransport::Tcp,
                security: InboundSecurity::Tls {
                    certificate: TlsCertificate::SelfSigned,
                },
                host: None,
                sni: Some("localhost".into()),
                coefficient: 1.0,
                method: None,
                flow: None,
                hysteria2: Some(InboundHysteria2 {
                    obfs: true,
                    ports: Some({
                        let first = consecutive_free(HOP_PORTS);
                        format!("{first}-{}", first + HOP_PORTS - 1)
                    }),
                    hop_interval_secs: Some(HOP_SECS),
                    ..InboundHysteria2::default()
                }),
                trusted_proxies: Vec::new(),
                rules: Default::default(),
            },
            live::now(),
        )
        .await
        .unwrap();
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

/// The subscription in `format`, fetched over HTTP (`Connection: close`): its
/// head and body.
async fn fetch(w: &World, format: &str) -> (String, String) {
    let mut s = TcpStream::connect(w.http).await.unwrap();
    let path = format!("{}?format={format}", w.path);
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: p\r\nConnection: close\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.unwrap();
    let text = String::from_utf8(raw).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{format}: {head}");
    (head.to_owned(), body.to_owned())
}

/// A 2 MiB download through `proxy` byte for byte (retried until the node has
/// applied its config), then datagrams of 1 to 1,200 bytes echoed through it.
async fn carry(target: &HttpTarget, proxy: SocketAddr, what: &str, log: impl Fn() -> String) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        match target.download_via_socks(proxy, 2 * MIB).await {
            Ok(()) => break,
            Err(e) if Instant::now() > deadline => panic!("{what}: {e:#}\n{}", log()),
            Err(_) => tokio::time::sleep(Duration::from_millis(300)).await,
        }
    }
    let echo = UdpEcho::start().await.unwrap();
    let assoc = UdpAssociation::open(proxy)
        .await
        .unwrap_or_else(|e| panic!("{what}: UDP ASSOCIATE: {e:#}\n{}", log()));
    let dest = Dest::Addr(echo.addr());
    for size in [1usize, 64, 512, 1200] {
        let payload: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
        let mut echoed = false;
        for _ in 0..5 {
            assoc.send_to(&payload, &dest).await.unwrap();
            let got = tokio::time::timeout(Duration::from_secs(2), async {
                loop {
                    let (from, data) = assoc.recv_from().await.unwrap();
                    if data == payload {
                        return from;
                    }
                }
            })
            .await;
            if let Ok(from) = got {
                assert_eq!(from, dest, "{what}: the echo's source");
                echoed = true;
                break;
            }
        }
        assert!(echoed, "{what}: no echo of {size} bytes\n{}", log());
    }
}

/// Waits out one hop interval and a second more: the client is on another port.
async fn after_a_hop() {
    tokio::time::sleep(Duration::from_secs(u64::from(HOP_SECS) + 1)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sing_box_runs_the_hysteria2_subscription() {
    let target = HttpTarget::start().await.unwrap();
    let w = world().await;
    let (_, body) = fetch(&w, "sing-box").await;
    let mut config: Value = serde_json::from_str(&body).unwrap();
    for o in config["outbounds"].as_array_mut().unwrap() {
        if o["type"] == "urltest" {
            o["url"] = json!(format!("http://{}/bytes/0", target.addr()));
        }
    }
    config["inbounds"][0]["listen_port"] = json!(free_port().unwrap());
    config["route"]["final"] = json!(NAME);
    let hy2 = config["outbounds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["type"] == "hysteria2")
        .unwrap();
    assert_eq!(hy2["hop_interval"], format!("{HOP_SECS}s"), "{hy2}");
    assert!(hy2["server_ports"][0].is_string(), "{hy2}");
    let client = SingBox::start(config.clone())
        .await
        .unwrap_or_else(|e| panic!("sing-box runs the subscription: {e:#}"));
    let proxy = client.proxy_addr().unwrap();
    carry(&target, proxy, "sing-box", || client.log_tail()).await;
    after_a_hop().await;
    carry(&target, proxy, "sing-box after a hop", || client.log_tail()).await;
    w.node.shutdown().await;
    w.panel.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mihomo_runs_the_hysteria2_subscription_and_xray_leaves_it_out() {
    let target = HttpTarget::start().await.unwrap();
    let w = world().await;
    let (_, yaml) = fetch(&w, "clash").await;
    let yaml = live::through_the_node(&yaml);
    assert!(yaml.contains("\"obfs\": \"salamander\""), "{yaml}");
    assert!(!yaml.contains("skip-cert-verify"), "{yaml}");
    assert!(
        yaml.contains(&format!("\"hop-interval\": {HOP_SECS}")),
        "{yaml}"
    );
    let port = free_port().unwrap();
    let config = yaml
        .replace(
            "\"https://www.gstatic.com/generate_204\"",
            &format!("\"http://{}/bytes/0\"", target.addr()),
        )
        .replace("\"MATCH,Switchyard\"", &format!("\"MATCH,{NAME}\""))
        .replace("\"mixed-port\": 7890", &format!("\"mixed-port\": {port}"))
        .replace("\"log-level\": \"warning\"", "\"log-level\": \"info\"");
    let client =
        switchyard_testkit::Mihomo::start(&config, SocketAddr::from(([127, 0, 0, 1], port)))
            .await
            .unwrap_or_else(|e| panic!("mihomo runs the subscription: {e:#}"));
    carry(&target, client.proxy_addr(), "mihomo", || client.log_tail()).await;
    after_a_hop().await;
    carry(&target, client.proxy_addr(), "mihomo after a hop", || {
        client.log_tail()
    })
    .await;

    let (head, body) = fetch(&w, "xray").await;
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap(), json!([]));
    assert!(
        head.to_ascii_lowercase()
            .contains("announce: 1 server left out: this app cannot run hysteria 2"),
        "{head}"
    );
    w.node.shutdown().await;
    w.panel.shutdown().await;
}
