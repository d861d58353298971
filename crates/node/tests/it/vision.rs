//! XTLS Vision (`flow = "xtls-rprx-vision"`) on VLESS over REALITY and over TLS,
//! against the real Xray 24.11.21 and mihomo 1.19.2 clients.
//!
//! Each case carries plain HTTP (the padding ends after a few packets and the
//! connection stays in TLS) and HTTPS to a local TLS 1.3 front of the same target
//! (the inner handshake is seen, and the connections switch to direct copy: the
//! node's `switchyard_inbound_vision_direct_{up,down}_total` count it), every byte
//! checked both ways, and UDP, which Vision clients send over XUDP.

use crate::common::{self, control};
use crate::reality_support::*;

use std::net::SocketAddr;
use std::sync::Arc;

use common::*;
use serde_json::json;
use switchyard_testkit::http::{get_bytes, post_sink};
use switchyard_testkit::{Mihomo, TestCert, Xray, free_port, local, socks5};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::timeout;

const BIG: u64 = 8 * 1024 * 1024;

/// How the client reaches the node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Security {
    Reality,
    Tls,
}

/// A node serving VLESS with the Vision flow, over REALITY (in front of `target`)
/// or over TLS with the fixture's certificate; the REALITY public key.
async fn vision_node(security: Security, target: &TargetSite) -> (Fixture, String) {
    let keys = switchyard_node::reality::generate().unwrap();
    let layer = match security {
        Security::Reality => format!(
            r#"security = {{ type = "reality", dest = "{}", server_names = ["target.test"], private_key = "{}", short_ids = ["{SHORT_ID}"], max_time_diff_ms = 60000 }}"#,
            target.addr, keys.private_key
        ),
        Security::Tls => r#"security = { type = "tls", cert = "@CERT@", key = "@KEY@" }"#.into(),
    };
    let inbound = format!("protocol = \"vless\"\nflow = \"xtls-rprx-vision\"\n{layer}");
    (start(&inbound).await, keys.public_key)
}

/// An Xray client of `node` with `flow` ("" for none) and a SOCKS inbound with UDP.
async fn xray(
    security: Security,
    node: SocketAddr,
    public_key: &str,
    flow: &str,
) -> (Xray, SocketAddr) {
    let stream = match security {
        Security::Reality => json!({
            "network": "tcp", "security": "reality",
            "realitySettings": {
                "serverName": "target.test", "fingerprint": "chrome",
                "publicKey": public_key, "shortId": SHORT_ID, "spiderX": "/"
            }
        }),
        Security::Tls => json!({
            "network": "tcp", "security": "tls",
            "tlsSettings": { "serverName": "node.test", "allowInsecure": true, "fingerprint": "chrome" }
        }),
    };
    let config = json!({
        "log": { "loglevel": "info" },
        "inbounds": [{
            "tag": "socks", "protocol": "socks", "listen": "127.0.0.1",
            "port": free_port().unwrap(), "settings": { "udp": true, "ip": "127.0.0.1" }
        }],
        "outbounds": [{
            "tag": "proxy", "protocol": "vless",
            "settings": { "vnext": [{
                "address": node.ip().to_string(), "port": node.port(),
                "users": [{ "id": ALICE_UUID, "encryption": "none", "flow": flow }]
            }]},
            "streamSettings": stream
        }]
    });
    let client = Xray::start(config).await.unwrap();
    let socks = client.inbound_addr("socks").unwrap();
    (client, socks)
}

/// A mihomo client of `node` with `flow` ("" for none); its mixed (SOCKS5) port.
async fn mihomo(security: Security, node: SocketAddr, public_key: &str, flow: &str) -> Mihomo {
    let port = free_port().unwrap();
    let layer = match security {
        Security::Reality => format!(
            "    servername: target.test\n    reality-opts:\n      public-key: {public_key}\n      short-id: \"{SHORT_ID}\"\n"
        ),
        Security::Tls => "    servername: node.test\n    skip-cert-verify: true\n".into(),
    };
    let flow = if flow.is_empty() {
        String::new()
    } else {
        format!("    flow: {flow}\n")
    };
    let config = format!(
        "log-level: info\nmixed-port: {port}\nbind-address: 127.0.0.1\nallow-lan: false\nmode: rule\nipv6: false\n\
         proxies:\n  - name: node\n    type: vless\n    server: {ip}\n    port: {p}\n    uuid: {ALICE_UUID}\n    network: tcp\n    tls: true\n    udp: true\n    packet-encoding: xudp\n    client-fingerprint: chrome\n{flow}{layer}\
         rules:\n  - MATCH,node\n",
        ip = node.ip(),
        p = node.port(),
    );
    Mihomo::start(&config, local(port)).await.unwrap()
}

/// A TLS 1.3 front of the fixture's HTTP target (TLS_AES_128_GCM_SHA256 first, as
/// rustls prefers): HTTPS for the Vision cases, the inner TLS the clients' Vision
/// sees.
struct TlsFront {
    addr: SocketAddr,
    cert: TestCert,
}

