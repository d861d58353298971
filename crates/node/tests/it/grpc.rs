//! The gRPC inbound against the real clients: Xray 24.11.21 (`"network": "grpc"`,
//! gun and multi mode), sing-box 1.14.4 (`"type": "grpc"`) and mihomo 1.19.2
//! (`network: grpc`) carry 4 MiB down (every byte checked) and 1 MiB up through
//! VLESS and Trojan, over plain HTTP/2 and TLS (and Xray over REALITY), and UDP;
//! Xray's parallel streams
//! share one TCP connection; an HTTP/1.1 prober gets the fallback site byte for
//! byte; a wrong service name gets `grpc-status: 12`; validation names the field.

use crate::common;
use crate::httpupgrade::{SITE_ANSWER, carry, website};
use crate::reality_support::{SHORT_ID, TargetSite};

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use switchyard_node::NodeConfig;
use switchyard_testkit::config::{tls_client, trojan_outbound, vless_outbound};
use switchyard_testkit::{Mihomo, SingBox, Xray, free_port, local};
use switchyard_transport::dial::{Connector, Layer, Stack};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const TLS: &str = "security = { type = \"tls\", cert = \"@CERT@\", key = \"@KEY@\" }";

/// A node with one gRPC inbound of `protocol` for `service`, with TLS when `tls`.
async fn node(protocol: &str, service: &str, tls: bool) -> Fixture {
    let security = if tls { TLS } else { "" };
    start(&format!(
        "protocol = \"{protocol}\"\ntransport = {{ type = \"grpc\", service_name = \"{service}\" }}\n{security}"
    ))
    .await
}

