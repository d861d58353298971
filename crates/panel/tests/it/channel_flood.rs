//! The panel's node channel listener, as the panel runs it, under a stranger's idle
//! sockets: 300 from 127.0.0.2 (more than the 256 pending connections the listener
//! allows in all) keep neither a node's enrollment nor its channel (the re-join) from
//! 127.0.0.1 out.

use std::net::SocketAddr;
use std::time::Duration;

use switchyard_channel::{ChannelStatus, JoinToken, NodeOptions, run_node_with};
use switchyard_panel::Panel;
use switchyard_panel::config::{ChannelSettings, PanelConfig};
use switchyard_panel::store::ServerInput;
use switchyard_testkit::free_port;
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

fn now() -> i64 {
    switchyard_node::accounting::now_ms()
}

async fn connect_from(from: &str, to: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
    socket.connect(to).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sockets_from_one_address_keep_no_node_from_joining_or_rejoining() {
    let dir = tempfile::tempdir().unwrap();
    let channel = SocketAddr::from(([127, 0, 0, 1], free_port().unwrap()));
    let panel = Panel::start(PanelConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: dir.path().join("panel"),
        channel: ChannelSettings {
            listen: channel,
            ..ChannelSettings::default()
        },
        ..PanelConfig::default()
    })
    .await
    .unwrap();
    let store = panel.state.store().clone();
    let cluster = store.create_cluster("c", now()).await.unwrap();
    let server = panel
        .state
        .service()
        .create_server(
            &ServerInput {
                cluster_id: cluster.id,
                name: "s".into(),
                address: "127.0.0.1".into(),
                allow_private_destinations: false,
            },
            now(),
        )
        .await
        .unwrap();
    let mut idle = Vec::new();
    for _ in 0..300 {
        idle.push(connect_from("127.0.0.2", channel).await);
    }
    let token = JoinToken::parse(&panel.join_token(server.id).await.unwrap()).unwrap();
    let enrollment = tokio::time::timeout(
        Duration::from_secs(8),
        switchyard_channel::join(&token, &dir.path().join("node"), "n"),
    )
    .await
    .expect("the enrollment is answered while the stranger holds its sockets")
    .unwrap();
    assert_eq!(enrollment.server_id, server.id.to_string());
    let stop = CancellationToken::new();
    let (tx, mut status) = watch::channel(ChannelStatus::default());
    let node = tokio::spawn(run_node_with(
        enrollment,
        axum::Router::new(),
        stop.clone(),
        NodeOptions::default(),
        tx,
    ));
    tokio::time::timeout(
        Duration::from_secs(8),
        status.wait_for(|s| s.connected_since_ms.is_some()),
    )
    .await
    .expect("the node's channel is up while the stranger holds its sockets")
    .unwrap();
    drop(idle);
    stop.cancel();
    node.await.unwrap();
    panel.shutdown().await;
}
