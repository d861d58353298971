//! What the REALITY tests share: the local HTTPS target site, a node serving VLESS
//! over REALITY in front of it, Xray clients of it, a TLS probe, crafted and recorded
//! ClientHellos and who answers them.
#![allow(dead_code, unreachable_pub)]

use crate::common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use common::*;
use rustls::server::{ClientHello as RustlsHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use serde_json::json;
use switchyard_proto::client_hello::{self, X25519};
use switchyard_proto::reality::{self, AuthKey, ClientAuth, ClientVersion, PrivateKey, ShortId};
use switchyard_testkit::{TestCert, Xray, free_port};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::timeout;

pub const DOWN: u64 = 4 * 1024 * 1024;
pub const WAIT: Duration = Duration::from_secs(30);
pub const PAGE: &str = "<html>the target site</html>";
pub const SHORT_ID: &str = "0123abcd";
pub const NODE_SUITE: u16 = 0x1301;
pub const TARGET_SUITE: u16 = 0x1303;

/// The local HTTPS "target site".
pub struct TargetSite {
    pub addr: SocketAddr,
    pub cert: TestCert,
    /// ClientHellos it has read.
    hellos: Arc<AtomicU64>,
}

#[derive(Debug)]
pub struct Counting {
    key: Arc<CertifiedKey>,
    hellos: Arc<AtomicU64>,
}

impl ResolvesServerCert for Counting {
    fn resolve(&self, _hello: RustlsHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.hellos.fetch_add(1, Ordering::SeqCst);
        Some(self.key.clone())
    }
}

impl TargetSite {
    pub async fn start() -> Self {
        let cert = TestCert::new("target.test").unwrap();
        let key = switchyard_node::tls::parse(
            cert.cert_pem().as_bytes(),
            cert.key_pem().as_bytes(),
            cert.cert_path(),
            cert.key_path(),
        )
        .unwrap();
        let hellos = Arc::new(AtomicU64::new(0));
        let mut provider = rustls::crypto::ring::default_provider();
        provider.cipher_suites =
            vec![rustls::crypto::ring::cipher_suite::TLS13_CHACHA20_POLY1305_SHA256];
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(provider))
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(Counting {
                key: Arc::new(key),
                hellos: hellos.clone(),
            }));
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
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 8192 {
                        match timeout(WAIT, tls.read(&mut buf)).await {
                            Ok(Ok(n)) if n > 0 => head.extend_from_slice(&buf[..n]),
                            _ => return,
                        }
                    }
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{PAGE}",
                        PAGE.len()
                    );
                    let _ = tls.write_all(answer.as_bytes()).await;
                    let _ = tls.shutdown().await;
                });
            }
        });
        Self { addr, cert, hellos }
    }

    pub fn hellos(&self) -> u64 {
        self.hellos.load(Ordering::SeqCst)
    }
}

/// A node serving VLESS over REALITY with `target` as `dest`, and its keys.
pub async fn start_node(target: &TargetSite, max_time_diff_ms: u64) -> (Fixture, PrivateKey) {
    let keys = switchyard_node::reality::generate().unwrap();
    let inbound = format!(
        r#"protocol = "vless"
security = {{ type = "reality", dest = "{}", server_names = ["target.test"], private_key = "{}", short_ids = ["", "{SHORT_ID}"], max_time_diff_ms = {max_time_diff_ms} }}"#,
        target.addr, keys.private_key
    );
    let f = start(&inbound).await;
    (f, PrivateKey::parse(&keys.private_key).unwrap())
}

/// An Xray client of the node at `server` with a SOCKS inbound.
pub async fn xray(server: SocketAddr, public_key: &str, short_id: &str) -> (Xray, SocketAddr) {
    xray_as(server, public_key, short_id, "chrome").await
}

/// The same, with the uTLS `fingerprint` given.
pub async fn xray_as(
    server: SocketAddr,
    public_key: &str,
    short_id: &str,
    fingerprint: &str,
) -> (Xray, SocketAddr) {
    let config = json!({
        "log": { "loglevel": "info" },
        "inbounds": [{
            "tag": "socks", "protocol": "socks", "listen": "127.0.0.1",
            "port": free_port().unwrap(), "settings": { "udp": false }
        }],
        "outbounds": [{
            "tag": "proxy", "protocol": "vless",
            "settings": { "vnext": [{
                "address": server.ip().to_string(), "port": server.port(),
                "users": [{ "id": ALICE_UUID, "encryption": "none", "flow": "" }]
            }]},
            "streamSettings": {
                "network": "tcp", "security": "reality",
                "realitySettings": {
                    "serverName": "target.test", "fingerprint": fingerprint,
                    "publicKey": public_key, "shortId": short_id, "spiderX": "/"
                }
            }
        }]
    });
    let client = Xray::start(config).await.unwrap();
    let socks = client.inbound_addr("socks").unwrap();
    (client, socks)
}

/// Downloads [`DOWN`] bytes through `socks`, every byte checked.
pub async fn download(f: &Fixture, socks: SocketAddr, client: &Xray) {
    match timeout(WAIT, f.http.download_via_socks(socks, DOWN)).await {
        Ok(Ok(())) => {}
        other => panic!("{other:?}\n{}", client.log_tail()),
    }
}

