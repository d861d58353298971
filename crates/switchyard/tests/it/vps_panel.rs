//! What the tests of installs in a fresh VPS share: the panel in-process on the
//! servers' side of a namespace pair (10.77.0.1, its channel on 2054), handing out a
//! given binary, and a server with a Shadowsocks inbound for the VPS to become.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use switchyard_panel::Panel;
use switchyard_panel::config::{ChannelSettings, InstallSettings, PanelConfig};
use switchyard_panel::model::{InboundSecurity, InboundTransport, Protocol, Server};
use switchyard_panel::store::{InboundInput, ServerInput};
use switchyard_testkit::netns::{self, Pair};

/// The panel's API address in the servers' namespace.
pub(crate) const PANEL_AT: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(netns::SERVERS_ADDR), 2053);

/// Starts the panel (data under `dir`, handing out `binary`) on a runtime of its own
/// whose threads are all in the servers' namespace (threads start in their
/// creator's), so its listeners, and the connections it makes, are there.
pub(crate) fn start_panel(
    pair: &Pair,
    dir: &Path,
    binary: PathBuf,
) -> (tokio::runtime::Runtime, Panel) {
    let config = PanelConfig {
        listen: PANEL_AT,
        public_url: Some(format!("http://{PANEL_AT}")),
        data_dir: dir.join("panel"),
        channel: ChannelSettings {
            listen: SocketAddr::from((netns::SERVERS_ADDR, 2054)),
            ..ChannelSettings::default()
        },
        install: InstallSettings {
            binary: Some(binary),
            ..InstallSettings::default()
        },
        ..PanelConfig::default()
    };
    let (runtime, panel) = pair
        .servers
        .run_in(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap();
            let panel = rt.block_on(Panel::start(config));
            (rt, panel)
        })
        .unwrap();
    (runtime, panel.unwrap())
}

/// A cluster and in it the server `vps` at the client's address, with a Shadowsocks
/// 2022 inbound on `port`.
pub(crate) async fn shadowsocks_server(panel: &Panel, port: u16) -> Server {
    server_with(panel, "Shadowsocks", Protocol::Shadowsocks, port).await
}

/// A cluster and in it the server `vps` at the client's address, with a VLESS inbound
/// (plain TCP) on `port`.
pub(crate) async fn vless_server(panel: &Panel, port: u16) -> Server {
    server_with(panel, "VLESS", Protocol::Vless, port).await
}

/// [`vless_server`] at `address` instead of the client's.
pub(crate) async fn vless_server_at(panel: &Panel, address: &str, port: u16) -> Server {
    server_at(panel, address, "VLESS", Protocol::Vless, port).await
}

async fn server_with(panel: &Panel, name: &str, protocol: Protocol, port: u16) -> Server {
    server_at(panel, &netns::CLIENT_ADDR.to_string(), name, protocol, port).await
}

async fn server_at(
    panel: &Panel,
    address: &str,
    name: &str,
    protocol: Protocol,
    port: u16,
) -> Server {
    let now = switchyard_panel::clock::now_ms();
    let service = panel.state.service().clone();
    let cluster = panel.state.store().create_cluster("c", now).await.unwrap();
    let server = service
        .create_server(
            &ServerInput {
                cluster_id: cluster.id,
                name: "vps".into(),
                address: address.to_owned(),
                allow_private_destinations: true,
            },
            now,
        )
        .await
        .unwrap();
    let method = (protocol == Protocol::Shadowsocks).then(|| "2022-blake3-aes-256-gcm".into());
    service
        .create_inbound(
            &InboundInput {
                server_id: server.id,
                name: name.into(),
                protocol,
                port,
                transport: InboundTransport::Tcp,
                security: InboundSecurity::None,
                host: None,
                sni: None,
                coefficient: 1.0,
                method,
                flow: None,
                hysteria2: None,
                trusted_proxies: Vec::new(),
                rules: Default::default(),
            },
            now,
        )
        .await
        .unwrap();
    server
}

/// A second build of `binary` at `/root/switchyard-next` in the server: the same
/// bytes with more appended (another file, another hash, a binary that runs), what
/// an upgrade test installs.
pub(crate) fn second_build(vps: &switchyard_testkit::vps::Vps, binary: impl AsRef<Path>) {
    use std::io::Write as _;
    let next = vps.root().join("root/switchyard-next");
    std::fs::copy(binary, &next).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&next)
        .unwrap();
    f.write_all(b"\nsecond build\n").unwrap();
}

/// A real sing-box client on the panel's subscription at `path` (its `kind` entry,
/// which names the server's address), reaching the server's inbound on `port`
/// through a bridge from the root namespace, where sing-box runs.
pub(crate) async fn sing_box_on(
    servers: &std::sync::Arc<switchyard_testkit::netns::NsRuntime>,
    path: &str,
    kind: &str,
    port: u16,
) -> switchyard_testkit::SingBox {
    use serde_json::{Value, json};
    let sub = format!("{path}?format=sing-box");
    let (status, body) = crate::install_vps::get(servers, PANEL_AT, &sub).await;
    assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
    let config: Value = serde_json::from_str(&body).unwrap();
    let mut outbound = config["outbounds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["type"] == kind)
        .unwrap_or_else(|| panic!("a {kind} entry in {config:#}"))
        .clone();
    assert_eq!(outbound["server"], json!(netns::CLIENT_ADDR.to_string()));
    let bridge = crate::install_vps::reverse_bridge(
        servers.clone(),
        SocketAddr::from((netns::CLIENT_ADDR, port)),
    )
    .await;
    outbound["server"] = json!(bridge.ip().to_string());
    outbound["server_port"] = json!(bridge.port());
    switchyard_testkit::SingBox::client(outbound).await.unwrap()
}
