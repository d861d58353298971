//! The channel end to end over real TLS on 127.0.0.1, with an in-memory enroller.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::routing::{get, post};
use http::{Method, StatusCode};
use switchyard_channel::*;
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

/// Tokens by secret: (server id, used, expired); pins to server ids.
#[derive(Default)]
struct Memory {
    tokens: Mutex<HashMap<String, (String, bool, bool)>>,
    pins: Mutex<HashMap<Pin, String>>,
}

impl Memory {
    fn token(&self, identity: &PanelIdentity, panel: SocketAddr, server: &str) -> JoinToken {
        let t = JoinToken::generate(panel.to_string(), identity.pin().unwrap()).unwrap();
        self.tokens
            .lock()
            .unwrap()
            .insert(t.secret.clone(), (server.into(), false, false));
        t
    }
}

#[async_trait::async_trait]
impl Enroller for Memory {
    async fn enroll(&self, request: EnrollRequest) -> Result<String, EnrollRefused> {
        let mut tokens = self.tokens.lock().unwrap();
        let Some((id, used, expired)) = tokens.get_mut(request.secret.expose()) else {
            return Err(EnrollRefused::Unknown);
        };
        if *used {
            return Err(EnrollRefused::AlreadyUsed);
        }
        if *expired {
            return Err(EnrollRefused::Expired);
        }
        *used = true;
        Ok(id.clone())
    }

    async fn enrolled(&self, server_id: &str, certificate: Pin) -> Result<(), EnrollRefused> {
        self.pins
            .lock()
            .unwrap()
            .insert(certificate, server_id.into());
        Ok(())
    }

    async fn authorize(&self, der: &[u8]) -> Option<String> {
        self.pins
            .lock()
            .unwrap()
            .get(&Pin::of_certificate(der))
            .cloned()
    }
}

struct Panel {
    addr: SocketAddr,
    identity: Arc<PanelIdentity>,
    memory: Arc<Memory>,
    channels: mpsc::Receiver<NodeChannel>,
    stop: Option<oneshot::Sender<()>>,
    served: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn panel_on(
    addr: SocketAddr,
    identity: Arc<PanelIdentity>,
    memory: Arc<Memory>,
    options: PanelOptions,
) -> Panel {
    let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, channels) = mpsc::channel(8);
    let (stop, stopped) = oneshot::channel::<()>();
    let served = tokio::spawn(serve_panel_with(
        listener,
        identity.clone(),
        memory.clone(),
        tx,
        async move {
            let _ = stopped.await;
        },
        options,
    ));
    Panel {
        addr,
        identity,
        memory,
        channels,
        stop: Some(stop),
        served,
    }
}

async fn panel() -> Panel {
    let identity = Arc::new(PanelIdentity::generate(&["127.0.0.1".into()]).unwrap());
    panel_on(
        "127.0.0.1:0".parse().unwrap(),
        identity,
        Arc::default(),
        PanelOptions::default(),
    )
    .await
}

impl Panel {
    fn token(&self, server: &str) -> JoinToken {
        self.memory.token(&self.identity, self.addr, server)
    }

    async fn next_channel(&mut self) -> NodeChannel {
        tokio::time::timeout(Duration::from_secs(10), self.channels.recv())
            .await
            .expect("a channel within 10 s")
            .expect("the listener is up")
    }

    async fn stop(mut self) -> (SocketAddr, Arc<PanelIdentity>, Arc<Memory>) {
        let _ = self.stop.take().unwrap().send(());
        self.served.await.unwrap().unwrap();
        (self.addr, self.identity, self.memory)
    }
}

fn router() -> axum::Router {
    axum::Router::new()
        .route("/hello", get(|| async { "hi" }))
        .route("/echo", post(|body: String| async move { body }))
}

fn quick() -> NodeOptions {
    NodeOptions {
        backoff: Backoff {
            first: Duration::from_millis(50),
            max: Duration::from_millis(200),
            stable: Duration::from_secs(10),
        },
        ..NodeOptions::default()
    }
}