/// An Xray client with a SOCKS inbound (UDP on) and `outbound`; its SOCKS address.
async fn xray(outbound: Value) -> (Xray, SocketAddr) {
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

/// Xray's stream settings for gRPC to `service` (multi mode when `multi`), over TLS
/// when `tls`.
fn xray_stream(service: &str, multi: bool, tls: bool) -> Value {
    let mut stream = json!({
        "network": "grpc",
        "grpcSettings": { "serviceName": service, "multiMode": multi },
    });
    if tls {
        stream["security"] = json!("tls");
        stream["tlsSettings"] = json!({ "serverName": "node.test", "allowInsecure": true });
    }
    stream
}

fn xray_vless(port: u16, stream: Value) -> Value {
    json!({
        "tag": "proxy", "protocol": "vless",
        "settings": { "vnext": [{
            "address": "127.0.0.1", "port": port,
            "users": [{ "id": ALICE_UUID, "encryption": "none" }]
        }]},
        "streamSettings": stream
    })
}

fn grpc_transport(service: &str) -> Value {
    json!({ "type": "grpc", "service_name": service })
}

/// UDP through `proxy`: 20 datagrams of 1,200 bytes echoed, every byte checked.
async fn udp(f: &Fixture, proxy: SocketAddr, what: &str, log: impl Fn() -> String) {
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
async fn xray_carries_vless_over_gun_and_multi_plain_and_with_tls() {
    for tls in [false, true] {
        for multi in [false, true] {
            let f = node("vless", "svc.Tun-1", tls).await;
            let (client, socks) =
                xray(xray_vless(f.port, xray_stream("svc.Tun-1", multi, tls))).await;
            let what = format!("Xray VLESS tls={tls} multi={multi}");
            carry(&f, socks, &what, || client.log_tail()).await;
            if !multi {
                udp(&f, socks, &what, || client.log_tail()).await;
            }
        }
    }
}

/// gRPC over REALITY, as Xray's `grpc` + `reality` clients speak it: HTTP/2 inside
/// REALITY's TLS, gun and multi; the target site sees none of the client's
/// connections, and UDP goes through too.
#[tokio::test]
async fn xray_carries_vless_over_grpc_in_reality() {
    let target = TargetSite::start().await;
    let keys = switchyard_node::reality::generate().unwrap();
    let f = start(&format!(
        r#"protocol = "vless"
transport = {{ type = "grpc", service_name = "svc" }}
security = {{ type = "reality", dest = "{}", server_names = ["target.test"], private_key = "{}", short_ids = ["{SHORT_ID}"] }}"#,
        target.addr, keys.private_key
    ))
    .await;
    for multi in [false, true] {
        let mut stream = xray_stream("svc", multi, false);
        stream["security"] = json!("reality");
        stream["realitySettings"] = json!({
            "serverName": "target.test", "fingerprint": "chrome",
            "publicKey": keys.public_key, "shortId": SHORT_ID, "spiderX": "/"
        });
        let (client, socks) = xray(xray_vless(f.port, stream)).await;
        let what = format!("Xray VLESS gRPC multi={multi} over REALITY");
        carry(&f, socks, &what, || client.log_tail()).await;
        udp(&f, socks, &what, || client.log_tail()).await;
    }
    assert_eq!(
        target.hellos(),
        0,
        "the target saw none of Xray's connections"
    );
}

#[tokio::test]
async fn xray_carries_trojan_over_grpc_and_tls() {
    let f = node("trojan", "tg", true).await;
    let (client, socks) = xray(json!({
        "tag": "proxy", "protocol": "trojan",
        "settings": { "servers": [{
            "address": "127.0.0.1", "port": f.port, "password": "alice-password"
        }]},
        "streamSettings": xray_stream("tg", false, true)
    }))
    .await;
    carry(&f, socks, "Xray Trojan", || client.log_tail()).await;
    udp(&f, socks, "Xray Trojan", || client.log_tail()).await;
}

#[tokio::test]
async fn sing_box_carries_vless_and_trojan_over_grpc() {
    for tls in [false, true] {
        let f = node("vless", "svc", tls).await;
        let mut out = vless_outbound(f.addr(), ALICE_UUID);
        if tls {
            out["tls"] = tls_client(&f.cert);
        }
        out["transport"] = grpc_transport("svc");
        let client = SingBox::client(out).await.unwrap();
        let proxy = client.proxy_addr().unwrap();
        let what = format!("sing-box VLESS tls={tls}");
        carry(&f, proxy, &what, || client.log_tail()).await;
        udp(&f, proxy, &what, || client.log_tail()).await;
    }
    let f = node("trojan", "tg", true).await;
    let mut out = trojan_outbound(f.addr(), "alice-password", tls_client(&f.cert));
    out["transport"] = grpc_transport("tg");
    let client = SingBox::client(out).await.unwrap();
    let proxy = client.proxy_addr().unwrap();
    carry(&f, proxy, "sing-box Trojan TLS", || client.log_tail()).await;
    udp(&f, proxy, "sing-box Trojan TLS", || client.log_tail()).await;
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
async fn mihomo_carries_vless_and_trojan_over_grpc_and_tls() {
    let f = node("vless", "svc", true).await;
    let client = mihomo(&format!(
        "  - name: node\n    type: vless\n    server: 127.0.0.1\n    port: {port}\n    uuid: {ALICE_UUID}\n    udp: true\n    network: grpc\n\
         \x20   tls: true\n    servername: node.test\n    skip-cert-verify: true\n\
         \x20   grpc-opts:\n      grpc-service-name: svc\n",
        port = f.port
    ))
    .await;
    carry(&f, client.proxy_addr(), "mihomo VLESS TLS", || {
        client.log_tail()
    })
    .await;
    udp(&f, client.proxy_addr(), "mihomo VLESS TLS", || {
        client.log_tail()
    })
    .await;
    let f = node("trojan", "tg", true).await;
    let client = mihomo(&format!(
        "  - name: node\n    type: trojan\n    server: 127.0.0.1\n    port: {port}\n    password: alice-password\n    udp: true\n    sni: node.test\n    skip-cert-verify: true\n    network: grpc\n\
         \x20   grpc-opts:\n      grpc-service-name: tg\n",
        port = f.port
    ))
    .await;
    carry(&f, client.proxy_addr(), "mihomo Trojan TLS", || {
        client.log_tail()
    })
    .await;
}

/// A TCP relay to `to` that counts the connections it accepts.
async fn counting_proxy(to: SocketAddr) -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let counted = count.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                if let Ok(mut up) = TcpStream::connect(to).await {
                    let _ = tokio::io::copy_bidirectional(&mut s, &mut up).await;
                }
            });
        }
    });
    (addr, count)
}

