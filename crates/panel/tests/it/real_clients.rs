//! The panel's subscriptions in real client programs: a panel on 127.0.0.1 with one
//! real node joined over the real channel, six routes (VLESS+TLS, Trojan+TLS,
//! Shadowsocks-2022 with AES and with ChaCha20, VLESS+REALITY whose target is a local
//! HTTPS site, without and with the Vision flow), one user.
//! The subscription fetched over HTTP in each format runs in the client that reads
//! it, which downloads through every route's chosen inbound from a local target,
//! byte for byte:
//!
//! - sing-box JSON: `sing-box check`, then sing-box with each entry as its final
//!   outbound (but REALITY: the pinned sing-box has no uTLS);
//! - Clash YAML: mihomo (`-t`, then each proxy selected by the config's rule);
//! - Xray JSON: every config of the array in Xray-core.

use crate::live;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::CertificateDer;
use serde_json::{Value, json};
use switchyard_panel::Panel;
use switchyard_panel::config::{ChannelSettings, PanelConfig};
use switchyard_panel::model::{
    Algorithm, Flow, InboundSecurity, InboundTransport, Protocol, ServerState, TlsCertificate,
};
use switchyard_panel::store::{InboundInput, RouteInput, ServerInput};
use switchyard_testkit::{HttpTarget, SingBox, TestCert, free_port};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const MIB: u64 = 1 << 20;

/// `GET path` from the panel: the status line and the body.
async fn get(panel: SocketAddr, path: &str) -> (String, String) {
    let (status, _, body) = live::get_raw(panel, path, "").await;
    (status, body)
}

/// The names of the routes' entries, in route order.
const ENTRIES: [&str; 6] = [
    "VLESS here",
    "Trojan here",
    "Shadowsocks here",
    "REALITY here",
    "REALITY Vision here",
    "Shadowsocks ChaCha here",
];

/// The REALITY inbound's target: a local HTTPS site (TLS 1.3, `target.test`) that
/// answers every request with a short page. Only connections that are not REALITY
/// clients reach it (spliced by the node).
pub(crate) async fn target_site() -> (SocketAddr, CertificateDer<'static>) {
    let cert = TestCert::new("target.test").unwrap();
    let key = Arc::new(
        switchyard_node::tls::parse(
            cert.cert_pem().as_bytes(),
            cert.key_pem().as_bytes(),
            cert.cert_path(),
            cert.key_path(),
        )
        .unwrap(),
    );
    let der = key.cert[0].clone();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[&rustls::version::TLS13])
    .unwrap()
    .with_no_client_auth()
    .with_cert_resolver(Arc::new(Always(key)));
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let wait = Duration::from_secs(10);
                let Ok(Ok(mut tls)) = tokio::time::timeout(wait, acceptor.accept(tcp)).await else {
                    return;
                };
                let mut buf = [0u8; 4096];
                if let Ok(Ok(n)) = tokio::time::timeout(wait, tls.read(&mut buf)).await
                    && n > 0
                {
                    let page = "<html>the target site</html>";
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                        page.len()
                    );
                    let _ = tls.write_all(answer.as_bytes()).await;
                    let _ = tls.shutdown().await;
                }
            });
        }
    });
    (addr, der)
}

/// The target site's certificate, whatever the hello asks.
#[derive(Debug)]
struct Always(Arc<rustls::sign::CertifiedKey>);

impl rustls::server::ResolvesServerCert for Always {
    fn resolve(
        &self,
        _hello: rustls::server::ClientHello<'_>,
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        Some(self.0.clone())
    }
}

