//! TLS inbounds from inline PEM (as the panel pushes them): served, renewed by a new
//! PEM, redacted on reads; and a pushed config keeps the node's own state directory
//! and control settings.

use crate::common;

use std::sync::Arc;

use axum::http::StatusCode;
use common::control::*;
use common::*;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::json;
use switchyard_node::config::{REDACTED, Security};
use switchyard_testkit::TestCert;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

fn der(cert: &TestCert) -> CertificateDer<'static> {
    rustls_pemfile::certs(&mut cert.cert_pem().as_bytes())
        .next()
        .unwrap()
        .unwrap()
}

/// The certificate the inbound on `port` serves (trusting only `trusted`).
async fn served(port: u16, trusted: &TestCert) -> CertificateDer<'static> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(der(trusted)).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let tls = TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("node.test").unwrap(), tcp)
        .await
        .unwrap();
    tls.get_ref().1.peer_certificates().unwrap()[0]
        .clone()
        .into_owned()
}

#[tokio::test]
async fn an_inline_certificate_serves_renews_and_reads_redacted() {
    let f = start("protocol = \"vless\"").await;
    let first = TestCert::new("node.test").unwrap();
    let mut config = f.node.config().await;
    config.version = 2;
    config.inbounds[0].security = Security::tls_inline(first.cert_pem(), first.key_pem());
    let (code, body) = call(&f, "PUT", "/v1/config", Some(json!(config))).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(served(f.port, &first).await, der(&first));

    // Reads show the certificate, never the key; sent back unfilled it is refused.
    let read = json(&f, "/v1/config").await;
    let security = &read["inbounds"][0]["security"];
    assert_eq!(security["key_pem"], REDACTED);
    assert_eq!(security["cert_pem"], first.cert_pem());
    let (code, body) = call(&f, "PUT", "/v1/config", Some(read)).await;
    assert_eq!(code, StatusCode::BAD_REQUEST);
    assert!(body.contains("inbounds[0].security.key_pem"), "{body}");

    // A new PEM is a renewal: new connections get it.
    let renewed = TestCert::new("node.test").unwrap();
    config.version = 3;
    config.inbounds[0].security = Security::tls_inline(renewed.cert_pem(), renewed.key_pem());
    let (code, body) = call(&f, "PUT", "/v1/config", Some(json!(config))).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(served(f.port, &renewed).await, der(&renewed));

    // A key that is not PEM is refused naming the field; the renewed one serves on.
    config.version = 4;
    config.inbounds[0].security = Security::tls_inline(renewed.cert_pem(), "nope");
    let (code, body) = call(&f, "PUT", "/v1/config", Some(json!(config))).await;
    assert_eq!(code, StatusCode::BAD_REQUEST);
    assert!(body.contains("security.key_pem"), "{body}");
    assert_eq!(served(f.port, &renewed).await, der(&renewed));
}

#[tokio::test]
async fn exactly_one_form_of_tls_is_accepted() {
    let f = start("protocol = \"vless\"").await;
    let mut config = serde_json::to_value(f.node.config().await).unwrap();
    let cert = TestCert::new("node.test").unwrap();
    let cases = [
        (
            json!({"type": "tls", "cert": "c.pem", "key": "k.pem", "cert_pem": cert.cert_pem()}),
            "inbounds[0].security:",
        ),
        (
            json!({"type": "tls", "cert": "c.pem"}),
            "inbounds[0].security.key:",
        ),
        (
            json!({"type": "tls", "key_pem": cert.key_pem()}),
            "inbounds[0].security.cert_pem:",
        ),
        (json!({"type": "tls"}), "inbounds[0].security.cert:"),
    ];
    for (security, field) in cases {
        config["inbounds"][0]["security"] = security.clone();
        let (code, body) = call(&f, "PUT", "/v1/config", Some(config.clone())).await;
        assert_eq!(code, StatusCode::BAD_REQUEST, "{security}");
        assert!(body.contains(field), "{security}: {body}");
    }
}

#[tokio::test]
async fn a_pushed_config_keeps_the_nodes_state_dir_and_control() {
    let f = start("protocol = \"vless\"").await;
    let own = f.node.config().await;
    let mut pushed = serde_json::to_value(&own).unwrap();
    pushed["version"] = json!(7);
    pushed["node"]["state_dir"] = json!("/elsewhere");
    pushed["control"] = json!({"listen": "127.0.0.1:1", "metrics_without_token": true});
    let (code, body) = call(&f, "PUT", "/v1/config", Some(pushed)).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    let now = f.node.config().await;
    assert_eq!(now.version, 7);
    assert_eq!(now.node.state_dir, own.node.state_dir);
    assert_eq!(now.control, own.control);
}
