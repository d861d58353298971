//! Pinned TLS over both transports, on loopback.

use crate::link_support as support;

use std::time::Duration;

use rcgen::{CertificateParams, IsCa, Issuer, KeyPair, PKCS_ECDSA_P256_SHA256, date_time_ymd};
use switchyard_tunnel::credentials::certificate_name;
use switchyard_tunnel::link::cert::{issue_with, reissue, server_config};
use switchyard_tunnel::link::handshake::send_hello;
use switchyard_tunnel::link::pin::PinError;
use switchyard_tunnel::link::transport::{Acceptor, ConnectError, connect};
use switchyard_tunnel::link::{IssuedCert, Pin, Transport, issue};
use tokio::net::TcpListener;

use support::*;

const DEADLINE: Duration = Duration::from_secs(10);

/// Serves `cert` on a bare acceptor (no hello) and echoes.
async fn serve_raw(cert: &IssuedCert, transport: Transport) -> std::net::SocketAddr {
    let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = tcp.local_addr().unwrap();
    let acceptor = Acceptor::new(
        server_config(&cert.cert_pem, &cert.key_pem).unwrap(),
        transport,
    );
    tokio::spawn(async move {
        loop {
            let (s, peer) = tcp.accept().await.unwrap();
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                if let Ok(link) = acceptor.handshake(s, peer, DEADLINE).await {
                    let (mut r, mut w) = tokio::io::split(link);
                    let _ = tokio::io::copy(&mut r, &mut w).await;
                }
            });
        }
    });
    addr
}

#[tokio::test]
async fn the_pinned_certificate_connects_over_every_transport() {
    let cert = issue(TUNNEL).unwrap();
    for transport in [Transport::Tls, ws(), httpupgrade()] {
        let addr = serve_raw(&cert, transport.clone()).await;
        for pin in [cert.pin, cert.key_pin] {
            let mut s = connect(&target(addr, pin, transport.clone()), DEADLINE)
                .await
                .unwrap();
            assert_eq!(
                round_trip(&mut s, b"through the link").await,
                b"through the link"
            );
        }
    }
}

#[tokio::test]
async fn another_certificate_for_the_same_name_is_a_pin_mismatch() {
    let pinned = issue(TUNNEL).unwrap();
    let other = issue(TUNNEL).unwrap();
    for transport in [Transport::Tls, ws(), httpupgrade()] {
        let addr = serve_raw(&other, transport.clone()).await;
        for pin in [pinned.pin, pinned.key_pin] {
            let t = target(addr, pin, transport.clone());
            let err = connect(&t, DEADLINE).await.err().unwrap();
            let ConnectError::Pin { error, .. } = &err else {
                panic!("{err}");
            };
            assert!(matches!(error, PinError::Mismatch { expected, .. } if *expected == vec![pin]));
            assert!(err.to_string().contains("pin mismatch"), "{err}");
        }
    }
}

#[tokio::test]
async fn a_key_pin_survives_a_reissue_and_a_certificate_pin_does_not() {
    let first = issue(TUNNEL).unwrap();
    let again = reissue(TUNNEL, &first.key_pem).unwrap();
    let addr = serve_raw(&again, Transport::Tls).await;
    assert!(
        connect(&target(addr, first.key_pin, Transport::Tls), DEADLINE)
            .await
            .is_ok()
    );
    let err = connect(&target(addr, first.pin, Transport::Tls), DEADLINE)
        .await
        .err()
        .unwrap();
    assert!(matches!(err, ConnectError::Pin { .. }), "{err}");
}

#[tokio::test]
async fn an_expired_certificate_with_the_pinned_key_is_refused() {
    let first = issue(TUNNEL).unwrap();
    let key = KeyPair::from_pem(&first.key_pem).unwrap();
    let expired = issue_with(&certificate_name(TUNNEL), key, |p| {
        p.not_before = date_time_ymd(2000, 1, 1);
        p.not_after = date_time_ymd(2001, 1, 1);
    })
    .unwrap();
    assert_eq!(expired.key_pin, first.key_pin);
    let addr = serve_raw(&expired, Transport::Tls).await;
    let err = connect(&target(addr, first.key_pin, Transport::Tls), DEADLINE)
        .await
        .err()
        .unwrap();
    assert!(
        matches!(&err, ConnectError::Tls { reason, .. } if reason.contains("xpired")),
        "{err}"
    );
}