/// The world: a panel, its node, four routes, a user; the panel's address and the
/// user's subscription path.
struct World {
    panel: Panel,
    node: switchyard_node::channel::EnrolledNode,
    http: SocketAddr,
    path: String,
    /// The REALITY inbound's target site, and its certificate.
    target_site: (SocketAddr, CertificateDer<'static>),
    _dir: tempfile::TempDir,
}

async fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let http = SocketAddr::from(([127, 0, 0, 1], free_port().unwrap()));
    let panel = Panel::start(PanelConfig {
        listen: http,
        data_dir: dir.path().join("panel"),
        channel: ChannelSettings {
            listen: SocketAddr::from(([127, 0, 0, 1], free_port().unwrap())),
            ..ChannelSettings::default()
        },
        ..PanelConfig::default()
    })
    .await
    .unwrap();
    let service = panel.state.service().clone();
    let store = panel.state.store().clone();
    let cluster = store.create_cluster("c", live::now()).await.unwrap();
    let server = service
        .create_server(
            &ServerInput {
                cluster_id: cluster.id,
                name: "local".into(),
                address: "127.0.0.1".into(),
                allow_private_destinations: true,
            },
            live::now(),
        )
        .await
        .unwrap();
    let tls = InboundSecurity::Tls {
        certificate: TlsCertificate::SelfSigned,
    };
    let target_site = target_site().await;
    let reality = InboundSecurity::Reality {
        dest: target_site.0.to_string(),
        server_names: vec!["target.test".into()],
        short_ids: Vec::new(),
        max_time_diff_ms: 60_000,
        fingerprint: "chrome".into(),
    };
    // One server's Shadowsocks inbounds share a key length: both methods use 32 bytes.
    let kinds = [
        (ENTRIES[0], Protocol::Vless, tls.clone(), None, None),
        (ENTRIES[1], Protocol::Trojan, tls.clone(), None, None),
        (
            ENTRIES[2],
            Protocol::Shadowsocks,
            InboundSecurity::None,
            Some("2022-blake3-aes-256-gcm".to_owned()),
            None,
        ),
        (ENTRIES[3], Protocol::Vless, reality.clone(), None, None),
        (
            ENTRIES[4],
            Protocol::Vless,
            reality,
            None,
            Some(Flow::Vision),
        ),
        (
            ENTRIES[5],
            Protocol::Shadowsocks,
            InboundSecurity::None,
            Some("2022-blake3-chacha20-poly1305".to_owned()),
            None,
        ),
    ];
    for (i, (name, protocol, security, method, flow)) in kinds.into_iter().enumerate() {
        // A REALITY inbound's SNI is its first server name.
        let sni =
            (!matches!(security, InboundSecurity::Reality { .. })).then(|| "localhost".into());
        let inbound = service
            .create_inbound(
                &InboundInput {
                    server_id: server.id,
                    name: name.into(),
                    protocol,
                    port: free_port().unwrap(),
                    transport: InboundTransport::Tcp,
                    security,
                    host: None,
                    sni,
                    coefficient: 1.0,
                    method,
                    flow,
                    hysteria2: None,
                    trusted_proxies: Vec::new(),
                    rules: Default::default(),
                },
                live::now(),
            )
            .await
            .unwrap();
        // The first went into the default route; the others get a route each.
        if i > 0 {
            store
                .create_route(
                    cluster.id,
                    &RouteInput {
                        // The route's name is what the apps show.
                        name: name.into(),
                        flag: None,
                        algorithm: Algorithm::LeastLoaded,
                        inbound_ids: Some(vec![inbound.id]),
                    },
                    live::now(),
                )
                .await
                .unwrap();
        }
    }
    let user = service
        .create_user(&live::user("alice"), live::now())
        .await
        .unwrap();
    let token = panel.join_token(server.id).await.unwrap();
    let node = live::join(&dir.path().join("node"), &token).await;
    live::wait_until("the node is online", 20, || {
        let store = store.clone();
        async move { store.server(server.id).await.unwrap().state == ServerState::Online }
    })
    .await;
    World {
        panel,
        node,
        http,
        path: user.subscription_path,
        target_site,
        _dir: dir,
    }
}

