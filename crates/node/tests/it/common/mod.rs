//! A node on 127.0.0.1 with one inbound and two users, and the local targets.
#![allow(dead_code, unreachable_pub)]

pub mod control;

use std::net::SocketAddr;
use std::sync::Arc;

use std::path::{Path, PathBuf};

use switchyard_node::config::parse_uuid;
use switchyard_node::{Node, NodeConfig};
use switchyard_proto::Address;
use switchyard_proto::vless::{Command, Request};
use switchyard_testkit::{HttpTarget, TestCert, UdpEcho, free_port, local};
use switchyard_tunnel::link::cert::{IssuedCert, issue};

pub const ALICE_UUID: &str = "b831381d-6324-4d53-ad4f-8cda48b30811";
pub const BOB_UUID: &str = "0d8f7c6e-2b4a-4f1e-9c3d-5a6b7c8d9e0f";
/// Alice's Shadowsocks key in the fixture (16 bytes); tests of 256-bit methods replace it.
pub const SS_ALICE_KEY: &str = "YWxpY2Utc3MtdXNlcmtleQ==";

pub struct Fixture {
    pub node: Arc<Node>,
    pub http: HttpTarget,
    pub udp: UdpEcho,
    pub cert: TestCert,
    pub port: u16,
    pub dir: tempfile::TempDir,
}

impl Fixture {
    pub fn addr(&self) -> SocketAddr {
        local(self.port)
    }

    /// Alice's (up, down) bytes as the node counted them.
    pub fn alice(&self) -> (u64, u64) {
        let users = self.node.shared().accounting.users();
        users.get("alice").map_or((0, 0), |c| (c.up, c.down))
    }
}

/// The TOML of a node with `inbound` (an `[[inbounds]]` table body, without tag and
/// port) on a free port.
pub fn config_text(
    port: u16,
    inbound: &str,
    cert: &TestCert,
    dir: &std::path::Path,
    extra: &str,
) -> String {
    let inbound = inbound
        .replace("@CERT@", &cert.cert_path().display().to_string())
        .replace("@KEY@", &cert.key_path().display().to_string());
    format!(
        r#"
version = 1
[node]
state_dir = "{dir}"
allow_private_destinations = true
unauthenticated_hold_s = 2
handshake_timeout_s = 3
[control]
listen = "127.0.0.1:{control}"

[[inbounds]]
tag = "main"
name = "Test inbound"
listen = "127.0.0.1"
port = {port}
{inbound}

[[users]]
name = "alice"
vless = "{ALICE_UUID}"
trojan = "alice-password"
socks = "alice-socks"
shadowsocks = "{SS_ALICE_KEY}"

[[users]]
name = "bob"
vless = "{BOB_UUID}"
trojan = "bob-password"
{extra}
"#,
        dir = dir.display(),
        control = free_port().unwrap(),
    )
}

pub async fn start(inbound: &str) -> Fixture {
    start_with(inbound, "").await
}

pub async fn start_with(inbound: &str, extra: &str) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let cert = TestCert::new("node.test").unwrap();
    let port = free_port().unwrap();
    let text = config_text(port, inbound, &cert, dir.path(), extra);
    start_text(text, dir, cert, port).await
}

pub async fn start_text(
    text: String,
    dir: tempfile::TempDir,
    cert: TestCert,
    port: u16,
) -> Fixture {
    log_to_the_test();
    let config = NodeConfig::from_toml(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let node = Node::start(config).await.unwrap();
    Fixture {
        node,
        http: HttpTarget::start().await.unwrap(),
        udp: UdpEcho::start().await.unwrap(),
        cert,
        port,
        dir,
    }
}

/// A VLESS request from `uuid` to `target` carrying `GET /bytes/{n}`, in one write.
pub fn vless_get(uuid: &str, target: SocketAddr, n: u64) -> Vec<u8> {
    let mut out = Vec::new();
    Request {
        uuid: parse_uuid(uuid).unwrap(),
        flow: switchyard_proto::vless::Flow::None,
        command: Command::Tcp(Address::Ip(target)),
    }
    .encode(&mut out);
    out.extend_from_slice(format!("GET /bytes/{n} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
    out
}

/// A tunnel certificate for `name`, written to `dir` as `{name}.crt` and `{name}.key`.
pub fn tunnel_cert(name: &str, dir: &Path) -> (IssuedCert, PathBuf, PathBuf) {
    let cert = issue(name).unwrap();
    let (c, k) = (
        dir.join(format!("{name}.crt")),
        dir.join(format!("{name}.key")),
    );
    std::fs::write(&c, &cert.cert_pem).unwrap();
    std::fs::write(&k, &cert.key_pem).unwrap();
    (cert, c, k)
}

/// The node's log into the test's output (shown when the test fails), at the
/// filter `SWITCHYARD_TEST_LOG` names, `switchyard=debug` by default.
pub fn log_to_the_test() {
    let filter = std::env::var("SWITCHYARD_TEST_LOG").unwrap_or_else(|_| {
        "switchyard=debug,switchyard_node=debug,switchyard_transport=debug".into()
    });
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_test_writer()
        .with_ansi(false)
        .try_init();
}