/// A download through `socks` fails (the node spliced the client to the target).
pub async fn download_fails(f: &Fixture, socks: SocketAddr, client: &Xray) {
    let got = timeout(WAIT, f.http.download_via_socks(socks, 1024)).await;
    assert!(matches!(got, Ok(Err(_))), "{got:?}\n{}", client.log_tail());
}

/// A rustls client trusting only the target's certificate.
pub fn probe_connector(target: &TargetSite) -> tokio_rustls::TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut target.cert.cert_pem().as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

/// The cipher suite of the ServerHello at the start of what `s` answers.
pub async fn server_hello_suite(s: &mut TcpStream) -> Option<u16> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while got.len() < 5 + 4 + 2 + 32 + 1 + 32 + 2 {
        match timeout(WAIT, s.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => got.extend_from_slice(&buf[..n]),
            _ => break,
        }
    }
    if got.len() < 44 || got[0] != 22 || got[5] != 2 {
        return None;
    }
    let id_len = usize::from(got[43]);
    let at = 44 + id_len;
    Some(u16::from_be_bytes([*got.get(at)?, *got.get(at + 1)?]))
}

pub fn vec16(out: &mut Vec<u8>, body: &[u8]) {
    out.extend_from_slice(&(body.len() as u16).to_be_bytes());
    out.extend_from_slice(body);
}

/// A ClientHello record sealed as Xray's client seals it, for `server` and at
/// `unix_time`, with a fresh X25519 share.
pub fn crafted_hello(server: &PrivateKey, unix_time: u32) -> Vec<u8> {
    let client = PrivateKey::from_random(std::array::from_fn(|i| i as u8 ^ 0x5a));
    let random: [u8; 32] = std::array::from_fn(|i| (i as u8).wrapping_mul(7) ^ unix_time as u8);
    let suites = [NODE_SUITE, TARGET_SUITE];
    let mut body = vec![3, 3];
    body.extend_from_slice(&random);
    body.push(32);
    body.extend_from_slice(&[0; 32]);
    vec16(
        &mut body,
        &suites
            .iter()
            .flat_map(|s| s.to_be_bytes())
            .collect::<Vec<u8>>(),
    );
    body.extend_from_slice(&[1, 0]);
    let mut ext = Vec::new();
    let mut entry = vec![0];
    vec16(&mut entry, b"target.test");
    let mut list = Vec::new();
    vec16(&mut list, &entry);
    let share = client.public_key().0;
    let mut shares = X25519.to_be_bytes().to_vec();
    vec16(&mut shares, &share);
    let mut key_share = Vec::new();
    vec16(&mut key_share, &shares);
    let extensions: [(u16, Vec<u8>); 5] = [
        (0, list),
        (10, vec![0, 2, 0, 0x1d]), // supported_groups
        (13, vec![0, 6, 0x08, 0x07, 0x04, 0x03, 0x08, 0x04]), // signature_algorithms
        (43, vec![2, 3, 4]),       // supported_versions: 1.3
        (51, key_share),
    ];
    for (kind, data) in extensions {
        ext.extend_from_slice(&kind.to_be_bytes());
        vec16(&mut ext, &data);
    }
    vec16(&mut body, &ext);
    let mut message = vec![1];
    message.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
    message.extend_from_slice(&body);
    let shared = client.agree(&server.public_key().0).unwrap();
    let auth = ClientAuth {
        version: ClientVersion([24, 11, 21]),
        unix_time,
        short_id: ShortId::parse(SHORT_ID).unwrap(),
    };
    let key = AuthKey::derive(&shared, &random);
    assert!(reality::seal(&mut message, &random, &suites, &key, &auth));
    let mut record = vec![22, 3, 1];
    vec16(&mut record, &message);
    record
}

/// Who answers `hello`: the ServerHello's cipher suite.
pub async fn answer_to(node: SocketAddr, hello: &[u8]) -> Option<u16> {
    let mut s = TcpStream::connect(node).await.unwrap();
    s.write_all(hello).await.unwrap();
    server_hello_suite(&mut s).await
}

pub fn unix_now() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as u32
}

/// A TCP proxy to `to` that keeps the first ClientHello a client sends and the
/// ServerHello's cipher suite it got.
pub async fn recording_proxy(to: SocketAddr) -> (SocketAddr, Arc<std::sync::Mutex<Vec<u8>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let kept = Arc::new(std::sync::Mutex::new(Vec::new()));
    let hello = kept.clone();
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            let hello = hello.clone();
            tokio::spawn(async move {
                let mut server = TcpStream::connect(to).await.unwrap();
                let mut read = Vec::new();
                let mut buf = [0u8; 4096];
                // The hello first, kept whole; then plain copying.
                loop {
                    let Ok(Ok(n)) = timeout(WAIT, client.read(&mut buf)).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    read.extend_from_slice(&buf[..n]);
                    if let Ok(Some((_, used))) = client_hello::parse(&read) {
                        let mut kept = hello.lock().unwrap();
                        if kept.is_empty() {
                            kept.extend_from_slice(&read[..used]);
                        }
                        break;
                    }
                }
                if server.write_all(&read).await.is_err() {
                    return;
                }
                let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
            });
        }
    });
    (addr, kept)
}