/// Downloads through `proxy` until it works (the node may still be applying its
/// config), then checks a 2 MiB download byte for byte.
async fn download(target: &HttpTarget, proxy: SocketAddr, what: &str, log: impl Fn() -> String) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        match target.download_via_socks(proxy, 2 * MIB).await {
            Ok(()) => return,
            Err(e) if Instant::now() > deadline => {
                panic!("{what}: {e:#}\n{}", log())
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(300)).await,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sing_box_runs_the_subscription_through_every_route() {
    let target = HttpTarget::start().await.unwrap();
    let w = world().await;
    let (status, body) = get(w.http, &format!("{}?format=sing-box", w.path)).await;
    assert!(status.contains("200"), "{status}");
    let mut config: Value = serde_json::from_str(&body).unwrap();
    let tags = |config: &Value| -> Vec<String> {
        config["outbounds"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|o| ["vless", "trojan", "shadowsocks"].contains(&o["type"].as_str().unwrap()))
            .map(|o| o["tag"].as_str().unwrap().to_owned())
            .collect()
    };
    // One entry per route, in route order, named after the route (here, its inbound's name).
    assert_eq!(tags(&config), ENTRIES);
    // The pinned sing-box is built without uTLS, which its REALITY client needs
    // (docs/subscriptions.md, "REALITY"; proto's sing_box_check tests the refusal):
    // the REALITY entry is taken out of the config, and out of the groups, here.
    let reality = [ENTRIES[3], ENTRIES[4]];
    let outbounds = config["outbounds"].as_array_mut().unwrap();
    outbounds.retain(|o| !reality.iter().any(|r| o["tag"] == *r));
    for o in outbounds.iter_mut() {
        if let Some(members) = o.get_mut("outbounds").and_then(Value::as_array_mut) {
            members.retain(|m| !reality.iter().any(|r| m == r));
        }
    }
    let tags = tags(&config);
    assert_eq!(tags, [ENTRIES[0], ENTRIES[1], ENTRIES[2], ENTRIES[5]]);
    switchyard_testkit::sing_box::check(&config)
        .await
        .unwrap_or_else(|e| panic!("sing-box check: {e:#}\n{body}"));
    // The urltest group tests the local target, never the internet.
    for o in config["outbounds"].as_array_mut().unwrap() {
        if o["type"] == "urltest" {
            o["url"] = json!(format!("http://{}/bytes/0", target.addr()));
        }
    }
    for tag in &tags {
        config["inbounds"][0]["listen_port"] = json!(free_port().unwrap());
        config["route"]["final"] = json!(tag);
        let client = SingBox::start(config.clone())
            .await
            .unwrap_or_else(|e| panic!("sing-box runs the subscription: {e:#}"));
        let proxy = client.proxy_addr().unwrap();
        download(&target, proxy, tag, || client.log_tail()).await;
    }
    w.node.shutdown().await;
    w.panel.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mihomo_runs_the_clash_subscription_through_every_route() {
    let target = HttpTarget::start().await.unwrap();
    let w = world().await;
    let (status, yaml) = get(w.http, &format!("{}?format=clash", w.path)).await;
    assert!(status.contains("200"), "{status}");
    let yaml = live::through_the_node(&yaml);
    // The url-test group tests the local target, never the internet.
    let yaml = yaml.replace(
        "\"https://www.gstatic.com/generate_204\"",
        &format!("\"http://{}/bytes/0\"", target.addr()),
    );
    assert!(!yaml.contains("gstatic"), "{yaml}");
    switchyard_testkit::mihomo::check(&yaml)
        .await
        .unwrap_or_else(|e| panic!("mihomo -t: {e:#}\n{yaml}"));
    assert!(yaml.contains("\"reality-opts\":"), "{yaml}");
    for name in ENTRIES {
        assert!(yaml.contains(&format!("\"name\": \"{name}\"")), "{yaml}");
        // The one rule sends everything to this entry; the proxy on a free port.
        let port = free_port().unwrap();
        let config = yaml
            .replace("\"MATCH,Switchyard\"", &format!("\"MATCH,{name}\""))
            .replace("\"mixed-port\": 7890", &format!("\"mixed-port\": {port}"))
            // The level at which mihomo says it serves (testkit's `Mihomo::start`).
            .replace("\"log-level\": \"warning\"", "\"log-level\": \"info\"");
        assert!(config.contains(&format!("\"MATCH,{name}\"")), "{config}");
        assert!(config.contains("\"log-level\": \"info\""), "{config}");
        let client =
            switchyard_testkit::Mihomo::start(&config, SocketAddr::from(([127, 0, 0, 1], port)))
                .await
                .unwrap_or_else(|e| panic!("mihomo runs the subscription: {e:#}"));
        download(&target, client.proxy_addr(), name, || client.log_tail()).await;
    }
    w.node.shutdown().await;
    w.panel.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xray_runs_every_config_of_the_xray_subscription() {
    let target = HttpTarget::start().await.unwrap();
    let w = world().await;
    let (status, body) = get(w.http, &format!("{}?format=xray", w.path)).await;
    assert!(status.contains("200"), "{status}");
    let configs: Value = serde_json::from_str(&body).unwrap();
    let configs = configs.as_array().unwrap();
    let remarks: Vec<&str> = configs
        .iter()
        .map(|c| c["remarks"].as_str().unwrap())
        .collect();
    assert_eq!(remarks, ENTRIES);
    assert_eq!(
        configs[3]["outbounds"][0]["streamSettings"]["security"],
        "reality"
    );
    assert_eq!(
        configs[4]["outbounds"][0]["settings"]["vnext"][0]["users"][0]["flow"],
        "xtls-rprx-vision"
    );
    for config in configs {
        switchyard_testkit::xray::check(config)
            .await
            .unwrap_or_else(|e| panic!("xray -test: {e:#}"));
    }
    for config in configs {
        let mut config = config.clone();
        live::xray_through_the_node(&mut config);
        // Distinct ports: two free ports asked for in a row may be the same one, and
        // then Xray's HTTP inbound answers on the SOCKS port.
        let mut taken = std::collections::HashSet::new();
        for inbound in config["inbounds"].as_array_mut().unwrap() {
            let port = std::iter::repeat_with(|| free_port().unwrap())
                .find(|p| taken.insert(*p))
                .unwrap();
            inbound["port"] = json!(port);
        }
        let client = switchyard_testkit::Xray::start(config.clone())
            .await
            .unwrap_or_else(|e| panic!("xray runs the subscription: {e:#}"));
        let socks = client.inbound_addr("socks").unwrap();
        let name = config["remarks"].as_str().unwrap().to_owned();
        if config["outbounds"][0]["protocol"] == "shadowsocks" {
            // Xray's Shadowsocks 2022 client never passes the close on (docs/node.md,
            // "Xray as a client"): read the answer by its length.
            let got = tokio::time::timeout(
                Duration::from_secs(15),
                target.download_via_socks_by_length(socks, 2 * MIB),
            )
            .await;
            assert!(
                matches!(got, Ok(Ok(_))),
                "{name}: {got:?}\n{}",
                client.log_tail()
            );
            continue;
        }
        download(&target, socks, &name, || client.log_tail()).await;
    }
    w.node.shutdown().await;
    w.panel.shutdown().await;
}

/// What a prober sees of the REALITY inbound: its target site, through the node
/// (its certificate and page), while the same port serves Xray (above).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prober_of_the_reality_inbound_gets_the_target_site() {
    let w = world().await;
    let inbound = w
        .panel
        .state
        .store()
        .inbounds(None, None)
        .await
        .unwrap()
        .into_iter()
        .find(|i| i.name == ENTRIES[3])
        .unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(w.target_site.1.clone()).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let deadline = Instant::now() + Duration::from_secs(15);
    let page = loop {
        let attempt = async {
            let tcp = TcpStream::connect(("127.0.0.1", inbound.port)).await?;
            let name = rustls::pki_types::ServerName::try_from("target.test").unwrap();
            let mut tls = connector.connect(name, tcp).await?;
            tls.write_all(b"GET / HTTP/1.1\r\nHost: target.test\r\n\r\n")
                .await?;
            let mut out = Vec::new();
            tls.read_to_end(&mut out).await?;
            std::io::Result::Ok(String::from_utf8_lossy(&out).into_owned())
        };
        match tokio::time::timeout(Duration::from_secs(5), attempt).await {
            Ok(Ok(page)) => break page,
            _ if Instant::now() > deadline => panic!("the prober got no answer"),
            _ => tokio::time::sleep(Duration::from_millis(300)).await,
        }
    };
    assert!(page.ends_with("<html>the target site</html>"), "{page}");
    w.node.shutdown().await;
    w.panel.shutdown().await;
}
