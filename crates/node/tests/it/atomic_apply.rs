//! A config change is all or nothing: whatever can fail (a port, a certificate, a
//! tunnel half) is tried before anything stops, so a change that fails leaves every
//! inbound, user and tunnel half as it was and the old version reported.

use crate::common;

use std::net::TcpStream;
use std::path::Path;

use common::*;
use switchyard_node::NodeConfig;
use switchyard_node::config::{InboundConfig, Security, TunnelConfig};
use switchyard_testkit::free_port;
use switchyard_tunnel::credentials::{TunnelSecret, origin_credential};

/// A reverse-mode relay half of tunnel `name` on `port`, its certificate in `dir`.
fn relay_tunnel(name: &str, port: u16, dir: &Path) -> String {
    let (_, c, k) = tunnel_cert(name, dir);
    let credential = origin_credential(&TunnelSecret([5; 32]), name, "fi").to_hex();
    format!(
        "[[tunnels]]\nname = \"{name}\"\n[[tunnels.profiles]]\nport = {port}\naddresses = [\"127.0.0.1:{port}\"]\n[tunnels.relay]\nlisten = \"127.0.0.1\"\ncert = \"{}\"\nkey = \"{}\"\n[[tunnels.relay.origins]]\nname = \"fi\"\ncredential = \"{credential}\"\n",
        c.display(),
        k.display()
    )
}

fn tunnel(text: &str) -> TunnelConfig {
    NodeConfig::from_toml(text).unwrap().tunnels.remove(0)
}

fn listening(port: u16) -> bool {
    TcpStream::connect(("127.0.0.1", port)).is_ok()
}

/// Alice fetches `n` bytes through the inbound (VLESS); the body's length.
async fn fetch(f: &Fixture, n: usize) -> usize {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(f.addr()).await.unwrap();
    let mut req = Vec::new();
    switchyard_proto::vless::Request {
        uuid: switchyard_node::config::parse_uuid(ALICE_UUID).unwrap(),
        flow: switchyard_proto::vless::Flow::None,
        command: switchyard_proto::vless::Command::Tcp(switchyard_proto::Address::Ip(
            f.http.addr(),
        )),
    }
    .encode(&mut req);
    req.extend_from_slice(
        format!("GET /bytes/{n} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").as_bytes(),
    );
    s.write_all(&req).await.unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).await.unwrap();
    let head = all.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    all.len() - head
}

/// Everything as it was: version 1, the inbound and the tunnel `eu` on `eu_port`
/// serving, bob enabled.
async fn unchanged(f: &Fixture, eu_port: u16) {
    let c = f.node.config().await;
    assert_eq!(c.version, 1);
    assert!(c.users[1].enabled, "bob is still enabled");
    assert!(
        f.node.tunnel("eu").await.is_some(),
        "the tunnel half is there"
    );
    assert!(listening(eu_port), "the tunnel's port still listens");
    assert_eq!(fetch(f, 100).await, 100, "the inbound still serves");
    let runtime = f.node.shared().runtime();
    let bob = switchyard_node::config::parse_uuid(BOB_UUID).unwrap();
    assert!(runtime.users.vless(&bob).is_some(), "bob is still served");
}

async fn with_eu() -> (Fixture, u16, tempfile::TempDir) {
    let files = tempfile::tempdir().unwrap();
    let eu_port = free_port().unwrap();
    // Users' traffic leaves directly (the tunnel has no origin).
    let extra = format!(
        "[route]\nfinal = \"direct\"\n{}",
        relay_tunnel("eu", eu_port, files.path())
    );
    let f = start_with("protocol = \"vless\"", &extra).await;
    (f, eu_port, files)
}

#[tokio::test]
async fn a_new_tunnel_that_cannot_start_stops_nothing() {
    let (f, eu_port, files) = with_eu().await;
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken_port = taken.local_addr().unwrap().port();
    // `eu` goes and `asia` comes, but asia's certificate can't be read; then its
    // port is taken.
    let mut asia = tunnel(&relay_tunnel("asia", free_port().unwrap(), files.path()));
    let missing = files.path().join("missing.crt");
    if let Some(r) = &mut asia.relay {
        r.cert = Some(missing.clone());
    }
    let mut c = f.node.config().await;
    c.version = 2;
    c.users[1].enabled = false;
    c.tunnels = vec![asia];
    let e = f.node.apply(c.clone()).await.unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "tunnel \"asia\": {}: No such file or directory (os error 2)",
            missing.display()
        )
    );
    unchanged(&f, eu_port).await;
    c.tunnels = vec![tunnel(&relay_tunnel("asia", taken_port, files.path()))];
    let e = f.node.apply(c).await.unwrap_err().to_string();
    assert!(e.starts_with("tunnel \"asia\": "), "{e}");
    assert!(e.contains(&format!("port {taken_port}")), "{e}");
    unchanged(&f, eu_port).await;
}

#[tokio::test]
async fn a_rebuilt_tunnel_that_cannot_take_its_new_port_gets_its_old_half_back() {
    let (f, eu_port, _files) = with_eu().await;
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut c = f.node.config().await;
    c.version = 2;
    c.users[1].enabled = false;
    c.tunnels[0].profiles[0].port = taken.local_addr().unwrap().port();
    let e = f.node.apply(c).await.unwrap_err().to_string();
    assert!(e.starts_with("tunnel \"eu\": "), "{e}");
    unchanged(&f, eu_port).await;
}

#[tokio::test]
async fn a_second_new_inbound_on_a_taken_port_or_with_an_unreadable_certificate_changes_nothing() {
    let (f, eu_port, files) = with_eu().await;
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let first_port = free_port().unwrap();
    let mut c = f.node.config().await;
    c.version = 2;
    c.users[1].enabled = false;
    c.tunnels.clear();
    let first = InboundConfig {
        tag: "first".into(),
        port: first_port,
        ..c.inbounds[0].clone()
    };
    let second = InboundConfig {
        tag: "second".into(),
        port: taken.local_addr().unwrap().port(),
        ..c.inbounds[0].clone()
    };
    c.inbounds.extend([first, second]);
    let e = f.node.apply(c.clone()).await.unwrap_err().to_string();
    assert!(e.starts_with("inbound \"second\": port "), "{e}");
    unchanged(&f, eu_port).await;
    assert!(
        !listening(first_port),
        "the first new inbound is not left behind"
    );

    let key = files.path().join("unreadable.key");
    c.inbounds[2].port = free_port().unwrap();
    c.inbounds[2].security = Security::tls_files(f.cert.cert_path(), &key);
    let e = f.node.apply(c).await.unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "inbound \"second\": {}: No such file or directory (os error 2)",
            key.display()
        )
    );
    unchanged(&f, eu_port).await;
    assert!(!listening(first_port));
}
