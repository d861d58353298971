//! The client's outbounds on real traffic: real nodes on 127.0.0.1 (VLESS over TCP,
//! WebSocket+TLS and plain HTTPUpgrade, Trojan over TLS, WebSocket+TLS and
//! HTTPUpgrade+TLS, Shadowsocks 2022 with the three methods) and the real sing-box as
//! a second Shadowsocks 2022 server, our proxy in front; our HTTPUpgrade client
//! against sing-box's and Xray's servers. TCP: a 4 MiB download checked byte for
//! byte. UDP: datagrams of 1 to 1,400 bytes through a SOCKS5 UDP ASSOCIATE to local
//! echo servers, every answer checked (content and source), and associations that
//! end with their control connection or a switch of server.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use switchyard_client::{Outbound, Proxy};
use switchyard_node::{Node, NodeConfig};
use switchyard_proto::entry::{Entry, EntryProtocol, EntryTls, EntryTransport};
use switchyard_testkit::socks5::{Dest, UdpAssociation};
use switchyard_testkit::{HttpTarget, SingBox, TestCert, UdpEcho, Xray, config, free_port};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UdpSocket};
use tokio::time::timeout;

const UUID: &str = "b831381d-6324-4d53-ad4f-8cda48b30811";
const TROJAN: &str = "alice-password";
const DOWN: u64 = 4 << 20;
const AES_128: &str = "2022-blake3-aes-128-gcm";
const AES_256: &str = "2022-blake3-aes-256-gcm";
const CHACHA: &str = "2022-blake3-chacha20-poly1305";
/// Server and user keys of 16 bytes (AES-128) and 32 bytes (the others).
const SERVER_16: &str = "c3dpdGNoeWFyZC1zcy0xNg==";
const ALICE_16: &str = "YWxpY2Utc3Mta2V5LTE2Yg==";
const SERVER_32: &str = "c3dpdGNoeWFyZC1zcy1zZXJ2ZXIta2V5LTI1NmJpdCE=";
const ALICE_32: &str = "YWxpY2Utc3MtdXNlci1rZXktZm9yLTI1Ni1tZXRob2Q=";
/// Datagram sizes every protocol carries.
const SIZES: [usize; 10] = [1, 2, 3, 8, 64, 512, 1000, 1200, 1350, 1400];
/// How long one echo may take before the datagram is sent again.
const ECHO_WAIT: Duration = Duration::from_secs(2);

const TLS: &str = "security = { type = \"tls\", cert = \"@CERT@\", key = \"@KEY@\" }";

/// A node, its inbounds' entries for Alice, and the certificate they pin.
struct Fixture {
    _node: Arc<Node>,
    _dir: tempfile::TempDir,
    _cert: TestCert,
    entries: Vec<Entry>,
}

fn inbound(tag: &str, port: u16, body: &str) -> String {
    format!(
        "\n[[inbounds]]\ntag = \"{tag}\"\nname = \"{tag}\"\nlisten = \"127.0.0.1\"\nport = {port}\n{body}\n"
    )
}

fn pinned(cert: &TestCert) -> Option<EntryTls> {
    Some(EntryTls {
        server_name: Some("node.test".into()),
        insecure: false,
        certificate_pem: Some(cert.cert_pem().into()),
        certificate_sha256: None,
        alpn: vec!["http/1.1".into()],
        ..EntryTls::default()
    })
}

fn entry(
    name: &str,
    port: u16,
    protocol: EntryProtocol,
    transport: EntryTransport,
    tls: Option<EntryTls>,
) -> Entry {
    Entry {
        name: name.into(),
        server: "127.0.0.1".into(),
        port,
        protocol,
        transport,
        tls,
        route: None,
    }
}

fn ss(method: &str, password: &str) -> EntryProtocol {
    EntryProtocol::Shadowsocks {
        method: method.into(),
        password: password.into(),
    }
}

fn http_upgrade(path: &str) -> EntryTransport {
    EntryTransport::HttpUpgrade {
        path: path.into(),
        host: Some("node.test".into()),
    }
}

fn grpc(service_name: &str, multi: bool) -> EntryTransport {
    EntryTransport::Grpc {
        service_name: service_name.into(),
        authority: None,
        multi,
    }
}

fn ws(path: &str) -> EntryTransport {
    EntryTransport::Ws {
        path: path.into(),
        host: Some("node.test".into()),
    }
}

