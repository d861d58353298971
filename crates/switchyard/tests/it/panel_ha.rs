//! Two `switchyard panel` processes on one PostgreSQL: they serve the same data, and a
//! change made through one reaches a node held by the other within a second
//! (PostgreSQL's LISTEN/NOTIFY).

use std::net::SocketAddr;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchyard_testkit::{Postgres, free_port};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_switchyard"));
    c.env("RUST_LOG", "warn").kill_on_drop(true);
    c
}

/// Starts `switchyard panel` and returns it with its API address and, when it made the
/// first admin, the password it printed.
async fn panel(db: &str, dir: &std::path::Path) -> (Child, SocketAddr, Option<String>) {
    let api = SocketAddr::from(([127, 0, 0, 1], free_port().unwrap()));
    let channel = SocketAddr::from(([127, 0, 0, 1], free_port().unwrap()));
    let mut child = bin()
        .args(["panel", "--data"])
        .arg(dir)
        .args([
            "--listen",
            &api.to_string(),
            "--channel-listen",
            &channel.to_string(),
        ])
        .env("SWITCHYARD_PANEL_DATABASE_URL", db)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut password = None;
    loop {
        let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .expect("the panel starts within 60 s")
            .unwrap()
            .expect("the panel exited");
        if let Some(rest) = line.strip_prefix("first admin: admin / ") {
            password = Some(rest.split_whitespace().next().unwrap().to_owned());
        }
        if line.starts_with("node channel: ") {
            break;
        }
    }
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, api, password)
}

async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    auth: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: {auth}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).await.unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

/// An API token, made through a session on `api`.
async fn api_token(api: SocketAddr, password: &str) -> String {
    let mut s = TcpStream::connect(api).await.unwrap();
    let body = json!({ "username": "admin", "password": password }).to_string();
    let req = format!(
        "POST /api/v1/session HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).await.unwrap();
    let cookie = raw
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: "))
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let csrf: Value = serde_json::from_str(raw.split_once("\r\n\r\n").unwrap().1).unwrap();
    let csrf = csrf["csrf_token"].as_str().unwrap();
    let mut s = TcpStream::connect(api).await.unwrap();
    let body = json!({ "name": "test" }).to_string();
    let req = format!(
        "POST /api/v1/tokens HTTP/1.1\r\nHost: x\r\nConnection: close\r\nCookie: {cookie}\r\n\
         X-CSRF-Token: {csrf}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).await.unwrap();
    let token: Value = serde_json::from_str(raw.split_once("\r\n\r\n").unwrap().1).unwrap();
    format!("Bearer {}", token["secret"].as_str().unwrap())
}

/// The user names in the node's running config, read from its loopback control API.
async fn node_users(control: SocketAddr, token: &str) -> Vec<String> {
    let (status, config) = http(
        control,
        "GET",
        "/v1/config",
        &format!("Bearer {token}"),
        None,
    )
    .await;
    assert_eq!(status, 200);
    config["users"]
        .as_array()
        .map(|u| {
            u.iter()
                .map(|u| u["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_through_one_instance_reaches_a_node_held_by_the_other_within_a_second() {
    let pg = Postgres::start().expect("a private PostgreSQL cluster");
    let db = pg.fresh_database("ha").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (_a, a, password) = panel(&db, &dir.path().join("a")).await;
    let password = password.expect("the first instance makes the first admin");
    let (_b, b, none) = panel(&db, &dir.path().join("b")).await;
    assert!(
        none.is_none(),
        "the second instance finds the admin made by the first"
    );
    let (ta, tb) = (api_token(a, &password).await, api_token(b, &password).await);

    // The same data through either instance.
    let (s, cluster) = http(
        a,
        "POST",
        "/api/v1/clusters",
        &ta,
        Some(json!({ "name": "c" })),
    )
    .await;
    assert_eq!(s, 201, "{cluster}");
    let (_, listed) = http(b, "GET", "/api/v1/clusters", &tb, None).await;
    assert_eq!(listed[0]["name"], "c");
    let server = json!({ "cluster_id": cluster["id"], "name": "s", "address": "127.0.0.1" });
    let (s, server) = http(a, "POST", "/api/v1/servers", &ta, Some(server)).await;
    assert_eq!(s, 201, "{server}");
    let id = server["id"].as_i64().unwrap();

    // The node joins through instance B (the token names B's channel listener).
    let (s, join) = http(b, "POST", &format!("/api/v1/servers/{id}/join"), &tb, None).await;
    assert_eq!(s, 201, "{join}");
    let control = SocketAddr::from(([127, 0, 0, 1], free_port().unwrap()));
    let state = dir.path().join("node");
    let _node = bin()
        .args([
            "node",
            "join",
            join["token"].as_str().unwrap(),
            "--state-dir",
        ])
        .arg(&state)
        .args(["--control", &control.to_string()])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let port = free_port().unwrap();
    let inbound = json!({ "server_id": id, "name": "Local", "protocol": "vless", "port": port });
    let (s, inbound) = http(a, "POST", "/api/v1/inbounds", &ta, Some(inbound)).await;
    assert_eq!(s, 201, "{inbound}");
    let (s, user) = http(
        a,
        "POST",
        "/api/v1/users",
        &ta,
        Some(json!({ "username": "alice" })),
    )
    .await;
    assert_eq!(s, 201, "{user}");
    let uid = user["id"].as_i64().unwrap();
    let name = format!("u{uid}");

    let deadline = Instant::now() + Duration::from_secs(30);
    let token = loop {
        if let Ok(t) = std::fs::read_to_string(state.join("control.token"))
            && TcpStream::connect(control).await.is_ok()
            && node_users(control, t.trim()).await.contains(&name)
        {
            break t.trim().to_owned();
        }
        assert!(
            Instant::now() < deadline,
            "the node got the user from instance B"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };

    // Disabled through A; the node held by B drops the user within a second.
    for enabled in [false, true] {
        let started = Instant::now();
        let body = json!({ "username": "alice", "enabled": enabled });
        let (s, _) = http(a, "PUT", &format!("/api/v1/users/{uid}"), &ta, Some(body)).await;
        assert_eq!(s, 200);
        while node_users(control, &token).await.contains(&name) != enabled {
            assert!(
                started.elapsed() < Duration::from_secs(1),
                "the change through A reached the node held by B within a second"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    drop(pg);
}
