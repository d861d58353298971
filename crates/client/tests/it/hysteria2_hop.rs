//! Our client hopping across our node's Hysteria 2 port range, with and without
//! Salamander: the entry's `ports` make the outbound send to a port of the range
//! that changes every hop (200 ms here, [`Outbound::with_hop_interval`]), from a new
//! local port each time. Between the client and the node a UDP relay on a range of
//! its own passes each port's datagrams on to the node's same port of its range
//! and counts what the client sent to each, from which local ports. Downloads and
//! uploads through our proxy (checked byte for byte) and UDP echoes go on, round
//! after round, until the relay has seen the client on several ports and local
//! ports: the traffic of every round crosses the hops unharmed.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use switchyard_client::{Outbound, Proxy};
use switchyard_node::{Node, NodeConfig};
use switchyard_proto::entry::{Entry, EntryProtocol, EntryTls, EntryTransport};
use switchyard_testkit::socks5::{Dest, UdpAssociation};
use switchyard_testkit::{HttpTarget, TestCert, UdpEcho, free_port};
use tokio::net::UdpSocket;
use tokio::task::JoinSet;
use tokio::time::timeout;

const PASSWORD: &str = "alice-hy2-password";
const OBFS: &str = "salamander-secret";
/// Ports in each range.
const RANGE: u16 = 4;
/// The hop interval of the test's outbounds.
const HOP: Duration = Duration::from_millis(200);
/// Bytes each way per round.
const BYTES: u64 = 256 * 1024;
/// Rounds before giving up on seeing the hops.
const MAX_ROUNDS: usize = 100;
/// Local ports (sockets) the relay must have seen: several hops of the
/// outbound's two connections (TCP's, the UDP association's).
const SOURCES: usize = 6;
const ECHO_WAIT: Duration = Duration::from_secs(2);

/// A free port of 127.0.0.1 with the next `n - 1` free as well (for UDP).
fn consecutive_free(n: u16) -> u16 {
    for _ in 0..200 {
        let first = free_port().unwrap();
        if first > u16::MAX - n {
            continue;
        }
        let free = (first..first + n).all(|p| std::net::UdpSocket::bind(("127.0.0.1", p)).is_ok());
        if free {
            return first;
        }
    }
    panic!("no {n} consecutive free UDP ports");
}

/// Datagrams from the client to each port of the relay's range, and the client's
/// local addresses seen.
#[derive(Default)]
struct Seen {
    per_port: HashMap<u16, u64>,
    sources: HashSet<SocketAddr>,
}

/// A UDP relay: its port `first + i` to the node's `to + i`, each client address
/// with a socket of its own towards the node (so answers find their way back).
struct Relay {
    first: u16,
    seen: Arc<Mutex<Seen>>,
    _tasks: JoinSet<()>,
}

impl Relay {
    async fn start(to: u16) -> Self {
        let first = consecutive_free(RANGE);
        let seen = Arc::new(Mutex::new(Seen::default()));
        let mut tasks = JoinSet::new();
        for i in 0..RANGE {
            let listen = Arc::new(
                UdpSocket::bind(("127.0.0.1", first + i))
                    .await
                    .unwrap_or_else(|e| panic!("relay port {}: {e}", first + i)),
            );
            tasks.spawn(relay_port(listen, to + i, seen.clone()));
        }
        Self {
            first,
            seen,
            _tasks: tasks,
        }
    }

    /// How many of its ports the client sent to, and from how many local ports.
    fn seen(&self) -> (usize, usize) {
        let seen = self.seen.lock().unwrap();
        (seen.per_port.len(), seen.sources.len())
    }
}

/// One port of the relay: client to node and back.
async fn relay_port(listen: Arc<UdpSocket>, to: u16, seen: Arc<Mutex<Seen>>) {
    let port = listen.local_addr().unwrap().port();
    let mut upstreams: HashMap<SocketAddr, Arc<UdpSocket>> = HashMap::new();
    // Dropped with this task: the answering tasks end with it.
    let mut answers = JoinSet::new();
    let mut buf = vec![0u8; 65536];
    loop {
        let (n, client) = listen.recv_from(&mut buf).await.unwrap();
        {
            let mut seen = seen.lock().unwrap();
            *seen.per_port.entry(port).or_default() += 1;
            seen.sources.insert(client);
        }
        let upstream = match upstreams.get(&client) {
            Some(u) => u.clone(),
            None => {
                let u = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
                u.connect(("127.0.0.1", to)).await.unwrap();
                let (back, from) = (listen.clone(), u.clone());
                answers.spawn(async move {
                    let mut buf = vec![0u8; 65536];
                    while let Ok(n) = from.recv(&mut buf).await {
                        let _ = back.send_to(&buf[..n], client).await;
                    }
                });
                upstreams.insert(client, u.clone());
                u
            }
        };
        let _ = upstream.send(&buf[..n]).await;
    }
}

