//! The panel's upgrade action, on a fresh server run by systemd: a node installed
//! with the one line while the panel hands out build A (this build), then the panel's
//! binary replaced by build B (A with bytes appended: another file, another hash;
//! the panel's hash follows the file, no restart). The API shows the node's version,
//! its binary's sha256 and `upgrade_available`; `POST /api/v1/servers/{id}/upgrade`
//! runs `uploading`, `switching`, `online` while a slow download through the node
//! (VLESS, the real sing-box client) goes on and ends intact, and a UDP association
//! held across it is answered before and after; every byte is counted once. Then the node's
//! main process runs B from its state directory, `systemctl restart` runs B again,
//! and `switchyard node upgrade --binary A` puts A back in charge (`bin/current`
//! gone), restarts included.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use sha2::Digest as _;
use switchyard_panel::model::ServerState;
use switchyard_panel::store::UserInput;
use switchyard_testkit::HttpTarget;
use switchyard_testkit::netns::{self, NsRuntime};
use switchyard_testkit::socks5::UdpAssociation;
use switchyard_testkit::vps::Vps;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::install_upgrade_vps::{echo, udp_echo};
use crate::install_vps::wait_until;
use crate::vps_panel::{PANEL_AT, sing_box_on, start_panel, vless_server};

const MIB: u64 = 1 << 20;
/// The VLESS inbound's port on the server.
const INBOUND_PORT: u16 = 8443;
const TOKEN: &str = "sy_upgrade_action_test_token_0123456789";

fn now() -> i64 {
    switchyard_panel::clock::now_ms()
}

