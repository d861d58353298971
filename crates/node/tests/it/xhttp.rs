//! The XHTTP inbound against the real Xray 24.11.21 client (`"network": "xhttp"`):
//! packet-up and stream-up over plain HTTP/1.1, `auto` over TLS with ALPN `h2`
//! (stream-up on HTTP/2) and with ALPN `http/1.1` (packet-up), and over REALITY;
//! VLESS and Trojan carry 4 MiB down and 1 MiB up (every byte checked) and UDP
//! (XUDP) once. Xray 24.11.21 has no stream-one: the transport's own tests speak it
//! with an `h2` client. A plain page request, a wrong path and wrong padding get
//! the fallback site byte for byte; validation names the field; a changed path
//! rebuilds the inbound.

use crate::common;
use crate::httpupgrade::{SITE_ANSWER, carry, website};
use crate::reality_support::{SHORT_ID, TargetSite};

use std::net::SocketAddr;
use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use switchyard_node::NodeConfig;
use switchyard_testkit::{Xray, free_port};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const TLS: &str = "security = { type = \"tls\", cert = \"@CERT@\", key = \"@KEY@\" }";

/// A node with one XHTTP inbound of `protocol` under `/xh` in `mode`, with `security`.
async fn node(protocol: &str, mode: &str, security: &str) -> Fixture {
    start(&format!(
        "protocol = \"{protocol}\"\ntransport = {{ type = \"xhttp\", path = \"/xh\", mode = \"{mode}\" }}\n{security}"
    ))
    .await
}

/// An Xray client with a SOCKS inbound (UDP on) and `outbound`; its SOCKS address.
pub(crate) async fn xray(outbound: Value) -> (Xray, SocketAddr) {
    let config = json!({
        "log": { "loglevel": "info" },
        "inbounds": [{
            "tag": "socks", "protocol": "socks", "listen": "127.0.0.1",
            "port": free_port().unwrap(), "settings": { "udp": true, "ip": "127.0.0.1" }
        }],
        "outbounds": [outbound]
    });
    let client = Xray::start(config).await.unwrap();
    let socks = client.inbound_addr("socks").unwrap();
    (client, socks)
}

/// Xray's stream settings for XHTTP under `path` in `mode`; `tls`: `None` for
/// plain HTTP, else the ALPN list offered.
pub(crate) fn xray_stream(path: &str, mode: &str, tls: Option<&[&str]>) -> Value {
    let mut stream = json!({
        "network": "xhttp",
        "xhttpSettings": { "path": path, "mode": mode },
    });
    if let Some(alpn) = tls {
        stream["security"] = json!("tls");
        stream["tlsSettings"] =
            json!({ "serverName": "node.test", "allowInsecure": true, "alpn": alpn });
    }
    stream
}

pub(crate) fn xray_vless(addr: SocketAddr, stream: Value) -> Value {
    json!({
        "tag": "proxy", "protocol": "vless",
        "settings": { "vnext": [{
            "address": addr.ip().to_string(), "port": addr.port(),
            "users": [{ "id": ALICE_UUID, "encryption": "none" }]
        }]},
        "streamSettings": stream
    })
}

/// UDP through `proxy`: 20 datagrams of 1,200 bytes echoed, every byte checked.
pub(crate) async fn udp(f: &Fixture, proxy: SocketAddr, what: &str, log: impl Fn() -> String) {
    let echoed = tokio::time::timeout(
        Duration::from_secs(20),
        f.udp.check_via_socks(proxy, 20, 1200),
    )
    .await;
    match echoed {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => panic!("{what} UDP: {e:#}\n{}", log()),
        Err(_) => panic!("{what} UDP: stalled\n{}", log()),
    }
}

