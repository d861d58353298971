//! Our client over Hysteria 2 against our node, with and without Salamander: a
//! 1 MiB download checked byte for byte through our proxy (TCP: QUIC streams in the
//! outbound's one connection, several downloads in a row on it), datagrams of 1 to
//! 1,400 bytes through a SOCKS5 UDP ASSOCIATE to two echo servers (every answer's
//! content and source checked); a wrong password is refused at authentication,
//! named.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use switchyard_client::{Outbound, OutboundError, Proxy};
use switchyard_node::{Node, NodeConfig};
use switchyard_proto::Address;
use switchyard_proto::entry::{Entry, EntryProtocol, EntryTls, EntryTransport};
use switchyard_testkit::socks5::{Dest, UdpAssociation};
use switchyard_testkit::{HttpTarget, TestCert, UdpEcho, free_port};
use tokio::time::timeout;

const PASSWORD: &str = "alice-hy2-password";
const OBFS: &str = "salamander-secret";
const SIZES: [usize; 8] = [1, 2, 8, 64, 512, 1000, 1200, 1400];
const ECHO_WAIT: Duration = Duration::from_secs(2);

struct Fixture {
    _node: Arc<Node>,
    _dir: tempfile::TempDir,
    _cert: TestCert,
    plain: Entry,
    salamander: Entry,
}

/// A node with two Hysteria 2 inbounds, plain and with Salamander, and Alice's
/// entries for them (the certificate pinned).
async fn start_node() -> Fixture {
    let cert = TestCert::new("node.test").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (plain, obfs) = (free_port().unwrap(), free_port().unwrap());
    let tls = format!(
        "security = {{ type = \"tls\", cert = \"{}\", key = \"{}\" }}",
        cert.cert_path().display(),
        cert.key_path().display()
    );
    let text = format!(
        r#"
[node]
state_dir = "{dir}"
allow_private_destinations = true
[control]
listen = "127.0.0.1:{control}"

[[inbounds]]
tag = "hy2"
listen = "127.0.0.1"
port = {plain}
protocol = "hysteria2"
{tls}

[[inbounds]]
tag = "hy2-obfs"
listen = "127.0.0.1"
port = {obfs}
protocol = "hysteria2"
{tls}
hysteria2 = {{ obfs_password = "{OBFS}" }}

[[users]]
name = "alice"
hysteria2 = "{PASSWORD}"
"#,
        dir = dir.path().display(),
        control = free_port().unwrap(),
    );
    let config = NodeConfig::from_toml(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let node = Node::start(config).await.unwrap();
    let entry = |name: &str, port, obfs: Option<&str>| Entry {
        name: name.into(),
        server: "127.0.0.1".into(),
        port,
        protocol: EntryProtocol::Hysteria2 {
            password: PASSWORD.into(),
            obfs_password: obfs.map(str::to_owned),
            ports: None,
            up_mbps: None,
            down_mbps: Some(100),
            hop_interval: None,
        },
        transport: EntryTransport::Tcp,
        tls: Some(EntryTls {
            server_name: Some("node.test".into()),
            certificate_pem: Some(cert.cert_pem().into()),
            ..EntryTls::default()
        }),
        route: None,
    };
    Fixture {
        plain: entry("Hysteria 2", plain, None),
        salamander: entry("Hysteria 2 Salamander", obfs, Some(OBFS)),
        _node: node,
        _dir: dir,
        _cert: cert,
    }
}

async fn proxy_through(entry: &Entry) -> Proxy {
    let proxy = Proxy::start("127.0.0.1:0".parse().unwrap()).await.unwrap();
    proxy.set_server(Some(Arc::new(Outbound::new(entry.clone()).unwrap())));
    proxy
}

fn datagram(tag: u8, size: usize) -> Vec<u8> {
    (0..size)
        .map(|i| tag.wrapping_mul(31).wrapping_add(i as u8))
        .collect()
}

/// `payload` to `echo` and back, unchanged and from `echo` (sent again after
/// [`ECHO_WAIT`], three times at most: UDP may lose it).
async fn round_trip(assoc: &UdpAssociation, echo: SocketAddr, payload: &[u8], what: &str) {
    let dest = Dest::Addr(echo);
    for _ in 0..3 {
        assoc.send_to(payload, &dest).await.unwrap();
        let got = timeout(ECHO_WAIT, async {
            loop {
                let (from, data) = assoc.recv_from().await.unwrap();
                if data == payload {
                    return from;
                }
            }
        })
        .await;
        if let Ok(from) = got {
            assert_eq!(from, dest, "{what}: the echo's source");
            return;
        }
    }
    panic!("{what}: no echo of {} bytes", payload.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_and_udp_go_through_hysteria2_with_and_without_salamander() {
    let target = HttpTarget::start().await.unwrap();
    let node = start_node().await;
    for entry in [&node.plain, &node.salamander] {
        let proxy = proxy_through(entry).await;
        // Several streams in a row, all in the outbound's one QUIC connection.
        for _ in 0..3 {
            target
                .download_via_socks(proxy.addr(), 1 << 20)
                .await
                .unwrap_or_else(|e| panic!("{}: {e:#}", entry.name));
        }
        let (a, b) = (
            UdpEcho::start().await.unwrap(),
            UdpEcho::start().await.unwrap(),
        );
        let assoc = UdpAssociation::open(proxy.addr()).await.unwrap();
        for (i, size) in SIZES.into_iter().enumerate() {
            let echo = if i % 2 == 0 { &a } else { &b };
            let what = format!("{}: {size} bytes", entry.name);
            round_trip(&assoc, echo.addr(), &datagram(i as u8, size), &what).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_or_obfs_password_is_refused_by_name() {
    let refused = |result: Result<_, OutboundError>| match result {
        Ok(_) => panic!("connected"),
        Err(e) => e,
    };
    let node = start_node().await;
    let to = Address::Ip("127.0.0.1:9".parse().unwrap());
    let mut wrong = node.plain.clone();
    if let EntryProtocol::Hysteria2 { password, .. } = &mut wrong.protocol {
        *password = "not-alice".into();
    }
    let err = refused(Outbound::new(wrong).unwrap().connect(&to).await);
    assert!(
        matches!(
            &err,
            OutboundError::Failed {
                step: "hysteria2",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("authentication refused"), "{err}");
    // Without the obfs password the server never answers: the deadline names it.
    let mut bare = node.salamander.clone();
    if let EntryProtocol::Hysteria2 { obfs_password, .. } = &mut bare.protocol {
        *obfs_password = None;
    }
    let err = refused(Outbound::new(bare).unwrap().connect(&to).await);
    assert!(
        matches!(
            &err,
            OutboundError::Failed {
                step: "hysteria2",
                ..
            } | OutboundError::Timeout { .. }
        ),
        "{err}"
    );
}