fn sha256_of(path: &std::path::Path) -> String {
    sha2::Sha256::digest(std::fs::read(path).unwrap())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// One API call from the servers' namespace: the status and the JSON body.
async fn call(ns: &NsRuntime, method: &str, path: &str) -> (u16, Value) {
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: p\r\nConnection: close\r\nAuthorization: Bearer \
         {TOKEN}\r\nContent-Length: 0\r\n\r\n"
    );
    let raw = ns
        .run(async move {
            let mut s = tokio::net::TcpStream::connect(PANEL_AT).await.unwrap();
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_panel_upgrades_a_node_under_a_download_and_restarts_keep_it() {
    let dir = tempfile::tempdir().unwrap();
    // What the panel hands out: build A first.
    let handed = dir.path().join("switchyard");
    std::fs::copy(env!("CARGO_BIN_EXE_switchyard"), &handed).unwrap();
    let a = dir.path().join("switchyard-a");
    std::fs::copy(&handed, &a).unwrap();
    let b = dir.path().join("switchyard-b");
    std::fs::copy(&handed, &b).unwrap();
    {
        use std::io::Write as _;
        let mut f = std::fs::OpenOptions::new().append(true).open(&b).unwrap();
        f.write_all(b"\nbuild B\n").unwrap();
    }
    let (sha_a, sha_b) = (sha256_of(&a), sha256_of(&b));

    let pair = netns::pair().unwrap();
    let servers = Arc::new(pair.servers.runtime_in().unwrap());
    let (panel_runtime, panel) = start_panel(&pair, dir.path(), handed.clone());
    let store = panel.state.store().clone();
    let admin = store
        .admin_by_username(&panel.first_admin.as_ref().unwrap().username)
        .await
        .unwrap()
        .unwrap();
    store
        .create_api_token(
            admin.0.id,
            "test",
            &switchyard_panel::store::token_hash::hash_token(TOKEN),
            now(),
        )
        .await
        .unwrap();
    let server = vless_server(&panel, INBOUND_PORT).await;
    let user = panel
        .state
        .service()
        .create_user(&UserInput::new("alice"), now())
        .await
        .unwrap();
    let join = panel.join_command(server.id).await.unwrap();
    let vps = Vps::boot(&pair.client).unwrap();
    vps.sh_ok(&join.command)
        .unwrap_or_else(|e| panic!("the install: {e:#}\n{}", vps.log_tail()));
    let journal = || {
        vps.sh("journalctl -u switchyard-node --no-pager -n 60")
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    };
    let server_path = format!("/api/v1/servers/{}", server.id);
    wait_until("the node online, its binary known", 60, || async {
        let (_, s) = call(&servers, "GET", &server_path).await;
        s["state"] == "online" && s["binary_sha256"] == sha_a.as_str()
    })
    .await;
    let (_, s) = call(&servers, "GET", &server_path).await;
    assert_eq!(s["upgrade_available"], false, "{s:#}");
    assert_eq!(s["node_version"], env!("CARGO_PKG_VERSION"), "{s:#}");

    // The panel now hands out B (renamed over its file, as an install does).
    let next = dir.path().join("switchyard.next");
    std::fs::copy(&b, &next).unwrap();
    std::fs::rename(&next, &handed).unwrap();
    let (_, s) = call(&servers, "GET", &server_path).await;
    assert_eq!(s["upgrade_available"], true, "{s:#}");
    assert_eq!(s["binary_sha256"], sha_a.as_str(), "{s:#}");

    // A download through the node, read slowly (about 3 MiB/s), across the upgrade.
    let target = HttpTarget::start_on(
        pair.servers
            .tcp_listener(SocketAddr::from((netns::SERVERS_ADDR, 0)))
            .unwrap(),
    )
    .unwrap();
    let client = sing_box_on(&servers, &user.subscription_path, "vless", INBOUND_PORT).await;
    let proxy = client.proxy_addr().unwrap();
    // A first download gives the size of one response's head and one request (the
    // same digits as the 60 MiB one's).
    wait_until("a first download", 20, || async {
        target.download_via_socks(proxy, 10 * MIB).await.is_ok()
    })
    .await;
    wait_until("the first count", 20, || async {
        store.user(user.id, now()).await.unwrap().used_down > 10 * MIB
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let counted = store.user(user.id, now()).await.unwrap();
    let head = counted.used_down - target.bytes_out();
    let request = counted.used_up / target.requests();
    assert!((50..500).contains(&head), "an HTTP head is {head} bytes");
    // A UDP echo on the servers' side, and an association through the node.
    let echo_at = udp_echo(&servers).await;
    let association = UdpAssociation::open(proxy).await.unwrap();
    let datagram = vec![7u8; 1000];
    let mut udp_bytes = 0u64;
    echo(&association, echo_at, &datagram)
        .await
        .unwrap_or_else(|e| panic!("UDP through the node: {e:#}\n{}", client.log_tail()));
    udp_bytes += 1000;
    let download = target.download_via_socks_slowly(proxy, 60 * MIB);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(!download.is_finished(), "the download is still going");
    let old_pid = vps
        .sh_ok("systemctl show -p MainPID --value switchyard-node")
        .unwrap();
    let old_pid = old_pid.trim().to_owned();

    // The upgrade action.
    let upgrade_path = format!("{server_path}/upgrade");
    let (status, job) = call(&servers, "POST", &upgrade_path).await;
    assert_eq!(status, 202, "{job:#}");
    let deadline = std::time::Instant::now() + Duration::from_secs(300);
    let job = loop {
        let (_, job) = call(&servers, "GET", &upgrade_path).await;
        if job["state"] != "running" {
            break job;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the upgrade within 300 s: {job:#}\n{}",
            journal()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert_eq!(job["state"], "online", "{job:#}\n{}", journal());
    assert_eq!(job["sha256"], sha_b.as_str(), "{job:#}");
    let steps: Vec<(&str, &str)> = job["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap(), s["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        steps,
        [
            ("uploading", "done"),
            ("switching", "done"),
            ("online", "done")
        ]
    );
    let (_, s) = call(&servers, "GET", &server_path).await;
    assert_eq!(s["binary_sha256"], sha_b.as_str(), "{s:#}");
    assert_eq!(s["upgrade_available"], false, "{s:#}");
    assert_eq!(
        store.server(server.id).await.unwrap().state,
        ServerState::Online
    );

    // The association is answered by the new process.
    echo(&association, echo_at, &datagram)
        .await
        .unwrap_or_else(|e| {
            panic!(
                "the UDP association after the upgrade: {e:#}\n{}",
                journal()
            )
        });
    udp_bytes += 1000;

    // The held download goes on in the old process and ends intact.
    let got = download
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("the download across the upgrade: {e:#}\n{}", journal()));
    assert_eq!(got, 60 * MIB);

    // The main process runs B, from the node's state directory, as the node's user.
    let kept = format!("/var/lib/switchyard/node/bin/switchyard-{sha_b}");
    let runs = |what: &str| {
        let pid = vps
            .sh_ok("systemctl show -p MainPID --value switchyard-node")
            .unwrap();
        let pid = pid.trim().to_owned();
        let exe = vps
            .sh_ok(&format!("sha256sum /proc/{pid}/exe | cut -d' ' -f1"))
            .unwrap();
        let path = vps.sh_ok(&format!("readlink /proc/{pid}/exe")).unwrap();
        let user = vps.sh_ok(&format!("stat -c %U /proc/{pid}")).unwrap();
        eprintln!("{what}: process {pid} runs {}", path.trim());
        (
            pid,
            exe.trim().to_owned(),
            path.trim().to_owned(),
            user.trim().to_owned(),
        )
    };
    let (pid, exe, path, owner) = runs("after the upgrade");
    assert_ne!(pid, old_pid, "systemd follows the new process");
    assert_eq!(
        (exe.as_str(), path.as_str()),
        (sha_b.as_str(), kept.as_str())
    );
    assert_eq!(owner, "switchyard");
    assert_eq!(
        vps.sh_ok("cat /var/lib/switchyard/node/bin/current")
            .unwrap()
            .trim(),
        sha_b
    );
    assert_eq!(
        vps.sh_ok(&format!("stat -c %a {kept}")).unwrap().trim(),
        "755"
    );
    // The association ends: the old process has nothing left and exits.
    drop(association);
    wait_until("the old process drained and ended", 90, || async {
        !vps.sh(&format!("test -d /proc/{old_pid}"))
            .unwrap()
            .status
            .success()
    })
    .await;
    // Every byte counted once across the panel's upgrade: what the target sent
    // (bodies and heads) down, the requests up.
    let want = (
        target.bytes_out() + target.requests() * head + udp_bytes,
        target.requests() * request + udp_bytes,
    );
    wait_until("the traffic counted", 30, || async {
        store.user(user.id, now()).await.unwrap().used_down >= want.0
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let counted = store.user(user.id, now()).await.unwrap();
    assert_eq!(
        (counted.used_down, counted.used_up),
        want,
        "counted once across the upgrade, no more, no less"
    );

    // A restart runs B again (the installed binary execs it, same PID).
    vps.sh_ok("systemctl restart switchyard-node")
        .unwrap_or_else(|e| panic!("restart: {e:#}\n{}", journal()));
    let (_, exe, path, _) = runs("after a restart");
    assert_eq!(
        (exe.as_str(), path.as_str()),
        (sha_b.as_str(), kept.as_str()),
        "{}",
        journal()
    );
    wait_until("online again after the restart", 60, || async {
        let (_, s) = call(&servers, "GET", &server_path).await;
        s["state"] == "online" && s["binary_sha256"] == sha_b.as_str()
    })
    .await;
    target.download_via_socks(proxy, MIB).await.unwrap();

    // `node upgrade --binary A` puts the installed binary back in charge.
    std::fs::copy(&a, vps.root().join("root/switchyard-a")).unwrap();
    let said = vps
        .sh_ok("switchyard node upgrade --binary /root/switchyard-a --drain 5")
        .unwrap_or_else(|e| panic!("the manual upgrade: {e:#}\n{}", journal()));
    assert!(said.contains("bin/current removed"), "{said}");
    let (_, exe, path, _) = runs("after node upgrade --binary");
    assert_eq!(
        (exe.as_str(), path.as_str()),
        (sha_a.as_str(), "/usr/local/bin/switchyard"),
        "{}",
        journal()
    );
    assert!(
        !vps.sh("test -e /var/lib/switchyard/node/bin/current")
            .unwrap()
            .status
            .success(),
        "bin/current is gone"
    );
    vps.sh_ok("systemctl restart switchyard-node").unwrap();
    let (_, exe, path, _) = runs("after another restart");
    assert_eq!(
        (exe.as_str(), path.as_str()),
        (sha_a.as_str(), "/usr/local/bin/switchyard")
    );
    wait_until("online with A", 60, || async {
        let (_, s) = call(&servers, "GET", &server_path).await;
        s["state"] == "online" && s["binary_sha256"] == sha_a.as_str()
    })
    .await;
    let (_, s) = call(&servers, "GET", &server_path).await;
    assert_eq!(
        s["upgrade_available"], true,
        "the panel still hands out B: {s:#}"
    );

    drop(client);
    drop(vps);
    panel.shutdown().await;
    panel_runtime.shutdown_background();
}