#[tokio::test]
async fn a_ca_signed_certificate_for_the_name_is_refused() {
    let pinned = issue(TUNNEL).unwrap();
    let ca_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let issuer = Issuer::new(ca, ca_key);
    let leaf_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
    let leaf = CertificateParams::new(vec![certificate_name(TUNNEL)])
        .unwrap()
        .signed_by(&leaf_key, &issuer)
        .unwrap();
    let signed = IssuedCert {
        cert_pem: leaf.pem(),
        key_pem: leaf_key.serialize_pem(),
        pin: Pin::of_certificate(leaf.der()),
        key_pin: Pin::of_public_key(leaf.der()).unwrap(),
    };
    let addr = serve_raw(&signed, Transport::Tls).await;
    let err = connect(&target(addr, pinned.pin, Transport::Tls), DEADLINE)
        .await
        .err()
        .unwrap();
    assert!(err.to_string().contains("pin mismatch"), "{err}");
}

#[tokio::test]
async fn a_websocket_on_another_path_is_refused_before_tls() {
    let cert = issue(TUNNEL).unwrap();
    let addr = serve_raw(&cert, ws()).await;
    let wrong = Transport::WebSocket {
        path: "/other".into(),
        host: "cdn.example".into(),
        outer: None,
    };
    let err = connect(&target(addr, cert.pin, wrong), DEADLINE)
        .await
        .err()
        .unwrap();
    assert!(matches!(err, ConnectError::WebSocket { .. }), "{err}");
    let err = connect(&target(addr, cert.pin, Transport::Tls), DEADLINE)
        .await
        .err()
        .unwrap();
    assert!(matches!(err, ConnectError::Tls { .. }), "{err}");
}

#[tokio::test]
async fn an_httpupgrade_on_another_path_is_refused_before_tls() {
    let cert = issue(TUNNEL).unwrap();
    let addr = serve_raw(&cert, httpupgrade()).await;
    let wrong = Transport::HttpUpgrade {
        path: "/other".into(),
        host: "cdn.example".into(),
        outer: None,
    };
    let err = connect(&target(addr, cert.pin, wrong), DEADLINE)
        .await
        .err()
        .unwrap();
    assert!(matches!(err, ConnectError::HttpUpgrade { .. }), "{err}");
    assert!(
        err.to_string().contains("check the profile's path"),
        "{err}"
    );
}

#[tokio::test]
async fn an_outer_tls_to_a_plain_listener_fails_as_the_cdns_tls() {
    let cert = issue(TUNNEL).unwrap();
    let addr = serve_raw(&cert, httpupgrade()).await;
    let behind_a_cdn = Transport::HttpUpgrade {
        path: "/t".into(),
        host: "cdn.example".into(),
        outer: Some(switchyard_tunnel::link::OuterTls::new(
            "cdn.example".into(),
            None,
        )),
    };
    let err = connect(&target(addr, cert.pin, behind_a_cdn), DEADLINE)
        .await
        .err()
        .unwrap();
    assert!(matches!(err, ConnectError::OuterTls { .. }), "{err}");
    assert!(err.to_string().contains("https://"), "{err}");
}

#[tokio::test]
async fn nothing_listening_is_a_refused_tcp_connect() {
    let cert = issue(TUNNEL).unwrap();
    let free = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    let err = connect(&target(free, cert.pin, Transport::Tls), DEADLINE)
        .await
        .err()
        .unwrap();
    assert!(
        matches!(
            err,
            ConnectError::Tcp {
                kind: std::io::ErrorKind::ConnectionRefused,
                ..
            }
        ),
        "{err}"
    );
}

#[tokio::test]
async fn the_hello_rides_the_websocket_profile_end_to_end() {
    let cert = issue(TUNNEL).unwrap();
    let (addr, _listener, mut links) = relay(&cert, ws(), admit(&["fi"])).await;
    let s = connect(&target(addr, cert.pin, ws()), DEADLINE)
        .await
        .unwrap();
    let mut s = send_hello(s, &hello("fi"), DEADLINE).await.unwrap();
    let link = links.recv().await.unwrap();
    assert_eq!(link.origin, "fi");
    echo(link);
    assert_eq!(round_trip(&mut s, &[7; 40_000]).await, vec![7; 40_000]);
}
