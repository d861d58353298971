//! Shadowsocks 2022 with the real sing-box client (1.14): the three methods carry TCP
//! and UDP intact, bytes are counted on the user the key names, wrong keys carry
//! nothing, and users added by a config change can connect at once.

use crate::common;

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

/// Raw UDP clients of the fixture's AES-256 inbound, sealing packets as Alice.
mod raw {
    use super::*;
    use base64::Engine as _;
    use switchyard_proto::Address;
    use switchyard_proto::shadowsocks::{Method, Sealing, encode_body};
    use tokio::net::UdpSocket;

    pub(super) fn key(b64: &str) -> Vec<u8> {
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap()
    }

    /// Alice's packet number `packet_id` of session 77, carrying `body`.
    pub(super) fn packet(packet_id: u64, body: &[u8]) -> Vec<u8> {
        let (psk, user) = (key(SERVER_KEY_32), key(ALICE_KEY_32));
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let sealing = Sealing {
            method: Method::Aes256Gcm,
            psk: &psk,
            user_key: Some(&user),
            session_id: 77,
            packet_id,
            now,
            padding: 0,
            nonce: [0; 24],
        };
        let mut out = Vec::new();
        sealing.seal_body(body, &mut out).unwrap();
        out
    }

    /// A body to `to` with `payload`, stamped now.
    pub(super) fn body(to: std::net::SocketAddr, payload: &[u8]) -> Vec<u8> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let mut b = Vec::new();
        encode_body(now, 0, &Address::Ip(to), payload, &mut b);
        b
    }

    /// Whether `socket` hears anything within `wait`.
    pub(super) async fn hears(socket: &UdpSocket, wait: Duration) -> bool {
        let mut buf = [0u8; 2048];
        tokio::time::timeout(wait, socket.recv(&mut buf))
            .await
            .is_ok()
    }

    pub(super) async fn client() -> UdpSocket {
        UdpSocket::bind("127.0.0.1:0").await.unwrap()
    }
}

