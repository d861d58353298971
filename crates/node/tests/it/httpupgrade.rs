//! The HTTPUpgrade inbound against the real clients: Xray 24.11.21
//! (`"network": "httpupgrade"`), sing-box 1.14.4 (`"type": "httpupgrade"`) and
//! mihomo 1.19.2 (`network: ws` with `v2ray-http-upgrade: true`) carry 4 MiB down
//! (every byte checked) and 1 MiB up through VLESS and Trojan, over plain TCP and TLS;
//! a prober with a wrong path, a wrong host or no HTTP at all gets the fallback site
//! byte for byte, a request cut short reaches it at the handshake deadline; a change of path rebuilds the inbound; validation refuses bad
//! paths and hosts by field.

use crate::common;

use std::net::SocketAddr;
use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use switchyard_node::NodeConfig;
use switchyard_testkit::config::{
    httpupgrade_transport, tls_client, trojan_outbound, vless_outbound,
};
use switchyard_testkit::{Mihomo, SingBox, Xray, free_port, local};
use switchyard_transport::dial::{Connector, Layer, Stack, Step};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const DOWN: u64 = 4 << 20;
const UP: u64 = 1 << 20;
/// A bound on one transfer, so a client that stalls fails the test with its log.
const TRANSFER_TIMEOUT: Duration = Duration::from_secs(20);

const TLS: &str = "security = { type = \"tls\", cert = \"@CERT@\", key = \"@KEY@\" }";

/// A node with one HTTPUpgrade inbound of `protocol` on `path` (with `host` when
/// given), with TLS when `tls`.
async fn node(protocol: &str, path: &str, host: Option<&str>, tls: bool) -> Fixture {
    let host = host.map_or(String::new(), |h| format!(", host = \"{h}\""));
    let security = if tls { TLS } else { "" };
    start(&format!(
        "protocol = \"{protocol}\"\ntransport = {{ type = \"httpupgrade\", path = \"{path}\"{host} }}\n{security}"
    ))
    .await
}

