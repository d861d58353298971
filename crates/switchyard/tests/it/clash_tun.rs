//! The Clash config the panel serves to Clash Verge (`clash-verge/…`) makes a VPN
//! once the app's TUN switch is on: the real mihomo runs it, the switch turned on as
//! the app does (`tun.enable`), as root in the "phone" namespace
//! ([`switchyard_testkit::phone::Phone`]). It builds its TUN, and a plain `curl` with
//! no proxy settings fetches `target.test` through a real node (`switchyard node`, a
//! process in the "internet" namespace): the target sees the node, not the phone.
//! DNS: mihomo answers curl with a fake address and sends the name to the node, which
//! resolves it on the far side (its own `resolv.conf`); the phone's own resolver is
//! asked nothing. With the Russia preset, a target in `country-ru` is reached
//! directly instead, through the same TUN, by the panel's rule providers.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use switchyard_panel::config::{ChannelSettings, PanelConfig};
use switchyard_panel::model::routing::RoutingPreset;
use switchyard_panel::store::UserInput;
use switchyard_testkit::phone::{Phone, TARGET_NAME};
use switchyard_testkit::{free_port, netns};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const NODE_PORT: u16 = 8443;

fn now() -> i64 {
    switchyard_panel::clock::now_ms()
}

/// `GET path` from the panel at `addr` with `user_agent`: the body.
async fn get(addr: SocketAddr, path: &str, user_agent: &str) -> String {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: p\r\nUser-Agent: {user_agent}\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    )
    .await
    .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.unwrap();
    let text = String::from_utf8(raw).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    body.to_owned()
}

/// The panel (its config changed by `edit`), its user's Clash config with the app's
/// switch on (and `rewrite` applied), a real node in the internet namespace, and
/// mihomo running the config as root in the phone, once its TUN is up.
struct Vpn {
    panel: switchyard_panel::Panel,
    _node: tokio::process::Child,
    mihomo: tokio::process::Child,
    log_path: std::path::PathBuf,
}

