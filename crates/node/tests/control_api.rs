//! The control API, called through its router without a socket, and the journal's
//! durability across a node restart.

mod common;

use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::*;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use switchyard_node::journal::Store;
use switchyard_node::{Node, NodeConfig, control};
use switchyard_testkit::SingBox;
use switchyard_testkit::config::vless_outbound;
use tower::ServiceExt;

async fn call(f: &Fixture, method: &str, uri: &str, body: Option<Value>) -> (StatusCode, String) {
    let token = format!("Bearer {}", f.node.control_token().expose());
    let (status, _, body) = call_with(f, method, uri, body, Some(&token)).await;
    (status, body)
}

/// A call with `authorization` as the header (none when `None`); the status, the
/// content type and the body.
async fn call_with(
    f: &Fixture,
    method: &str,
    uri: &str,
    body: Option<Value>,
    authorization: Option<&str>,
) -> (StatusCode, String, String) {
    let mut req = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/json");
    if let Some(a) = authorization {
        req = req.header("authorization", a);
    }
    let req = req
        .body(body.map_or_else(Body::empty, |b| Body::from(b.to_string())))
        .unwrap();
    let resp = control::router(f.node.clone()).oneshot(req).await.unwrap();
    let status = resp.status();
    let kind = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (status, kind, String::from_utf8(bytes.to_vec()).unwrap())
}

/// Stops the fixture's node (a clean stop takes a last journal record) and starts
/// one on the same state directory, without inbounds.
async fn restart(f: &Fixture) -> std::sync::Arc<Node> {
    let config = f.node.config().await;
    f.node.shutdown().await;
    Node::start(NodeConfig {
        inbounds: vec![],
        ..config
    })
    .await
    .unwrap()
}