/// Downloads [`DOWN`] and uploads [`UP`] through the SOCKS5 proxy at `proxy`, every
/// byte checked, then waits for Alice's counters to show them; panics with `log`.
pub(crate) async fn carry(f: &Fixture, proxy: SocketAddr, what: &str, log: impl Fn() -> String) {
    let (up0, down0) = f.alice();
    let transfers = async {
        f.http.download_via_socks(proxy, DOWN).await?;
        f.http.upload_via_socks(proxy, UP).await
    };
    let failed = match tokio::time::timeout(TRANSFER_TIMEOUT, transfers).await {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some(format!("{e:#}")),
        Err(_) => Some("stalled".to_owned()),
    };
    if let Some(why) = failed {
        // The client writes its log as it goes: what it says of the failure comes last.
        tokio::time::sleep(Duration::from_millis(500)).await;
        panic!("{what}: {why}\n{}", log());
    }
    let (mut up, mut down) = f.alice();
    for _ in 0..50 {
        if down - down0 >= DOWN && up - up0 >= UP {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        (up, down) = f.alice();
    }
    // Payload plus the HTTP heads of the two requests.
    assert!(
        (DOWN..DOWN + 4096).contains(&(down - down0)),
        "{what}: down {}",
        down - down0
    );
    assert!(
        (UP..UP + 4096).contains(&(up - up0)),
        "{what}: up {}",
        up - up0
    );
}

/// An Xray client with a SOCKS inbound and `outbound`; its SOCKS address.
pub(crate) async fn xray(outbound: Value) -> (Xray, SocketAddr) {
    let config = json!({
        "log": { "loglevel": "info" },
        "inbounds": [{
            "tag": "socks", "protocol": "socks", "listen": "127.0.0.1",
            "port": free_port().unwrap(), "settings": { "udp": false, "ip": "127.0.0.1" }
        }],
        "outbounds": [outbound]
    });
    let client = Xray::start(config).await.unwrap();
    let socks = client.inbound_addr("socks").unwrap();
    (client, socks)
}

/// Xray's stream settings for HTTPUpgrade on `path` with `host`, over TLS when `tls`.
fn xray_stream(path: &str, host: &str, tls: bool) -> Value {
    let mut stream = json!({
        "network": "httpupgrade",
        "httpupgradeSettings": { "path": path, "host": host },
    });
    if tls {
        stream["security"] = json!("tls");
        stream["tlsSettings"] = json!({ "serverName": "node.test", "allowInsecure": true });
    }
    stream
}

#[tokio::test]
async fn xray_carries_vless_over_httpupgrade_plain_and_with_tls() {
    for tls in [false, true] {
        let f = node("vless", "/up", Some("node.test"), tls).await;
        let (client, socks) = xray(json!({
            "tag": "proxy", "protocol": "vless",
            "settings": { "vnext": [{
                "address": "127.0.0.1", "port": f.port,
                "users": [{ "id": ALICE_UUID, "encryption": "none" }]
            }]},
            "streamSettings": xray_stream("/up", "node.test", tls)
        }))
        .await;
        carry(&f, socks, &format!("Xray VLESS tls={tls}"), || {
            client.log_tail()
        })
        .await;
    }
}

#[tokio::test]
async fn xray_carries_trojan_over_httpupgrade_and_tls() {
    let f = node("trojan", "/tu", None, true).await;
    let (client, socks) = xray(json!({
        "tag": "proxy", "protocol": "trojan",
        "settings": { "servers": [{
            "address": "127.0.0.1", "port": f.port, "password": "alice-password"
        }]},
        "streamSettings": xray_stream("/tu", "node.test", true)
    }))
    .await;
    carry(&f, socks, "Xray Trojan", || client.log_tail()).await;
}

#[tokio::test]
async fn sing_box_carries_vless_and_trojan_over_httpupgrade() {
    // VLESS on plain TCP, the Host checked.
    let f = node("vless", "/up", Some("node.test"), false).await;
    let mut out = vless_outbound(f.addr(), ALICE_UUID);
    out["transport"] = httpupgrade_transport("/up", Some("node.test"));
    let client = SingBox::client(out).await.unwrap();
    carry(&f, client.proxy_addr().unwrap(), "sing-box VLESS", || {
        client.log_tail()
    })
    .await;
    // VLESS over TLS, no Host configured on the node.
    let f = node("vless", "/up", None, true).await;
    let mut out = vless_outbound(f.addr(), ALICE_UUID);
    out["tls"] = tls_client(&f.cert);
    out["transport"] = httpupgrade_transport("/up", None);
    let client = SingBox::client(out).await.unwrap();
    carry(
        &f,
        client.proxy_addr().unwrap(),
        "sing-box VLESS TLS",
        || client.log_tail(),
    )
    .await;
    // Trojan over TLS.
    let f = node("trojan", "/tu", Some("node.test"), true).await;
    let mut out = trojan_outbound(f.addr(), "alice-password", tls_client(&f.cert));
    out["transport"] = httpupgrade_transport("/tu", Some("node.test"));
    let client = SingBox::client(out).await.unwrap();
    carry(
        &f,
        client.proxy_addr().unwrap(),
        "sing-box Trojan TLS",
        || client.log_tail(),
    )
    .await;
}

/// A mihomo client of `proxy` (a `proxies` entry, indented as a list item).
async fn mihomo(proxy: &str) -> Mihomo {
    let port = free_port().unwrap();
    let config = format!(
        "log-level: info\nmixed-port: {port}\nbind-address: 127.0.0.1\nallow-lan: false\nmode: rule\nipv6: false\n\
         proxies:\n{proxy}rules:\n  - MATCH,node\n"
    );
    Mihomo::start(&config, local(port)).await.unwrap()
}

#[tokio::test]
async fn mihomo_carries_vless_and_trojan_over_v2ray_http_upgrade() {
    for tls in [false, true] {
        let f = node("vless", "/up", Some("node.test"), tls).await;
        let tls_opts = if tls {
            "    tls: true\n    servername: node.test\n    skip-cert-verify: true\n"
        } else {
            "    tls: false\n"
        };
        let client = mihomo(&format!(
            "  - name: node\n    type: vless\n    server: 127.0.0.1\n    port: {port}\n    uuid: {ALICE_UUID}\n    udp: false\n    network: ws\n{tls_opts}\
             \x20   ws-opts:\n      path: /up\n      headers:\n        Host: node.test\n      v2ray-http-upgrade: true\n",
            port = f.port
        ))
        .await;
        carry(
            &f,
            client.proxy_addr(),
            &format!("mihomo VLESS tls={tls}"),
            || client.log_tail(),
        )
        .await;
    }
    let f = node("trojan", "/tu", None, true).await;
    let client = mihomo(&format!(
        "  - name: node\n    type: trojan\n    server: 127.0.0.1\n    port: {port}\n    password: alice-password\n    udp: false\n    sni: node.test\n    skip-cert-verify: true\n    network: ws\n\
         \x20   ws-opts:\n      path: /tu\n      v2ray-http-upgrade: true\n",
        port = f.port
    ))
    .await;
    carry(&f, client.proxy_addr(), "mihomo Trojan TLS", || {
        client.log_tail()
    })
    .await;
}

/// Our own transport layer's HTTPUpgrade client through the inbound: a VLESS request
/// right behind the upgrade, every byte of the answer checked.
#[tokio::test]
async fn our_dial_layer_carries_vless_through_the_inbound() {
    let f = node("vless", "/up", Some("node.test"), false).await;
    let layer = |path: &str, host: &str| Layer::HttpUpgrade {
        host: host.into(),
        path: path.into(),
    };
    let stack = Stack::to("127.0.0.1", f.port, vec![layer("/up", "node.test:443")]);
    let mut io = stack.connect().await.unwrap();
    io.write_all(&vless_get(ALICE_UUID, f.http.addr(), 100_000))
        .await
        .unwrap();
    let mut response = [0u8; 2];
    io.read_exact(&mut response).await.unwrap();
    assert_eq!(response, [0, 0], "the VLESS response header");
    let got = switchyard_testkit::http::get_bytes_by_length(&mut io, 100_000).await;
    assert!(got.is_ok(), "{got:?}");
    // No fallback on this node: a wrong path is held, then closed; the upgrade
    // step fails.
    let wrong = Stack::to("127.0.0.1", f.port, vec![layer("/other", "node.test")]);
    let e = tokio::time::timeout(Duration::from_secs(10), wrong.connect())
        .await
        .expect("closed after the hold")
        .err()
        .expect("upgraded on a wrong path");
    assert_eq!(e.step, Step::HttpUpgrade);
}

/// A local "website": answers any request with a fixed page, and records what it
/// was sent.
pub(crate) async fn website() -> (SocketAddr, tokio::sync::mpsc::UnboundedReceiver<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 16 * 1024];
                let mut got = Vec::new();
                // The whole head (the tests send one ending in a blank line, or a
                // few bytes and silence).
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tokio::time::timeout(Duration::from_millis(500), s.read(&mut buf)).await {
                        Ok(Ok(n)) if n > 0 => got.extend_from_slice(&buf[..n]),
                        _ => break,
                    }
                }
                let _ = tx.send(got);
                let _ = s
                    .write_all(
                        b"HTTP/1.1 404 Not Found\r\nContent-Length: 5\r\nConnection: close\r\n\r\nnope!",
                    )
                    .await;
            });
        }
    });
    (addr, rx)
}

