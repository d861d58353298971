//! The one-line install on a fresh server: a Debian root made by debootstrap, booted
//! with systemd-nspawn (a real systemd as PID 1) in the client side of a namespace
//! pair, the panel in-process on the servers side (10.77.0.1) handing out this
//! build's `switchyard` binary. The operator's line, pasted into the server as root,
//! leaves a node run by systemd that joins the panel and carries a real sing-box
//! client's traffic (the panel's own subscription); a download changed by one byte is
//! refused before anything is installed; running the line again repairs and keeps
//! the join; `switchyard node uninstall` leaves nothing behind.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use switchyard_panel::model::ServerState;
use switchyard_panel::store::UserInput;
use switchyard_testkit::HttpTarget;
use switchyard_testkit::netns::{self, NsRuntime};
use switchyard_testkit::vps::Vps;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::vps_panel::{PANEL_AT, shadowsocks_server, sing_box_on, start_panel};

const MIB: u64 = 1 << 20;
/// The Shadowsocks inbound's port on the server.
const INBOUND_PORT: u16 = 8388;

fn now() -> i64 {
    switchyard_panel::clock::now_ms()
}

/// A listener on the root namespace's 127.0.0.1 whose connections go on to `to` from
/// the servers' namespace (sockets made on `ns` live there): how sing-box, which runs
/// in the root namespace, reaches the server in its own.
pub(crate) async fn reverse_bridge(ns: Arc<NsRuntime>, to: SocketAddr) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            let s = s.into_std().unwrap();
            ns.spawn(async move {
                let mut a = TcpStream::from_std(s).unwrap();
                if let Ok(mut b) = TcpStream::connect(to).await {
                    let _ = tokio::io::copy_bidirectional(&mut a, &mut b).await;
                }
            });
        }
    });
    addr
}

/// GET `path` from `addr`, from the servers' namespace: the status line and the body.
pub(crate) async fn get(ns: &NsRuntime, addr: SocketAddr, path: &str) -> (String, String) {
    let request = format!("GET {path} HTTP/1.1\r\nHost: p\r\nConnection: close\r\n\r\n");
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
    (head.lines().next().unwrap().to_owned(), body.to_owned())
}

