//! The panel and a real node over the real channel: traffic is counted exactly once
//! across a panel restart, a node restart and a channel cut; a user over their limit
//! is removed from the node live, their connection closed; join tokens are single use
//! and expire; a deleted server's node is refused.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use switchyard_channel::{JoinError, JoinToken};
use switchyard_node::channel::{EnrolledNode, EnrolledOptions, run_enrolled};
use switchyard_node::config::ControlSettings;
use switchyard_panel::Panel;
use switchyard_panel::config::{ChannelSettings, PanelConfig};
use switchyard_panel::model::{
    InboundSecurity, InboundTransport, Protocol, ServerState, UserStatus,
};
use switchyard_panel::store::{InboundInput, ServerInput, Store, UserInput};
use switchyard_proto::address::Address;
use switchyard_proto::vless::{Command, Request};
use switchyard_testkit::{HttpTarget, free_port};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const MIB: u64 = 1 << 20;

fn config(dir: &Path, channel: u16) -> PanelConfig {
    PanelConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: dir.join("panel"),
        channel: ChannelSettings {
            listen: SocketAddr::from(([127, 0, 0, 1], channel)),
            ..ChannelSettings::default()
        },
        ..PanelConfig::default()
    }
}

struct World {
    panel: Panel,
    server: i64,
    user: i64,
    uuid: String,
    port: u16,
}

fn now() -> i64 {
    switchyard_node::accounting::now_ms()
}