impl TlsFront {
    async fn start(to: SocketAddr) -> Self {
        let cert = TestCert::new("inner.test").unwrap();
        let key = switchyard_node::tls::parse(
            cert.cert_pem().as_bytes(),
            cert.key_pem().as_bytes(),
            cert.cert_path(),
            cert.key_path(),
        )
        .unwrap();
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(Fixed(Arc::new(key))));
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(Ok(mut tls)) = timeout(WAIT, acceptor.accept(tcp)).await else {
                        return;
                    };
                    let Ok(mut plain) = TcpStream::connect(to).await else {
                        return;
                    };
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                });
            }
        });
        Self { addr, cert }
    }

    /// A TLS session with the front through the SOCKS5 proxy at `socks`.
    async fn connect(&self, socks: SocketAddr) -> tokio_rustls::client::TlsStream<TcpStream> {
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls_pemfile::certs(&mut self.cert.cert_pem().as_bytes()) {
            roots.add(cert.unwrap()).unwrap();
        }
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
        let tcp = socks5::connect(socks, self.addr).await.unwrap();
        let name = rustls::pki_types::ServerName::try_from("inner.test").unwrap();
        timeout(
            WAIT,
            tokio_rustls::TlsConnector::from(Arc::new(config)).connect(name, tcp),
        )
        .await
        .unwrap()
        .unwrap()
    }
}

#[derive(Debug)]
struct Fixed(Arc<rustls::sign::CertifiedKey>);

impl rustls::server::ResolvesServerCert for Fixed {
    fn resolve(
        &self,
        _hello: rustls::server::ClientHello<'_>,
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        Some(self.0.clone())
    }
}

/// The node's Vision counters: (connections, direct up, direct down).
async fn vision_counts(f: &Fixture) -> (u64, u64, u64) {
    let (_, text) = control::call(f, "GET", "/metrics", None).await;
    let value = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("{name}{{inbound=\"main\"}}")))
            .and_then(|l| l.rsplit(' ').next())
            .map_or(0, |v| v.parse().unwrap())
    };
    (
        value("switchyard_inbound_vision_total"),
        value("switchyard_inbound_vision_direct_up_total"),
        value("switchyard_inbound_vision_direct_down_total"),
    )
}

/// Everything a Vision client must carry through `socks`, checked: plain HTTP both
/// ways (no direct copy), HTTPS both ways (direct copy both ways), UDP.
async fn carries_everything(
    f: &Fixture,
    front: &TlsFront,
    socks: SocketAddr,
    log: impl Fn() -> String,
) {
    let before = vision_counts(f).await;
    let spliced_before = control::spliced(f).await;
    let plain = async {
        f.http.download_via_socks(socks, BIG).await?;
        f.http.upload_via_socks(socks, BIG).await
    };
    if let Err(e) = timeout(WAIT, plain)
        .await
        .unwrap_or_else(|_| Err(anyhow::anyhow!("timed out")))
    {
        panic!("plain HTTP: {e:#}\n{}", log());
    }
    let after_plain = vision_counts(f).await;
    assert!(
        after_plain.0 >= before.0 + 2,
        "{before:?} {after_plain:?}\n{}",
        log()
    );
    assert_eq!(
        (after_plain.1, after_plain.2),
        (before.1, before.2),
        "plain HTTP stays in TLS: no direct copy"
    );
    let tls = async {
        let down = get_bytes(front.connect(socks).await, BIG).await?;
        anyhow::ensure!(down == BIG, "received {down} of {BIG}");
        post_sink(front.connect(socks).await, BIG).await
    };
    if let Err(e) = timeout(WAIT, tls)
        .await
        .unwrap_or_else(|_| Err(anyhow::anyhow!("timed out")))
    {
        panic!("HTTPS through Vision: {e:#}\n{}", log());
    }
    // Both connections went to direct copy on the node's side: the target's first
    // application data after its TLS 1.3 ServerHello starts a write. The client's
    // side switches where one of its writes starts with an application-data record:
    // the upload always does (its body), the download only when the client happens
    // to send its request apart from its Finished (Xray reads them as one buffer or
    // two as they come). A client's last block may still be on its way in when its
    // transfer is done: the counters are read until they settle (or 10 s pass).
    let settled = |c: (u64, u64, u64)| {
        c.0 == after_plain.0 + 2
            && c.2 == after_plain.2 + 2
            && (after_plain.1 + 1..=after_plain.1 + 2).contains(&c.1)
    };
    let mut after_tls = vision_counts(f).await;
    for _ in 0..100 {
        if settled(after_tls) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        after_tls = vision_counts(f).await;
    }
    assert!(
        settled(after_tls),
        "two Vision connections, both direct on the node's side, the upload on the client's: {after_plain:?} -> {after_tls:?}\n{}",
        log()
    );
    // Plain HTTP stayed in TLS; both HTTPS connections went on inside the kernel
    // once direct, the bytes checked above.
    assert_eq!(control::spliced(f).await, spliced_before + 2);
    if let Err(e) = timeout(WAIT, f.udp.check_via_socks(socks, 20, 1200))
        .await
        .unwrap_or_else(|_| Err(anyhow::anyhow!("timed out")))
    {
        panic!("UDP through Vision (XUDP): {e:#}\n{}", log());
    }
}

