//! An upgrade that drops nobody, on a fresh server run by systemd: a node installed
//! with the panel's one line (as `install_vps`), a real sing-box client on the
//! panel's subscription (VLESS), a slow 30 MiB download and a UDP association held
//! through the node, then `switchyard node upgrade --binary` to a second build of the
//! binary (this build with bytes appended: another file, another hash, started as
//! the new process). The download finishes intact, the association answers on,
//! systemd follows the new process, the old one drains and exits, and the panel's
//! count equals what the target sent and the echo returned, to the byte.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use switchyard_panel::model::ServerState;
use switchyard_panel::store::UserInput;
use switchyard_testkit::HttpTarget;
use switchyard_testkit::netns;
use switchyard_testkit::socks5::{self, UdpAssociation};
use switchyard_testkit::vps::Vps;

use crate::install_vps::wait_until;
use crate::vps_panel::{second_build, sing_box_on, start_panel, vless_server};

const MIB: u64 = 1 << 20;
/// The VLESS inbound's port on the server.
const INBOUND_PORT: u16 = 8443;

fn now() -> i64 {
    switchyard_panel::clock::now_ms()
}

/// A UDP echo on the servers' side of the link, for the test's life; its address.
pub(crate) async fn udp_echo(servers: &netns::NsRuntime) -> SocketAddr {
    let echo_socket = servers
        .run(async { tokio::net::UdpSocket::bind((netns::SERVERS_ADDR, 0)).await })
        .await
        .unwrap();
    let echo_at = echo_socket.local_addr().unwrap();
    servers.spawn(async move {
        let mut buf = vec![0u8; 65536];
        while let Ok((n, from)) = echo_socket.recv_from(&mut buf).await {
            let _ = echo_socket.send_to(&buf[..n], from).await;
        }
    });
    echo_at
}