pub(crate) const SITE_ANSWER: &[u8] =
    b"HTTP/1.1 404 Not Found\r\nContent-Length: 5\r\nConnection: close\r\n\r\nnope!";

/// Whatever is not an upgrade for this inbound (another path, another host, a plain
/// page request, not HTTP at all) reaches the fallback site with every byte sent,
/// and the prober gets the site's answer byte for byte.
#[tokio::test]
async fn a_prober_gets_the_fallback_site_byte_for_byte() {
    let (site, mut seen) = website().await;
    let f = start(&format!(
        "protocol = \"vless\"\ntransport = {{ type = \"httpupgrade\", path = \"/up\", host = \"node.test\" }}\nfallback = \"{site}\""
    ))
    .await;
    let probes: [&[u8]; 5] = [
        b"GET /up-not HTTP/1.1\r\nHost: node.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
        b"GET /up HTTP/1.1\r\nHost: other.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
        b"GET /up HTTP/1.1\r\nHost: node.test\r\n\r\n",
        b"POST /up HTTP/1.1\r\nHost: node.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
        b"\x16\x03\x01\x00\x05hello\r\n\r\n",
    ];
    for probe in probes {
        let mut s = TcpStream::connect(f.addr()).await.unwrap();
        s.write_all(probe).await.unwrap();
        let mut got = Vec::new();
        tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut got))
            .await
            .expect("answered and closed")
            .unwrap();
        assert_eq!(
            got,
            SITE_ANSWER,
            "{}",
            String::from_utf8_lossy(probe).escape_debug()
        );
        let sent = tokio::time::timeout(Duration::from_secs(5), seen.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(sent, probe, "the site got every byte");
    }
    // The right request with an unknown user: the upgrade is answered, then the VLESS
    // header goes to the site with every byte below the upgrade.
    let mut s = TcpStream::connect(f.addr()).await.unwrap();
    let mut wire =
        b"GET /up HTTP/1.1\r\nHost: node.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
            .to_vec();
    let header = vless_get("11111111-2222-3333-4444-555555555555", f.http.addr(), 10);
    wire.extend_from_slice(&header);
    s.write_all(&wire).await.unwrap();
    let mut got = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut got))
        .await
        .expect("answered and closed")
        .unwrap();
    let upgraded =
        b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n";
    assert_eq!(got, [&upgraded[..], SITE_ANSWER].concat());
    let sent = seen.recv().await.unwrap();
    assert_eq!(sent, header);
    assert_eq!(f.http.requests(), 0);
}