#[tokio::test]
async fn xray_with_vision_over_reality_carries_http_https_and_udp() {
    let target = TargetSite::start().await;
    let (f, public_key) = vision_node(Security::Reality, &target).await;
    let front = TlsFront::start(f.http.addr()).await;
    let (client, socks) = xray(Security::Reality, f.addr(), &public_key, "xtls-rprx-vision").await;
    carries_everything(&f, &front, socks, || client.log_tail()).await;
    assert_eq!(
        target.hellos(),
        0,
        "the target saw none of Xray's connections"
    );
    let (up, down) = f.alice();
    assert!(
        up >= 2 * BIG && down >= 2 * BIG,
        "alice's bytes, counted once: {up} {down}"
    );
    assert!(
        up < 3 * BIG && down < 3 * BIG,
        "alice's bytes, counted once: {up} {down}"
    );
}

#[tokio::test]
async fn xray_with_vision_over_tls_carries_http_https_and_udp() {
    let target = TargetSite::start().await;
    let (f, _) = vision_node(Security::Tls, &target).await;
    let front = TlsFront::start(f.http.addr()).await;
    let (client, socks) = xray(Security::Tls, f.addr(), "", "xtls-rprx-vision").await;
    carries_everything(&f, &front, socks, || client.log_tail()).await;
}

#[tokio::test]
async fn mihomo_with_vision_over_reality_and_tls_carries_http_https_and_udp() {
    let target = TargetSite::start().await;
    for security in [Security::Reality, Security::Tls] {
        let (f, public_key) = vision_node(security, &target).await;
        let front = TlsFront::start(f.http.addr()).await;
        let client = mihomo(security, f.addr(), &public_key, "xtls-rprx-vision").await;
        carries_everything(&f, &front, client.proxy_addr(), || {
            format!("{security:?}\n{}", client.log_tail())
        })
        .await;
    }
    assert_eq!(
        target.hellos(),
        0,
        "the target saw none of mihomo's connections"
    );
}

#[tokio::test]
async fn xray_and_mihomo_without_vision_over_reality_carry_tcp_and_udp() {
    let target = TargetSite::start().await;
    let (f, key) = start_node(&target, 60_000).await;
    let public_key = key.public_key().encode();
    let (xray, xray_socks) = xray(Security::Reality, f.addr(), &public_key, "").await;
    let mihomo = mihomo(Security::Reality, f.addr(), &public_key, "").await;
    let xray_log = || xray.log_tail();
    let mihomo_log = || mihomo.log_tail();
    let clients: [(&str, SocketAddr, &dyn Fn() -> String); 2] = [
        ("xray", xray_socks, &xray_log),
        ("mihomo", mihomo.proxy_addr(), &mihomo_log),
    ];
    for (name, socks, log) in clients {
        let both = async {
            f.http.download_via_socks(socks, BIG).await?;
            f.udp.check_via_socks(socks, 20, 1200).await
        };
        match timeout(WAIT, both).await {
            Ok(Ok(())) => {}
            other => panic!("{name}: {other:?}\n{}", log()),
        }
    }
    assert_eq!(target.hellos(), 0);
    assert_eq!(vision_counts(&f).await, (0, 0, 0), "no flow, no Vision");
}

#[tokio::test]
async fn an_inbound_whose_flow_is_vision_refuses_tcp_without_it() {
    let target = TargetSite::start().await;
    let (f, public_key) = vision_node(Security::Reality, &target).await;
    let (client, socks) = xray(Security::Reality, f.addr(), &public_key, "").await;
    download_fails(&f, socks, &client).await;
    assert_eq!(f.alice(), (0, 0));
    assert_eq!(vision_counts(&f).await, (0, 0, 0));
}

/// The config's flow is for VLESS over TCP with TLS or REALITY only.
#[test]
fn vision_on_another_inbound_is_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let cert = TestCert::new("node.test").unwrap();
    for inbound in [
        "protocol = \"vless\"\nflow = \"xtls-rprx-vision\"",
        "protocol = \"trojan\"\nflow = \"xtls-rprx-vision\"\nsecurity = { type = \"tls\", cert = \"@CERT@\", key = \"@KEY@\" }",
        "protocol = \"vless\"\nflow = \"xtls-rprx-vision\"\nsecurity = { type = \"tls\", cert = \"@CERT@\", key = \"@KEY@\" }\ntransport = { type = \"ws\", path = \"/x\" }",
    ] {
        let text = config_text(free_port().unwrap(), inbound, &cert, dir.path(), "");
        let e = switchyard_node::NodeConfig::from_toml(&text)
            .unwrap_err()
            .to_string();
        assert!(e.contains("inbounds[0].flow"), "{e}");
        assert!(e.contains("TLS or REALITY"), "{e}");
    }
}