/// The packet that panicked the `shadowsocks` crate's decoder inside the inbound's
/// UDP task (a domain whose length byte equals the bytes left: no room for the port)
/// is dropped, and the inbound goes on carrying UDP.
#[tokio::test]
async fn a_truncated_domain_is_dropped_and_udp_goes_on() {
    let f = start_ss(AES_256).await;
    let mut body = raw::body(f.udp.addr(), b"");
    body.truncate(11);
    body.extend_from_slice(&[3, 4, b'a', b'b', b'c', b'd']);
    let socket = raw::client().await;
    for id in 0..3 {
        socket
            .send_to(&raw::packet(id, &body), f.addr())
            .await
            .unwrap();
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let password = format!("{SERVER_KEY_32}:{ALICE_KEY_32}");
    let client = SingBox::client(shadowsocks_outbound(f.addr(), AES_256, &password))
        .await
        .unwrap();
    f.udp
        .check_via_socks(client.proxy_addr().unwrap(), 5, 500)
        .await
        .expect("UDP still carried after the hostile packets");
}

/// A packet replayed from another source address is dropped (the packet-id window
/// belongs to the session, not the address); a new packet of the session from the new
/// address is carried and answered there (a client that roamed).
#[tokio::test]
async fn a_replay_from_another_address_is_dropped_but_a_roaming_session_is_served() {
    let f = start_ss(AES_256).await;
    let first = raw::packet(1, &raw::body(f.udp.addr(), b"one"));
    let (a, b) = (raw::client().await, raw::client().await);
    a.send_to(&first, f.addr()).await.unwrap();
    assert!(raw::hears(&a, Duration::from_secs(3)).await, "answered");
    assert_eq!(f.udp.datagrams(), 1);
    b.send_to(&first, f.addr()).await.unwrap();
    assert!(
        !raw::hears(&b, Duration::from_millis(700)).await,
        "replay answered"
    );
    assert_eq!(f.udp.datagrams(), 1, "the replay reached the destination");
    let second = raw::packet(2, &raw::body(f.udp.addr(), b"two"));
    b.send_to(&second, f.addr()).await.unwrap();
    assert!(
        raw::hears(&b, Duration::from_secs(3)).await,
        "moved session answered"
    );
    assert_eq!(f.udp.datagrams(), 2);
}

/// Rebuilding the inbound (a changed listen address) keeps its replay state: a packet it
/// carried before is still refused after.
#[tokio::test]
async fn replay_state_survives_a_rebuild_of_the_inbound() {
    let f = start_ss(AES_256).await;
    let first = raw::packet(1, &raw::body(f.udp.addr(), b"one"));
    let a = raw::client().await;
    a.send_to(&first, f.addr()).await.unwrap();
    assert!(raw::hears(&a, Duration::from_secs(3)).await);
    let mut config = f.node.config().await;
    // Any change but the display name rebuilds the inbound.
    config.inbounds[0].listen = "0.0.0.0".parse().unwrap();
    config.version += 1;
    f.node.apply(config).await.unwrap();
    let c = raw::client().await;
    c.send_to(&first, f.addr()).await.unwrap();
    assert!(
        !raw::hears(&c, Duration::from_millis(700)).await,
        "replay answered"
    );
    assert_eq!(f.udp.datagrams(), 1);
    let second = raw::packet(2, &raw::body(f.udp.addr(), b"two"));
    c.send_to(&second, f.addr()).await.unwrap();
    assert!(
        raw::hears(&c, Duration::from_secs(3)).await,
        "rebuilt inbound serves"
    );
}

/// The TCP salt filter outlives a rebuild of the inbound: a connection's first bytes,
/// replayed after the rebuild, are held and reach nothing; a fresh connection works.
#[tokio::test]
async fn a_tcp_replay_after_a_rebuild_is_refused() {
    use shadowsocks::config::{ServerConfig, ServerType};
    use shadowsocks::context::Context;
    use shadowsocks::crypto::CipherKind;
    use shadowsocks::relay::socks5::Address as SsAddress;
    use shadowsocks::relay::tcprelay::ProxyClientStream;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    let f = start_ss(AES_256).await;
    // A real client's first bytes: salt, identity header, request and an HTTP GET.
    let password = format!("{SERVER_KEY_32}:{ALICE_KEY_32}");
    let server =
        ServerConfig::new(f.addr(), password, CipherKind::AEAD2022_BLAKE3_AES_256_GCM).unwrap();
    let (ours, mut wire) = tokio::io::duplex(64 * 1024);
    let context = Context::new_shared(ServerType::Local);
    let mut client = ProxyClientStream::from_stream(
        context,
        ours,
        &server,
        SsAddress::SocketAddress(f.http.addr()),
    );
    client
        .write_all(b"GET /bytes/10 HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    client.flush().await.unwrap();
    let mut first = vec![0u8; 64 * 1024];
    let n = wire.read(&mut first).await.unwrap();
    first.truncate(n);

    let send = |bytes: Vec<u8>| {
        let addr = f.addr();
        async move {
            let mut s = TcpStream::connect(addr).await.unwrap();
            // A reset while writing answers nothing too: a connection that lands in
            // the old listener's queue as the rebuild closes it is reset.
            if s.write_all(&bytes).await.is_err() {
                return 0;
            }
            let mut answer = [0u8; 16];
            tokio::time::timeout(Duration::from_millis(1500), s.read(&mut answer))
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or(0)
        }
    };
    assert!(send(first.clone()).await > 0, "the first use is answered");
    assert_eq!(f.http.requests(), 1);
    let mut config = f.node.config().await;
    config.inbounds[0].listen = "0.0.0.0".parse().unwrap();
    config.version += 1;
    f.node.apply(config).await.unwrap();
    assert_eq!(send(first).await, 0, "the replay is answered");
    assert_eq!(f.http.requests(), 1, "the replay reached the destination");
}
