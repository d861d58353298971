//! The install over SSH from the panel, against a real OpenSSH server: a fresh Debian
//! server (debootstrap, booted with systemd-nspawn in the client side of a namespace
//! pair, Debian's `openssh-server` started by its systemd) and the panel in-process
//! on the servers side (10.77.0.1), driven through its API as an operator would:
//!
//! - the first request only reads the host key: its fingerprint is the one computed
//!   here from the server's `/etc/ssh/ssh_host_ed25519_key.pub`;
//! - a wrong password fails at `connecting`, saying the login was refused;
//! - a key login with a broken `sha256sum` on the server fails at `uploading`, with
//!   the server's words, and installs nothing;
//! - a password login with the firewall ticked runs every step to `online`: the node
//!   runs as a service, the panel shows it online with its version, and `nft list
//!   table inet switchyard` on the server shows SSH's and the inbound's ports;
//! - once the server's host key changes, the install is refused at `host_key`, both
//!   fingerprints named.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};
use sha2::Digest as _;
use switchyard_panel::model::ServerState;
use switchyard_testkit::netns::{self, NsRuntime};
use switchyard_testkit::vps::Vps;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::vps_panel::{PANEL_AT, shadowsocks_server, start_panel};

/// The Shadowsocks inbound's port on the server (TCP and UDP in the firewall).
const INBOUND_PORT: u16 = 8388;
/// Root's password on the test server.
const PASSWORD: &str = "correct horse battery staple";

fn now() -> i64 {
    switchyard_panel::clock::now_ms()
}

