//! REALITY for tunnel links: our client against our server on 127.0.0.1, and what
//! everyone else gets (the target site, byte for byte): a plain TLS client, our
//! client with another server's key or a short id the server does not know, and a
//! replayed hello.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustls::pki_types::ServerName;
use switchyard_proto::client_hello;
use switchyard_proto::reality::{Policy, PrivateKey, ReplayFilter, SealForm, ShortId};
use switchyard_transport::reality::{Accepted, ClientSettings, ServerSettings, accept, connect};
use switchyard_tunnel::link::cert::{issue, server_config};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::timeout;

const WAIT: Duration = Duration::from_secs(10);
const SITE: &str = "site.test";
const PAGE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nsite";

fn now() -> (u32, i64) {
    let d = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    (d.as_secs() as u32, d.as_millis() as i64)
}

fn short_id() -> ShortId {
    ShortId::parse("a1b2c3d4").unwrap()
}

/// The target site: TLS 1.3 for `site.test` with its own certificate, answering one
/// page; its certificate's DER.
async fn site() -> (SocketAddr, Vec<u8>) {
    let cert = issue(SITE).unwrap();
    let config = server_config(&cert.cert_pem, &cert.key_pem).unwrap();
    let der = rustls_pemfile::certs(&mut cert.cert_pem.as_bytes())
        .next()
        .unwrap()
        .unwrap()
        .to_vec();
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                if let Ok(mut tls) = acceptor.accept(tcp).await {
                    let mut buf = [0u8; 256];
                    let _ = tls.read(&mut buf).await;
                    let _ = tls.write_all(PAGE).await;
                    let _ = tls.shutdown().await;
                }
            });
        }
    });
    (addr, der)
}

/// A REALITY server in front of `dest`: every connection's outcome goes to the
/// channel; accepted sessions echo.
async fn server(key: &PrivateKey, dest: SocketAddr) -> (SocketAddr, mpsc::Receiver<String>) {
    let settings = Arc::new(ServerSettings {
        key: PrivateKey::parse(&key.encode()).unwrap(),
        policy: Policy {
            server_names: HashSet::from([SITE.to_owned()]),
            short_ids: HashSet::from([short_id()]),
            max_time_diff_ms: 60_000,
            min_client_version: None,
            max_client_version: None,
        },
        dest: dest.to_string(),
        // The test's site is on 127.0.0.1: allowed here, explicitly.
        site: switchyard_transport::reality::SiteDialer::checked(true),
        replay: Arc::new(Mutex::new(ReplayFilter::new(60_000, now().1))),
    });
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (settings, tx) = (settings.clone(), tx.clone());
            tokio::spawn(async move {
                match accept(tcp, &settings, now().1).await {
                    Ok(Accepted::Tls(mut tls)) => {
                        let _ = tx.send("tls".into()).await;
                        let (mut r, mut w) = tokio::io::split(&mut *tls);
                        let _ = tokio::io::copy(&mut r, &mut w).await;
                        let _ = w.shutdown().await;
                    }
                    Ok(Accepted::Spliced(why)) => {
                        let _ = tx.send(format!("spliced: {why}")).await;
                    }
                    Err(e) => {
                        let _ = tx.send(format!("error: {e}")).await;
                    }
                }
            });
        }
    });
    (addr, rx)
}

fn settings(public_key: &PrivateKey, short_id: ShortId) -> ClientSettings {
    ClientSettings {
        server_name: SITE.into(),
        public_key: public_key.public_key(),
        short_id,
    }
}

