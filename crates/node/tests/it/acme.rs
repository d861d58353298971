//! A TLS inbound's certificate from an ACME server: Debian's pebble (Let's Encrypt's
//! test server) on 127.0.0.1 validates TLS-ALPN-01 on the inbound's own port, for the
//! identifier 127.0.0.1. The inbound then serves a certificate that chains to
//! pebble's root, and a VLESS client verifying it downloads through the node, every
//! byte checked; a Trojan inbound on another port with the same settings serves the
//! same certificate (one keeper). Restarted, the node serves the kept certificate at
//! once (no new order: the same certificate); changing the inbound to files stops
//! the keeper, and its files stay in the state directory, 0600.

use crate::common;

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;

use common::*;
use rustls::pki_types::CertificateDer;
use switchyard_node::{Node, NodeConfig};
use switchyard_testkit::pebble::Pebble;
use switchyard_testkit::{HttpTarget, free_port, pattern};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

type Tls = tokio_rustls::client::TlsStream<tokio::net::TcpStream>;

fn served(s: &Tls) -> CertificateDer<'static> {
    switchyard_testkit::cert::served(s).unwrap()
}

/// `n` bytes from the target through VLESS on `s`, every byte checked.
async fn vless_download(mut s: Tls, target: SocketAddr, n: u64) {
    s.write_all(&vless_get(ALICE_UUID, target, n))
        .await
        .unwrap();
    let mut head = Vec::new();
    // The VLESS response header (version, no addons), then the HTTP head.
    let mut two = [0u8; 2];
    s.read_exact(&mut two).await.unwrap();
    assert_eq!(two, [0, 0]);
    while !head.ends_with(b"\r\n\r\n") {
        head.push(s.read_u8().await.unwrap());
    }
    let mut body = Vec::new();
    s.read_to_end(&mut body).await.unwrap();
    assert_eq!(body.len() as u64, n);
    assert_eq!(pattern::first_mismatch(0, &body), None);
}

fn config(dir: &std::path::Path, port: u16, trojan_port: u16, pebble: &Pebble) -> NodeConfig {
    let acme = format!(
        "acme = {{ identifiers = [\"127.0.0.1\"], directory = \"{}\", directory_root = \"{}\" }}",
        pebble.directory(),
        pebble.directory_root().display()
    );
    let inbound = format!("protocol = \"vless\"\nsecurity = {{ type = \"tls\", {acme} }}");
    let trojan = format!(
        "[[inbounds]]\ntag = \"trojan\"\nlisten = \"127.0.0.1\"\nport = {trojan_port}\nprotocol = \"trojan\"\nsecurity = {{ type = \"tls\", {acme} }}\n"
    );
    let cert = switchyard_testkit::TestCert::new("unused.test").unwrap();
    let text = config_text(port, &inbound, &cert, dir, &trojan);
    NodeConfig::from_toml(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_inbound_gets_its_certificate_by_acme_serves_it_and_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let (port, trojan_port) = (free_port().unwrap(), free_port().unwrap());
    let pebble = Pebble::start(port).await.unwrap();
    let target = HttpTarget::start().await.unwrap();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));

    let node = Node::start(config(dir.path(), port, trojan_port, &pebble))
        .await
        .unwrap();
    let s = pebble.verified(addr, "127.0.0.1").await.unwrap();
    let issued = served(&s);
    vless_download(s, target.addr(), 1 << 20).await;
    // The Trojan inbound shares the keeper: the same certificate, verified.
    let t = pebble
        .verified(SocketAddr::from(([127, 0, 0, 1], trojan_port)), "127.0.0.1")
        .await
        .unwrap();
    assert_eq!(served(&t), issued, "one certificate for both inbounds");
    drop(t);

    // Kept in the state directory, private.
    let acme_dir = std::fs::read_dir(dir.path().join("acme"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect::<Vec<_>>();
    assert_eq!(acme_dir.len(), 1, "one certificate directory: {acme_dir:?}");
    let kept = &acme_dir[0];
    assert_eq!(
        std::fs::metadata(kept).unwrap().permissions().mode() & 0o777,
        0o700
    );
    for file in ["cert.pem", "key.pem", "account.json"] {
        let mode = std::fs::metadata(kept.join(file))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{file}");
    }

    // Restarted: the kept certificate at once, no new order.
    node.shutdown().await;
    drop(node);
    let node = Node::start(config(dir.path(), port, trojan_port, &pebble))
        .await
        .unwrap();
    let s = pebble.verified(addr, "127.0.0.1").await.unwrap();
    assert_eq!(served(&s), issued, "the kept certificate, not a new one");
    vless_download(s, target.addr(), 64 << 10).await;

    // Files instead: the keeper stops, the files are served.
    let files = switchyard_testkit::TestCert::new("127.0.0.1").unwrap();
    let mut c = node.config().await;
    c.version = 2;
    c.inbounds[0].security =
        switchyard_node::config::Security::tls_files(files.cert_path(), files.key_path());
    node.apply(c).await.unwrap();
    let s = switchyard_testkit::cert::connect_trusting(addr, "127.0.0.1", &[&files])
        .await
        .unwrap();
    assert_eq!(served(&s), files.der().unwrap());
    node.shutdown().await;
}
