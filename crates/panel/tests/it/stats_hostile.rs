//! A node that reports hostile traffic, through a real node whose journal says what
//! the test wants (written while it is stopped), on SQLite and PostgreSQL:
//! - a record of `u64::MAX` bytes is refused and counted; the users list answers, the
//!   server stays online, reset-usage works;
//! - records for another cluster's user and for made-up ids charge nobody, start no
//!   on-hold clock and are counted;
//! - a record with 100,000 made-up ids is refused without a write, and an admin's
//!   `PUT` issued while the round runs completes;
//! - usage sums saturate at the largest integer instead of corrupting the row.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchyard_node::channel::{EnrolledNode, EnrolledOptions, run_enrolled};
use switchyard_node::config::ControlSettings;
use switchyard_panel::Panel;
use switchyard_panel::config::{ChannelSettings, PanelConfig};
use switchyard_panel::model::ServerState;
use switchyard_panel::store::{
    Changes, ServerStore, SqlStore, TrafficBatch, TrafficStore, UserQuery, UserStore,
};
use switchyard_testkit::free_port;

use crate::live::{self, now, wait_until};

async fn panel(dir: &Path, database_url: Option<String>) -> (Panel, std::net::SocketAddr) {
    let http = std::net::SocketAddr::from(([127, 0, 0, 1], free_port().unwrap()));
    let panel = Panel::start(PanelConfig {
        listen: http,
        data_dir: dir.join("panel"),
        database_url,
        channel: ChannelSettings {
            listen: std::net::SocketAddr::from(([127, 0, 0, 1], free_port().unwrap())),
            ..ChannelSettings::default()
        },
        ..PanelConfig::default()
    })
    .await
    .unwrap();
    (panel, http)
}

/// The enrolled node in `dir` started again from its state directory.
async fn restart(dir: &Path) -> EnrolledNode {
    let mut options = EnrolledOptions::new(dir.to_owned());
    options.control = Some(ControlSettings {
        listen: "127.0.0.1:0".parse().unwrap(),
        ..ControlSettings::default()
    });
    options.channel.backoff.first = Duration::from_millis(100);
    options.channel.backoff.max = Duration::from_millis(500);
    run_enrolled(options).await.unwrap()
}

/// Appends records (user name → (up, down)) to the stopped node's journal after every
/// number it used; returns the last record's number.
fn append(dir: &Path, records: &[Vec<(String, u64, u64)>]) -> u64 {
    let path = dir.join(switchyard_node::journal::FILE);
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let mut top = 0u64;
    for line in text.lines() {
        let n = line
            .strip_prefix("ack ")
            .or_else(|| line.strip_prefix("read "))
            .and_then(|n| n.trim().parse().ok())
            .or_else(|| serde_json::from_str::<Value>(line).ok()?["seq"].as_u64());
        top = top.max(n.unwrap_or(0));
    }
    let mut out = text;
    for r in records {
        top += 1;
        let users: serde_json::Map<String, Value> = r
            .iter()
            .map(|(n, up, down)| (n.clone(), json!({ "up": up, "down": down })))
            .collect();
        out.push_str(&json!({ "seq": top, "at_ms": now(), "users": users }).to_string());
        out.push('\n');
    }
    std::fs::write(&path, out).unwrap();
    top
}

/// `GET path` with `auth`: status and body text.
async fn get_text(addr: std::net::SocketAddr, path: &str, auth: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: {auth}\r\n\r\n"
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).await.unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    (
        head.split(' ').nth(1).unwrap().parse().unwrap(),
        body.to_owned(),
    )
}

/// The panel's count of refused stats entries for `reason`.
async fn refused(addr: std::net::SocketAddr, auth: &str, reason: &str) -> u64 {
    let (status, body) = get_text(addr, "/metrics", auth).await;
    assert_eq!(status, 200);
    let line = format!("switchyard_panel_stats_refused_total{{reason=\"{reason}\"}} ");
    body.lines()
        .find_map(|l| l.strip_prefix(line.as_str()))
        .unwrap_or_else(|| panic!("no {line} in the metrics"))
        .trim()
        .parse()
        .unwrap()
}