/// A node with VLESS (TCP; WebSocket+TLS; HTTPUpgrade), Trojan (TLS; WebSocket+TLS;
/// HTTPUpgrade+TLS) and a
/// Shadowsocks 2022 inbound of `method` with several users (the panel's form:
/// `server key:user key`; ChaCha: the user key).
async fn start_node(method: &str) -> Fixture {
    let (server_key, alice_key) = if method == AES_128 {
        (SERVER_16, ALICE_16)
    } else {
        (SERVER_32, ALICE_32)
    };
    let ports: Vec<u16> = (0..9).map(|_| free_port().unwrap()).collect();
    let inbounds = [
        inbound("vless", ports[0], "protocol = \"vless\""),
        inbound(
            "vless-ws",
            ports[1],
            &format!("protocol = \"vless\"\ntransport = {{ type = \"ws\", path = \"/v\" }}\n{TLS}"),
        ),
        inbound("trojan", ports[2], &format!("protocol = \"trojan\"\n{TLS}")),
        inbound(
            "trojan-ws",
            ports[3],
            &format!(
                "protocol = \"trojan\"\ntransport = {{ type = \"ws\", path = \"/t\" }}\n{TLS}"
            ),
        ),
        inbound(
            "vless-up",
            ports[5],
            "protocol = \"vless\"\ntransport = { type = \"httpupgrade\", path = \"/u\", host = \"node.test\" }",
        ),
        inbound(
            "trojan-up",
            ports[6],
            &format!(
                "protocol = \"trojan\"\ntransport = {{ type = \"httpupgrade\", path = \"/tu\" }}\n{TLS}"
            ),
        ),
        inbound(
            "vless-grpc",
            ports[7],
            "protocol = \"vless\"\ntransport = { type = \"grpc\", service_name = \"g\" }",
        ),
        inbound(
            "trojan-grpc",
            ports[8],
            &format!(
                "protocol = \"trojan\"\ntransport = {{ type = \"grpc\", service_name = \"tg\" }}\n{TLS}"
            ),
        ),
        inbound(
            "ss",
            ports[4],
            &format!(
                "protocol = \"shadowsocks\"\nmethod = \"{method}\"\npassword = \"{server_key}\""
            ),
        ),
    ]
    .concat();
    let dir = tempfile::tempdir().unwrap();
    let cert = TestCert::new("node.test").unwrap();
    let text = format!(
        r#"
version = 1
[node]
state_dir = "{dir}"
allow_private_destinations = true
[control]
listen = "127.0.0.1:{control}"
{inbounds}
[[users]]
name = "alice"
vless = "{UUID}"
trojan = "{TROJAN}"
shadowsocks = "{alice_key}"
"#,
        dir = dir.path().display(),
        control = free_port().unwrap(),
    )
    .replace("@CERT@", &cert.cert_path().display().to_string())
    .replace("@KEY@", &cert.key_path().display().to_string());
    let config = NodeConfig::from_toml(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let node = Node::start(config).await.unwrap();
    let vless = || EntryProtocol::Vless {
        uuid: UUID.into(),
        flow: None,
    };
    let trojan = || EntryProtocol::Trojan {
        password: TROJAN.into(),
    };
    let password = format!("{server_key}:{alice_key}");
    let entries = vec![
        entry("VLESS", ports[0], vless(), EntryTransport::Tcp, None),
        entry("VLESS WS TLS", ports[1], vless(), ws("/v"), pinned(&cert)),
        entry(
            "Trojan TLS",
            ports[2],
            trojan(),
            EntryTransport::Tcp,
            pinned(&cert),
        ),
        entry("Trojan WS TLS", ports[3], trojan(), ws("/t"), pinned(&cert)),
        entry(
            "VLESS HTTPUpgrade",
            ports[5],
            vless(),
            http_upgrade("/u"),
            None,
        ),
        entry(
            "Trojan HTTPUpgrade TLS",
            ports[6],
            trojan(),
            http_upgrade("/tu"),
            pinned(&cert),
        ),
        entry("VLESS gRPC", ports[7], vless(), grpc("g", false), None),
        entry(
            "Trojan gRPC TLS",
            ports[8],
            trojan(),
            grpc("tg", false),
            pinned(&cert),
        ),
        entry(
            &format!("SS {method}"),
            ports[4],
            ss(method, &password),
            EntryTransport::Tcp,
            None,
        ),
    ];
    Fixture {
        _node: node,
        _dir: dir,
        _cert: cert,
        entries,
    }
}

/// Our proxy on 127.0.0.1, through `entry`.
async fn proxy_through(entry: &Entry) -> Proxy {
    let proxy = Proxy::start("127.0.0.1:0".parse().unwrap()).await.unwrap();
    proxy.set_server(Some(Arc::new(Outbound::new(entry.clone()).unwrap())));
    proxy
}

/// A datagram of `size` bytes, different for each `(tag, size)`.
fn datagram(tag: u8, size: usize) -> Vec<u8> {
    (0..size)
        .map(|i| tag.wrapping_mul(31).wrapping_add(i as u8))
        .collect()
}

/// Sends `payload` to `echo` through `assoc` and waits for it back, unchanged and
/// from `echo` (sent again after [`ECHO_WAIT`], three times at most).
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

/// Every size through `entry`, to two echo servers in one association (each answer
/// names its own source), with the meter counting the payloads.
async fn udp_through(entry: &Entry) {
    let proxy = proxy_through(entry).await;
    let (a, b) = (
        UdpEcho::start().await.unwrap(),
        UdpEcho::start().await.unwrap(),
    );
    let assoc = UdpAssociation::open(proxy.addr()).await.unwrap();
    let mut total = 0;
    for (i, size) in SIZES.into_iter().enumerate() {
        let echo = if i % 2 == 0 { &a } else { &b };
        let what = format!("{}: {size} bytes", entry.name);
        round_trip(&assoc, echo.addr(), &datagram(i as u8, size), &what).await;
        total += size as u64;
    }
    let (sent, received) = proxy.meter().totals();
    assert!(
        sent >= total && received >= total,
        "{}: meter {sent}/{received} < {total}",
        entry.name
    );
    assert_eq!(proxy.udp_stats().associations, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn udp_goes_through_vless_trojan_and_shadowsocks_on_every_transport() {
    let node = start_node(AES_128).await;
    for entry in &node.entries {
        udp_through(entry).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shadowsocks_2022_carries_4_mib_byte_for_byte_with_every_method() {
    let target = HttpTarget::start().await.unwrap();
    for method in [AES_128, AES_256, CHACHA] {
        let node = start_node(method).await;
        let ss = node.entries.last().unwrap();
        let proxy = proxy_through(ss).await;
        let n = if method == AES_128 { DOWN } else { 1 << 20 };
        timeout(
            Duration::from_secs(30),
            target.download_via_socks(proxy.addr(), n),
        )
        .await
        .unwrap_or_else(|_| panic!("{method}: download timed out"))
        .unwrap_or_else(|e| panic!("{method}: {e:#}"));
        target
            .upload_via_socks(proxy.addr(), 1 << 20)
            .await
            .unwrap();
        let (sent, received) = proxy.meter().totals();
        assert!(
            received >= n && sent >= 1 << 20,
            "{method}: {sent}/{received}"
        );
        if method != AES_128 {
            udp_through(ss).await;
        }
    }
}

/// VLESS and Trojan TCP on the same node, for the whole matrix.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_goes_through_every_inbound() {
    let target = HttpTarget::start().await.unwrap();
    let node = start_node(AES_128).await;
    for entry in &node.entries {
        let proxy = proxy_through(entry).await;
        target
            .download_via_socks(proxy.addr(), 1 << 20)
            .await
            .unwrap_or_else(|e| panic!("{}: {e:#}", entry.name));
    }
}

/// A UDP ASSOCIATE by hand, to hold its control connection: the connection and the
/// relay's address.
async fn associate(proxy: SocketAddr) -> (TcpStream, SocketAddr) {
    let mut control = TcpStream::connect(proxy).await.unwrap();
    control.write_all(&[5, 1, 0]).await.unwrap();
    let mut selection = [0u8; 2];
    control.read_exact(&mut selection).await.unwrap();
    assert_eq!(selection, [5, 0]);
    control
        .write_all(&[5, 3, 0, 1, 0, 0, 0, 0, 0, 0])
        .await
        .unwrap();
    let mut reply = [0u8; 10];
    control.read_exact(&mut reply).await.unwrap();
    assert_eq!(reply[..4], [5, 0, 0, 1], "reply {reply:?}");
    let relay = SocketAddr::from((
        [reply[4], reply[5], reply[6], reply[7]],
        u16::from_be_bytes([reply[8], reply[9]]),
    ));
    assert_eq!(relay.ip(), proxy.ip());
    (control, relay)
}

fn socks_datagram(to: SocketAddr, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    switchyard_proto::socks5::UdpPacket {
        address: switchyard_proto::Address::Ip(to),
        payload,
    }
    .encode(&mut out);
    out
}

/// Sends `payload` through `relay` to `echo`; whether it came back within 1 s.
async fn echoed(socket: &UdpSocket, relay: SocketAddr, echo: SocketAddr, payload: &[u8]) -> bool {
    socket
        .send_to(&socks_datagram(echo, payload), relay)
        .await
        .unwrap();
    let mut buf = [0u8; 2048];
    timeout(Duration::from_secs(1), async {
        loop {
            let (n, _) = socket.recv_from(&mut buf).await.unwrap();
            if buf[..n].ends_with(payload) {
                return;
            }
        }
    })
    .await
    .is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_association_ends_with_its_control_connection_and_at_a_switch() {
    let node = start_node(AES_128).await;
    let echo = UdpEcho::start().await.unwrap();
    for entry in [
        &node.entries[0],
        &node.entries[2],
        node.entries.last().unwrap(),
    ] {
        let proxy = proxy_through(entry).await;
        let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let (control, relay) = associate(proxy.addr()).await;
        assert!(
            echoed(&socket, relay, echo.addr(), b"before").await,
            "{}",
            entry.name
        );
        drop(control);
        tokio::time::sleep(Duration::from_millis(200)).await;
        let seen = echo.datagrams();
        assert!(
            !echoed(&socket, relay, echo.addr(), b"after").await,
            "{}",
            entry.name
        );
        assert_eq!(echo.datagrams(), seen, "{}: nothing went out", entry.name);

        // A switch that closes connections closes the association's, too.
        let (mut control, relay) = associate(proxy.addr()).await;
        assert!(
            echoed(&socket, relay, echo.addr(), b"again").await,
            "{}",
            entry.name
        );
        proxy.switch(proxy.server().unwrap(), true);
        let closed = timeout(Duration::from_secs(5), control.read(&mut [0u8; 8])).await;
        assert!(
            matches!(closed, Ok(Ok(0)) | Ok(Err(_))),
            "{}: {closed:?}",
            entry.name
        );
    }
}

/// The real sing-box as the Shadowsocks 2022 server: single-user (AES-256, ChaCha)
/// and several users on one key (AES-128, identity headers).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_shadowsocks_client_works_with_sing_box() {
    let target = HttpTarget::start().await.unwrap();
    let cases = [
        (
            AES_128,
            json!({ "password": SERVER_16, "users": [{ "name": "alice", "password": ALICE_16 }] }),
            format!("{SERVER_16}:{ALICE_16}"),
        ),
        (
            AES_256,
            json!({ "password": SERVER_32 }),
            SERVER_32.to_owned(),
        ),
        (CHACHA, json!({ "password": ALICE_32 }), ALICE_32.to_owned()),
    ];
    for (method, keys, password) in cases {
        let port = free_port().unwrap();
        let mut inbound = config::shadowsocks_inbound(port, method, "");
        for (k, v) in keys.as_object().unwrap() {
            inbound[k] = v.clone();
        }
        let _server = SingBox::start(config::server(inbound)).await.unwrap();
        let ss = entry(
            &format!("sing-box {method}"),
            port,
            ss(method, &password),
            EntryTransport::Tcp,
            None,
        );
        let proxy = proxy_through(&ss).await;
        target
            .download_via_socks(proxy.addr(), DOWN)
            .await
            .unwrap_or_else(|e| panic!("{method}: {e:#}"));
        udp_through(&ss).await;
    }
}

/// Our HTTPUpgrade client against sing-box's HTTPUpgrade server (VLESS, plain and
/// with TLS): 4 MiB down, every byte checked. Not Trojan: sing-box 1.14.4's Trojan
/// server now and then refuses a request written right after the `101` ("bad request
/// size"): it takes its first read as the whole 56-byte key, and after the upgrade
/// that read can return only the byte Go's HTTP server had read ahead before the
/// hijack. Our Trojan over HTTPUpgrade is carried through our node above.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_httpupgrade_client_works_with_sing_box() {
    let target = HttpTarget::start().await.unwrap();
    let cert = TestCert::new("node.test").unwrap();
    let transport = json!({ "type": "httpupgrade", "path": "/up", "host": "node.test" });
    for tls in [false, true] {
        let port = free_port().unwrap();
        let mut inbound = config::vless_inbound(port, UUID);
        if tls {
            inbound["tls"] = config::tls_server(&cert);
        }
        inbound["transport"] = transport.clone();
        let server = SingBox::start(config::server(inbound)).await.unwrap();
        let up = entry(
            &format!("sing-box VLESS tls={tls}"),
            port,
            EntryProtocol::Vless {
                uuid: UUID.into(),
                flow: None,
            },
            http_upgrade("/up"),
            if tls { pinned(&cert) } else { None },
        );
        let proxy = proxy_through(&up).await;
        target
            .download_via_socks(proxy.addr(), DOWN)
            .await
            .unwrap_or_else(|e| panic!("{}: {e:#}\n{}", up.name, server.log_tail()));
    }
}

/// Our HTTPUpgrade client against Xray's HTTPUpgrade server (VLESS on plain TCP,
/// the `Host` checked): 4 MiB down, every byte checked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_httpupgrade_client_works_with_xray() {
    let target = HttpTarget::start().await.unwrap();
    let port = free_port().unwrap();
    let server = Xray::start(json!({
        "log": { "loglevel": "info" },
        "inbounds": [{
            "protocol": "vless", "listen": "127.0.0.1", "port": port,
            "settings": { "clients": [{ "id": UUID }], "decryption": "none" },
            "streamSettings": {
                "network": "httpupgrade",
                "httpupgradeSettings": { "path": "/up", "host": "node.test" }
            }
        }],
        "outbounds": [{ "protocol": "freedom" }]
    }))
    .await
    .unwrap();
    let up = entry(
        "Xray VLESS HTTPUpgrade",
        port,
        EntryProtocol::Vless {
            uuid: UUID.into(),
            flow: None,
        },
        http_upgrade("/up"),
        None,
    );
    let proxy = proxy_through(&up).await;
    target
        .download_via_socks(proxy.addr(), DOWN)
        .await
        .unwrap_or_else(|e| panic!("{e:#}\n{}", server.log_tail()));
}

/// Our gRPC client against sing-box's gRPC server (VLESS, plain and TLS) and
/// Xray's (gun and multi mode, plain): 4 MiB down, every byte checked, and UDP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_grpc_client_works_with_sing_box_and_xray() {
    let target = HttpTarget::start().await.unwrap();
    let cert = TestCert::new("node.test").unwrap();
    let vless = || EntryProtocol::Vless {
        uuid: UUID.into(),
        flow: None,
    };
    for tls in [false, true] {
        let port = free_port().unwrap();
        let mut inbound = config::vless_inbound(port, UUID);
        if tls {
            inbound["tls"] = config::tls_server(&cert);
        }
        inbound["transport"] = json!({ "type": "grpc", "service_name": "svc" });
        let server = SingBox::start(config::server(inbound)).await.unwrap();
        let tls_entry = if tls { pinned(&cert) } else { None };
        let e = entry(
            &format!("sing-box VLESS gRPC tls={tls}"),
            port,
            vless(),
            grpc("svc", false),
            tls_entry,
        );
        let proxy = proxy_through(&e).await;
        target
            .download_via_socks(proxy.addr(), DOWN)
            .await
            .unwrap_or_else(|e| panic!("{e:#}\n{}", server.log_tail()));
        udp_through(&e).await;
    }
    for multi in [false, true] {
        let port = free_port().unwrap();
        let server = Xray::start(json!({
            "log": { "loglevel": "info" },
            "inbounds": [{
                "protocol": "vless", "listen": "127.0.0.1", "port": port,
                "settings": { "clients": [{ "id": UUID }], "decryption": "none" },
                "streamSettings": { "network": "grpc", "grpcSettings": { "serviceName": "svc" } }
            }],
            "outbounds": [{ "protocol": "freedom" }]
        }))
        .await
        .unwrap();
        let e = entry(
            &format!("Xray VLESS gRPC multi={multi}"),
            port,
            vless(),
            grpc("svc", multi),
            None,
        );
        let proxy = proxy_through(&e).await;
        target
            .download_via_socks(proxy.addr(), DOWN)
            .await
            .unwrap_or_else(|e| panic!("{e:#}\n{}", server.log_tail()));
        udp_through(&e).await;
    }
}

/// A wrong user key carries nothing: the node never answers, TCP or UDP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_shadowsocks_key_carries_nothing() {
    let target = HttpTarget::start().await.unwrap();
    let node = start_node(AES_128).await;
    let mut wrong = node.entries.last().unwrap().clone();
    wrong.protocol = ss(AES_128, &format!("{SERVER_16}:{SERVER_16}"));
    let proxy = proxy_through(&wrong).await;
    let download = timeout(
        Duration::from_secs(5),
        target.download_via_socks(proxy.addr(), 1024),
    )
    .await;
    assert!(!matches!(download, Ok(Ok(()))), "{download:?}");
    assert_eq!(target.requests(), 0);
    let echo = UdpEcho::start().await.unwrap();
    let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let (_control, relay) = associate(proxy.addr()).await;
    assert!(!echoed(&socket, relay, echo.addr(), b"anyone?").await);
    assert_eq!(echo.datagrams(), 0);
}