/// A panel with one server, a plain VLESS inbound on 127.0.0.1 and one user.
async fn world(dir: &Path, channel: u16, limit: Option<u64>) -> World {
    let panel = Panel::start(config(dir, channel)).await.unwrap();
    let service = panel.state.service().clone();
    let store = panel.state.store().clone();
    let cluster = store.create_cluster("c", now()).await.unwrap();
    let server = service
        .create_server(
            &ServerInput {
                cluster_id: cluster.id,
                name: "s".into(),
                address: "127.0.0.1".into(),
                allow_private_destinations: true,
            },
            now(),
        )
        .await
        .unwrap();
    let port = free_port().unwrap();
    service
        .create_inbound(
            &InboundInput {
                server_id: server.id,
                name: "Local".into(),
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
            now(),
        )
        .await
        .unwrap();
    let user = service
        .create_user(
            &UserInput {
                username: "alice".into(),
                enabled: true,
                note: String::new(),
                traffic_limit: limit,
                reset_strategy: Default::default(),
                expires_ms: None,
                on_hold_days: None,
                device_limit: None,
                address_limit: None,
                clusters: None,
            },
            now(),
        )
        .await
        .unwrap();
    let token = user
        .subscription_path
        .trim_start_matches("/sub/")
        .to_owned();
    let (_, creds) = store.user_by_token(&token, now()).await.unwrap().unwrap();
    World {
        panel,
        server: server.id,
        user: user.id,
        uuid: creds.vless_uuid,
        port,
    }
}

async fn node(dir: &Path, token: Option<String>) -> EnrolledNode {
    let mut options = EnrolledOptions::new(dir.join("node"));
    options.token = token.map(|t| JoinToken::parse(&t).unwrap());
    options.control = Some(ControlSettings {
        listen: "127.0.0.1:0".parse().unwrap(),
        ..ControlSettings::default()
    });
    options.channel.backoff.first = Duration::from_millis(100);
    options.channel.backoff.max = Duration::from_millis(500);
    run_enrolled(options).await.unwrap()
}

fn uuid(text: &str) -> switchyard_proto::vless::Uuid {
    switchyard_node::config::parse_uuid(text).unwrap()
}

/// Opens a VLESS connection to the inbound asking `target` for `n` bytes.
async fn open(port: u16, id: &str, target: SocketAddr, n: u64) -> std::io::Result<TcpStream> {
    let mut out = Vec::new();
    Request {
        uuid: uuid(id),
        flow: switchyard_proto::vless::Flow::None,
        command: Command::Tcp(Address::Ip(target)),
    }
    .encode(&mut out);
    out.extend_from_slice(format!("GET /bytes/{n} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
    let mut s = TcpStream::connect(("127.0.0.1", port)).await?;
    s.write_all(&out).await?;
    Ok(s)
}

/// Downloads `n` bytes through the inbound; true when they all arrived.
async fn download(port: u16, id: &str, target: SocketAddr, n: u64) -> bool {
    let Ok(mut s) = open(port, id, target, n).await else {
        return false;
    };
    let mut got = Vec::new();
    matches!(
        tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut got)).await,
        Ok(Ok(_))
    ) && got.len() as u64 > n
}

async fn wait_until<F: std::future::Future<Output = bool>>(
    what: &str,
    secs: u64,
    mut f: impl FnMut() -> F,
) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !f().await {
        assert!(Instant::now() < deadline, "{what} within {secs} s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn used_down(store: &dyn Store, user: i64) -> u64 {
    store.user(user, now()).await.unwrap().used_down
}

/// The panel's count reaches exactly what the node relayed from the target (its
/// bodies, plus `head` bytes of HTTP head per response), and stays there.
async fn counted_exactly(store: &dyn Store, user: i64, target: &HttpTarget, head: u64) {
    let want = target.bytes_out() + target.requests() * head;
    wait_until("the traffic counted", 15, || async {
        used_down(store, user).await >= want
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        used_down(store, user).await,
        want,
        "counted once, no more, no less"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traffic_is_counted_once_across_restarts_and_a_channel_cut() {
    let dir = tempfile::tempdir().unwrap();
    let channel = free_port().unwrap();
    let target = HttpTarget::start().await.unwrap();
    let w = world(dir.path(), channel, None).await;
    let token = w.panel.join_token(w.server).await.unwrap();
    let mut node = node(dir.path(), Some(token)).await;
    let (port, id, t) = (w.port, w.uuid.clone(), target.addr());
    wait_until("the user reaches the node", 10, || {
        download(port, &id, t, MIB)
    })
    .await;
    assert_eq!(target.requests(), 1, "the first try went through");
    // The size of one response's head, from the first count.
    let store = w.panel.state.store().clone();
    wait_until("the first count", 15, || async {
        used_down(store.as_ref(), w.user).await > MIB
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let head = used_down(store.as_ref(), w.user).await - target.bytes_out();
    assert!((50..500).contains(&head), "an HTTP head is {head} bytes");

    // The panel restarts; the node serves on meanwhile, then catches up.
    let (server, user) = (w.server, w.user);
    w.panel.shutdown().await;
    assert!(
        download(port, &id, t, MIB).await,
        "the node serves while the panel is away"
    );
    let panel = crate::common::start_again(|| config(dir.path(), channel)).await;
    counted_exactly(panel.state.store().as_ref(), user, &target, head).await;

    // The node restarts (from its state directory alone).
    node.shutdown().await;
    node = self::node(dir.path(), None).await;
    wait_until("the restarted node serves", 10, || {
        download(port, &id, t, MIB)
    })
    .await;
    counted_exactly(panel.state.store().as_ref(), user, &target, head).await;

    // The channel is cut; traffic meanwhile is counted when it returns.
    assert!(panel.nodes.disconnect(server));
    assert!(download(port, &id, t, MIB).await);
    assert!(download(port, &id, t, MIB).await);
    counted_exactly(panel.state.store().as_ref(), user, &target, head).await;
    wait_until("the channel is back", 10, || async {
        panel.nodes.held() == vec![server]
    })
    .await;

    node.shutdown().await;
    panel.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_over_the_limit_is_cut_live_and_back_when_it_is_raised() {
    let dir = tempfile::tempdir().unwrap();
    let target = HttpTarget::start().await.unwrap();
    let w = world(dir.path(), free_port().unwrap(), Some(3 * MIB)).await;
    let token = w.panel.join_token(w.server).await.unwrap();
    let node = node(dir.path(), Some(token)).await;
    let (port, id, t) = (w.port, w.uuid.clone(), target.addr());
    wait_until("the user reaches the node", 10, || {
        download(port, &id, t, MIB)
    })
    .await;

    // A connection that stays open (an upload that never ends), then 4 MiB more: the
    // limit is passed, the node drops the user and closes the open connection.
    let mut idle = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let mut out = Vec::new();
    Request {
        uuid: uuid(&id),
        flow: switchyard_proto::vless::Flow::None,
        command: Command::Tcp(Address::Ip(t)),
    }
    .encode(&mut out);
    out.extend_from_slice(b"POST /sink HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000000\r\n\r\n");
    idle.write_all(&out).await.unwrap();
    assert!(download(port, &id, t, 4 * MIB).await);
    let store = w.panel.state.store().clone();
    wait_until("the user is limited", 10, || async {
        store.user(w.user, now()).await.unwrap().status == UserStatus::Limited
    })
    .await;
    let mut buf = [0u8; 64];
    let closed = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match idle.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(
        closed.is_ok(),
        "the limited user's open connection was closed"
    );
    assert!(
        !download(port, &id, t, MIB).await,
        "a limited user gets nothing"
    );

    // The limit is raised: back within seconds.
    let input = UserInput {
        username: "alice".into(),
        enabled: true,
        note: String::new(),
        traffic_limit: Some(100 * MIB),
        reset_strategy: Default::default(),
        expires_ms: None,
        on_hold_days: None,
        device_limit: None,
        address_limit: None,
        clusters: None,
    };
    w.panel
        .state
        .service()
        .update_user(w.user, &input, now())
        .await
        .unwrap();
    wait_until("the user is back", 10, || download(port, &id, t, MIB)).await;
    let server = store.server(w.server).await.unwrap();
    assert_eq!(server.state, ServerState::Online);
    assert_eq!(server.state_reason, "");

    // The node goes away: unavailable after the grace, with the reason.
    node.shutdown().await;
    let since = Instant::now();
    wait_until("the server unavailable", 20, || async {
        store.server(w.server).await.unwrap().state == ServerState::Unavailable
    })
    .await;
    assert!(
        since.elapsed() >= Duration::from_secs(8),
        "not before the grace"
    );
    let server = store.server(w.server).await.unwrap();
    assert_eq!(server.state_reason, "the node's channel is down");
    w.panel.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn join_tokens_are_single_use_and_expire_and_a_deleted_server_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path(), free_port().unwrap());
    cfg.channel.join_token_ttl_s = 1;
    let panel = Panel::start(cfg).await.unwrap();
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
    let token = JoinToken::parse(&panel.join_token(server.id).await.unwrap()).unwrap();
    let a = dir.path().join("a");
    switchyard_channel::join(&token, &a, "a").await.unwrap();
    assert!(store.server(server.id).await.unwrap().joined);
    let again = switchyard_channel::join(&token, &dir.path().join("b"), "b").await;
    match again {
        Err(JoinError::Refused { detail }) => assert_eq!(detail, "the join token was already used"),
        other => panic!("a reused token: {other:?}"),
    }
    // A server whose node has joined takes no new token (replacing its node does:
    // join_tokens.rs), so the expiry is tried on a second server.
    let second = panel
        .state
        .service()
        .create_server(
            &ServerInput {
                cluster_id: cluster.id,
                name: "s2".into(),
                address: "127.0.0.1".into(),
                allow_private_destinations: false,
            },
            now(),
        )
        .await
        .unwrap();
    let late = JoinToken::parse(&panel.join_token(second.id).await.unwrap()).unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    match switchyard_channel::join(&late, &dir.path().join("c"), "c").await {
        Err(JoinError::Refused { detail }) => assert_eq!(detail, "the join token expired"),
        other => panic!("an expired token: {other:?}"),
    }
    // The enrolled node holds its channel; once its server is deleted, its pinned
    // certificate opens nothing.
    let mut options = EnrolledOptions::new(&a);
    options.control = Some(ControlSettings {
        listen: "127.0.0.1:0".parse().unwrap(),
        ..ControlSettings::default()
    });
    options.channel.backoff.first = Duration::from_millis(100);
    options.channel.backoff.max = Duration::from_millis(300);
    let node = run_enrolled(options).await.unwrap();
    wait_until("the channel is up", 10, || async {
        panel.nodes.held() == vec![server.id]
    })
    .await;
    store.delete_server(server.id).await.unwrap();
    panel.nodes.disconnect(server.id);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        panel.nodes.held().is_empty(),
        "the deleted server's node is refused"
    );
    let status = node.status().borrow().clone();
    assert!(status.connected_since_ms.is_none(), "{status:?}");
    node.shutdown().await;
    panel.shutdown().await;
}