/// Xray puts every connection on its one HTTP/2 connection and waits at the
/// server's stream cap instead of opening another: 300 connections held open at once
/// (past the old cap of 128) all reach their destination and answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hundred_connections_from_xray_are_open_at_once() {
    let f = node("vless", "svc", true).await;
    let (client, socks) = xray(xray_vless(f.port, xray_stream("svc", false, true))).await;
    hold_open(socks, 300, || client.log_tail()).await;
}

/// Opens `n` connections through the SOCKS5 proxy `socks` to an echo server and holds
/// them all open; each answers once when opened and again when all are.
pub(crate) async fn hold_open(socks: SocketAddr, n: usize, log: impl Fn() -> String) {
    let echo = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let echo_addr = echo.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = echo.accept().await {
            tokio::spawn(async move {
                let mut b = [0u8; 1];
                while let Ok(1) = s.read(&mut b).await {
                    if s.write_all(&b).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    let mut open = Vec::with_capacity(n);
    let all = async {
        for i in 0..n {
            let mut s = switchyard_testkit::socks5::connect(socks, echo_addr).await?;
            s.write_all(&[i as u8]).await?;
            let mut b = [0u8; 1];
            s.read_exact(&mut b).await?;
            anyhow::ensure!(b[0] == i as u8, "connection {i} echoed {}", b[0]);
            open.push(s);
        }
        anyhow::Ok(())
    };
    tokio::time::timeout(Duration::from_secs(60), all)
        .await
        .unwrap_or_else(|_| panic!("stalled at {} of {n}\n{}", open.len(), log()))
        .unwrap_or_else(|e| panic!("{e:#}\n{}", log()));
    for (i, s) in open.iter_mut().enumerate() {
        s.write_all(&[i as u8]).await.unwrap();
        let mut b = [0u8; 1];
        s.read_exact(&mut b).await.unwrap();
        assert_eq!(b[0], i as u8);
    }
}

/// Xray's parallel connections through the proxy are streams of one HTTP/2
/// connection: one TCP connection reaches the node.
#[tokio::test]
async fn parallel_streams_from_xray_share_one_connection() {
    let f = node("vless", "svc", true).await;
    let (relay, count) = counting_proxy(f.addr()).await;
    let (client, socks) = xray(xray_vless(relay.port(), xray_stream("svc", false, true))).await;
    let downloads = (0..6).map(|_| f.http.download_via_socks(socks, 256 * 1024));
    let done = tokio::time::timeout(
        Duration::from_secs(20),
        futures_util::future::join_all(downloads),
    )
    .await
    .unwrap_or_else(|_| panic!("stalled\n{}", client.log_tail()));
    for d in done {
        d.unwrap_or_else(|e| panic!("{e:#}\n{}", client.log_tail()));
    }
    assert_eq!(count.load(Ordering::SeqCst), 1, "{}", client.log_tail());
}

/// Our own transport layer's gRPC client through the inbound, and a wrong service
/// name answered as a gRPC server answers it.
#[tokio::test]
async fn our_dial_layer_carries_vless_and_a_wrong_service_gets_status_12() {
    let f = node("vless", "svc", false).await;
    let stack = Stack::to(
        "127.0.0.1",
        f.port,
        vec![Layer::grpc("node.test".into(), "svc".into(), false)],
    );
    let mut io = stack.connect().await.unwrap();
    io.write_all(&vless_get(ALICE_UUID, f.http.addr(), 100_000))
        .await
        .unwrap();
    let mut response = [0u8; 2];
    io.read_exact(&mut response).await.unwrap();
    assert_eq!(response, [0, 0], "the VLESS response header");
    let got = switchyard_testkit::http::get_bytes_by_length(&mut io, 100_000).await;
    assert!(got.is_ok(), "{got:?}");
    let wrong = Stack::to(
        "127.0.0.1",
        f.port,
        vec![Layer::grpc("node.test".into(), "other".into(), false)],
    );
    let mut io = wrong.connect().await.unwrap();
    let _ = io.write_all(b"x").await;
    let mut buf = [0u8; 8];
    let e = tokio::time::timeout(Duration::from_secs(5), io.read(&mut buf))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(e.to_string(), "grpc-status 12");
}

/// An HTTP/1.1 request (or anything that is not HTTP/2) reaches the fallback site
/// with every byte, and the prober gets its answer byte for byte; in TLS too, where a
/// browser's ALPN `http/1.1` is accepted.
#[tokio::test]
async fn an_http1_prober_gets_the_fallback_site_byte_for_byte() {
    let (site, mut seen) = website().await;
    let f = start(&format!(
        "protocol = \"vless\"\ntransport = {{ type = \"grpc\", service_name = \"svc\" }}\nfallback = \"{site}\""
    ))
    .await;
    let probes: [&[u8]; 3] = [
        b"GET / HTTP/1.1\r\nHost: node.test\r\n\r\n",
        b"POST /svc/Tun HTTP/1.1\r\nHost: node.test\r\nContent-Type: application/grpc\r\n\r\n",
        b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n",
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
}

/// A stream whose VLESS user is unknown gets nothing, not even on a node with a
/// fallback (its bytes are gun messages), and is reset after the hold; the
/// connection's other streams go on.
#[tokio::test]
async fn a_stream_failing_authentication_is_held_then_reset() {
    let (site, mut seen) = website().await;
    let f = start(&format!(
        "protocol = \"vless\"\ntransport = {{ type = \"grpc\", service_name = \"svc\" }}\nfallback = \"{site}\""
    ))
    .await;
    let stack = Stack::to(
        "127.0.0.1",
        f.port,
        vec![Layer::grpc("node.test".into(), "svc".into(), false)],
    );
    let mut bad = stack.connect().await.unwrap();
    bad.write_all(&vless_get(
        "11111111-2222-3333-4444-555555555555",
        f.http.addr(),
        10,
    ))
    .await
    .unwrap();
    let began = tokio::time::Instant::now();
    let mut good = stack.connect().await.unwrap();
    good.write_all(&vless_get(ALICE_UUID, f.http.addr(), 1000))
        .await
        .unwrap();
    let mut response = [0u8; 2];
    good.read_exact(&mut response).await.unwrap();
    assert_eq!(response, [0, 0]);
    let mut got = Vec::new();
    let ended = tokio::time::timeout(Duration::from_secs(10), bad.read_to_end(&mut got))
        .await
        .expect("ended after the hold");
    assert!(got.is_empty(), "{got:?}");
    assert!(ended.is_err(), "reset, not ended cleanly: {ended:?}");
    assert!(
        began.elapsed() >= Duration::from_millis(2500),
        "{:?}",
        began.elapsed()
    );
    assert!(seen.try_recv().is_err(), "nothing reached the fallback");
    let got = switchyard_testkit::http::get_bytes_by_length(&mut good, 1000).await;
    assert!(got.is_ok(), "{got:?}");
}

/// Over TLS a client offering only `http/1.1` gets it, and its request reaches the
/// fallback byte for byte.
#[tokio::test]
async fn an_http1_prober_in_tls_gets_the_fallback_site() {
    use rustls::pki_types::pem::PemObject;
    let (site, mut seen) = website().await;
    let f = start(&format!(
        "protocol = \"trojan\"\ntransport = {{ type = \"grpc\", service_name = \"svc\" }}\n{TLS}\nfallback = \"{site}\""
    ))
    .await;
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(
            rustls::pki_types::CertificateDer::from_pem_slice(f.cert.cert_pem().as_bytes())
                .unwrap(),
        )
        .unwrap();
    let mut config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let tls = Layer::Tls {
        config: Arc::new(config),
        server_name: rustls::pki_types::ServerName::try_from("node.test").unwrap(),
    };
    let mut s = Stack::to("127.0.0.1", f.port, vec![tls])
        .connect()
        .await
        .unwrap();
    let probe = b"GET / HTTP/1.1\r\nHost: node.test\r\n\r\n";
    s.write_all(probe).await.unwrap();
    let mut got = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut got))
        .await
        .expect("answered and closed");
    assert_eq!(got, SITE_ANSWER);
    let sent = tokio::time::timeout(Duration::from_secs(5), seen.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(sent, probe);
}

/// A changed service name rebuilds the inbound: the new name is served, the old one
/// gets `grpc-status: 12`.
#[tokio::test]
async fn changing_the_service_name_rebuilds_the_inbound() {
    let f = node("vless", "old", false).await;
    let first_read = |service: &'static str| {
        let stack = Stack::to(
            "127.0.0.1",
            f.port,
            vec![Layer::grpc("node.test".into(), service.into(), false)],
        );
        let request = vless_get(ALICE_UUID, f.http.addr(), 10);
        async move {
            let mut io = stack.connect().await.unwrap();
            io.write_all(&request).await.unwrap();
            let mut response = [0u8; 2];
            tokio::time::timeout(Duration::from_secs(5), io.read_exact(&mut response))
                .await
                .unwrap()
                .map(|_| response)
        }
    };
    assert_eq!(first_read("old").await.unwrap(), [0, 0]);
    let mut c = f.node.config().await;
    c.inbounds[0].transport = switchyard_node::config::Transport::Grpc {
        service_name: "new".into(),
    };
    f.node.apply(c).await.unwrap();
    // The old listener's socket closes in its own task, just after `apply`: a
    // connection the kernel queued on it in that moment is reset (seen 2 runs in 6).
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(first_read("new").await.unwrap(), [0, 0]);
    let e = first_read("old").await.unwrap_err();
    assert_eq!(e.to_string(), "grpc-status 12");
}

fn grpc_config(protocol: &str, service: &str, security: &str) -> Result<NodeConfig, String> {
    NodeConfig::from_toml(&format!(
        "[[inbounds]]\ntag = \"g\"\nprotocol = \"{protocol}\"\nport = 8443\ntransport = {{ type = \"grpc\", service_name = \"{service}\" }}\n{security}"
    ))
    .map_err(|e| e.to_string())
}

/// Service names are letters, digits, `_`, `.` and `-`, 1-128 of them; gRPC is for
/// VLESS and Trojan, over nothing, TLS or REALITY. Each refusal names the field.
#[test]
fn bad_service_names_and_combinations_are_refused_by_field() {
    assert!(grpc_config("vless", "svc", "").is_ok());
    assert!(grpc_config("trojan", "a.b_c-D9", "").is_ok());
    let long = "a".repeat(129);
    for (name, why) in [
        ("", "must not be empty"),
        ("a/b", "letters, digits"),
        ("a b", "letters, digits"),
        (long.as_str(), "longer than 128"),
    ] {
        let err = grpc_config("vless", name, "").unwrap_err();
        assert!(
            err.contains("inbounds[0].transport.service_name") && err.contains(why),
            "{name}: {err}"
        );
    }
    // SOCKS runs on plain TCP only.
    let err = grpc_config("socks", "svc", "").unwrap_err();
    assert!(err.contains("inbounds[0].transport"), "{err}");
    let reality = "security = { type = \"reality\", private_key = \"dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCo\", short_ids = [\"\"], dest = \"target.test:443\", server_names = [\"target.test\"] }";
    // gRPC runs over REALITY (for VLESS and Trojan); WebSocket does not.
    assert!(grpc_config("vless", "svc", reality).is_ok());
    assert!(grpc_config("trojan", "svc", reality).is_ok());
    let ws = NodeConfig::from_toml(&format!(
        "[[inbounds]]\ntag = \"w\"\nprotocol = \"vless\"\nport = 8443\ntransport = {{ type = \"ws\", path = \"/ws\" }}\n{reality}"
    ))
    .map(|_| ())
    .map_err(|e| e.to_string())
    .unwrap_err();
    assert!(
        ws.contains("inbounds[0].security") && ws.contains("REALITY is served for"),
        "{ws}"
    );
}