pub(crate) async fn wait_until<F, Fut>(what: &str, secs: u64, mut ok: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !ok().await {
        assert!(Instant::now() < deadline, "{what} within {secs} s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn flip_byte(path: &Path, at: u64) {
    use std::os::unix::fs::FileExt as _;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, at).unwrap();
    b[0] ^= 0x01;
    f.write_all_at(&b, at).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_one_line_install_makes_a_fresh_server_a_node_that_carries_traffic() {
    let dir = tempfile::tempdir().unwrap();
    // The binary the panel hands out: a copy of this build, so the test can damage it.
    let binary = dir.path().join("switchyard");
    std::fs::copy(env!("CARGO_BIN_EXE_switchyard"), &binary).unwrap();

    let pair = netns::pair().unwrap();
    let servers = Arc::new(pair.servers.runtime_in().unwrap());
    let panel_at = PANEL_AT;
    let (panel_runtime, panel) = start_panel(&pair, dir.path(), binary.clone());
    let service = panel.state.service().clone();
    let store = panel.state.store().clone();
    let server = shadowsocks_server(&panel, INBOUND_PORT).await;
    let user = service
        .create_user(&UserInput::new("alice"), now())
        .await
        .unwrap();

    let join = panel.join_command(server.id).await.unwrap();
    assert!(join.token.starts_with("syj2."), "{}", join.token);
    assert_eq!(
        join.command,
        format!(
            "curl -fsSL 'http://{panel_at}/install.sh' | sh -s -- {}",
            join.token
        )
    );
    assert_eq!(
        join.join_command,
        format!("switchyard node join {}", join.token)
    );

    let vps = Vps::boot(&pair.client).unwrap();

    // One byte changed on the way: refused, nothing installed.
    let size = std::fs::metadata(&binary).unwrap().len();
    flip_byte(&binary, size / 2);
    let out = vps.sh(&join.command).unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("refused: the download's sha256 is")
            && said.contains("nothing was installed"),
        "{said}"
    );
    assert!(!vps.root().join("usr/local/bin/switchyard").exists());
    flip_byte(&binary, size / 2);

    // The line as the operator pastes it.
    let said = vps
        .sh_ok(&join.command)
        .unwrap_or_else(|e| panic!("the install: {e:#}\n{}", vps.log_tail()));
    for line in [
        &format!("switchyard: system: Linux {}", std::env::consts::ARCH),
        "matches the token",
        "switchyard: installed /usr/local/bin/switchyard",
        "switchyard: created the system user switchyard",
        &format!(
            "switchyard: joined the panel at {}:2054 as server",
            netns::SERVERS_ADDR
        ),
        "switchyard: wrote /etc/systemd/system/switchyard-node.service",
        "switchyard: enabled and started switchyard-node.service",
    ] {
        assert!(said.contains(line), "{line:?} in\n{said}");
    }
    let unit = std::fs::read_to_string(
        vps.root()
            .join("etc/systemd/system/switchyard-node.service"),
    )
    .unwrap();
    assert!(unit.contains("\nNoNewPrivileges=yes\n"), "{unit}");
    vps.sh_ok("systemd-analyze verify /etc/systemd/system/switchyard-node.service")
        .unwrap();
    let running = vps
        .sh_ok("systemctl show -p User -p ActiveState --value switchyard-node")
        .unwrap();
    assert_eq!(
        running.split_whitespace().collect::<Vec<_>>(),
        ["switchyard", "active"]
    );
    wait_until("the node is online in the panel", 30, || {
        let store = store.clone();
        async move { store.server(server.id).await.unwrap().state == ServerState::Online }
    })
    .await;

    // A real client on the panel's subscription, through the node on the server.
    let target = HttpTarget::start_on(
        pair.servers
            .tcp_listener(SocketAddr::from((netns::SERVERS_ADDR, 0)))
            .unwrap(),
    )
    .unwrap();
    let client = sing_box_on(
        &servers,
        &user.subscription_path,
        "shadowsocks",
        INBOUND_PORT,
    )
    .await;
    let proxy = client.proxy_addr().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match target.download_via_socks(proxy, 30 * MIB).await {
            Ok(()) => break,
            Err(e) if Instant::now() > deadline => panic!(
                "30 MiB through the node: {e:#}\n{}\n{}",
                client.log_tail(),
                vps.sh("journalctl -u switchyard-node --no-pager -n 30")
                    .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                    .unwrap_or_default()
            ),
            Err(_) => tokio::time::sleep(Duration::from_millis(300)).await,
        }
    }

    // Again: a repair that keeps the join (the token is spent; it is not used).
    let said = vps.sh_ok(&join.command).unwrap();
    for line in [
        "switchyard: the system user switchyard is there",
        "keeping that join",
        "switchyard: /etc/systemd/system/switchyard-node.service is up to date",
        "switchyard: enabled and started switchyard-node.service",
    ] {
        assert!(said.contains(line), "{line:?} in\n{said}");
    }
    wait_until("the node is back online", 30, || {
        let store = store.clone();
        async move { store.server(server.id).await.unwrap().state == ServerState::Online }
    })
    .await;
    target.download_via_socks(proxy, MIB).await.unwrap();

    // Replace node in the panel, then --rejoin with the new token: joined again, the
    // state (and with it the traffic journal) kept.
    let token = panel.replace_token(server.id).await.unwrap();
    let said = vps
        .sh_ok(&format!("switchyard node install --rejoin {token}"))
        .unwrap();
    for line in [
        &format!("switchyard: dropped the join as server {}", server.id),
        &format!(
            "switchyard: joined the panel at {}:2054 as server {}",
            netns::SERVERS_ADDR,
            server.id
        ),
    ] {
        assert!(said.contains(line.as_str()), "{line:?} in\n{said}");
    }
    assert!(
        vps.root()
            .join("var/lib/switchyard/node/journal.jsonl")
            .exists()
    );
    wait_until("the replaced node is online", 30, || {
        let store = store.clone();
        async move { store.server(server.id).await.unwrap().state == ServerState::Online }
    })
    .await;
    target.download_via_socks(proxy, MIB).await.unwrap();

    // And gone.
    let said = vps.sh_ok("switchyard node uninstall").unwrap();
    assert!(said.contains("nothing of the node is left"), "{said}");
    for gone in [
        "usr/local/bin/switchyard",
        "etc/systemd/system/switchyard-node.service",
        "var/lib/switchyard",
    ] {
        assert!(!vps.root().join(gone).exists(), "{gone} is left");
    }
    let user_left = vps.sh("getent passwd switchyard").unwrap();
    assert!(!user_left.status.success(), "the system user is gone");
    let state = vps.sh("systemctl is-active switchyard-node").unwrap();
    assert_ne!(String::from_utf8_lossy(&state.stdout).trim(), "active");

    drop(client);
    drop(vps);
    panel.shutdown().await;
    panel_runtime.shutdown_background();
}
