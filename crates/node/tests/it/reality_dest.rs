//! A REALITY inbound's `dest` never leads a prober into the node's own machine: a
//! private or loopback `dest` is refused by the config (naming the field), and a name
//! that passes it but resolves to a private address (here the machine's own host
//! name, which resolves to loopback or the machine's private address) is refused when
//! the node dials it: the prober's connection is held, the private service never sees
//! it. With `allow_private_destinations`, the same prober reaches the service.

use crate::common;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use common::*;
use switchyard_node::NodeConfig;
use switchyard_testkit::{TestCert, free_port};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A service on 127.0.0.1 that counts its connections and answers each with a line.
struct PrivateService {
    addr: SocketAddr,
    seen: Arc<AtomicU64>,
}

impl PrivateService {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(AtomicU64::new(0));
        let count = seen.clone();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                let _ = s.write_all(b"PRIVATE SERVICE\n").await;
            }
        });
        Self { addr, seen }
    }
}

/// This machine's host name, which the system's resolver maps to one of its own
/// addresses (loopback or a private one) from /etc/hosts.
async fn own_host_name() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_owned();
    let addrs: Vec<IpAddr> = tokio::net::lookup_host((name.as_str(), 1))
        .await
        .unwrap_or_else(|e| panic!("the host name {name:?} resolves: {e}"))
        .map(|a| a.ip())
        .collect();
    assert!(
        !addrs.is_empty()
            && addrs
                .iter()
                .all(|ip| switchyard_node::outbound::is_private(*ip)),
        "{name} resolves to private addresses only: {addrs:?}"
    );
    name
}

fn reality_inbound(dest: &str) -> String {
    let keys = switchyard_node::reality::generate().unwrap();
    format!(
        r#"protocol = "vless"
security = {{ type = "reality", dest = "{dest}", server_names = ["target.test"], private_key = "{}", short_ids = [""] }}"#,
        keys.private_key
    )
}

/// A node with a REALITY inbound to `dest`, private destinations allowed or not.
async fn node(dest: &str, allow_private: bool) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let cert = TestCert::new("node.test").unwrap();
    let port = free_port().unwrap();
    let text = config_text(port, &reality_inbound(dest), &cert, dir.path(), "").replace(
        "allow_private_destinations = true",
        &format!("allow_private_destinations = {allow_private}"),
    );
    start_text(text, dir, cert, port).await
}

/// What a prober that sends an HTTP request to the node reads back (within 10 s).
async fn probe(f: &Fixture) -> Vec<u8> {
    let mut s = TcpStream::connect(f.addr()).await.unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: target.test\r\n\r\n")
        .await
        .unwrap();
    let mut got = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut got)).await;
    got
}

#[tokio::test]
async fn a_dest_name_resolving_to_a_private_address_is_not_dialed() {
    let service = PrivateService::start().await;
    let name = own_host_name().await;
    let dest = format!("{name}:{}", service.addr.port());
    let f = node(&dest, false).await;
    let got = probe(&f).await;
    assert!(got.is_empty(), "{:?}", String::from_utf8_lossy(&got));
    assert_eq!(service.seen.load(Ordering::SeqCst), 0);
    // The same node allowed private destinations: the prober reaches the service (so
    // the refusal above is the node's, not a path that does not work).
    let open = node(&dest, true).await;
    assert_eq!(probe(&open).await, b"PRIVATE SERVICE\n");
    assert_eq!(service.seen.load(Ordering::SeqCst), 1);
}

#[test]
fn a_private_dest_is_refused_by_the_config_naming_the_field() {
    let config = |dest: &str, allow: bool| {
        format!(
            "[node]\nallow_private_destinations = {allow}\n[[inbounds]]\ntag = \"r\"\nport = 443\n{}\n",
            reality_inbound(dest)
        )
    };
    for dest in [
        "127.0.0.1:9090",
        "10.1.2.3:443",
        "[::1]:443",
        "[fd00::1]:443",
        "169.254.169.254:80",
        "localhost:443",
        "admin.localhost:443",
        "2130706433:443",
    ] {
        let e = NodeConfig::from_toml(&config(dest, false))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("inbounds[0].security.dest: "), "{dest}: {e}");
        if dest != "2130706433:443" {
            assert!(NodeConfig::from_toml(&config(dest, true)).is_ok(), "{dest}");
        }
    }
    assert_eq!(
        NodeConfig::from_toml(&config("127.0.0.1:9090", false))
            .unwrap_err()
            .to_string(),
        "inbounds[0].security.dest: 127.0.0.1 is a loopback, private or otherwise non-global \
         address: it would expose this server's own services (allow private destinations on \
         the server to use it)"
    );
    assert!(NodeConfig::from_toml(&config("www.example.com:443", false)).is_ok());
}