/// One API call from the servers' namespace: the status and the JSON body.
async fn call(
    ns: &NsRuntime,
    addr: SocketAddr,
    token: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: p\r\nConnection: close\r\nAuthorization: Bearer \
         {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let raw = ns
        .run(async move {
            let mut s = TcpStream::connect(addr).await.unwrap();
            s.write_all(request.as_bytes()).await.unwrap();
            let mut raw = Vec::new();
            s.read_to_end(&mut raw).await.unwrap();
            raw
        })
        .await;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

/// The fingerprint OpenSSH prints for a `.pub` file's key: `SHA256:` and the
/// unpadded base64 of the key blob's sha256.
fn fingerprint(pub_file: &str) -> String {
    let blob = pub_file.split_whitespace().nth(1).unwrap();
    let blob = base64::engine::general_purpose::STANDARD
        .decode(blob)
        .unwrap();
    let hash = sha2::Sha256::digest(&blob);
    format!(
        "SHA256:{}",
        base64::engine::general_purpose::STANDARD_NO_PAD.encode(hash)
    )
}

/// The panel, its API token, and the server to install.
struct Setup {
    servers: Arc<NsRuntime>,
    panel_at: SocketAddr,
    token: String,
    server: i64,
}

impl Setup {
    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        call(
            &self.servers,
            self.panel_at,
            &self.token,
            method,
            path,
            body,
        )
        .await
    }

    /// Starts an install with `body`, then polls until it has ended; the job.
    async fn install(&self, body: Value) -> Value {
        let path = format!("/api/v1/servers/{}/ssh-install", self.server);
        let (status, started) = self.call("POST", &path, Some(body)).await;
        assert_eq!(status, 202, "{started:#}");
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            let (status, job) = self.call("GET", &path, None).await;
            assert_eq!(status, 200, "{job:#}");
            if job["state"] != "running" {
                return job;
            }
            assert!(Instant::now() < deadline, "the job within 300 s: {job:#}");
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }
}

/// The step named `name` of `job`.
fn step<'a>(job: &'a Value, name: &str) -> &'a Value {
    job["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("a step {name} in {job:#}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_panel_installs_a_fresh_server_over_ssh() {
    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("switchyard");
    std::fs::copy(env!("CARGO_BIN_EXE_switchyard"), &binary).unwrap();

    let pair = netns::pair().unwrap();
    let servers = Arc::new(pair.servers.runtime_in().unwrap());
    let panel_at = PANEL_AT;
    let (panel_runtime, panel) = start_panel(&pair, dir.path(), binary.clone());
    let store = panel.state.store().clone();
    let admin = store
        .admin_by_username(&panel.first_admin.as_ref().unwrap().username)
        .await
        .unwrap()
        .unwrap();
    let token = "sy_ssh_install_test_token_0123456789";
    store
        .create_api_token(
            admin.0.id,
            "test",
            &switchyard_panel::store::token_hash::hash_token(token),
            now(),
        )
        .await
        .unwrap();
    let server = shadowsocks_server(&panel, INBOUND_PORT).await;
    let setup = Setup {
        servers,
        panel_at,
        token: token.to_owned(),
        server: server.id,
    };

    // The server: root may log in with a password or the key made here.
    let vps = Vps::boot(&pair.client).unwrap();
    vps.sh_ok(&format!(
        "printf 'PermitRootLogin yes\\nPasswordAuthentication yes\\n' \
         > /etc/ssh/sshd_config.d/test.conf && echo 'root:{PASSWORD}' | chpasswd && \
         ssh-keygen -q -t ed25519 -N '' -f /root/operator && mkdir -p /root/.ssh && \
         cp /root/operator.pub /root/.ssh/authorized_keys && systemctl restart ssh && \
         systemctl is-active ssh"
    ))
    .unwrap_or_else(|e| panic!("sshd: {e:#}\n{}", vps.log_tail()));
    let private_key = std::fs::read_to_string(vps.root().join("root/operator")).unwrap();
    let host_pub =
        std::fs::read_to_string(vps.root().join("etc/ssh/ssh_host_ed25519_key.pub")).unwrap();
    let host_key = fingerprint(&host_pub);
    let address = netns::CLIENT_ADDR.to_string();

    // The first request reads the host key and logs in to nothing.
    let job = setup
        .install(json!({"address": address, "user": "root"}))
        .await;
    assert_eq!(job["state"], "confirm_host_key", "{job:#}");
    assert_eq!(job["host_key"]["fingerprint"], json!(host_key), "{job:#}");
    assert_eq!(job["host_key"]["algorithm"], "ssh-ed25519");

    // A wrong password: refused at `connecting`, with the reason.
    let job = setup
        .install(
            json!({"address": address, "user": "root", "password": "wrong",
            "host_key": host_key}),
        )
        .await;
    assert_eq!(job["state"], "failed", "{job:#}");
    assert_eq!(step(&job, "connecting")["state"], "failed", "{job:#}");
    assert_eq!(step(&job, "host_key")["state"], "done", "{job:#}");
    let error = job["error"].as_str().unwrap();
    assert!(
        error.starts_with("connecting: the server refused the login of root (password)"),
        "{error}"
    );
    assert!(!job.to_string().contains("wrong\""), "{job:#}");

    // A key login, and a server whose sha256sum lies: refused at `uploading`.
    vps.sh_ok(
        "mv /usr/bin/sha256sum /usr/bin/sha256sum.real && printf '#!/bin/sh\\necho \
         0000 \"$1\"\\n' > /usr/bin/sha256sum && chmod 0755 /usr/bin/sha256sum",
    )
    .unwrap();
    let job = setup
        .install(json!({"address": address, "user": "root", "private_key": private_key}))
        .await;
    assert_eq!(job["state"], "failed", "{job:#}");
    let uploading = step(&job, "uploading");
    assert_eq!(uploading["state"], "failed", "{job:#}");
    let output = uploading["output"].as_str().unwrap();
    assert!(
        output.contains("refused: the upload's sha256 is 0000 but the panel's binary is"),
        "{output}"
    );
    assert_eq!(step(&job, "checking")["state"], "done", "{job:#}");
    assert_eq!(step(&job, "installing")["state"], "pending", "{job:#}");
    assert!(!vps.root().join("usr/local/bin/switchyard").exists());
    assert!(!job.to_string().contains("PRIVATE KEY"), "{job:#}");
    vps.sh_ok("mv -f /usr/bin/sha256sum.real /usr/bin/sha256sum")
        .unwrap();

    // The install, with the firewall: every step to `online`.
    let job = setup
        .install(
            json!({"address": address, "user": "root", "password": PASSWORD,
            "firewall": true}),
        )
        .await;
    assert_eq!(job["state"], "online", "{job:#}\n{}", vps.log_tail());
    for name in [
        "connecting",
        "host_key",
        "checking",
        "uploading",
        "installing",
        "joining",
        "firewall",
        "online",
    ] {
        assert_eq!(step(&job, name)["state"], "done", "{name}: {job:#}");
    }
    assert!(!job.to_string().contains(PASSWORD), "{job:#}");
    assert!(
        !job.to_string().contains("syj"),
        "the token is not shown: {job:#}"
    );
    let installing = step(&job, "installing")["output"].as_str().unwrap();
    assert!(
        installing.contains("switchyard: enabled and started switchyard-node.service"),
        "{installing}"
    );
    let shown = store.server(server.id).await.unwrap();
    assert_eq!(shown.state, ServerState::Online);
    let version = shown.node_version.clone().unwrap();
    assert!(
        step(&job, "online")["output"]
            .as_str()
            .unwrap()
            .contains(&version),
        "{job:#}"
    );
    let running = vps
        .sh_ok("systemctl show -p User -p ActiveState --value switchyard-node")
        .unwrap();
    assert_eq!(
        running.split_whitespace().collect::<Vec<_>>(),
        ["switchyard", "active"]
    );
    let table = vps.sh_ok("nft list table inet switchyard").unwrap();
    assert!(table.contains("policy drop"), "{table}");
    assert!(
        table.contains(&format!("tcp dport {{ 22, {INBOUND_PORT} }} accept")),
        "{table}"
    );
    assert!(
        table.contains(&format!("udp dport {INBOUND_PORT} accept")),
        "{table}"
    );
    assert!(
        std::fs::read_to_string(vps.root().join("etc/nftables.conf"))
            .unwrap()
            .contains("include \"/etc/switchyard/firewall.nft\"")
    );

    // The server's host key changes: the pinned one is expected, nothing is sent.
    vps.sh_ok("rm -f /etc/ssh/ssh_host_* && ssh-keygen -A && systemctl restart ssh")
        .unwrap();
    let new_key = fingerprint(
        &std::fs::read_to_string(vps.root().join("etc/ssh/ssh_host_ed25519_key.pub")).unwrap(),
    );
    assert_ne!(new_key, host_key);
    let job = setup
        .install(json!({"address": address, "user": "root", "password": PASSWORD}))
        .await;
    assert_eq!(job["state"], "failed", "{job:#}");
    let refused = step(&job, "host_key");
    assert_eq!(refused["state"], "failed", "{job:#}");
    let output = refused["output"].as_str().unwrap();
    assert!(
        output.contains(&new_key) && output.contains(&host_key),
        "{output}"
    );
    assert_eq!(step(&job, "checking")["state"], "pending");

    drop(vps);
    panel.shutdown().await;
    panel_runtime.shutdown_background();
}