async fn story(database_url: Option<String>) {
    let dir = tempfile::tempdir().unwrap();
    let (panel, addr) = panel(dir.path(), database_url).await;
    let store = panel.state.store().clone();
    let service = panel.state.service().clone();
    let a = store.create_cluster("a", now()).await.unwrap().id;
    let b = store.create_cluster("b", now()).await.unwrap().id;
    let server = live::server(&panel, a, "s").await;
    let mut alice = live::user("alice");
    alice.clusters = Some(vec![a]);
    let alice = service.create_user(&alice, now()).await.unwrap().id;
    let mut bob = live::user("bob");
    bob.clusters = Some(vec![b]);
    bob.on_hold_days = Some(3);
    let bob = service.create_user(&bob, now()).await.unwrap().id;
    let node_dir = dir.path().join("node-0");
    let node = live::join_all(&panel, dir.path(), &[server]).await;
    let auth = live::api_token(addr, &dir.path().join("panel")).await;
    let stored = |seq: u64| {
        let store = store.clone();
        async move { store.stats_state(server).await.unwrap().cursor >= seq }
    };

    // 1. u64::MAX for alice, a real record for her, another cluster's on-hold user, a
    //    made-up id and a name that is no user.
    for n in node {
        n.shutdown().await;
    }
    let (ua, ub) = (format!("u{alice}"), format!("u{bob}"));
    let last = append(
        &node_dir,
        &[
            vec![(ua.clone(), u64::MAX, 0)],
            vec![
                (ua.clone(), 1000, 2000),
                (ub.clone(), 5000, 5000),
                ("u999999".into(), 7, 7),
                ("admin".into(), 1, 1),
            ],
        ],
    );
    let node = restart(&node_dir).await;
    wait_until("the records are read", 20, || stored(last)).await;
    let user = store.user(alice, now()).await.unwrap();
    assert_eq!(
        (user.used_up, user.used_down),
        (1000, 2000),
        "the u64::MAX record is refused, the real one counted"
    );
    let bob_now = store.user(bob, now()).await.unwrap();
    assert_eq!(
        bob_now.used_up + bob_now.used_down,
        0,
        "another cluster's user"
    );
    assert_eq!(bob_now.first_connected_ms, None, "no on-hold clock started");
    assert_eq!(refused(addr, &auth, "over_allowance").await, 1);
    assert_eq!(refused(addr, &auth, "not_this_server").await, 3);
    let (status, users) = live::http(addr, "GET", "/api/v1/users", &auth, None).await;
    assert_eq!(status, 200, "{users}");
    // Several heartbeats later the server is still online and the node acknowledged.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        store.server(server).await.unwrap().state,
        ServerState::Online
    );
    let (status, reset) = live::http(
        addr,
        "POST",
        &format!("/api/v1/users/{alice}/reset-usage"),
        &auth,
        None,
    )
    .await;
    assert_eq!(status, 200, "{reset}");
    assert_eq!(reset["used_up"], 0);

    // 2. 100,000 made-up ids and one real entry, while an admin changes a user.
    node.shutdown().await;
    let mut flood: Vec<(String, u64, u64)> = (0..100_000)
        .map(|i| (format!("u{}", 10_000_000 + i), 1, 1))
        .collect();
    flood.push((ua.clone(), 10, 20));
    let last = append(&node_dir, &[flood]);
    let node = restart(&node_dir).await;
    let mut slowest = Duration::ZERO;
    let mut puts = 0;
    while !stored(last).await {
        let started = Instant::now();
        let body = json!({ "username": "alice", "clusters": [a], "note": format!("put {puts}") });
        let (status, answer) = live::http(
            addr,
            "PUT",
            &format!("/api/v1/users/{alice}"),
            &auth,
            Some(&body),
        )
        .await;
        assert_eq!(status, 200, "{answer}");
        slowest = slowest.max(started.elapsed());
        puts += 1;
        assert!(puts < 2000, "the round ends");
    }
    eprintln!("{puts} admin PUTs during the round, the slowest took {slowest:?}");
    let user = store.user(alice, now()).await.unwrap();
    assert_eq!(
        (user.used_up, user.used_down),
        (10, 20),
        "only alice is charged"
    );
    assert_eq!(
        refused(addr, &auth, "not_this_server").await,
        3 + 100_000,
        "every made-up id refused and counted"
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        store.server(server).await.unwrap().state,
        ServerState::Online
    );
    let journal = node.status().borrow().clone();
    eprintln!("node status after the rounds: {journal:?}");
    node.shutdown().await;
    panel.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_stats_on_sqlite() {
    story(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_stats_on_postgres() {
    let pg = switchyard_testkit::Postgres::start().expect("a private PostgreSQL cluster");
    story(Some(pg.fresh_database("hostile").unwrap())).await;
    drop(pg);
}

/// Usage added past `i64::MAX` stays at `i64::MAX`: the row stays an integer, the
/// users list answers, a reset works.
async fn saturates(store: SqlStore) {
    let c = store.create_cluster("c", now()).await.unwrap();
    let s = store
        .create_server(
            &switchyard_panel::store::ServerInput {
                cluster_id: c.id,
                name: "s".into(),
                address: "127.0.0.1".into(),
                allow_private_destinations: false,
            },
            now(),
        )
        .await
        .unwrap();
    let creds = switchyard_panel::model::Credentials {
        vless_uuid: "00000000-0000-4000-8000-000000000001".into(),
        trojan_password: "p".into(),
        ss_seed: "s".into(),
    };
    let u = store
        .create_user(&live::user("max"), &creds, "tok-max", now())
        .await
        .unwrap();
    for cursor in 1..=3 {
        let batch = TrafficBatch {
            cursor,
            users: vec![(u.id, u64::MAX, u64::MAX / 2)],
        };
        store
            .record_traffic(s.id, &batch, &[], now())
            .await
            .unwrap();
    }
    let users = store.users(&UserQuery::default(), now()).await.unwrap();
    assert_eq!(users[0].used_up, i64::MAX as u64);
    assert_eq!(users[0].used_down, i64::MAX as u64);
    assert_eq!(users[0].lifetime_bytes, i64::MAX as u64);
    assert_eq!(store.reset_usage(u.id, now()).await.unwrap().used_up, 0);
}

#[tokio::test]
async fn usage_saturates_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqlStore::open_sqlite(&dir.path().join("panel.db"), Changes::default())
        .await
        .unwrap();
    saturates(store).await;
}

#[tokio::test]
async fn usage_saturates_on_postgres() {
    let pg = switchyard_testkit::Postgres::start().expect("a private PostgreSQL cluster");
    let url = pg.fresh_database("saturates").unwrap();
    saturates(SqlStore::open(&url, Changes::default()).await.unwrap()).await;
    drop(pg);
}
