//! schemathesis against the live OpenAPI document: a real panel on 127.0.0.1, seeded
//! so ids exist, fuzzed through an API token. Fails when schemathesis finds a server
//! error or an answer the document does not describe (status, content type, schema),
//! and when schemathesis is not installed (`cargo xtask peers`): never skipped.

use std::net::SocketAddr;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use switchyard_panel::{Panel, PanelConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Examples per operation and phase: enough to try each shape of input, few enough
/// that the run stays well under two minutes on a shared machine.
const MAX_EXAMPLES: &str = "20";

/// The checks: all of schemathesis's, so no 5xx, every answer as documented (status,
/// content type, headers, schema), auth never ignored, deleted resources gone...
const CHECKS: &str = "all";

/// ...except the two that read the document as the whole of validation: the panel
/// also refuses schema-valid input for reasons a schema cannot state (a cluster that
/// still has servers, an id that names nothing, rules across fields such as
/// Shadowsocks's method), which `positive_data_acceptance` reports; and
/// `negative_data_rejection` wants out-of-range paging (`offset` past `i64`) refused
/// where the panel clamps it.
const EXCLUDED_CHECKS: &str = "positive_data_acceptance,negative_data_rejection";

/// Stops schemathesis if it hangs.
const DEADLINE: Duration = Duration::from_secs(240);

/// An answer of [`call`].
struct Answer {
    status: u16,
    head: String,
    body: Value,
}

/// One HTTP/1.1 request to the panel (`Connection: close`).
async fn call(addr: SocketAddr, method: &str, path: &str, headers: &str, body: &Value) -> Answer {
    let body = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    let mut s = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{headers}\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).await.unwrap();
    s.write_all(body.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    let text = String::from_utf8_lossy(&out).into_owned();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap();
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    // The panel's answers here are small: one chunk at most.
    let rest = if chunked {
        rest.split_once("\r\n").map_or("", |(_, r)| r)
    } else {
        rest
    };
    Answer {
        status: head[9..12].parse().unwrap(),
        head: head.to_owned(),
        body: serde_json::Deserializer::from_str(rest)
            .into_iter::<Value>()
            .next()
            .and_then(Result::ok)
            .unwrap_or(Value::Null),
    }
}

/// Logs in as `username` and makes an API token with the session.
async fn api_token(addr: SocketAddr, username: &str, password: &str) -> String {
    let login = call(
        addr,
        "POST",
        "/api/v1/session",
        "",
        &json!({"username": username, "password": password}),
    )
    .await;
    assert_eq!(login.status, 200, "login: {}", login.body);
    let cookie = login
        .head
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: "))
        .and_then(|c| c.split(';').next())
        .unwrap()
        .to_owned();
    let csrf = login.body["csrf_token"].as_str().unwrap();
    let created = call(
        addr,
        "POST",
        "/api/v1/tokens",
        &format!("Cookie: {cookie}\r\nX-CSRF-Token: {csrf}\r\n"),
        &json!({"name": "schemathesis"}),
    )
    .await;
    assert_eq!(created.status, 201, "token: {}", created.body);
    created.body["secret"].as_str().unwrap().to_owned()
}

/// A cluster, a server, two inbounds and a user, through the API; the user's
/// subscription token.
async fn seed(addr: SocketAddr, token: &str) -> String {
    let auth = format!("Authorization: Bearer {token}\r\n");
    let post = |path: &'static str, body: Value| {
        let auth = auth.clone();
        async move {
            let a = call(addr, "POST", path, &auth, &body).await;
            assert_eq!(a.status, 201, "{path}: {}", a.body);
            a.body
        }
    };
    let cluster = post("/api/v1/clusters", json!({"name": "main"})).await;
    let server = post(
        "/api/v1/servers",
        json!({"cluster_id": cluster["id"], "name": "ny-1", "address": "203.0.113.1"}),
    )
    .await;
    post(
        "/api/v1/inbounds",
        json!({"server_id": server["id"], "name": "vless", "protocol": "vless", "port": 443,
            "security": {"type": "tls", "certificate": {"source": "self_signed"}}}),
    )
    .await;
    post(
        "/api/v1/inbounds",
        json!({"server_id": server["id"], "name": "ss", "protocol": "shadowsocks",
            "port": 8388, "method": "2022-blake3-aes-128-gcm"}),
    )
    .await;
    let user = post(
        "/api/v1/users",
        json!({"username": "alice", "traffic_limit": 1000000}),
    )
    .await;
    user["subscription_path"]
        .as_str()
        .and_then(|p| p.strip_prefix("/sub/"))
        .unwrap()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemathesis_finds_nothing_against_the_live_document() {
    let st = switchyard_testkit::schemathesis::binary().unwrap_or_else(|e| panic!("{e:#}"));
    let dir = tempfile::tempdir().unwrap();
    let mut config = PanelConfig {
        data_dir: dir.path().to_owned(),
        listen: "127.0.0.1:0".parse().unwrap(),
        ..PanelConfig::default()
    };
    config.channel.listen = "127.0.0.1:0".parse().unwrap();
    let panel = Panel::start(config).await.unwrap();
    let addr = panel.api;
    let admin = panel.first_admin.clone().unwrap();
    let token = api_token(addr, &admin.username, &admin.password).await;
    let subscription = seed(addr, &token).await;
    // No operation returns a subscription token, so schemathesis is given the seeded
    // user's: the formats are tried on a real subscription, not only on 404s.
    let config = dir.path().join("schemathesis.toml");
    std::fs::write(
        &config,
        format!(
            "[[operations]]\ninclude-path = \"/sub/{{token}}\"\n\
             parameters = {{ \"path.token\" = \"{subscription}\" }}\n"
        ),
    )
    .unwrap();

    let run = tokio::process::Command::new(&st)
        .arg("--config-file")
        .arg(&config)
        .arg("run")
        .arg(format!("http://{addr}/api/openapi.json"))
        .args(["--header", &format!("Authorization: Bearer {token}")])
        .args(["--checks", CHECKS])
        .args(["--exclude-checks", EXCLUDED_CHECKS])
        .args(["--max-examples", MAX_EXAMPLES])
        // Deleting the token would leave the rest of the run with 401s only.
        .args(["--exclude-operation-id", "delete_token"])
        // An install over SSH dials the address it is given: tests reach only this
        // machine (its answers are tested in `ssh_install_api::`).
        .args(["--exclude-operation-id", "ssh_install"])
        // Upgrades hand the panel's binary to real nodes (tested in `upgrade_api::`
        // and `switchyard`'s `upgrade_action_vps::`).
        .args(["--exclude-operation-id", "upgrade"])
        .args(["--exclude-operation-id", "upgrade_all"])
        .args(["--seed", "1"])
        .args(["--workers", "1"])
        .args(["--no-color"])
        .env("NO_COLOR", "1")
        .env("SCHEMATHESIS_TELEMETRY", "false")
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(DEADLINE, run)
        .await
        .unwrap_or_else(|_| panic!("schemathesis did not finish in {DEADLINE:?}"))
        .unwrap_or_else(|e| panic!("running {}: {e}", st.display()));
    panel.shutdown().await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Shown with `--nocapture`: what was tested.
    println!("{stdout}");
    assert!(
        out.status.success(),
        "schemathesis failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    // It ran operations, not nothing.
    assert!(stdout.contains("passed"), "{stdout}\n{stderr}");
}
