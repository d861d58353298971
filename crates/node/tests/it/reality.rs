//! VLESS over REALITY (no flow) against the real Xray client (24.11.21, as `nobody`),
//! and the probes that must see the target site instead: a plain TLS client, an HTTPS
//! GET, Xray with a wrong short id or public key, a replayed ClientHello and hellos
//! whose clock is off.
//!
//! The target site is a local HTTPS server for `target.test` that speaks TLS 1.3 with
//! TLS_CHACHA20_POLY1305_SHA256 only, while the node answers a REALITY client (whose
//! hello lists TLS_AES_128_GCM_SHA256 first) with that suite: the cipher suite of the
//! ServerHello a probe gets says who answered, the node or the site
//! ([`reality_support`](crate::reality_support)).

use crate::common;
use crate::reality_support::*;

use common::*;
use rustls::pki_types::{CertificateDer, ServerName};
use switchyard_node::config::Security;
use switchyard_proto::client_hello;
use switchyard_proto::reality::PrivateKey;
use switchyard_testkit::{TestCert, free_port};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

#[tokio::test]
async fn xray_carries_vless_over_reality_byte_for_byte() {
    let target = TargetSite::start().await;
    let (f, key) = start_node(&target, 60_000).await;
    let (client, socks) = xray(f.addr(), &key.public_key().encode(), SHORT_ID).await;
    download(&f, socks, &client).await;
    let parallel = (0..4).map(|_| download(&f, socks, &client));
    futures_util::future::join_all(parallel).await;
    assert!(f.alice().1 >= 5 * DOWN, "alice's down {:?}", f.alice());
    assert_eq!(
        target.hellos(),
        0,
        "the target saw none of Xray's connections"
    );
    // The empty short id is a configured one too.
    let (client, socks) = xray(f.addr(), &key.public_key().encode(), "").await;
    download(&f, socks, &client).await;
}

#[tokio::test]
async fn every_browser_fingerprint_of_xray_is_served() {
    let target = TargetSite::start().await;
    let (f, key) = start_node(&target, 60_000).await;
    // Not `android` nor `360`: those fingerprints (Android 11, 360 Browser 7.5) have no
    // TLS 1.3, so Xray refuses to use them for REALITY, with any server.
    for fingerprint in ["firefox", "safari", "ios", "edge", "qq"] {
        let (client, socks) =
            xray_as(f.addr(), &key.public_key().encode(), SHORT_ID, fingerprint).await;
        match timeout(WAIT, f.http.download_via_socks(socks, 64 * 1024)).await {
            Ok(Ok(())) => {}
            other => panic!("{fingerprint}: {other:?}\n{}", client.log_tail()),
        }
    }
    assert_eq!(target.hellos(), 0);
}

#[tokio::test]
async fn xray_with_a_wrong_short_id_or_public_key_reaches_the_target() {
    let target = TargetSite::start().await;
    let (f, key) = start_node(&target, 60_000).await;
    let (client, socks) = xray(f.addr(), &key.public_key().encode(), "ffff").await;
    download_fails(&f, socks, &client).await;
    assert!(
        target.hellos() >= 1,
        "the target answered the wrong short id"
    );
    let before = target.hellos();
    let other = PrivateKey::from_random([7; 32]).public_key().encode();
    let (client, socks) = xray(f.addr(), &other, SHORT_ID).await;
    download_fails(&f, socks, &client).await;
    assert!(
        target.hellos() > before,
        "the target answered the wrong key"
    );
    assert_eq!(f.alice(), (0, 0));
}

