//! An inbound's rules end to end: set in the panel, they reach a real node joined
//! over the channel, which refuses a blocked network to the inbound's users and
//! carries the rest; taken off in the panel, the node carries it again.

use crate::live;

use std::net::SocketAddr;
use std::time::Duration;

use switchyard_node::channel::EnrolledNode;
use switchyard_panel::model::InboundRules;
use switchyard_proto::vless;
use switchyard_testkit::free_port;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Whether `ping` comes back through the VLESS inbound at `port` to `to`.
async fn echoes(port: u16, uuid: &str, to: SocketAddr) -> bool {
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let mut hello = Vec::new();
    vless::Request {
        uuid: vless::parse_uuid(uuid).unwrap(),
        flow: vless::Flow::None,
        command: vless::Command::Tcp(switchyard_proto::Address::Ip(to)),
    }
    .encode(&mut hello);
    hello.extend_from_slice(b"ping");
    s.write_all(&hello).await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 64];
    while !got.ends_with(b"ping") {
        match tokio::time::timeout(Duration::from_secs(10), s.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => got.extend_from_slice(&buf[..n]),
            Ok(_) => return false,
            Err(_) => panic!("neither the echo nor a close through the node to {to}"),
        }
    }
    true
}

/// Waits until the node routes with `want` rules.
async fn node_rules(node: &EnrolledNode, want: usize) {
    live::wait_until("the node has the inbound's rules", 20, || async {
        node.node().config().await.route.rules.len() == want
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_node_refuses_what_the_panel_blocks_and_carries_it_once_unblocked() {
    let dir = tempfile::tempdir().unwrap();
    let (panel, _) = live::panel(dir.path()).await;
    let service = panel.state.service().clone();
    let store = panel.state.store().clone();
    let cluster = store.create_cluster("c", live::now()).await.unwrap().id;
    let server = live::server(&panel, cluster, "s").await;
    let port = free_port().unwrap();
    let mut input = live::vless(server, "Rules", port, false);
    input.rules = InboundRules {
        block_bittorrent: true,
        block: vec!["127.0.0.2/32".into(), "blocked.example".into()],
        ..InboundRules::default()
    };
    let inbound = service.create_inbound(&input, live::now()).await.unwrap();
    assert_eq!(inbound.rules, input.rules);
    let alice = service
        .create_user(&live::user("alice"), live::now())
        .await
        .unwrap();
    let creds = live::credentials(&panel, &alice).await;
    let nodes = live::join_all(&panel, dir.path(), &[server]).await;
    node_rules(&nodes[0], 3).await;
    let (open, blocked) = (
        live::echo_server().await,
        live::echo_server_on([127, 0, 0, 2]).await,
    );
    assert!(echoes(port, &creds.vless_uuid, open).await, "127.0.0.1");
    assert!(!echoes(port, &creds.vless_uuid, blocked).await, "127.0.0.2");
    input.rules = InboundRules::default();
    service.update_inbound(inbound.id, &input).await.unwrap();
    node_rules(&nodes[0], 0).await;
    assert!(
        echoes(port, &creds.vless_uuid, blocked).await,
        "127.0.0.2 unblocked"
    );
    for n in nodes {
        n.shutdown().await;
    }
    panel.shutdown().await;
}