struct Node {
    stop: CancellationToken,
    status: watch::Receiver<ChannelStatus>,
    task: tokio::task::JoinHandle<()>,
}

fn hold(enrollment: Enrollment) -> Node {
    let stop = CancellationToken::new();
    let (tx, status) = watch::channel(ChannelStatus::default());
    let task = tokio::spawn(run_node_with(
        enrollment,
        router(),
        stop.clone(),
        quick(),
        tx,
    ));
    Node { stop, status, task }
}

impl Node {
    async fn stop(self) {
        self.stop.cancel();
        self.task.await.unwrap();
    }

    /// Waits until the status shows an error, and returns it.
    async fn error(&mut self) -> String {
        let s = tokio::time::timeout(
            Duration::from_secs(10),
            self.status.wait_for(|s| s.last_error.is_some()),
        )
        .await
        .expect("an error within 10 s")
        .unwrap();
        s.last_error.clone().unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_joined_node_serves_its_router_to_the_panel_over_the_channel() {
    let mut panel = panel().await;
    let dir = tempfile::tempdir().unwrap();
    let token = panel.token("srv-1");
    let enrollment = join(&token, dir.path(), "node-a").await.unwrap();
    assert_eq!(enrollment.server_id, "srv-1");
    assert_eq!(enrollment.pin, panel.identity.pin().unwrap());
    assert!(!format!("{enrollment:?}").contains("PRIVATE"));
    let file = dir.path().join(ENROLLMENT_FILE);
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(
        load_enrollment(dir.path()).unwrap(),
        Some(enrollment.clone())
    );
    assert_eq!(load_enrollment(&dir.path().join("none")).unwrap(), None);

    let node = hold(enrollment);
    let channel = panel.next_channel().await;
    assert_eq!(channel.server_id(), "srv-1");
    assert!(channel.remote().ip().is_loopback());
    let (code, body) = channel.request(Method::GET, "/hello", None).await.unwrap();
    assert_eq!((code, &body[..]), (StatusCode::OK, &b"hi"[..]));
    // Many tasks at once on one channel.
    let mut all = Vec::new();
    for i in 0..20 {
        let c = channel.clone();
        all.push(tokio::spawn(async move {
            c.request(Method::POST, "/echo", Some(format!("{i}").into_bytes()))
                .await
                .unwrap()
        }));
    }
    for (i, t) in all.into_iter().enumerate() {
        let (code, body) = t.await.unwrap();
        assert_eq!((code, body), (StatusCode::OK, format!("{i}").into()));
    }
    let (code, _) = channel.request(Method::GET, "/nope", None).await.unwrap();
    assert_eq!(code, StatusCode::NOT_FOUND);
    assert_eq!(
        channel.request(Method::GET, "nope", None).await,
        Err(ChannelError::BadPath("nope".into()))
    );
    let status = node.status.borrow().clone();
    assert!(status.connected_since_ms.is_some(), "{status:?}");
    assert_eq!(
        (status.connections, status.server_id.as_str()),
        (1, "srv-1")
    );

    // The panel closes the channel: the node dials again and a new one arrives.
    channel.close();
    assert!(channel.is_closed());
    assert!(matches!(
        channel.request(Method::GET, "/hello", None).await,
        Err(ChannelError::Closed { .. })
    ));
    let again = panel.next_channel().await;
    assert_eq!(
        again.request(Method::GET, "/hello", None).await.unwrap().0,
        StatusCode::OK
    );
    assert!(node.status.borrow().connections >= 2);
    node.stop().await;
    tokio::time::timeout(Duration::from_secs(10), again.closed())
        .await
        .expect("the channel closes when the node stops");
    panel.stop().await;
}

#[tokio::test]
async fn used_expired_and_unknown_tokens_are_refused_with_the_reason() {
    let panel = panel().await;
    let dir = tempfile::tempdir().unwrap();
    let token = panel.token("srv-1");
    join(&token, dir.path(), "a").await.unwrap();
    let refused = |detail: &str| JoinError::Refused {
        detail: detail.into(),
    };
    let other = tempfile::tempdir().unwrap();
    assert_eq!(
        join(&token, other.path(), "a").await.unwrap_err(),
        refused("the join token was already used")
    );
    let expired = panel.token("srv-2");
    panel
        .memory
        .tokens
        .lock()
        .unwrap()
        .get_mut(&expired.secret)
        .unwrap()
        .2 = true;
    assert_eq!(
        join(&expired, other.path(), "a").await.unwrap_err(),
        refused("the join token expired")
    );
    let unknown =
        JoinToken::generate(panel.addr.to_string(), panel.identity.pin().unwrap()).unwrap();
    assert_eq!(
        join(&unknown, other.path(), "a").await.unwrap_err(),
        refused("unknown join token")
    );
    assert!(!other.path().join(ENROLLMENT_FILE).exists());
    panel.stop().await;
}

#[tokio::test]
async fn a_panel_that_does_not_match_the_pin_is_refused_by_the_node() {
    let panel = panel().await;
    let impostor = PanelIdentity::generate(&[]).unwrap();
    let mut token = panel.token("srv-1");
    token.pin = impostor.pin().unwrap();
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        join(&token, dir.path(), "a").await.unwrap_err(),
        JoinError::PinMismatch {
            panel: panel.addr.to_string()
        }
    );
    // The secret was never sent: the right pin still enrolls with it.
    token.pin = panel.identity.pin().unwrap();
    join(&token, dir.path(), "a").await.unwrap();
    panel.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_certificates_the_panel_did_not_pin_are_refused() {
    let mut panel = panel().await;
    let dir = tempfile::tempdir().unwrap();
    let good = join(&panel.token("srv-1"), dir.path(), "a").await.unwrap();

    // Signed by another panel's CA.
    let other = PanelIdentity::generate(&[]).unwrap();
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let foreign = Enrollment {
        certificate_pem: other
            .issue_node_certificate(key.public_key_raw(), "srv-1")
            .unwrap(),
        key_pem: KeyPem::new(key.serialize_pem()),
        ..good.clone()
    };
    // Self-signed, never enrolled.
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["srv-1".to_owned()]).unwrap();
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let selfish = Enrollment {
        certificate_pem: params.self_signed(&key).unwrap().pem(),
        key_pem: KeyPem::new(key.serialize_pem()),
        ..good.clone()
    };
    // Signed by this panel's CA, but its pin was dropped (the server was removed).
    let removed = join(&panel.token("srv-2"), dir.path(), "b").await.unwrap();
    panel
        .memory
        .pins
        .lock()
        .unwrap()
        .retain(|_, id| id != "srv-2");

    for (what, enrollment) in [
        ("foreign CA", foreign),
        ("self-signed", selfish),
        ("removed", removed),
    ] {
        let mut node = hold(enrollment);
        let error = node.error().await;
        assert!(error.contains("panel"), "{what}: {error}");
        assert!(
            panel.channels.try_recv().is_err(),
            "{what}: no channel is handed to the panel"
        );
        node.stop().await;
    }
    // The enrolled one still gets through.
    let node = hold(good);
    assert_eq!(panel.next_channel().await.server_id(), "srv-1");
    node.stop().await;
    panel.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_node_reconnects_after_the_panel_listener_restarts() {
    let mut panel = panel().await;
    let dir = tempfile::tempdir().unwrap();
    let enrollment = join(&panel.token("srv-1"), dir.path(), "a").await.unwrap();
    let mut node = hold(enrollment);
    let channel = panel.next_channel().await;
    assert_eq!(
        channel
            .request(Method::GET, "/hello", None)
            .await
            .unwrap()
            .0,
        StatusCode::OK
    );
    let (addr, identity, memory) = panel.stop().await;
    tokio::time::timeout(Duration::from_secs(5), channel.closed())
        .await
        .expect("the panel's shutdown closes its channels");
    let error = node.error().await;
    assert!(error.contains("channel"), "{error}");
    let mut panel = panel_on(addr, identity, memory, PanelOptions::default()).await;
    let channel = panel.next_channel().await;
    let (code, body) = channel.request(Method::GET, "/hello", None).await.unwrap();
    assert_eq!((code, &body[..]), (StatusCode::OK, &b"hi"[..]));
    assert_eq!(node.status.borrow().connections, 2);
    node.stop().await;
    panel.stop().await;
}

#[tokio::test]
async fn strangers_are_bounded_and_cut_at_the_handshake_deadline() {
    let identity = Arc::new(PanelIdentity::generate(&[]).unwrap());
    let options = PanelOptions {
        max_pending: 2,
        handshake_timeout: Duration::from_millis(300),
        ..PanelOptions::default()
    };
    let panel = panel_on(
        "127.0.0.1:0".parse().unwrap(),
        identity,
        Arc::default(),
        options,
    )
    .await;
    use tokio::io::AsyncReadExt as _;
    let idle_a = tokio::net::TcpStream::connect(panel.addr).await.unwrap();
    let _idle_b = tokio::net::TcpStream::connect(panel.addr).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut third = tokio::net::TcpStream::connect(panel.addr).await.unwrap();
    let mut buf = [0u8; 16];
    let n = tokio::time::timeout(Duration::from_millis(200), third.read(&mut buf))
        .await
        .expect("past the limit a connection is closed at once");
    assert!(matches!(n, Ok(0) | Err(_)));
    // The silent ones are dropped at the handshake deadline; then a node enrolls.
    let mut idle_a = idle_a;
    let n = tokio::time::timeout(Duration::from_secs(2), idle_a.read(&mut buf))
        .await
        .expect("cut at the deadline");
    assert!(matches!(n, Ok(0) | Err(_)));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let dir = tempfile::tempdir().unwrap();
    join(&panel.token("srv-1"), dir.path(), "a").await.unwrap();
    panel.stop().await;
}

/// A TLS connection to the panel's listener as a node without a certificate makes it.
async fn enroll_connection(
    panel: &Panel,
) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    let provider = switchyard_tunnel::link::pin::provider();
    let verifier = Arc::new(switchyard_tunnel::link::pin::PinnedVerifier::new(
        PANEL_CERT_NAME,
        &[panel.identity.pin().unwrap()],
        &provider,
    ));
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(panel.addr).await.unwrap();
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(
            rustls::pki_types::ServerName::try_from(PANEL_CERT_NAME).unwrap(),
            tcp,
        )
        .await
        .unwrap()
}

/// Sends `head` and `body` raw; the answer's status line and body.
async fn raw_enroll(panel: &Panel, head: &str, body: &[u8]) -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut s = enroll_connection(panel).await;
    s.write_all(head.as_bytes()).await.unwrap();
    let _ = s.write_all(body).await;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn enrollment_requests_are_bounded_and_checked() {
    let panel = panel().await;
    let big = vec![b'x'; 64 * 1024];
    let answer = raw_enroll(
        &panel,
        &format!(
            "POST /enroll HTTP/1.1\r\nHost: p\r\nContent-Length: {}\r\n\r\n",
            big.len()
        ),
        &big,
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    let garbage = b"{\"secret\": 3}";
    let answer = raw_enroll(
        &panel,
        &format!(
            "POST /enroll HTTP/1.1\r\nHost: p\r\nContent-Length: {}\r\n\r\n",
            garbage.len()
        ),
        garbage,
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("application/problem+json"), "{answer}");
    let answer = raw_enroll(&panel, "GET /v1/status HTTP/1.1\r\nHost: p\r\n\r\n", b"").await;
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
    // Not HTTP at all: closed, the listener serves on.
    let answer = raw_enroll(&panel, "\u{1}\u{2}\u{3}\r\n\r\n", b"").await;
    assert!(!answer.contains("200 OK"), "{answer}");
    let dir = tempfile::tempdir().unwrap();
    join(&panel.token("srv-1"), dir.path(), "a").await.unwrap();
    panel.stop().await;
}