#[tokio::test]
async fn a_tls_client_and_an_https_get_see_the_target_site() {
    let target = TargetSite::start().await;
    let (f, _) = start_node(&target, 60_000).await;
    let connector = probe_connector(&target);
    let name = ServerName::try_from("target.test").unwrap();
    let tcp = TcpStream::connect(f.addr()).await.unwrap();
    let mut tls = timeout(WAIT, connector.connect(name, tcp))
        .await
        .unwrap()
        .expect("the target's certificate verifies for target.test");
    let (_, session) = tls.get_ref();
    let seen: &CertificateDer<'_> = &session.peer_certificates().unwrap()[0];
    let target_der = rustls_pemfile::certs(&mut target.cert.cert_pem().as_bytes())
        .next()
        .unwrap()
        .unwrap();
    assert_eq!(seen, &target_der, "the prober got the target's certificate");
    tls.write_all(b"GET / HTTP/1.1\r\nHost: target.test\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut page = Vec::new();
    let _ = timeout(WAIT, tls.read_to_end(&mut page)).await.unwrap();
    let page = String::from_utf8_lossy(&page);
    assert!(
        page.starts_with("HTTP/1.1 200 OK") && page.ends_with(PAGE),
        "{page}"
    );
    // Not TLS at all: spliced too, byte for byte (the site answers it with an alert).
    let mut raw = TcpStream::connect(f.addr()).await.unwrap();
    raw.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
    let mut got = Vec::new();
    let _ = timeout(WAIT, raw.read_to_end(&mut got)).await.unwrap();
    assert_eq!(got.first(), Some(&21), "a TLS alert from the site: {got:?}");
    // Both went to the site inside the kernel.
    assert_eq!(control::spliced(&f).await, 2);
}

#[tokio::test]
async fn a_hello_whose_clock_is_off_reaches_the_target_and_a_replay_too() {
    let target = TargetSite::start().await;
    let (f, key) = start_node(&target, 5_000).await;
    let now = unix_now();
    let fresh = crafted_hello(&key, now);
    assert_eq!(
        answer_to(f.addr(), &fresh).await,
        Some(NODE_SUITE),
        "accepted: the node answers"
    );
    assert_eq!(target.hellos(), 0);
    assert_eq!(
        answer_to(f.addr(), &fresh).await,
        Some(TARGET_SUITE),
        "the same hello again: the target answers"
    );
    assert_eq!(target.hellos(), 1);
    for skewed in [now - 60, now + 60] {
        assert_eq!(
            answer_to(f.addr(), &crafted_hello(&key, skewed)).await,
            Some(TARGET_SUITE)
        );
    }
    assert_eq!(target.hellos(), 3);
    let unchecked = {
        let mut c = f.node.config().await;
        let Security::Reality {
            max_time_diff_ms, ..
        } = &mut c.inbounds[0].security
        else {
            unreachable!()
        };
        *max_time_diff_ms = 0;
        c
    };
    f.node.apply(unchecked).await.unwrap();
    assert_eq!(
        answer_to(f.addr(), &crafted_hello(&key, now - 3600)).await,
        Some(NODE_SUITE),
        "a live change to an unchecked clock accepts it"
    );
    assert_eq!(
        answer_to(f.addr(), &fresh).await,
        Some(TARGET_SUITE),
        "the rebuilt inbound still refuses the replay"
    );
}

#[tokio::test]
async fn a_replayed_xray_hello_reaches_the_target() {
    let target = TargetSite::start().await;
    let (f, key) = start_node(&target, 60_000).await;
    let (proxy, kept) = recording_proxy(f.addr()).await;
    let (client, socks) = xray(proxy, &key.public_key().encode(), SHORT_ID).await;
    download(&f, socks, &client).await;
    assert_eq!(target.hellos(), 0);
    let hello = kept.lock().unwrap().clone();
    let (parsed, _) = client_hello::parse(&hello).unwrap().unwrap();
    assert_eq!(parsed.server_name.as_deref(), Some("target.test"));
    let suite = answer_to(f.addr(), &hello).await;
    assert_eq!(
        suite,
        Some(TARGET_SUITE),
        "the replay is answered by the target"
    );
    assert_eq!(target.hellos(), 1);
}

#[test]
fn reality_config_names_the_bad_field_and_its_key_is_redacted() {
    use switchyard_node::{ConfigError, NodeConfig};
    let dir = tempfile::tempdir().unwrap();
    let cert = TestCert::new("node.test").unwrap();
    let key = "dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCo";
    let text = |protocol: &str, security: &str| {
        let inbound =
            format!("protocol = \"{protocol}\"\nsecurity = {{ type = \"reality\", {security} }}");
        config_text(free_port().unwrap(), &inbound, &cert, dir.path(), "")
    };
    let good = format!(
        r#"dest = "target.test:443", server_names = ["target.test"], private_key = "{key}", short_ids = [""]"#
    );
    let config = NodeConfig::from_toml(&text("vless", &good)).unwrap();
    let read = serde_json::to_value(config.redacted()).unwrap();
    assert_eq!(read["inbounds"][0]["security"]["private_key"], "<redacted>");
    assert!(!format!("{config:?}").contains(key));
    let cases = [
        ("trojan", good.clone(), "inbounds[0].security"),
        (
            "vless",
            good.replace("target.test:443", "target.test"),
            "inbounds[0].security.dest",
        ),
        (
            "vless",
            good.replace("target.test:443", "[::1:443"),
            "inbounds[0].security.dest",
        ),
        (
            "vless",
            good.replace(r#"server_names = ["target.test"]"#, "server_names = []"),
            "inbounds[0].security.server_names",
        ),
        (
            "vless",
            good.replace(key, "c2hvcnQ"),
            "inbounds[0].security.private_key",
        ),
        (
            "vless",
            good.replace(r#"short_ids = [""]"#, "short_ids = []"),
            "inbounds[0].security.short_ids",
        ),
        (
            "vless",
            good.replace(r#"short_ids = [""]"#, r#"short_ids = ["", "abc"]"#),
            "inbounds[0].security.short_ids[1]",
        ),
        (
            "vless",
            format!(r#"{good}, min_client_version = "25.1.0", max_client_version = "24.11.21""#),
            "inbounds[0].security.max_client_version",
        ),
        (
            "vless",
            format!(r#"{good}, min_client_version = "1.2.3.4""#),
            "inbounds[0].security.min_client_version",
        ),
    ];
    for (protocol, security, field) in cases {
        match NodeConfig::from_toml(&text(protocol, &security)) {
            Err(ConfigError::Invalid {
                field: got,
                problem,
            }) => {
                assert_eq!(got, field, "{problem}");
                assert!(!problem.contains("c2hvcnQ"), "{problem}");
            }
            other => panic!("{security}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn xray_derives_the_same_public_key_from_a_generated_private_key() {
    let keys = switchyard_node::reality::generate().unwrap();
    let out = tokio::process::Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .arg(switchyard_testkit::xray::binary().unwrap())
        .args(["x25519", "-i", &keys.private_key])
        .output()
        .await
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!("Public key: {}", keys.public_key)),
        "{said}"
    );
}
