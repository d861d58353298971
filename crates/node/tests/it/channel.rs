//! A node managed over its channel: it joins a panel's channel listener, the "panel"
//! pushes a config with a VLESS inbound and reads status and stats through the channel;
//! the panel restarts, the node serves on meanwhile and reconnects; started again from
//! its state directory alone it holds the channel with its last good config.

use crate::common;

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use switchyard_channel::{
    Backoff, EnrollRefused, EnrollRequest, Enroller, JoinToken, Method, NodeChannel, PanelIdentity,
    Pin, StatusCode, serve_panel,
};
use switchyard_node::channel::{EnrolledOptions, run_enrolled};
use switchyard_node::config::NodeSettings;
use switchyard_testkit::{HttpTarget, free_port};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::sync::{mpsc, oneshot};

#[derive(Default)]
struct TestEnroller {
    secrets: Mutex<HashSet<String>>,
    pins: Mutex<HashMap<Pin, String>>,
}

#[switchyard_channel::async_trait]
impl Enroller for TestEnroller {
    async fn enroll(&self, request: EnrollRequest) -> Result<String, EnrollRefused> {
        if self.secrets.lock().unwrap().remove(request.secret.expose()) {
            Ok(format!("srv-{}", request.hostname))
        } else {
            Err(EnrollRefused::Unknown)
        }
    }

    async fn enrolled(&self, server_id: &str, certificate: Pin) -> Result<(), EnrollRefused> {
        self.pins
            .lock()
            .unwrap()
            .insert(certificate, server_id.into());
        Ok(())
    }

    async fn authorize(&self, der: &[u8]) -> Option<String> {
        self.pins
            .lock()
            .unwrap()
            .get(&Pin::of_certificate(der))
            .cloned()
    }
}

struct Panel {
    channels: mpsc::Receiver<NodeChannel>,
    stop: oneshot::Sender<()>,
    served: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn panel(addr: SocketAddr, id: &Arc<PanelIdentity>, enroller: &Arc<TestEnroller>) -> Panel {
    let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
    let (tx, channels) = mpsc::channel(4);
    let (stop, stopped) = oneshot::channel::<()>();
    let served = tokio::spawn(serve_panel(
        listener,
        id.clone(),
        enroller.clone(),
        tx,
        async move {
            let _ = stopped.await;
        },
    ));
    Panel {
        channels,
        stop,
        served,
    }
}

impl Panel {
    async fn channel(&mut self) -> NodeChannel {
        tokio::time::timeout(Duration::from_secs(10), self.channels.recv())
            .await
            .expect("the node dials within 10 s")
            .unwrap()
    }

    async fn stop(self) {
        let _ = self.stop.send(());
        self.served.await.unwrap().unwrap();
    }
}

async fn get(channel: &NodeChannel, path: &str) -> Value {
    let (code, body) = channel.request(Method::GET, path, None).await.unwrap();
    assert_eq!(code, StatusCode::OK, "{path}: {body:?}");
    serde_json::from_slice(&body).unwrap()
}

/// Downloads `n` bytes through the VLESS inbound on `port`; the bytes that arrived.
async fn download(port: u16, http: &HttpTarget, n: u64) -> usize {
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    s.write_all(&vless_get(ALICE_UUID, http.addr(), n))
        .await
        .unwrap();
    let mut all = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut all)).await;
    all.len()
}

fn options(state: &std::path::Path) -> EnrolledOptions {
    let mut o = EnrolledOptions::new(state);
    o.channel.backoff = Backoff {
        first: Duration::from_millis(50),
        max: Duration::from_millis(200),
        stable: Duration::from_secs(10),
    };
    o
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_is_configured_and_read_over_its_channel_and_outlives_a_panel_restart() {
    let id = Arc::new(PanelIdentity::generate(&[]).unwrap());
    let enroller = Arc::new(TestEnroller::default());
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port().unwrap())
        .parse()
        .unwrap();
    let mut p = panel(addr, &id, &enroller).await;
    let token = JoinToken::generate(addr.to_string(), id.pin().unwrap()).unwrap();
    enroller
        .secrets
        .lock()
        .unwrap()
        .insert(token.secret.clone());

    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let mut o = options(&state);
    o.token = Some(token.clone());
    o.hostname = "a".into();
    o.settings = Some(NodeSettings {
        allow_private_destinations: true,
        ..NodeSettings::default()
    });
    let node = run_enrolled(o).await.unwrap();
    assert_eq!(node.enrollment().server_id, "srv-a");
    let channel = p.channel().await;
    assert_eq!(channel.server_id(), "srv-a");

    // The panel pushes a config with a VLESS inbound (no bearer token on the channel).
    let http = HttpTarget::start().await.unwrap();
    let port = free_port().unwrap();
    let config = json!({
        "version": 5,
        "node": {"allow_private_destinations": true, "state_dir": "/ignored"},
        "inbounds": [{"tag": "main", "protocol": "vless", "listen": "127.0.0.1", "port": port}],
        "users": [{"name": "alice", "vless": ALICE_UUID}],
    });
    let (code, body) = channel
        .request(
            Method::PUT,
            "/v1/config",
            Some(config.to_string().into_bytes()),
        )
        .await
        .unwrap();
    assert_eq!(
        (code, &body[..]),
        (StatusCode::OK, &br#"{"applied":5}"#[..])
    );
    assert_eq!(node.node().config().await.node.state_dir, state);
    assert!(download(port, &http, 10_000).await > 10_000);

    let status = get(&channel, "/v1/status").await;
    assert_eq!(status["version"], 5);
    assert_eq!(status["panel"]["server_id"], "srv-a");
    assert!(status["panel"]["connected_since_ms"].is_u64(), "{status}");
    assert_eq!(status["inbounds"][0]["tag"], "main");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let stats = get(&channel, "/v1/stats").await;
    assert!(
        stats["users"]["alice"]["down"].as_u64().unwrap() >= 10_000,
        "{stats}"
    );

    // The panel goes away: the node serves on, dials again, and the new panel finds
    // the config in force.
    p.stop().await;
    tokio::time::timeout(Duration::from_secs(5), channel.closed())
        .await
        .unwrap();
    assert!(download(port, &http, 1000).await > 1000);
    let mut p = panel(addr, &id, &enroller).await;
    let channel = p.channel().await;
    let read = get(&channel, "/v1/config").await;
    assert_eq!(read["version"], 5);
    assert_eq!(read["users"][0]["vless"], "<redacted>");
    assert!(node.status().borrow().connections >= 2);
    assert!(download(port, &http, 1000).await > 1000);
    node.shutdown().await;

    // Started again from the state directory alone: the last good config, the channel.
    let again = run_enrolled(options(&state)).await.unwrap();
    let channel = p.channel().await;
    assert_eq!(get(&channel, "/v1/status").await["version"], 5);
    assert!(download(port, &http, 1000).await > 1000);
    again.shutdown().await;

    // A second use of the token is refused with the panel's reason.
    let mut o = options(&dir.path().join("other"));
    o.token = Some(token);
    let e = run_enrolled(o).await.unwrap_err().to_string();
    assert_eq!(
        e,
        "the panel refused to enroll this node: unknown join token"
    );
    let e = run_enrolled(options(&dir.path().join("none")))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("has not joined a panel"), "{e}");
    p.stop().await;
}
