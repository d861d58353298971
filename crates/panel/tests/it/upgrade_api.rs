//! `POST` and `GET /api/v1/servers/{id}/upgrade` and `/api/v1/servers/upgrade`
//! without a server that can switch binaries: an unknown server (404), auth, CSRF
//! and read-only tokens as for every write, a server that is not connected (the job
//! fails at `uploading`, saying so), and, with a real node joined over the real
//! channel, a second job while one runs (409), the binary handed over whole (48 MiB
//! over HTTP/2, kept `0755` under its sha256 in the node's state directory), and a
//! node that cannot start another process failing the job at `switching` with its
//! reason. The whole upgrade, on a node run by systemd, is `switchyard`'s
//! `upgrade_action_vps::` test.

use std::os::unix::fs::PermissionsExt as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use serde_json::{Value, json};
use sha2::Digest as _;
use switchyard_panel::config::{ChannelSettings, InstallSettings, PanelConfig};

use crate::common::{Harness, server};
use crate::live;

fn path(id: i64) -> String {
    format!("/api/v1/servers/{id}/upgrade")
}

#[tokio::test]
async fn unknown_servers_auth_and_a_server_not_connected() {
    let h = Harness::new().await;
    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("switchyard");
    std::fs::write(&binary, b"a binary").unwrap();
    h.state
        .attach_installer(Arc::new(switchyard_panel::install::Installer::new(
            binary, 1,
        )));
    let t = h.token().await;
    let id = server(&h, &t).await;

    for p in [path(999), path(id)] {
        h.get(&p)
            .bearer(&t)
            .send()
            .await
            .problem(StatusCode::NOT_FOUND);
    }
    h.post(&path(999))
        .bearer(&t)
        .send()
        .await
        .problem(StatusCode::NOT_FOUND);
    h.get("/api/v1/servers/upgrade")
        .bearer(&t)
        .send()
        .await
        .problem(StatusCode::NOT_FOUND);

    // Auth, CSRF and scope as for every write.
    for p in [path(id), "/api/v1/servers/upgrade".to_owned()] {
        h.post(&p).send().await.problem(StatusCode::UNAUTHORIZED);
        let s = h.login().await;
        h.post(&p)
            .cookie(&s)
            .send()
            .await
            .problem(StatusCode::FORBIDDEN);
    }
    let s = h.login().await;
    let read = h
        .post("/api/v1/tokens")
        .session(&s)
        .json(&json!({"name": "ro", "scope": "read"}))
        .send()
        .await
        .ok(StatusCode::CREATED)["secret"]
        .as_str()
        .unwrap()
        .to_owned();
    h.post(&path(id))
        .bearer(&read)
        .send()
        .await
        .problem(StatusCode::FORBIDDEN);

    // The server's node is not connected to this instance: the job fails at once.
    let job = h
        .post(&path(id))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::ACCEPTED);
    assert_eq!(job["state"], "running", "{job}");
    let names: Vec<&str> = job["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["uploading", "switching", "online"]);
    let job =
        until_ended(|| async { h.get(&path(id)).bearer(&t).send().await.ok(StatusCode::OK) }).await;
    assert_eq!(job["state"], "failed", "{job}");
    assert_eq!(job["steps"][0]["state"], "failed", "{job}");
    assert_eq!(job["steps"][1]["state"], "pending", "{job}");
    let error = job["error"].as_str().unwrap();
    assert!(
        error.starts_with(&format!(
            "uploading: server {id} is not connected to this panel instance"
        )),
        "{error}"
    );

    // Every server: none needs it here (no node reported a binary), so it is done.
    let all = h
        .post("/api/v1/servers/upgrade")
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::ACCEPTED);
    assert_eq!(all["state"], "running", "{all}");
    let all = until_ended(|| async {
        h.get("/api/v1/servers/upgrade")
            .bearer(&t)
            .send()
            .await
            .ok(StatusCode::OK)
    })
    .await;
    assert_eq!(all["state"], "done", "{all}");
    assert_eq!(all["servers"], json!([]), "{all}");
    assert_eq!(
        all["sha256"],
        hex(&sha2::Sha256::digest(b"a binary")),
        "{all}"
    );
    // The server list says no upgrade is there for a node whose binary is unknown.
    let listed = h
        .get("/api/v1/servers")
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(listed[0]["upgrade_available"], false, "{listed}");
    assert_eq!(listed[0]["binary_sha256"], Value::Null, "{listed}");
}