#[tokio::test]
async fn xray_carries_vless_over_packet_up_and_stream_up_on_plain_http1() {
    for (node_mode, mode) in [
        ("packet-up", "packet-up"),
        ("stream-up", "stream-up"),
        ("auto", "packet-up"),
    ] {
        let f = node("vless", node_mode, "").await;
        let (client, socks) = xray(xray_vless(f.addr(), xray_stream("/xh", mode, None))).await;
        let what = format!("Xray VLESS {mode} on a {node_mode} inbound, plain HTTP/1.1");
        carry(&f, socks, &what, || client.log_tail()).await;
        if node_mode == "packet-up" {
            udp(&f, socks, &what, || client.log_tail()).await;
        }
    }
}

#[tokio::test]
async fn xray_auto_runs_stream_up_on_h2_and_packet_up_on_http1_in_tls() {
    let alpns: [(&[&str], &str); 2] = [
        (&["h2", "http/1.1"], "stream-up"),
        (&["http/1.1"], "packet-up"),
    ];
    for (alpn, picked) in alpns {
        let f = node("vless", "auto", TLS).await;
        let (client, socks) = xray(xray_vless(
            f.addr(),
            xray_stream("/xh/", "auto", Some(alpn)),
        ))
        .await;
        let what = format!("Xray VLESS auto, TLS with ALPN {alpn:?}");
        carry(&f, socks, &what, || client.log_tail()).await;
        let used = format!("XHTTP is using mode: {picked}");
        assert!(
            client.log_tail().contains(&used),
            "{what}: {}",
            client.log_tail()
        );
    }
}

#[tokio::test]
async fn xray_carries_trojan_over_xhttp_in_tls() {
    let f = node("trojan", "auto", TLS).await;
    let (client, socks) = xray(json!({
        "tag": "proxy", "protocol": "trojan",
        "settings": { "servers": [{
            "address": "127.0.0.1", "port": f.port, "password": "alice-password"
        }]},
        "streamSettings": xray_stream("/xh", "auto", Some(&["h2", "http/1.1"]))
    }))
    .await;
    carry(&f, socks, "Xray Trojan XHTTP TLS", || client.log_tail()).await;
}

/// Over REALITY Xray speaks HTTP/2 and `auto` is stream-up; its uTLS fingerprint
/// (`chrome`) is what REALITY needs.
#[tokio::test]
async fn xray_carries_vless_over_xhttp_in_reality() {
    let target = TargetSite::start().await;
    let keys = switchyard_node::reality::generate().unwrap();
    let f = start(&format!(
        r#"protocol = "vless"
transport = {{ type = "xhttp", path = "/xh" }}
security = {{ type = "reality", dest = "{}", server_names = ["target.test"], private_key = "{}", short_ids = ["{SHORT_ID}"] }}"#,
        target.addr, keys.private_key
    ))
    .await;
    for mode in ["auto", "packet-up"] {
        let mut stream = xray_stream("/xh", mode, None);
        stream["security"] = json!("reality");
        stream["realitySettings"] = json!({
            "serverName": "target.test", "fingerprint": "chrome",
            "publicKey": keys.public_key, "shortId": SHORT_ID, "spiderX": "/"
        });
        let (client, socks) = xray(xray_vless(f.addr(), stream)).await;
        let what = format!("Xray VLESS {mode} over REALITY");
        carry(&f, socks, &what, || client.log_tail()).await;
        let picked = if mode == "auto" { "stream-up" } else { mode };
        let used = format!("XHTTP is using mode: {picked}");
        assert!(
            client.log_tail().contains(&used),
            "{what}: {}",
            client.log_tail()
        );
    }
    assert_eq!(
        target.hellos(),
        0,
        "the target saw none of Xray's connections"
    );
}

