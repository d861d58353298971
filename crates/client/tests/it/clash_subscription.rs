//! A Clash subscription, read by the client: one real node on 127.0.0.1 with a plain
//! VLESS, a VLESS+WS+TLS (early data in the path) and a Trojan+TLS inbound, TLS on a
//! self-signed certificate. The test serves the entries for them as a Clash config
//! (`switchyard_proto::clash::client_config`, what the panel gives Clash apps) and as
//! a sing-box config; the client reads the same servers from both (the pin as the
//! certificate's SHA-256 in the Clash one) and downloads through its proxy via each
//! Clash-sourced server, every byte checked. A pin of another certificate is refused.

use std::sync::Arc;

use switchyard_client::{Outbound, OutboundError, Proxy};
use switchyard_node::{Node, NodeConfig};
use switchyard_proto::entry::{Entry, EntryProtocol, EntryTls, EntryTransport};
use switchyard_proto::{Address, clash, singbox};
use switchyard_testkit::{HttpTarget, TestCert, free_port};

const UUID: &str = "b831381d-6324-4d53-ad4f-8cda48b30811";
const TROJAN: &str = "correct horse battery staple";
const DOWN: u64 = 1 << 20;

/// The node, and the ports of its plain VLESS, VLESS+WS+TLS and Trojan+TLS inbounds.
async fn node(dir: &std::path::Path, cert: &TestCert) -> (Arc<Node>, [u16; 3]) {
    let ports = [
        free_port().unwrap(),
        free_port().unwrap(),
        free_port().unwrap(),
    ];
    let tls = format!(
        "security = {{ type = \"tls\", cert = \"{}\", key = \"{}\" }}",
        cert.cert_path().display(),
        cert.key_path().display()
    );
    let text = format!(
        r#"
version = 1
[node]
state_dir = "{dir}"
allow_private_destinations = true
[control]
listen = "127.0.0.1:{control}"

[[inbounds]]
tag = "plain"
listen = "127.0.0.1"
port = {plain}
protocol = "vless"

[[inbounds]]
tag = "ws"
listen = "127.0.0.1"
port = {ws}
protocol = "vless"
transport = {{ type = "ws", path = "/v?ed=2048", host = "node.test" }}
{tls}

[[inbounds]]
tag = "trojan"
listen = "127.0.0.1"
port = {trojan}
protocol = "trojan"
{tls}

[[users]]
name = "alice"
vless = "{UUID}"
trojan = "{TROJAN}"
"#,
        dir = dir.display(),
        control = free_port().unwrap(),
        plain = ports[0],
        ws = ports[1],
        trojan = ports[2],
    );
    let config = NodeConfig::from_toml(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    (Node::start(config).await.unwrap(), ports)
}

/// The entries for the node's inbounds, TLS pinned to `cert`.
fn entries(ports: [u16; 3], cert: &TestCert) -> Vec<Entry> {
    let pinned = || {
        Some(EntryTls {
            server_name: Some("node.test".into()),
            certificate_pem: Some(cert.cert_pem().into()),
            alpn: vec!["http/1.1".into()],
            ..EntryTls::default()
        })
    };
    let vless = || EntryProtocol::Vless {
        uuid: UUID.into(),
        flow: None,
    };
    let entry = |name: &str, port, protocol, transport, tls| Entry {
        name: name.into(),
        server: "127.0.0.1".into(),
        port,
        protocol,
        transport,
        tls,
        route: None,
    };
    vec![
        entry("Plain", ports[0], vless(), EntryTransport::Tcp, None),
        entry(
            "WS TLS 🔒",
            ports[1],
            vless(),
            EntryTransport::Ws {
                path: "/v?ed=2048".into(),
                host: Some("node.test".into()),
            },
            pinned(),
        ),
        entry(
            "Trojan TLS",
            ports[2],
            EntryProtocol::Trojan {
                password: TROJAN.into(),
            },
            EntryTransport::Tcp,
            pinned(),
        ),
    ]
}

/// Serves `/clash` and `/sing-box` on 127.0.0.1; the base URL.
async fn subscription_server(clash: String, sing_box: String) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let bodies = Arc::new((clash, sing_box));
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let bodies = bodies.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut b = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut b).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&b[..n]),
                    }
                }
                let body = if head.starts_with(b"GET /clash ") {
                    &bodies.0
                } else {
                    &bodies.1
                };
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(answer.as_bytes()).await;
            });
        }
    });
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clash_subscription_gives_the_same_servers_and_they_carry_traffic() {
    let target = HttpTarget::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cert = TestCert::new("node.test").unwrap();
    let (_node, ports) = node(dir.path(), &cert).await;
    let served = entries(ports, &cert);
    let url = subscription_server(
        clash::client_config(&served, &clash::ClashOptions::default()),
        singbox::client_config(&served, &singbox::SingBoxOptions::default()).to_string(),
    )
    .await;

    let from_clash = switchyard_client::fetch(&format!("{url}/clash"))
        .await
        .unwrap()
        .entries;
    let from_sing_box = switchyard_client::fetch(&format!("{url}/sing-box"))
        .await
        .unwrap()
        .entries;
    assert_eq!(from_sing_box, served);
    // The same servers; the Clash config pins the certificate by its SHA-256.
    let by_hash: Vec<Entry> = served
        .iter()
        .map(|e| {
            let mut e = e.clone();
            if let Some(tls) = &mut e.tls {
                tls.certificate_sha256 = tls.pin_sha256();
                tls.certificate_pem = None;
            }
            e
        })
        .collect();
    assert_eq!(from_clash, by_hash);
    assert!(
        from_clash[2]
            .tls
            .as_ref()
            .unwrap()
            .certificate_sha256
            .is_some()
    );

    let proxy = Proxy::start("127.0.0.1:0".parse().unwrap()).await.unwrap();
    for entry in &from_clash {
        let outbound = Outbound::new(entry.clone()).unwrap();
        proxy.set_server(Some(Arc::new(outbound)));
        tokio::time::timeout(
            std::time::Duration::from_secs(20),
            target.download_via_socks(proxy.addr(), DOWN),
        )
        .await
        .unwrap_or_else(|_| panic!("{}: the download stalled", entry.name))
        .unwrap_or_else(|e| panic!("{}: {e:#}", entry.name));
    }
    assert_eq!(target.bytes_out(), 3 * DOWN);

    // A Clash config that pins another certificate: the node is refused at TLS.
    let other = TestCert::new("node.test").unwrap();
    let wrong = clash::client_config(&entries(ports, &other), &clash::ClashOptions::default());
    let wrong = switchyard_proto::clash::entries(&wrong).unwrap();
    let destination = Address::Ip(target.addr());
    match Outbound::new(wrong[2].clone())
        .unwrap()
        .connect(&destination)
        .await
    {
        Err(OutboundError::Failed { step: "tls", .. }) => {}
        Err(e) => panic!("refused, but not at TLS: {e}"),
        Ok(_) => panic!("a wrong pin was accepted"),
    }
}
