//! Our client over XHTTP against our node: VLESS in TLS (the certificate pinned,
//! HTTP/2 agreed by ALPN) in every mode the node serves (`auto`, where our client
//! picks stream-up as Xray's does; `packet-up`; `stream-up`; `stream-one`), and
//! plain VLESS over HTTP/1.1 packet-up with non-default padding and upload limits;
//! a 1 MiB download and a 1 MiB upload through our proxy, byte for byte, several
//! streams in a row on one outbound (XMUX shares its connections).

use std::sync::Arc;

use switchyard_client::{Outbound, Proxy};
use switchyard_node::{Node, NodeConfig};
use switchyard_proto::entry::xhttp::XhttpExtra;
use switchyard_proto::entry::{Entry, EntryProtocol, EntryTls, EntryTransport};
use switchyard_proto::xhttp::{Mode, Range};
use switchyard_testkit::{HttpTarget, TestCert, free_port};

const UUID: &str = "b831381d-6324-4d53-ad4f-8cda48b30811";
const MODES: [Mode; 4] = Mode::ALL;

struct Fixture {
    _node: Arc<Node>,
    _dir: tempfile::TempDir,
    _cert: TestCert,
    entries: Vec<Entry>,
}

/// A node with a VLESS+XHTTP+TLS inbound per mode and a plain packet-up one with
/// padding of 1-50 bytes, and Alice's entries for them.
async fn start_node() -> Fixture {
    let cert = TestCert::new("node.test").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let tls = format!(
        "security = {{ type = \"tls\", cert = \"{}\", key = \"{}\" }}",
        cert.cert_path().display(),
        cert.key_path().display()
    );
    let ports: Vec<u16> = (0..=MODES.len()).map(|_| free_port().unwrap()).collect();
    let mut inbounds = String::new();
    for (mode, port) in MODES.iter().zip(&ports) {
        inbounds.push_str(&format!(
            "\n[[inbounds]]\ntag = \"xh-{mode}\"\nlisten = \"127.0.0.1\"\nport = {port}\n\
             protocol = \"vless\"\n\
             transport = {{ type = \"xhttp\", path = \"/xh\", mode = \"{mode}\" }}\n{tls}\n"
        ));
    }
    let plain = ports[MODES.len()];
    inbounds.push_str(&format!(
        "\n[[inbounds]]\ntag = \"xh-plain\"\nlisten = \"127.0.0.1\"\nport = {plain}\n\
         protocol = \"vless\"\n\
         transport = {{ type = \"xhttp\", path = \"/p\", mode = \"packet-up\", x_padding_bytes = \"1-50\" }}\n"
    ));
    let text = format!(
        r#"
[node]
state_dir = "{dir}"
allow_private_destinations = true
[control]
listen = "127.0.0.1:{control}"
{inbounds}
[[users]]
name = "alice"
vless = "{UUID}"
"#,
        dir = dir.path().display(),
        control = free_port().unwrap(),
    );
    let config = NodeConfig::from_toml(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let node = Node::start(config).await.unwrap();
    let entry = |name: String, port, transport, tls| Entry {
        name,
        server: "127.0.0.1".into(),
        port,
        protocol: EntryProtocol::Vless {
            uuid: UUID.into(),
            flow: None,
        },
        transport,
        tls,
        route: None,
    };
    let pinned = Some(EntryTls {
        server_name: Some("node.test".into()),
        certificate_pem: Some(cert.cert_pem().into()),
        ..EntryTls::default()
    });
    let mut entries: Vec<Entry> = MODES
        .iter()
        .zip(&ports)
        .map(|(mode, port)| {
            let transport = EntryTransport::Xhttp {
                path: "/xh".into(),
                host: None,
                mode: *mode,
                extra: None,
            };
            entry(
                format!("XHTTP TLS {mode}"),
                *port,
                transport,
                pinned.clone(),
            )
        })
        .collect();
    let extra = XhttpExtra {
        x_padding_bytes: Some(Range { from: 1, to: 50 }),
        sc_max_each_post_bytes: Some(Range::fixed(100_000)),
        sc_min_posts_interval_ms: Some(Range::fixed(1)),
        ..XhttpExtra::default()
    };
    let transport = EntryTransport::Xhttp {
        path: "/p".into(),
        host: Some("node.test".into()),
        mode: Mode::PacketUp,
        extra: Some(extra),
    };
    entries.push(entry(
        "XHTTP plain packet-up".into(),
        plain,
        transport,
        None,
    ));
    Fixture {
        _node: node,
        _dir: dir,
        _cert: cert,
        entries,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_carries_bytes_both_ways_through_our_xhttp_inbound() {
    let target = HttpTarget::start().await.unwrap();
    let node = start_node().await;
    for entry in &node.entries {
        let proxy = Proxy::start("127.0.0.1:0".parse().unwrap()).await.unwrap();
        proxy.set_server(Some(Arc::new(Outbound::new(entry.clone()).unwrap())));
        for _ in 0..2 {
            target
                .download_via_socks(proxy.addr(), 1 << 20)
                .await
                .unwrap_or_else(|e| panic!("{}: download: {e:#}", entry.name));
            target
                .upload_via_socks(proxy.addr(), 1 << 20)
                .await
                .unwrap_or_else(|e| panic!("{}: upload: {e:#}", entry.name));
        }
    }
}