/// What a prober sends as the first request of a connection (a page, another path,
/// another host, padding out of range, a method XHTTP does not use) reaches the
/// fallback site with every byte, and the prober gets its answer byte for byte.
#[tokio::test]
async fn a_prober_gets_the_fallback_site_byte_for_byte() {
    let (site, mut seen) = website().await;
    let f = start(&format!(
        "protocol = \"vless\"\ntransport = {{ type = \"xhttp\", path = \"/xh\", host = \"node.test\" }}\nfallback = \"{site}\""
    ))
    .await;
    let pad = "0".repeat(200);
    let probes = [
        "GET / HTTP/1.1\r\nHost: node.test\r\n\r\n".to_owned(),
        format!("GET /other/abc?x_padding={pad} HTTP/1.1\r\nHost: node.test\r\n\r\n"),
        format!("GET /xh/abc?x_padding={pad} HTTP/1.1\r\nHost: other.test\r\n\r\n"),
        "GET /xh/abc HTTP/1.1\r\nHost: node.test\r\n\r\n".to_owned(),
        format!(
            "GET /xh/abc?x_padding={} HTTP/1.1\r\nHost: node.test\r\n\r\n",
            "0".repeat(5000)
        ),
        format!("PUT /xh/abc?x_padding={pad} HTTP/1.1\r\nHost: node.test\r\n\r\n"),
        "GET /xh/abc?x_padding=00".to_owned(),
    ];
    for probe in probes {
        let mut s = TcpStream::connect(f.addr()).await.unwrap();
        s.write_all(probe.as_bytes()).await.unwrap();
        let mut got = Vec::new();
        tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut got))
            .await
            .expect("answered and closed")
            .unwrap();
        assert_eq!(got, SITE_ANSWER, "{}", probe.escape_debug());
        let sent = tokio::time::timeout(Duration::from_secs(5), seen.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(sent, probe.as_bytes(), "the site got every byte");
    }
}

/// A connection whose first request is ours is HTTP from then on: a later request
/// for another path gets `404` with no body, from the node (not the fallback).
#[tokio::test]
async fn a_later_request_for_another_path_gets_404() {
    let (site, mut seen) = website().await;
    let f = start(&format!(
        "protocol = \"vless\"\ntransport = {{ type = \"xhttp\", path = \"/xh\", mode = \"packet-up\" }}\nfallback = \"{site}\""
    ))
    .await;
    let pad = "0".repeat(100);
    let mut s = TcpStream::connect(f.addr()).await.unwrap();
    let requests = format!(
        "POST /xh/s1/0?x_padding={pad} HTTP/1.1\r\nHost: node.test\r\nContent-Length: 3\r\n\r\nabc\
         GET /elsewhere HTTP/1.1\r\nHost: node.test\r\n\r\n"
    );
    s.write_all(requests.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&got).contains("404") {
        let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf))
            .await
            .expect("answered")
            .unwrap();
        assert!(n > 0, "{}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    let second = &text[text.find("HTTP/1.1 404").unwrap()..];
    assert!(second.contains("content-length: 0\r\n"), "{second}");
    assert!(!second.contains("x-padding"), "{second}");
    assert!(seen.try_recv().is_err(), "nothing reached the fallback");
}

