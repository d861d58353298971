//! A tunnel's REALITY profile never leads a prober into the listening node's own
//! machine: a private or loopback `dest` is refused by the listening half's config
//! (naming the field) unless the node allows private destinations, and a name that
//! passes it but resolves to loopback (the machine's own host name, from /etc/hosts)
//! is refused when the listening half dials it: the private service never sees the
//! prober. With `allow_private_destinations`, the same prober reaches the service.

use crate::common;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use common::*;
use switchyard_node::NodeConfig;
use switchyard_testkit::{TestCert, free_port};
use switchyard_tunnel::credentials::{TunnelSecret, origin_credential};
use switchyard_tunnel::link::cert::issue;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const SECRET: TunnelSecret = TunnelSecret([11; 32]);

/// A service on 127.0.0.1 that counts its connections and answers each with a line.
async fn private_service() -> (SocketAddr, Arc<AtomicU64>) {
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
    (addr, seen)
}

/// This machine's host name, which the system's resolver maps to loopback or a
/// private address of its own (from /etc/hosts).
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

/// A tunnel "eu" with one REALITY profile on `port` in front of `dest`, this node its
/// relay (the listening half in reverse mode).
fn relay_tunnel(port: u16, dest: &str) -> String {
    let keys = switchyard_node::reality::generate().unwrap();
    let cert = issue("eu").unwrap();
    let credential = origin_credential(&SECRET, "eu", "fi").to_hex();
    format!(
        "[[tunnels]]\nname = \"eu\"\n[[tunnels.profiles]]\nport = {port}\naddresses = [\"127.0.0.1:{port}\"]\ntransport = {{ type = \"reality\", server_name = \"target.test\", dest = \"{dest}\", public_key = \"{}\", short_id = \"0123abcd\" }}\n[tunnels.relay]\nlisten = \"127.0.0.1\"\ncert_pem = \"\"\"\n{}\"\"\"\nkey_pem = \"\"\"\n{}\"\"\"\nreality_private_key = \"{}\"\n[[tunnels.relay.origins]]\nname = \"fi\"\ncredential = \"{credential}\"\n",
        keys.public_key, cert.cert_pem, cert.key_pem, keys.private_key
    )
}

/// A relay node whose tunnel's REALITY profile (on the returned port) is in front of
/// `dest`, private destinations allowed or not.
async fn relay(dest: &str, allow_private: bool) -> (Fixture, u16) {
    let dir = tempfile::tempdir().unwrap();
    let cert = TestCert::new("node.test").unwrap();
    let (port, tunnel_port) = (free_port().unwrap(), free_port().unwrap());
    let text = config_text(
        port,
        "protocol = \"vless\"",
        &cert,
        dir.path(),
        &relay_tunnel(tunnel_port, dest),
    )
    .replace(
        "allow_private_destinations = true",
        &format!("allow_private_destinations = {allow_private}"),
    );
    (start_text(text, dir, cert, port).await, tunnel_port)
}

/// What a prober that sends an HTTP request to `port` reads back (within 10 s).
async fn probe(port: u16) -> Vec<u8> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: target.test\r\n\r\n")
        .await
        .unwrap();
    let mut got = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut got)).await;
    got
}

#[tokio::test]
async fn a_tunnel_dest_name_resolving_to_loopback_is_not_dialed() {
    let (service, seen) = private_service().await;
    let dest = format!("{}:{}", own_host_name().await, service.port());
    let (_guarded, port) = relay(&dest, false).await;
    let got = probe(port).await;
    assert!(got.is_empty(), "{:?}", String::from_utf8_lossy(&got));
    assert_eq!(seen.load(Ordering::SeqCst), 0);
    // The same relay allowed private destinations: the prober reaches the service.
    let (_open, port) = relay(&dest, true).await;
    assert_eq!(probe(port).await, b"PRIVATE SERVICE\n");
    assert_eq!(seen.load(Ordering::SeqCst), 1);
}

#[test]
fn a_private_tunnel_dest_is_refused_on_the_listening_half_naming_the_field() {
    let config = |dest: &str, allow: bool| {
        format!(
            "[node]\nallow_private_destinations = {allow}\n{}",
            relay_tunnel(7443, dest)
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
    ] {
        let e = NodeConfig::from_toml(&config(dest, false))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("tunnels[0].profiles[0].transport.dest: "),
            "{dest}: {e}"
        );
        assert!(NodeConfig::from_toml(&config(dest, true)).is_ok(), "{dest}");
    }
    assert_eq!(
        NodeConfig::from_toml(&config("127.0.0.1:9090", false))
            .unwrap_err()
            .to_string(),
        "tunnels[0].profiles[0].transport.dest: 127.0.0.1 is a loopback, private or \
         otherwise non-global address: it would expose this server's own services (allow \
         private destinations on the server to use it)"
    );
    assert!(NodeConfig::from_toml(&config("www.example.com:443", false)).is_ok());
    // The form is checked everywhere: what a resolver reads as 127.0.0.1.
    let e = NodeConfig::from_toml(&config("2130706433:443", true))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("tunnels[0].profiles[0].transport.dest: "),
        "{e}"
    );
}

#[test]
fn the_dialing_half_never_dials_the_dest_and_checks_its_form_alone() {
    let keys = switchyard_node::reality::generate().unwrap();
    let cert = issue("eu").unwrap();
    let credential = origin_credential(&SECRET, "eu", "fi").to_hex();
    let origin = |dest: &str| {
        format!(
            "[node]\nallow_private_destinations = false\n[[tunnels]]\nname = \"eu\"\n[[tunnels.profiles]]\nport = 7443\naddresses = [\"relay.example.com:7443\"]\ntransport = {{ type = \"reality\", server_name = \"target.test\", dest = \"{dest}\", public_key = \"{}\", short_id = \"0123abcd\" }}\n[tunnels.origin]\nname = \"fi\"\ncredential = \"{credential}\"\npin = \"{}\"\n",
            keys.public_key, cert.pin
        )
    };
    // The relay (which listens) allows it; this origin only dials the relay.
    NodeConfig::from_toml(&origin("127.0.0.1:443")).unwrap();
    let e = NodeConfig::from_toml(&origin("127.0.0.1"))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("tunnels[0].profiles[0].transport.dest: "),
        "{e}"
    );
}