struct Fixture {
    _node: Arc<Node>,
    _dir: tempfile::TempDir,
    cert: TestCert,
    /// The plain inbound's range, then Salamander's.
    plain: u16,
    salamander: u16,
}

/// A node with two Hysteria 2 inbounds on port ranges, plain and with Salamander.
async fn start_node() -> Fixture {
    let cert = TestCert::new("node.test").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (plain, obfs) = (consecutive_free(RANGE), consecutive_free(RANGE));
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
hysteria2 = {{ ports = "{plain}-{plain_last}" }}

[[inbounds]]
tag = "hy2-obfs"
listen = "127.0.0.1"
port = {obfs}
protocol = "hysteria2"
{tls}
hysteria2 = {{ obfs_password = "{OBFS}", ports = "{obfs}-{obfs_last}" }}

[[users]]
name = "alice"
hysteria2 = "{PASSWORD}"
"#,
        dir = dir.path().display(),
        control = free_port().unwrap(),
        plain_last = plain + RANGE - 1,
        obfs_last = obfs + RANGE - 1,
    );
    let config = NodeConfig::from_toml(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let node = Node::start(config).await.unwrap();
    Fixture {
        _node: node,
        _dir: dir,
        cert,
        plain,
        salamander: obfs,
    }
}

/// Alice's entry for the relay's range (its first port the main one).
fn entry(name: &str, cert: &TestCert, relay: &Relay, obfs: Option<&str>) -> Entry {
    Entry {
        name: name.into(),
        server: "127.0.0.1".into(),
        port: relay.first,
        protocol: EntryProtocol::Hysteria2 {
            password: PASSWORD.into(),
            obfs_password: obfs.map(str::to_owned),
            ports: Some(format!("{}-{}", relay.first, relay.first + RANGE - 1)),
            up_mbps: None,
            down_mbps: Some(100),
            // The test hops in milliseconds ([`Outbound::with_hop_interval`]),
            // far below what an entry may say.
            hop_interval: None,
        },
        transport: EntryTransport::Tcp,
        tls: Some(EntryTls {
            server_name: Some("node.test".into()),
            certificate_pem: Some(cert.cert_pem().into()),
            ..EntryTls::default()
        }),
        route: None,
    }
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
async fn the_client_hops_across_the_hysteria2_port_range_with_and_without_salamander() {
    let target = HttpTarget::start().await.unwrap();
    let echo = UdpEcho::start().await.unwrap();
    let node = start_node().await;
    for (name, to, obfs) in [
        ("Hysteria 2 hopping", node.plain, None),
        ("Hysteria 2 hopping Salamander", node.salamander, Some(OBFS)),
    ] {
        let relay = Relay::start(to).await;
        let outbound = Outbound::new(entry(name, &node.cert, &relay, obfs))
            .unwrap()
            .with_hop_interval(HOP);
        let proxy = Proxy::start("127.0.0.1:0".parse().unwrap()).await.unwrap();
        proxy.set_server(Some(Arc::new(outbound)));
        let assoc = UdpAssociation::open(proxy.addr()).await.unwrap();
        let mut round = 0;
        loop {
            target
                .download_via_socks(proxy.addr(), BYTES)
                .await
                .unwrap_or_else(|e| panic!("{name}: round {round}: download: {e:#}"));
            target
                .upload_via_socks(proxy.addr(), BYTES)
                .await
                .unwrap_or_else(|e| panic!("{name}: round {round}: upload: {e:#}"));
            let what = format!("{name}: round {round}");
            round_trip(&assoc, echo.addr(), &datagram(round as u8, 1200), &what).await;
            let (ports, sources) = relay.seen();
            if ports > 1 && sources >= SOURCES {
                break;
            }
            round += 1;
            assert!(
                round < MAX_ROUNDS,
                "{name}: after {round} rounds the client sent to {ports} port(s) of the \
                 range from {sources} local port(s)"
            );
            tokio::time::sleep(HOP / 2).await;
        }
    }
}