/// A request cut short by the client's silence goes to the fallback at the handshake
/// deadline (3 s in the fixture), with its bytes.
#[tokio::test]
async fn a_cut_short_request_goes_to_the_fallback_at_the_deadline() {
    let (site, mut seen) = website().await;
    let f = start(&format!(
        "protocol = \"vless\"\ntransport = {{ type = \"httpupgrade\", path = \"/up\" }}\nfallback = \"{site}\""
    ))
    .await;
    let mut s = TcpStream::connect(f.addr()).await.unwrap();
    let began = tokio::time::Instant::now();
    s.write_all(b"GET /up HTTP/1.1\r\nHost: no").await.unwrap();
    let sent = tokio::time::timeout(Duration::from_secs(10), seen.recv())
        .await
        .expect("the fallback got the connection")
        .unwrap();
    assert_eq!(sent, b"GET /up HTTP/1.1\r\nHost: no");
    assert!(
        began.elapsed() >= Duration::from_millis(2900),
        "{:?}",
        began.elapsed()
    );
    let mut got = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut got))
        .await
        .expect("answered and closed")
        .unwrap();
    assert_eq!(got, SITE_ANSWER);
}

/// Changing the path rebuilds the inbound: the new path is served, the old one goes
/// to the fallback (here: held and closed, the node has none).
#[tokio::test]
async fn changing_the_path_rebuilds_the_inbound() {
    let f = node("vless", "/old", None, false).await;
    let connect = |path: &'static str| {
        let stack = Stack::to(
            "127.0.0.1",
            f.port,
            vec![Layer::HttpUpgrade {
                host: "node.test".into(),
                path: path.into(),
            }],
        );
        async move { tokio::time::timeout(Duration::from_secs(10), stack.connect()).await }
    };
    assert!(connect("/old").await.unwrap().is_ok());
    let mut c = f.node.config().await;
    c.inbounds[0].transport = switchyard_node::config::Transport::HttpUpgrade {
        path: "/new".into(),
        host: None,
    };
    f.node.apply(c).await.unwrap();
    assert!(connect("/new").await.unwrap().is_ok());
    let e = connect("/old")
        .await
        .unwrap()
        .err()
        .expect("old path refused");
    assert_eq!(e.step, Step::HttpUpgrade);
}

fn httpupgrade_config(path: &str, host: Option<&str>) -> Result<NodeConfig, String> {
    let host = host.map_or(String::new(), |h| format!(", host = \"{h}\""));
    NodeConfig::from_toml(&format!(
        "[[inbounds]]\ntag = \"up\"\nprotocol = \"vless\"\nport = 8443\ntransport = {{ type = \"httpupgrade\", path = \"{path}\"{host} }}\n"
    ))
    .map_err(|e| e.to_string())
}

/// Paths must start with '/', carry no query (no early data for HTTPUpgrade) and be
/// short; a host must be a name or an IP address. Each refusal names the field.
#[test]
fn bad_paths_and_hosts_are_refused_by_field() {
    assert!(httpupgrade_config("/up", None).is_ok());
    assert!(httpupgrade_config("/a/b-c_d.e~%20", Some("cdn.example.com")).is_ok());
    assert!(httpupgrade_config("/up", Some("127.0.0.1")).is_ok());
    assert!(httpupgrade_config("/up", Some("[::1]")).is_ok());
    let long = format!("/{}", "a".repeat(1024));
    for (path, why) in [
        ("up", "must start with '/'"),
        ("/up?ed=2048", "a query is not part of the path"),
        ("/a b", "visible ASCII"),
        (long.as_str(), "longer than 1024 bytes"),
    ] {
        let err = httpupgrade_config(path, None).unwrap_err();
        assert!(
            err.contains("inbounds[0].transport.path") && err.contains(why),
            "{path}: {err}"
        );
    }
    for host in ["node.test:443", "", "a..b", "-a.test", "a b"] {
        let err = httpupgrade_config("/up", Some(host)).unwrap_err();
        assert!(
            err.contains("inbounds[0].transport.host") && err.contains("not a host name"),
            "{host}: {err}"
        );
    }
    // Shadowsocks and SOCKS run on plain TCP only.
    let err = NodeConfig::from_toml(
        "[[inbounds]]\ntag = \"s\"\nprotocol = \"socks\"\nport = 1080\ntransport = { type = \"httpupgrade\", path = \"/up\" }\n",
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("inbounds[0].transport"), "{err}");
}