async fn json(f: &Fixture, uri: &str) -> Value {
    let (status, body) = call(f, "GET", uri, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    serde_json::from_str(&body).unwrap()
}

#[tokio::test]
async fn status_stats_ack_config_and_metrics() {
    let f = start("protocol = \"vless\"").await;
    let client = SingBox::client(vless_outbound(f.addr(), ALICE_UUID))
        .await
        .unwrap();
    f.http
        .download_via_socks(client.proxy_addr().unwrap(), 100_000)
        .await
        .unwrap();

    let status = json(&f, "/v1/status").await;
    assert_eq!(status["version"], 1);
    assert_eq!(status["inbounds"][0]["tag"], "main");

    // Live counters, then a journal record on flush, read after a cursor, acked.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let stats = json(&f, "/v1/stats").await;
    assert!(stats["users"]["alice"]["down"].as_u64().unwrap() >= 100_000);
    assert!(stats["users"]["alice"]["last_active_ms"].as_i64().unwrap() > 0);
    // (The node's own flush, every second, may have taken some of them already.)
    f.node.flush_journal().await.unwrap();
    let stats = json(&f, "/v1/stats?cursor=0").await;
    let seq = stats["next_cursor"].as_u64().unwrap();
    let records = stats["records"].as_array().unwrap();
    assert_eq!(records.last().unwrap()["seq"], seq);
    let down: u64 = records
        .iter()
        .map(|r| r["users"]["alice"]["down"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(down, f.alice().1);
    assert_eq!(
        json(&f, &format!("/v1/stats?cursor={seq}")).await["records"],
        json!([])
    );
    let (code, _) = call(&f, "POST", "/v1/stats/ack", Some(json!({"cursor": seq}))).await;
    assert_eq!(code, StatusCode::NO_CONTENT);
    assert_eq!(json(&f, "/v1/status").await["journal"]["pending"], 0);

    // Config: change, refuse a broken one with the field named.
    let mut config = serde_json::to_value(f.node.config().await).unwrap();
    config["version"] = json!(2);
    let (code, body) = call(&f, "PUT", "/v1/config", Some(config.clone())).await;
    assert_eq!((code, body.as_str()), (StatusCode::OK, r#"{"applied":2}"#));
    config["inbounds"][0]["port"] = json!(0);
    let (code, body) = call(&f, "PUT", "/v1/config", Some(config)).await;
    assert_eq!(code, StatusCode::BAD_REQUEST);
    assert!(body.contains("inbounds[0].port"), "{body}");
    let (code, body) = call(&f, "PUT", "/v1/config", Some(json!({"inbounds": 3}))).await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(json(&f, "/v1/status").await["version"], 2);

    let (code, metrics) = call(&f, "GET", "/metrics", None).await;
    assert_eq!(code, StatusCode::OK);
    assert!(
        metrics.contains("switchyard_inbound_bytes_total{inbound=\"main\",direction=\"down\"}"),
        "{metrics}"
    );
    assert!(metrics.contains("# TYPE switchyard_node_connections gauge"));
}

#[tokio::test]
async fn counts_survive_a_node_restart_and_nothing_counts_twice() {
    let f = start("protocol = \"vless\"").await;
    let client = SingBox::client(vless_outbound(f.addr(), ALICE_UUID))
        .await
        .unwrap();
    f.http
        .download_via_socks(client.proxy_addr().unwrap(), 200_000)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let counted = f.alice().1;
    // A clean stop takes the last record.
    drop(client);
    let restarted = restart(&f).await;
    let (records, cursor) = restarted.read_journal(0, 100).await.unwrap();
    let journaled: u64 = records
        .iter()
        .filter_map(|r| r.users.get("alice"))
        .map(|b| b.down)
        .sum();
    assert_eq!(journaled, counted);
    // A reader that stored the cursor reads nothing twice; after ack nothing is left.
    assert!(
        restarted
            .read_journal(cursor, 100)
            .await
            .unwrap()
            .0
            .is_empty()
    );
    restarted.ack_journal(cursor).await.unwrap();
    assert_eq!(restarted.journal().pending(), 0);
}

const ROUTES: [(&str, &str); 10] = [
    ("GET", "/v1/status"),
    ("GET", "/v1/stats?cursor=0"),
    ("POST", "/v1/stats/ack"),
    ("GET", "/v1/config"),
    ("PUT", "/v1/config"),
    ("GET", "/v1/tunnels"),
    ("GET", "/v1/tunnels/eu"),
    ("POST", "/v1/tunnels/eu/reset"),
    ("GET", "/metrics"),
    ("GET", "/no/such/route"),
];

fn problem(detail: &str) -> String {
    json!({"type": "about:blank", "title": "Unauthorized", "status": 401, "detail": detail})
        .to_string()
}

#[tokio::test]
async fn every_route_wants_the_token_kept_private_in_the_state_directory() {
    let f = start("protocol = \"vless\"").await;
    let token = f.node.control_token().expose().to_owned();
    let file = f.dir.path().join("control.token");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        format!("{token}\n")
    );
    assert_eq!(mode(&file), 0o600);
    assert_eq!(token.len(), 64);
    let wrong = format!("Bearer {}", "0".repeat(64));
    let missing =
        "send `Authorization: Bearer <token>`; `switchyard node token --config FILE` prints it";
    for (method, uri) in ROUTES {
        for (auth, detail) in [
            (None, missing),
            (Some(wrong.as_str()), "the bearer token is not this node's"),
            (Some(token.as_str()), missing), // not a bearer credential
        ] {
            let got = call_with(&f, method, uri, Some(json!({"cursor": 0})), auth).await;
            assert_eq!(
                got,
                (
                    StatusCode::UNAUTHORIZED,
                    "application/problem+json".into(),
                    problem(detail)
                ),
                "{method} {uri} with {auth:?}"
            );
        }
    }
    // With the token every route answers (a tunnel this node doesn't have: 404).
    let (code, _) = call(&f, "GET", "/v1/tunnels/eu", None).await;
    assert_eq!(code, StatusCode::NOT_FOUND);
    // A restarted node keeps its token.
    let again = restart(&f).await;
    assert_eq!(again.control_token().expose(), token);
}

#[tokio::test]
async fn metrics_can_be_opened_without_the_token_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let cert = switchyard_testkit::TestCert::new("node.test").unwrap();
    let port = switchyard_testkit::free_port().unwrap();
    let text = config_text(port, "protocol = \"vless\"", &cert, dir.path(), "")
        .replace("[control]\n", "[control]\nmetrics_without_token = true\n");
    let f = start_text(text, dir, cert, port).await;
    let (code, _, body) = call_with(&f, "GET", "/metrics", None, None).await;
    assert_eq!(code, StatusCode::OK);
    assert!(body.contains("switchyard_node_connections 0"), "{body}");
    let (code, _, _) = call_with(&f, "GET", "/v1/status", None, None).await;
    assert_eq!(code, StatusCode::UNAUTHORIZED);
}

fn mode(p: &std::path::Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[tokio::test]
async fn reads_show_no_secret_and_a_config_read_back_unfilled_is_refused() {
    let ss = format!(
        "\n[[inbounds]]\ntag = \"ss\"\nprotocol = \"shadowsocks\"\nlisten = \"127.0.0.1\"\nport = {}\nmethod = \"2022-blake3-aes-128-gcm\"\npassword = \"c3dpdGNoeWFyZC1zcnZrZQ==\"\n",
        switchyard_testkit::free_port().unwrap()
    );
    let f = start_with("protocol = \"vless\"", &ss).await;
    let secrets = [
        ALICE_UUID,
        BOB_UUID,
        "alice-password",
        "bob-password",
        "alice-socks",
        SS_ALICE_KEY,
        "c3dpdGNoeWFyZC1zcnZrZQ==",
        f.node.control_token().expose(),
    ];
    let mut everything = String::new();
    for (method, uri) in [
        ("GET", "/v1/config"),
        ("GET", "/v1/status"),
        ("GET", "/v1/stats"),
        ("GET", "/metrics"),
    ] {
        everything += &call(&f, method, uri, None).await.1;
    }
    for s in secrets {
        assert!(!everything.contains(s), "{s} shown: {everything}");
    }
    let read = json(&f, "/v1/config").await;
    assert_eq!(read["users"][0]["vless"], "<redacted>");
    assert_eq!(read["users"][0]["trojan"], "<redacted>");
    assert_eq!(read["users"][0]["socks"], "<redacted>");
    assert_eq!(read["users"][0]["shadowsocks"], "<redacted>");
    assert_eq!(read["inbounds"][1]["password"], "<redacted>");
    // Sent back as read, it is refused with the first placeholder named; with the
    // values filled in, taken.
    let (code, body) = call(&f, "PUT", "/v1/config", Some(read)).await;
    assert_eq!(code, StatusCode::BAD_REQUEST);
    assert_eq!(
        body,
        json!({"error": "inbounds[1].password: holds \"<redacted>\", what reads show in place of a secret; send the real value"}).to_string()
    );
    let mut full = serde_json::to_value(f.node.config().await).unwrap();
    full["version"] = json!(9);
    let (code, body) = call(&f, "PUT", "/v1/config", Some(full)).await;
    assert_eq!((code, body.as_str()), (StatusCode::OK, r#"{"applied":9}"#));
    assert_eq!(
        f.node.config().await.users[0]
            .trojan
            .as_ref()
            .unwrap()
            .expose(),
        "alice-password"
    );
}

#[tokio::test]
async fn every_state_file_is_private_and_so_is_the_directory() {
    // A state directory an older node (or an operator's umask) left open.
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let cert = switchyard_testkit::TestCert::new("node.test").unwrap();
    let port = switchyard_testkit::free_port().unwrap();
    let text = config_text(port, "protocol = \"vless\"", &cert, dir.path(), "");
    let f = start_text(text, dir, cert, port).await;
    let _alice = f
        .node
        .shared()
        .accounting
        .admit("alice", "main", "127.0.0.1".parse().unwrap(), None)
        .unwrap();
    _alice.add(1, 2);
    f.node.flush_journal().await.unwrap();
    assert_eq!(mode(f.dir.path()), 0o700);
    let mut names: Vec<String> = std::fs::read_dir(f.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["config.json", "control.token", "journal.jsonl"]);
    for n in names {
        assert_eq!(mode(&f.dir.path().join(&n)), 0o600, "{n}");
    }
}

#[tokio::test]
async fn a_failed_save_of_the_last_good_config_is_reported_and_the_change_applies() {
    let f = start("protocol = \"vless\"").await;
    // The temporary file can't be created: the save fails, whoever runs the test.
    let blocker = f.dir.path().join("config.json.tmp");
    std::fs::create_dir(&blocker).unwrap();
    let mut c = f.node.config().await;
    c.version = 2;
    c.users[0].enabled = false; // alice
    f.node
        .apply(c)
        .await
        .expect("disabling a user always applies");
    let runtime = f.node.shared().runtime();
    let alice = switchyard_node::config::parse_uuid(ALICE_UUID).unwrap();
    assert!(runtime.users.vless(&alice).is_none(), "alice is refused");
    let status = json(&f, "/v1/status").await;
    assert_eq!(status["version"], 2);
    let error = format!(
        "state file {}: Is a directory (os error 21)",
        blocker.display()
    );
    assert_eq!(
        status["last_good"],
        json!({"saved_version": 1, "error": error, "failures": 1})
    );
    let metrics = call(&f, "GET", "/metrics", None).await.1;
    assert!(
        metrics.contains("\nswitchyard_last_good_saved 0\n"),
        "{metrics}"
    );
    assert!(metrics.contains("\nswitchyard_last_good_save_failures_total 1\n"));
    // Once the disk takes it again, the next change is saved and the report clears.
    std::fs::remove_dir(&blocker).unwrap();
    let mut c = f.node.config().await;
    c.version = 3;
    f.node.apply(c).await.unwrap();
    assert_eq!(
        json(&f, "/v1/status").await["last_good"],
        json!({"saved_version": 3, "error": null, "failures": 1})
    );
    assert_eq!(Node::last_good(f.dir.path()).unwrap().version, 3);
}

/// The journal's file, made to fail like a full disk while `full` is set.
#[derive(Debug)]
struct FullDisk {
    inner: Box<dyn Store>,
    full: Arc<AtomicBool>,
    /// Writes refused.
    refused: Arc<AtomicU64>,
}

impl FullDisk {
    fn check(&self) -> std::io::Result<()> {
        if self.full.load(Ordering::Relaxed) {
            self.refused.fetch_add(1, Ordering::Relaxed);
            return Err(std::io::Error::from(std::io::ErrorKind::StorageFull));
        }
        Ok(())
    }
}

impl Store for FullDisk {
    fn load(&mut self) -> std::io::Result<Vec<u8>> {
        self.inner.load()
    }
    fn append(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        if self.full.load(Ordering::Relaxed) {
            // Half a line reaches the disk, then the space is gone.
            let _ = self.inner.append(&bytes[..bytes.len() / 2]);
        }
        self.check()?;
        self.inner.append(bytes)
    }
    fn truncate(&mut self, len: u64) -> std::io::Result<()> {
        self.inner.truncate(len)
    }
    fn replace(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.check()?;
        self.inner.replace(bytes)
    }
    fn path(&self) -> &std::path::Path {
        self.inner.path()
    }
}

#[tokio::test]
async fn a_full_disk_shows_in_status_and_metrics_and_the_bytes_arrive_when_space_returns() {
    let f = start("protocol = \"vless\"").await;
    let full = Arc::new(AtomicBool::new(true));
    let refused = Arc::new(AtomicU64::new(0));
    let (switch, count) = (full.clone(), refused.clone());
    f.node.journal().wrap_store(move |inner| {
        Box::new(FullDisk {
            inner,
            full: switch,
            refused: count,
        })
    });
    let alice = f
        .node
        .shared()
        .accounting
        .admit("alice", "main", "127.0.0.1".parse().unwrap(), None)
        .unwrap();
    alice.add(1000, 2000);
    assert!(f.node.flush_journal().await.is_err());
    alice.add(5, 5);
    assert!(f.node.flush_journal().await.is_err());
    let path = f.dir.path().join("journal.jsonl");
    let error = format!(
        "traffic journal {}: {}",
        path.display(),
        std::io::Error::from(std::io::ErrorKind::StorageFull)
    );
    // (The node's own flush, every second, may have failed too: count what the disk
    // refused.)
    let status = json(&f, "/v1/status").await;
    let failures = refused.load(Ordering::Relaxed);
    assert!(failures >= 2);
    assert_eq!(
        status["journal"],
        json!({"pending": 0, "acked": 0, "error": error, "write_failures": failures})
    );
    let metrics = call(&f, "GET", "/metrics", None).await.1;
    assert!(
        metrics.contains("\nswitchyard_journal_writable 0\n"),
        "{metrics}"
    );
    assert!(metrics.contains(&format!(
        "\nswitchyard_journal_write_failures_total {failures}\n"
    )));
    // Live counters go on meanwhile.
    assert_eq!(f.alice(), (1005, 2005));
    full.store(false, Ordering::Relaxed);
    f.node.flush_journal().await.unwrap();
    assert_eq!(
        json(&f, "/v1/status").await["journal"]["error"],
        Value::Null
    );
    // On disk: one clean record with every byte (the torn half line is gone).
    drop(alice);
    let again = restart(&f).await;
    let (records, _) = again.read_journal(0, 10).await.unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(
        records[0].users["alice"],
        switchyard_node::journal::Bytes {
            up: 1005,
            down: 2005
        }
    );
}

/// The journal's file on a disk that hangs inside `append` until released.
#[derive(Debug)]
struct HangingDisk {
    inner: Box<dyn Store>,
    entered: Arc<AtomicBool>,
    released: Arc<AtomicBool>,
}

impl Store for HangingDisk {
    fn load(&mut self) -> std::io::Result<Vec<u8>> {
        self.inner.load()
    }
    fn append(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.entered.store(true, Ordering::Relaxed);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !self.released.load(Ordering::Relaxed) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        self.inner.append(bytes)
    }
    fn truncate(&mut self, len: u64) -> std::io::Result<()> {
        self.inner.truncate(len)
    }
    fn replace(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.inner.replace(bytes)
    }
    fn path(&self) -> &std::path::Path {
        self.inner.path()
    }
}

#[tokio::test]
async fn a_hanging_disk_never_stalls_the_control_api() {
    let f = start("protocol = \"vless\"").await;
    let (entered, released) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let (e, r) = (entered.clone(), released.clone());
    f.node.journal().wrap_store(move |inner| {
        Box::new(HangingDisk {
            inner,
            entered: e,
            released: r,
        })
    });
    let alice = f
        .node
        .shared()
        .accounting
        .admit("alice", "main", "127.0.0.1".parse().unwrap(), None)
        .unwrap();
    alice.add(10, 20);
    let node = f.node.clone();
    let flush = tokio::spawn(async move { node.flush_journal().await });
    while !entered.load(Ordering::Relaxed) {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    // A write hangs with the journal locked: status and metrics answer all the same.
    let began = std::time::Instant::now();
    assert_eq!(json(&f, "/v1/status").await["journal"]["pending"], 0);
    assert_eq!(call(&f, "GET", "/metrics", None).await.0, StatusCode::OK);
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "{:?}",
        began.elapsed()
    );
    released.store(true, Ordering::Relaxed);
    flush.await.unwrap().unwrap();
    assert_eq!(json(&f, "/v1/status").await["journal"]["pending"], 1);
}