/// One datagram to the echo and its answer, through the association.
pub(crate) async fn echo(
    association: &UdpAssociation,
    to: SocketAddr,
    data: &[u8],
) -> anyhow::Result<()> {
    let dest = socks5::Dest::from(to);
    for _ in 0..3 {
        association.send_to(data, &dest).await?;
        if let Ok(got) = tokio::time::timeout(Duration::from_secs(2), association.recv_from()).await
        {
            anyhow::ensure!(got?.1 == data, "the echo changed the datagram");
            return Ok(());
        }
    }
    anyhow::bail!("no echo in three tries")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_keeps_a_download_and_a_udp_association_and_counts_every_byte_once() {
    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("switchyard");
    std::fs::copy(env!("CARGO_BIN_EXE_switchyard"), &binary).unwrap();

    let pair = netns::pair().unwrap();
    let servers = Arc::new(pair.servers.runtime_in().unwrap());
    let (panel_runtime, panel) = start_panel(&pair, dir.path(), binary.clone());
    let service = panel.state.service().clone();
    let store = panel.state.store().clone();
    let server = vless_server(&panel, INBOUND_PORT).await;
    let user = service
        .create_user(&UserInput::new("alice"), now())
        .await
        .unwrap();
    let join = panel.join_command(server.id).await.unwrap();
    let vps = Vps::boot(&pair.client).unwrap();
    vps.sh_ok(&join.command)
        .unwrap_or_else(|e| panic!("the install: {e:#}\n{}", vps.log_tail()));
    wait_until("the node is online in the panel", 30, || {
        let store = store.clone();
        async move { store.server(server.id).await.unwrap().state == ServerState::Online }
    })
    .await;
    let journal = || {
        vps.sh("journalctl -u switchyard-node --no-pager -n 40")
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    };

    // The target and a UDP echo on the servers' side; sing-box on the subscription.
    let target = HttpTarget::start_on(
        pair.servers
            .tcp_listener(SocketAddr::from((netns::SERVERS_ADDR, 0)))
            .unwrap(),
    )
    .unwrap();
    let echo_at = udp_echo(&servers).await;
    let client = sing_box_on(&servers, &user.subscription_path, "vless", INBOUND_PORT).await;
    let proxy = client.proxy_addr().unwrap();

    // A first download gives the size of one response's head and one request.
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

    // A UDP association, answered, and a 30 MiB download read slowly (about 3 MiB/s):
    // both through one node process, then the other.
    let association = UdpAssociation::open(proxy).await.unwrap();
    let datagram = vec![7u8; 1000];
    let mut udp_bytes = 0u64;
    echo(&association, echo_at, &datagram)
        .await
        .unwrap_or_else(|e| panic!("UDP through the node: {e:#}\n{}", client.log_tail()));
    udp_bytes += 1000;
    let download = target.download_via_socks_slowly(proxy, 30 * MIB);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(!download.is_finished(), "the download is still going");

    // The second build.
    second_build(&vps, &binary);
    let old_pid = vps
        .sh_ok("systemctl show -p MainPID --value switchyard-node")
        .unwrap();
    let said = vps
        .sh_ok("switchyard node upgrade --binary /root/switchyard-next --drain 120")
        .unwrap_or_else(|e| panic!("the upgrade: {e:#}\n{}", journal()));
    assert!(
        said.contains("switchyard: installed /usr/local/bin/switchyard (switchyard "),
        "{said}"
    );
    let old_pid = old_pid.trim();
    assert!(
        said.contains(&format!(
            "process {old_pid} drains its open connections for at most 120 s"
        )),
        "{said}"
    );
    // The answer comes once the new process serves; the old one then closes its
    // channel (letting requests under way finish), lets go and tells systemd.
    let main_pid = || {
        vps.sh_ok("systemctl show -p MainPID --value switchyard-node")
            .unwrap()
            .trim()
            .to_owned()
    };
    let followed = (0..150).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        main_pid() != old_pid
    });
    assert!(followed, "systemd follows the new process\n{}", journal());
    let new_pid = main_pid();
    let new_pid = new_pid.as_str();
    assert!(said.contains(&format!("process {new_pid} ")), "{said}");
    let exe = vps
        .sh_ok(&format!(
            "sha256sum /proc/{new_pid}/exe /root/switchyard-next | cut -d' ' -f1 | uniq | wc -l"
        ))
        .unwrap();
    assert_eq!(exe.trim(), "1", "the new process runs the second build");
    assert!(
        vps.sh(&format!("test -d /proc/{old_pid}"))
            .unwrap()
            .status
            .success(),
        "the old process drains"
    );

    // Both held connections go on; new ones are served (by the new process).
    echo(&association, echo_at, &datagram)
        .await
        .unwrap_or_else(|e| {
            panic!(
                "the UDP association after the upgrade: {e:#}\n{}",
                journal()
            )
        });
    udp_bytes += 1000;
    target.download_via_socks(proxy, 10 * MIB).await.unwrap();
    let got = download
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("the download across the upgrade: {e:#}\n{}", journal()));
    assert_eq!(got, 30 * MIB);
    echo(&association, echo_at, &datagram).await.unwrap();
    udp_bytes += 1000;

    // The association ends: the old process has nothing left and exits.
    drop(association);
    wait_until("the old process drained and ended", 60, || async {
        !vps.sh(&format!("test -d /proc/{old_pid}"))
            .unwrap()
            .status
            .success()
    })
    .await;
    let log = journal();
    assert!(
        log.contains("upgrade: the old process drained and ends closed=0"),
        "{log}"
    );
    let running = vps
        .sh_ok("systemctl show -p ActiveState -p MainPID --value switchyard-node")
        .unwrap();
    assert_eq!(
        running.split_whitespace().collect::<Vec<_>>(),
        [new_pid, "active"]
    );

    // Every byte counted once: what the target sent (bodies and heads) and the echo
    // returned; what went to them.
    let want_down = target.bytes_out() + target.requests() * head + udp_bytes;
    let want_up = target.requests() * request + udp_bytes;
    wait_until("the traffic counted", 30, || async {
        store.user(user.id, now()).await.unwrap().used_down >= want_down
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let counted = store.user(user.id, now()).await.unwrap();
    assert_eq!(
        (counted.used_down, counted.used_up),
        (want_down, want_up),
        "counted once across the upgrade, no more, no less"
    );

    drop(client);
    drop(vps);
    panel.shutdown().await;
    panel_runtime.shutdown_background();
}
