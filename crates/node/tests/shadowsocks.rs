//! Shadowsocks 2022 with the real sing-box client (1.14): the three methods carry TCP
//! and UDP intact, bytes are counted on the user the key names, wrong keys carry
//! nothing, and users added by a config change can connect at once.

mod common;

use std::time::Duration;

use common::*;
use serde_json::Value;
use switchyard_node::config::Secret;
use switchyard_node::{Node, NodeConfig};
use switchyard_testkit::config::shadowsocks_outbound;
use switchyard_testkit::{HttpTarget, SingBox, TestCert, UdpEcho, free_port};

const DOWN: u64 = 4 << 20;
const UP: u64 = 1 << 20;
const DATAGRAMS: u64 = 20;
const DATAGRAM: u64 = 1200;

const AES_128: &str = "2022-blake3-aes-128-gcm";
const AES_256: &str = "2022-blake3-aes-256-gcm";
const CHACHA: &str = "2022-blake3-chacha20-poly1305";

/// 16-byte keys for `2022-blake3-aes-128-gcm`; Alice's replaces the fixture's.
const SERVER_KEY_16: &str = "c3dpdGNoeWFyZC1zcy0xNg==";
const ALICE_KEY_16: &str = "YWxpY2Utc3Mta2V5LTE2Yg==";
/// 32-byte keys for the 256-bit methods.
const SERVER_KEY_32: &str = "c3dpdGNoeWFyZC1zcy1zZXJ2ZXIta2V5LTI1NmJpdCE=";
const ALICE_KEY_32: &str = "YWxpY2Utc3MtdXNlci1rZXktZm9yLTI1Ni1tZXRob2Q=";
const BOB_KEY_32: &str = "Ym9iLXNzLXVzZXIta2V5LWZvci10aGUtMjU2LW1ldGg=";
/// 16-byte keys no user of the fixture has.
const BOB_KEY_16: &str = "Ym9iLXNzLWtleS0xNmIhIQ==";
const MALLORY_KEY_16: &str = "bWFsbG9yeS1zcy1rZXkhIQ==";

/// A node with a Shadowsocks inbound of `method`; Alice has the method's key length.
async fn start_ss(method: &str) -> Fixture {
    let (server, alice) = if method == AES_128 {
        (SERVER_KEY_16, ALICE_KEY_16)
    } else {
        (SERVER_KEY_32, ALICE_KEY_32)
    };
    let inbound =
        format!("protocol = \"shadowsocks\"\nmethod = \"{method}\"\npassword = \"{server}\"");
    let dir = tempfile::tempdir().unwrap();
    let cert = TestCert::new("node.test").unwrap();
    let port = free_port().unwrap();
    let text = config_text(port, &inbound, &cert, dir.path(), "").replace(SS_ALICE_KEY, alice);
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

/// `name`'s (up, down) bytes as the node counted them.
fn counted(f: &Fixture, name: &str) -> (u64, u64) {
    let users = f.node.shared().accounting.users();
    users.get(name).map_or((0, 0), |c| (c.up, c.down))
}

/// Downloads, uploads and echoes UDP through sing-box with `outbound`, then checks
/// `name`'s counters against what was carried.
async fn carry(f: &Fixture, outbound: Value, name: &str) {
    let client = SingBox::client(outbound).await.unwrap();
    let proxy = client.proxy_addr().unwrap();
    f.http.download_via_socks(proxy, DOWN).await.unwrap();
    f.http.upload_via_socks(proxy, UP).await.unwrap();
    f.udp
        .check_via_socks(proxy, DATAGRAMS as u32, DATAGRAM as usize)
        .await
        .unwrap();
    drop(client);
    let udp = DATAGRAMS * DATAGRAM;
    // The node counts each chunk as it carries it; let the last ones land.
    let (mut up, mut down) = counted(f, name);
    for _ in 0..50 {
        if down >= DOWN + udp && up >= UP + udp {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        (up, down) = counted(f, name);
    }
    // Payload plus the HTTP heads (a few hundred bytes per request).
    assert!(
        (DOWN + udp..DOWN + udp + 4096).contains(&down),
        "down {down}"
    );
    assert!((UP + udp..UP + udp + 4096).contains(&up), "up {up}");
}

/// A client with `password` gets nothing through, TCP or UDP.
async fn refused(f: &Fixture, method: &str, password: &str) {
    let client = SingBox::client(shadowsocks_outbound(f.addr(), method, password))
        .await
        .unwrap();
    let proxy = client.proxy_addr().unwrap();
    assert!(f.http.download_via_socks(proxy, 1024).await.is_err());
    assert!(f.udp.check_via_socks(proxy, 2, 100).await.is_err());
    assert_eq!(f.http.requests(), 0);
    assert!(
        f.node
            .shared()
            .accounting
            .users()
            .values()
            .all(|c| c.up == 0 && c.down == 0)
    );
}

#[tokio::test]
async fn aes_128_gcm_with_identity_header() {
    let f = start_ss(AES_128).await;
    let password = format!("{SERVER_KEY_16}:{ALICE_KEY_16}");
    carry(
        &f,
        shadowsocks_outbound(f.addr(), AES_128, &password),
        "alice",
    )
    .await;
}

#[tokio::test]
async fn aes_256_gcm_with_identity_header() {
    let f = start_ss(AES_256).await;
    let password = format!("{SERVER_KEY_32}:{ALICE_KEY_32}");
    carry(
        &f,
        shadowsocks_outbound(f.addr(), AES_256, &password),
        "alice",
    )
    .await;
}

/// SIP022 identity headers are AES-only (sing-box refuses `server:user` here), so a
/// ChaCha20 user connects with its own key and the node finds it by trial.
#[tokio::test]
async fn chacha20_poly1305_with_the_user_key() {
    let f = start_ss(CHACHA).await;
    carry(
        &f,
        shadowsocks_outbound(f.addr(), CHACHA, ALICE_KEY_32),
        "alice",
    )
    .await;
}

#[tokio::test]
async fn a_wrong_user_key_carries_nothing() {
    let f = start_ss(AES_128).await;
    refused(&f, AES_128, &format!("{SERVER_KEY_16}:{MALLORY_KEY_16}")).await;
}

#[tokio::test]
async fn a_wrong_server_key_carries_nothing() {
    let f = start_ss(AES_128).await;
    refused(&f, AES_128, &format!("{MALLORY_KEY_16}:{ALICE_KEY_16}")).await;
}

#[tokio::test]
async fn a_wrong_chacha20_key_carries_nothing() {
    let f = start_ss(CHACHA).await;
    // The server key is no user's key.
    refused(&f, CHACHA, SERVER_KEY_32).await;
}

/// A user added by a config change reaches the running inbound (not rebuilt), and
/// its bytes are counted on it, not on Alice.
#[tokio::test]
async fn users_added_live_connect_at_once() {
    for (method, server, bob) in [
        (AES_128, SERVER_KEY_16, BOB_KEY_16),
        (CHACHA, SERVER_KEY_32, BOB_KEY_32),
    ] {
        let f = start_ss(method).await;
        let mut config = f.node.config().await;
        let user = config.users.iter_mut().find(|u| u.name == "bob").unwrap();
        user.shadowsocks = Some(Secret::new(bob));
        config.version += 1;
        f.node.apply(config).await.unwrap();
        let password = if method == CHACHA {
            bob.to_owned()
        } else {
            format!("{server}:{bob}")
        };
        carry(&f, shadowsocks_outbound(f.addr(), method, &password), "bob").await;
        assert_eq!(counted(&f, "alice"), (0, 0));
    }
}