#[tokio::test]
async fn our_client_gets_a_session_and_carries_bytes_both_ways() {
    let (dest, _) = site().await;
    let key = PrivateKey::from_random([3; 32]);
    let (addr, mut outcomes) = server(&key, dest).await;
    let tcp = TcpStream::connect(addr).await.unwrap();
    let mut tls = timeout(WAIT, connect(tcp, &settings(&key, short_id()), now().0))
        .await
        .unwrap()
        .expect("the REALITY handshake");
    assert_eq!(outcomes.recv().await.unwrap(), "tls");
    let data: Vec<u8> = (0..2 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    let (mut r, mut w) = tokio::io::split(&mut tls);
    let send = async {
        w.write_all(&data).await.unwrap();
        w.shutdown().await.unwrap();
    };
    let mut back = Vec::new();
    let receive = r.read_to_end(&mut back);
    let (_, got) = timeout(WAIT, async { tokio::join!(send, receive) })
        .await
        .unwrap();
    got.unwrap();
    assert_eq!(back, data, "echoed byte for byte");
}

#[tokio::test]
async fn the_hello_on_the_wire_carries_the_seal_rustls_was_given() {
    // A relay between client and server keeps the hello: its session id opens in
    // the tunnel form with the auth key of its own random and share.
    let (dest, _) = site().await;
    let key = PrivateKey::from_random([4; 32]);
    let (addr, mut outcomes) = server(&key, dest).await;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let front = listener.local_addr().unwrap();
    let kept = Arc::new(Mutex::new(Vec::new()));
    let keep = kept.clone();
    tokio::spawn(async move {
        let (mut client, _) = listener.accept().await.unwrap();
        let mut server = TcpStream::connect(addr).await.unwrap();
        let mut buf = vec![0u8; 4096];
        let n = client.read(&mut buf).await.unwrap();
        keep.lock().unwrap().extend_from_slice(&buf[..n]);
        server.write_all(&buf[..n]).await.unwrap();
        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
    });
    let tcp = TcpStream::connect(front).await.unwrap();
    timeout(WAIT, connect(tcp, &settings(&key, short_id()), now().0))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(outcomes.recv().await.unwrap(), "tls");
    let bytes = kept.lock().unwrap().clone();
    let (hello, _) = client_hello::parse(&bytes).unwrap().unwrap();
    assert_eq!(hello.session_id.len(), 32);
    assert_eq!(hello.server_name.as_deref(), Some(SITE));
    let policy = Policy {
        server_names: HashSet::from([SITE.to_owned()]),
        short_ids: HashSet::from([short_id()]),
        max_time_diff_ms: 0,
        min_client_version: None,
        max_client_version: None,
    };
    let (_, auth) = switchyard_proto::reality::authenticate_with(
        &policy,
        &key,
        &hello,
        now().1,
        SealForm::Tunnel,
    )
    .unwrap();
    assert_eq!(auth.short_id, short_id());
    assert!(
        switchyard_proto::reality::authenticate(&policy, &key, &hello, now().1).is_err(),
        "not Xray's seal: an Xray server would splice it"
    );
}

/// A plain TLS client of the target, through `addr`: the certificate it was shown.
async fn probe(addr: SocketAddr) -> Vec<u8> {
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .dangerous()
    .with_custom_certificate_verifier(Arc::new(AcceptAny))
    .with_no_client_auth();
    let tcp = TcpStream::connect(addr).await.unwrap();
    let mut tls = timeout(
        WAIT,
        tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(ServerName::try_from(SITE).unwrap(), tcp),
    )
    .await
    .unwrap()
    .unwrap();
    tls.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
    let mut page = Vec::new();
    let _ = timeout(WAIT, tls.read_to_end(&mut page)).await;
    assert_eq!(page, PAGE, "the target's page");
    tls.get_ref().1.peer_certificates().unwrap()[0].to_vec()
}

#[tokio::test]
async fn a_prober_and_our_client_with_the_wrong_key_or_short_id_get_the_target() {
    let (dest, site_der) = site().await;
    let key = PrivateKey::from_random([5; 32]);
    let (addr, mut outcomes) = server(&key, dest).await;
    assert_eq!(probe(addr).await, site_der, "the target's own certificate");
    assert!(outcomes.recv().await.unwrap().starts_with("spliced"));
    let other = PrivateKey::from_random([6; 32]);
    for (key, sid) in [(&other, short_id()), (&key, ShortId::parse("ff").unwrap())] {
        let tcp = TcpStream::connect(addr).await.unwrap();
        let got = timeout(WAIT, connect(tcp, &settings(key, sid), now().0))
            .await
            .unwrap();
        let e = got.expect_err("the target's certificate is not REALITY's");
        assert!(e.to_string().contains("certificate"), "{e}");
        let outcome = outcomes.recv().await.unwrap();
        assert!(outcome.starts_with("spliced"), "{outcome}");
    }
}

#[tokio::test]
async fn a_replayed_hello_reaches_the_target() {
    let (dest, _) = site().await;
    let key = PrivateKey::from_random([7; 32]);
    let (addr, mut outcomes) = server(&key, dest).await;
    // Record our client's first flight, let it through, then send it again.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let front = listener.local_addr().unwrap();
    let (hello_tx, mut hello_rx) = mpsc::channel::<Vec<u8>>(1);
    tokio::spawn(async move {
        let (mut client, _) = listener.accept().await.unwrap();
        let mut server = TcpStream::connect(addr).await.unwrap();
        let mut buf = vec![0u8; 4096];
        let n = client.read(&mut buf).await.unwrap();
        hello_tx.send(buf[..n].to_vec()).await.unwrap();
        server.write_all(&buf[..n]).await.unwrap();
        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
    });
    let tcp = TcpStream::connect(front).await.unwrap();
    let _tls = timeout(WAIT, connect(tcp, &settings(&key, short_id()), now().0))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(outcomes.recv().await.unwrap(), "tls");
    let hello = hello_rx.recv().await.unwrap();
    let mut again = TcpStream::connect(addr).await.unwrap();
    again.write_all(&hello).await.unwrap();
    let outcome = timeout(WAIT, outcomes.recv()).await.unwrap().unwrap();
    assert_eq!(outcome, "spliced: a replayed ClientHello");
}

#[derive(Debug)]
struct AcceptAny;

impl rustls::client::danger::ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &[rustls::pki_types::CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        _: &[u8],
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }
    fn verify_tls13_signature(
        &self,
        _: &[u8],
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        rustls::crypto::ring::default_provider()
            .signature_verification_algorithms
            .supported_schemes()
    }
}