/// A stream whose VLESS user is unknown gets nothing (its bytes are in HTTP
/// requests, nothing a fallback site could answer) and its download ends after the
/// hold; the fallback never sees it.
#[tokio::test]
async fn a_stream_failing_authentication_is_held_then_closed() {
    let (site, mut seen) = website().await;
    let f = start(&format!(
        "protocol = \"vless\"\ntransport = {{ type = \"xhttp\", path = \"/xh\", mode = \"packet-up\" }}\nfallback = \"{site}\""
    ))
    .await;
    let pad = "0".repeat(100);
    let request = vless_get("11111111-2222-3333-4444-555555555555", f.http.addr(), 10);
    let mut up = TcpStream::connect(f.addr()).await.unwrap();
    let mut post = format!(
        "POST /xh/bad/0?x_padding={pad} HTTP/1.1\r\nHost: node.test\r\nContent-Length: {}\r\n\r\n",
        request.len()
    )
    .into_bytes();
    post.extend_from_slice(&request);
    up.write_all(&post).await.unwrap();
    let began = tokio::time::Instant::now();
    let mut down = TcpStream::connect(f.addr()).await.unwrap();
    down.write_all(
        format!(
            "GET /xh/bad?x_padding={pad} HTTP/1.1\r\nHost: node.test\r\nConnection: close\r\n\r\n"
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let mut got = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(15), down.read_to_end(&mut got))
        .await
        .expect("ended after the hold");
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    // The chunked body ends with nothing in it.
    assert!(
        text.ends_with("\r\n\r\n0\r\n\r\n") || text.ends_with("\r\n\r\n"),
        "{text:?}"
    );
    assert!(
        began.elapsed() >= Duration::from_millis(2500),
        "{:?}",
        began.elapsed()
    );
    assert!(seen.try_recv().is_err(), "nothing reached the fallback");
}

#[test]
fn validation_names_the_field() {
    let cases = [
        ("path = \"xh\"", "inbounds[0].transport.path"),
        ("path = \"/xh?x_padding=1\"", "inbounds[0].transport.path"),
        (
            "path = \"/xh\", host = \"a b\"",
            "inbounds[0].transport.host",
        ),
        (
            "path = \"/xh\", x_padding_bytes = \"1-20000\"",
            "inbounds[0].transport.x_padding_bytes",
        ),
        (
            "path = \"/xh\", sc_max_each_post_bytes = 0",
            "inbounds[0].transport.sc_max_each_post_bytes",
        ),
        (
            "path = \"/xh\", sc_max_each_post_bytes = \"1-20000000\"",
            "inbounds[0].transport.sc_max_each_post_bytes",
        ),
        (
            "path = \"/xh\", sc_max_buffered_posts = 0",
            "inbounds[0].transport.sc_max_buffered_posts",
        ),
        (
            "path = \"/xh\", sc_max_buffered_posts = 1025",
            "inbounds[0].transport.sc_max_buffered_posts",
        ),
        (
            "path = \"/xh\", xmux = { max_concurrency = \"16-32\", max_connections = 4 }",
            "inbounds[0].transport.xmux.max_connections",
        ),
    ];
    for (fields, field) in cases {
        let text = format!(
            "[node]\nstate_dir = \"/tmp/x\"\n[[inbounds]]\ntag = \"x\"\nprotocol = \"vless\"\nport = 4443\ntransport = {{ type = \"xhttp\", {fields} }}\n"
        );
        let e = NodeConfig::from_toml(&text).expect_err(fields).to_string();
        assert!(e.contains(field), "{fields}: {e}");
    }
    let text = "[node]\nstate_dir = \"/tmp/x\"\n[[inbounds]]\ntag = \"x\"\nprotocol = \"socks\"\nport = 4443\ntransport = { type = \"xhttp\", path = \"/xh\" }\n";
    let e = NodeConfig::from_toml(text).unwrap_err().to_string();
    assert!(e.contains("inbounds[0].transport"), "{e}");
    let ok = "[node]\nstate_dir = \"/tmp/x\"\n[[inbounds]]\ntag = \"x\"\nprotocol = \"trojan\"\nport = 4443\ntransport = { type = \"xhttp\", path = \"/xh?k=v\", mode = \"stream-one\" }\n";
    NodeConfig::from_toml(ok).unwrap();
}

/// A changed path rebuilds the inbound: Xray on the new path carries; the old path
/// is a prober's request now.
#[tokio::test]
async fn changing_the_path_rebuilds_the_inbound() {
    let f = node("vless", "packet-up", "").await;
    let mut c = f.node.config().await;
    let switchyard_node::config::Transport::Xhttp(settings) = &mut c.inbounds[0].transport else {
        panic!("an XHTTP inbound")
    };
    settings.path = "/new".into();
    f.node.apply(c).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (client, socks) = xray(xray_vless(f.addr(), xray_stream("/new", "packet-up", None))).await;
    carry(&f, socks, "Xray after the change", || client.log_tail()).await;
    let mut s = TcpStream::connect(f.addr()).await.unwrap();
    let pad = "0".repeat(100);
    s.write_all(
        format!("GET /xh/abc?x_padding={pad} HTTP/1.1\r\nHost: node.test\r\n\r\n").as_bytes(),
    )
    .await
    .unwrap();
    let mut got = [0u8; 1];
    let read = tokio::time::timeout(Duration::from_secs(1), s.read(&mut got)).await;
    assert!(read.is_err(), "held in silence (no fallback): {read:?}");
}
