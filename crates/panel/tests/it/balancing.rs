//! Balancing end to end: a panel on 127.0.0.1 with two real nodes joined over the
//! real channel, their VLESS inbounds in one round-robin route. Users fetch their
//! subscription over HTTP, then connect through the server it names and stay
//! connected, as an app does; the nodes' heartbeats bring "users online" back to the
//! panel. New users spread over the two servers; a node that goes away gets no new
//! users once the panel judges it unavailable; a user keeps their server across
//! fetches.

use crate::live;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use base64::Engine;
use switchyard_panel::Panel;
use switchyard_panel::config::{ChannelSettings, PanelConfig};
use switchyard_panel::model::{
    Algorithm, InboundSecurity, InboundTransport, Protocol, ServerState,
};
use switchyard_panel::store::{InboundInput, RouteInput, ServerInput};
use switchyard_proto::address::Address;
use switchyard_proto::entry::EntryProtocol;
use switchyard_proto::vless::{Command, Request};
use switchyard_testkit::{HttpTarget, free_port};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The one entry of a subscription fetched over HTTP: its port and UUID.
async fn fetch(panel: SocketAddr, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(panel).await.unwrap();
    s.write_all(
        format!("GET {path}?format=links HTTP/1.1\r\nHost: p\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    )
    .await
    .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.unwrap();
    let text = String::from_utf8(raw).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let links = base64::engine::general_purpose::STANDARD
        .decode(body.trim())
        .unwrap();
    let entries =
        switchyard_proto::share::parse_subscription(&String::from_utf8(links).unwrap()).unwrap();
    assert_eq!(entries.len(), 1, "one route, one entry");
    let EntryProtocol::Vless { uuid, .. } = &entries[0].protocol else {
        panic!("a VLESS entry");
    };
    (entries[0].port, uuid.clone())
}

/// A VLESS connection through `port` that stays open (an upload that never ends), as
/// an app's would.
async fn stay_connected(port: u16, uuid: &str, target: SocketAddr) -> TcpStream {
    let mut out = Vec::new();
    Request {
        uuid: switchyard_node::config::parse_uuid(uuid).unwrap(),
        flow: switchyard_proto::vless::Flow::None,
        command: Command::Tcp(Address::Ip(target)),
    }
    .encode(&mut out);
    out.extend_from_slice(b"POST /sink HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000000\r\n\r\n");
    // The node learns of a new user within a heartbeat; until then it does not let
    // them in (and, as a prober would see, does not answer either). Let in, the
    // node answers the VLESS response header at once.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        s.write_all(&out).await.unwrap();
        s.write_all(&[0u8; 1024]).await.unwrap();
        let mut buf = [0u8; 2];
        let r = tokio::time::timeout(Duration::from_millis(500), s.read_exact(&mut buf)).await;
        if matches!(r, Ok(Ok(_))) && buf == [0, 0] {
            return s;
        }
        assert!(Instant::now() < deadline, "the node lets the user in");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_spread_over_two_nodes_and_avoid_one_that_went_away() {
    let dir = tempfile::tempdir().unwrap();
    let target = HttpTarget::start().await.unwrap();
    let channel = free_port().unwrap();
    let http = free_port().unwrap();
    let panel = Panel::start(PanelConfig {
        listen: SocketAddr::from(([127, 0, 0, 1], http)),
        data_dir: dir.path().join("panel"),
        channel: ChannelSettings {
            listen: SocketAddr::from(([127, 0, 0, 1], channel)),
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
    let mut ports = Vec::new();
    let mut inbounds = Vec::new();
    for name in ["a", "b"] {
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
        let port = free_port().unwrap();
        let i = service
            .create_inbound(
                &InboundInput {
                    server_id: s.id,
                    name: format!("Server {name}"),
                    protocol: Protocol::Vless,
                    port,
                    transport: InboundTransport::Tcp,
                    security: InboundSecurity::None,
                    host: None,
                    sni: None,
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
        servers.push(s.id);
        ports.push(port);
        inbounds.push(i.id);
    }
    let default = store.routes(cluster.id).await.unwrap()[0].id;
    store
        .update_route(
            default,
            &RouteInput {
                name: "Here".into(),
                flag: None,
                algorithm: Algorithm::RoundRobin,
                inbound_ids: Some(inbounds.clone()),
            },
        )
        .await
        .unwrap();
    let mut nodes = Vec::new();
    for (i, s) in servers.iter().enumerate() {
        let token = panel.join_token(*s).await.unwrap();
        nodes.push(Some(
            live::join(&dir.path().join(format!("node-{i}")), &token).await,
        ));
    }
    let online = |id: i64| {
        let store = store.clone();
        async move { store.server(id).await.unwrap().state == ServerState::Online }
    };
    for s in &servers {
        live::wait_until("the node is online", 20, || online(*s)).await;
    }
    let users_on = |id: i64| {
        let store = store.clone();
        async move { store.server(id).await.unwrap().users_online }
    };

    // Six users, one after the other: each connects where its subscription says
    // and the next one comes once the panel has heard of it.
    let addr = SocketAddr::from(([127, 0, 0, 1], http));
    let mut paths = Vec::new();
    let mut held = Vec::new();
    let mut landed = [0u64; 2];
    for i in 0..6 {
        let u = service
            .create_user(&live::user(&format!("u{i}")), live::now())
            .await
            .unwrap();
        let (port, uuid) = fetch(addr, &u.subscription_path).await;
        let at = ports.iter().position(|p| *p == port).unwrap();
        held.push(stay_connected(port, &uuid, target.addr()).await);
        landed[at] += 1;
        let (want, server) = (landed[at], servers[at]);
        live::wait_until("the panel counts the new user", 20, || async move {
            users_on(server).await >= want
        })
        .await;
        // The panel's cache may be a second behind the store.
        tokio::time::sleep(Duration::from_millis(1_100)).await;
        paths.push((u.subscription_path, port));
    }
    assert_eq!(
        landed,
        [3, 3],
        "round-robin alternates between equal servers"
    );

    // Every user keeps their server on the next fetch (nothing changed).
    for (path, port) in &paths {
        assert_eq!(fetch(addr, path).await.0, *port, "{path} kept its server");
    }

    // Node b goes away: once the panel judges it unavailable, new users all get a
    // (even though b now has fewer users), and b's users are moved to a.
    nodes[1].take().unwrap().shutdown().await;
    live::wait_until("b is unavailable", 30, || async {
        store
            .server(servers[1])
            .await
            .unwrap()
            .at(live::now(), Default::default())
            .state
            == ServerState::Unavailable
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    for i in 6..9 {
        let u = service
            .create_user(&live::user(&format!("u{i}")), live::now())
            .await
            .unwrap();
        assert_eq!(fetch(addr, &u.subscription_path).await.0, ports[0]);
    }
    for (path, _) in &paths {
        assert_eq!(fetch(addr, path).await.0, ports[0], "{path} left b");
    }
    drop(held);
    for n in nodes.into_iter().flatten() {
        n.shutdown().await;
    }
    panel.shutdown().await;
}