impl Vpn {
    async fn start(
        phone: &Phone,
        dir: &std::path::Path,
        edit: impl FnOnce(&mut PanelConfig),
        rewrite: impl FnOnce(&str, SocketAddr) -> String,
    ) -> Self {
        // The panel: a server at the node's address, a VLESS inbound, a user.
        let http = SocketAddr::from(([127, 0, 0, 1], free_port().unwrap()));
        let mut panel_config = PanelConfig {
            listen: http,
            data_dir: dir.join("panel"),
            channel: ChannelSettings {
                listen: SocketAddr::from(([127, 0, 0, 1], free_port().unwrap())),
                ..ChannelSettings::default()
            },
            ..PanelConfig::default()
        };
        edit(&mut panel_config);
        let panel = switchyard_panel::Panel::start(panel_config).await.unwrap();
        let service = panel.state.service().clone();
        crate::vps_panel::vless_server_at(&panel, &netns::SERVERS_ADDR.to_string(), NODE_PORT)
            .await;
        let user = service
            .create_user(&UserInput::new("alice"), now())
            .await
            .unwrap();
        let yaml = get(http, &user.subscription_path, "clash-verge/v2.2.3").await;
        assert!(yaml.contains("\"enhanced-mode\": \"fake-ip\""), "{yaml}");
        // The app's TUN switch: the config's one `false`.
        assert_eq!(yaml.matches("\"enable\": false").count(), 1, "{yaml}");
        let config = rewrite(&yaml.replace("\"enable\": false", "\"enable\": true"), http);
        let uuid = config
            .lines()
            .find_map(|l| l.trim().strip_prefix("\"uuid\": \""))
            .and_then(|rest| rest.strip_suffix('"'))
            .unwrap_or_else(|| panic!("no uuid in {config}"))
            .to_owned();

        // The node, a process in the internet namespace (its resolver: the far side's).
        let node_file = dir.join("node.toml");
        std::fs::write(
            &node_file,
            format!(
                "[node]\nstate_dir = \"{}\"\nallow_private_destinations = true\n\
                 [control]\nlisten = \"127.0.0.1:{}\"\n\
                 [[inbounds]]\ntag = \"vpn\"\nlisten = \"{}\"\nport = {NODE_PORT}\nprotocol = \"vless\"\n\
                 [[users]]\nname = \"alice\"\nvless = \"{uuid}\"\n",
                dir.join("node").display(),
                free_port().unwrap(),
                netns::SERVERS_ADDR
            ),
        )
        .unwrap();
        let mut command = phone.pair.servers.command(env!("CARGO_BIN_EXE_switchyard"));
        command
            .args(["node", "--config"])
            .arg(&node_file)
            .stdout(std::fs::File::create(dir.join("node.log")).unwrap())
            .stderr(std::fs::File::create(dir.join("node.err")).unwrap());
        let node = tokio::process::Command::from(command)
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let servers = phone.pair.servers.runtime_in().unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while servers
            .run(tokio::net::TcpStream::connect((
                netns::SERVERS_ADDR,
                NODE_PORT,
            )))
            .await
            .is_err()
        {
            assert!(Instant::now() < deadline, "the node listens within 20 s");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }

        // mihomo as the app runs it with its switch on: root, in the phone.
        let home = dir.join("mihomo");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join("config.yaml"), &config).unwrap();
        let log_path = dir.join("mihomo.log");
        let log = std::fs::File::create(&log_path).unwrap();
        let mut command = phone
            .pair
            .client
            .command(switchyard_testkit::mihomo::binary().unwrap());
        command
            .arg("-d")
            .arg(&home)
            .arg("-f")
            .arg(home.join("config.yaml"))
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        let mut mihomo = tokio::process::Command::from(command)
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let tail_path = log_path.clone();
        let log_tail = move || std::fs::read_to_string(&tail_path).unwrap_or_default();
        phone.wait_for_tun(&mut mihomo, log_tail).await.unwrap();
        Self {
            panel,
            _node: node,
            mihomo,
            log_path,
        }
    }

    fn log_tail(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    async fn stop(mut self) {
        self.mihomo.kill().await.unwrap();
        let _ = self.mihomo.wait().await;
        self.panel.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clash_config_with_the_app_s_tun_switch_on_is_a_vpn_with_no_dns_leak() {
    let phone = Phone::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let vpn = Vpn::start(&phone, dir.path(), |_| {}, |c, _| c.to_owned()).await;
    phone
        .curl(100_000)
        .await
        .unwrap_or_else(|e| panic!("{e:#}\nmihomo:\n{}", vpn.log_tail()));
    assert!(
        !phone.target_saw_the_phone(),
        "the target saw the phone itself: {:?}",
        phone.target.peers()
    );
    assert!(
        phone.remote_dns.asked().iter().any(|n| n == TARGET_NAME),
        "the far side resolved the name: {:?}",
        phone.remote_dns.asked()
    );
    assert_eq!(
        phone.local_dns.asked(),
        Vec::<String>::new(),
        "the phone's own resolver was asked nothing"
    );
    vpn.stop().await;
}

/// With the Russia preset and the target's address in `country-ru` (the operator's
/// file), mihomo with its TUN on fetches the panel's rule providers (relayed here from
/// the internet namespace, where the phone can reach them), resolves the target's
/// name through the node (the far side's resolver, `remote_dns`) and sends the
/// target direct: the target sees the phone itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_russia_preset_a_local_target_is_reached_directly_through_the_tun() {
    let phone = Phone::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let sets = dir.path().join("panel").join("rule-sets");
    std::fs::create_dir_all(&sets).unwrap();
    std::fs::write(
        sets.join("country-ru.txt"),
        format!("{}\n", switchyard_testkit::phone::TARGET),
    )
    .unwrap();
    // The panel's rule providers, relayed from an address the phone reaches (the
    // panel listens on the host's loopback).
    let relay = tokio::net::TcpListener::from_std(
        phone
            .pair
            .servers
            .tcp_listener(SocketAddr::from((netns::SERVERS_ADDR, 0)))
            .unwrap(),
    )
    .unwrap();
    let relay_addr = relay.local_addr().unwrap();
    let panel_addr = std::sync::Arc::new(std::sync::Mutex::new(None::<SocketAddr>));
    let to = panel_addr.clone();
    tokio::spawn(async move {
        while let Ok((mut from, _)) = relay.accept().await {
            let Some(to) = *to.lock().unwrap() else {
                continue;
            };
            tokio::spawn(async move {
                if let Ok(mut out) = tokio::net::TcpStream::connect(to).await {
                    let _ = tokio::io::copy_bidirectional(&mut from, &mut out).await;
                }
            });
        }
    });
    let rewrite = move |config: &str, http: SocketAddr| {
        *panel_addr.lock().unwrap() = Some(http);
        let from = format!("http://{http}/rules/");
        assert!(config.contains(&from), "{config}");
        config
            .replace(&from, &format!("http://{relay_addr}/rules/"))
            .replace("\"log-level\": \"warning\"", "\"log-level\": \"info\"")
    };
    let vpn = Vpn::start(
        &phone,
        dir.path(),
        |c| {
            c.subscription.routing.preset = RoutingPreset::Russia;
            // The far side's resolver: mihomo resolves the name to match the
            // preset's networks, through the node.
            c.subscription.remote_dns =
                format!("tcp://{}:53", switchyard_testkit::phone::REMOTE_DNS);
        },
        rewrite,
    )
    .await;
    phone
        .curl(100_000)
        .await
        .unwrap_or_else(|e| panic!("{e:#}\nmihomo:\n{}", vpn.log_tail()));
    assert!(
        phone.target_saw_the_phone(),
        "{:?}\n{}",
        phone.target.peers(),
        vpn.log_tail()
    );
    vpn.stop().await;
}