fn hex(bytes: &[u8]) -> String {
    switchyard_config::hex::encode(bytes)
}

/// Polls `get` until the job (or the upgrade of every server) is no longer running.
async fn until_ended<F: std::future::Future<Output = Value>>(mut get: impl FnMut() -> F) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let job = get().await;
        if job["state"] != "running" {
            return job;
        }
        assert!(Instant::now() < deadline, "{job}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_node_gets_the_binary_and_a_second_job_is_409() {
    let dir = tempfile::tempdir().unwrap();
    // 48 MiB: reading and hashing it alone takes the first job far past the second
    // request.
    let binary = dir.path().join("switchyard-next");
    let bytes: Vec<u8> = (0..48u32 << 20).map(|i| (i % 251) as u8).collect();
    std::fs::write(&binary, &bytes).unwrap();
    let sha = hex(&sha2::Sha256::digest(&bytes));
    let free =
        || std::net::SocketAddr::from(([127, 0, 0, 1], switchyard_testkit::free_port().unwrap()));
    let http = free();
    let panel = switchyard_panel::Panel::start(PanelConfig {
        listen: http,
        data_dir: dir.path().join("panel"),
        channel: ChannelSettings {
            listen: free(),
            ..ChannelSettings::default()
        },
        install: InstallSettings {
            binary: Some(binary.clone()),
            ..InstallSettings::default()
        },
        ..PanelConfig::default()
    })
    .await
    .unwrap();
    let auth = live::api_token(http, &dir.path().join("panel")).await;
    let store = panel.state.store().clone();
    let cluster = store.create_cluster("c", live::now()).await.unwrap().id;
    let server = live::server(&panel, cluster, "s").await;
    let join = panel.join_command(server).await.unwrap();
    let node_dir = dir.path().join("node");
    let node = live::join(&node_dir, &join.token).await;
    live::wait_until("the node is online", 30, || async {
        let (_, s) = live::http(
            http,
            "GET",
            &format!("/api/v1/servers/{server}"),
            &auth,
            None,
        )
        .await;
        s["state"] == "online" && s["binary_sha256"].is_string()
    })
    .await;
    let (_, listed) = live::http(
        http,
        "GET",
        &format!("/api/v1/servers/{server}"),
        &auth,
        None,
    )
    .await;
    assert_eq!(listed["upgrade_available"], true, "{listed}");
    assert_eq!(
        listed["node_version"],
        env!("CARGO_PKG_VERSION"),
        "{listed}"
    );

    let (status, job) = live::http(http, "POST", &path(server), &auth, None).await;
    assert_eq!(status, 202, "{job}");
    let (status, again) = live::http(http, "POST", &path(server), &auth, None).await;
    assert_eq!(status, 409, "{again}");
    assert_eq!(
        again["detail"],
        "an upgrade of this server is already running"
    );

    let job =
        until_ended(|| async { live::http(http, "GET", &path(server), &auth, None).await.1 }).await;
    // The node has the binary; this node (run by a test, not by `switchyard node`)
    // cannot start another process, and says so.
    assert_eq!(job["steps"][0]["state"], "done", "{job}");
    assert_eq!(job["sha256"], sha.as_str(), "{job}");
    assert_eq!(job["state"], "failed", "{job}");
    let error = job["error"].as_str().unwrap();
    assert!(
        error.starts_with(
            "switching: the node answered 501 Not Implemented: this node cannot upgrade itself"
        ),
        "{error}"
    );
    let kept = node_dir.join("bin").join(format!("switchyard-{sha}"));
    assert_eq!(std::fs::read(&kept).unwrap(), bytes);
    assert_eq!(
        std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777,
        0o755
    );
    node.shutdown().await;
    panel.shutdown().await;
}
