//! The panel's channel listener under a stranger's idle sockets, over real sockets on
//! loopback: the attacker's sockets come from 127.0.0.2, the real node's from
//! 127.0.0.1 (both are loopback on Linux).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Method, StatusCode};
use switchyard_channel::*;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

/// Tokens by secret (single use); pins to server ids.
#[derive(Default)]
struct Memory {
    tokens: Mutex<HashMap<String, String>>,
    pins: Mutex<HashMap<Pin, String>>,
}

#[async_trait::async_trait]
impl Enroller for Memory {
    async fn enroll(&self, request: EnrollRequest) -> Result<String, EnrollRefused> {
        self.tokens
            .lock()
            .unwrap()
            .remove(request.secret.expose())
            .ok_or(EnrollRefused::Unknown)
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
    stop: oneshot::Sender<()>,
    served: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn panel(options: PanelOptions) -> Panel {
    let identity = Arc::new(PanelIdentity::generate(&["127.0.0.1".into()]).unwrap());
    let memory = Arc::new(Memory::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
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
        stop,
        served,
    }
}

impl Panel {
    fn token(&self, server: &str) -> JoinToken {
        let t = JoinToken::generate(self.addr.to_string(), self.identity.pin().unwrap()).unwrap();
        self.memory
            .tokens
            .lock()
            .unwrap()
            .insert(t.secret.clone(), server.into());
        t
    }

    async fn next_channel(&mut self) -> NodeChannel {
        tokio::time::timeout(Duration::from_secs(10), self.channels.recv())
            .await
            .expect("a channel within 10 s")
            .expect("the listener is up")
    }

    async fn stop(self) {
        let _ = self.stop.send(());
        self.served.await.unwrap().unwrap();
    }
}

/// A TCP connection to `to` from `from` (a loopback address).
async fn connect_from(from: &str, to: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(format!("{from}:0").parse().unwrap())?;
    socket.connect(to).await
}

/// Whether the panel closed `s` (EOF or reset) within `within`; bytes the panel sent
/// before closing (a TLS alert) are read past.
async fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 512];
    tokio::time::timeout(within, async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .is_ok()
}

/// `n` idle sockets from 127.0.0.2, each open when it returns (the panel may already
/// have closed the ones past its limits).
async fn idle_sockets(panel: &Panel, n: usize) -> Vec<TcpStream> {
    let mut all = Vec::with_capacity(n);
    for _ in 0..n {
        all.push(connect_from("127.0.0.2", panel.addr).await.unwrap());
    }
    all
}

fn hold(enrollment: Enrollment) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let stop = CancellationToken::new();
    let (tx, _status) = watch::channel(ChannelStatus::default());
    let options = NodeOptions {
        backoff: Backoff {
            first: Duration::from_millis(50),
            max: Duration::from_millis(200),
            stable: Duration::from_secs(10),
        },
        ..NodeOptions::default()
    };
    let router = axum::Router::new().route("/hello", axum::routing::get(|| async { "hi" }));
    let task = tokio::spawn(run_node_with(enrollment, router, stop.clone(), options, tx));
    (stop, task)
}

/// With the listener's defaults, one address holding more idle sockets than the whole
/// pending limit (256) keeps neither a new node's enrollment nor an enrolled node's
/// re-join out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_address_with_many_idle_sockets_keeps_no_node_out() {
    let mut panel = panel(PanelOptions::default()).await;
    let idle = idle_sockets(&panel, 300).await;
    // Past its share, the attacker's next sockets are closed at once.
    let mut more = connect_from("127.0.0.2", panel.addr).await.unwrap();
    assert!(
        closed_within(&mut more, Duration::from_secs(5)).await,
        "past its address's share a connection is closed at once"
    );
    let dir = tempfile::tempdir().unwrap();
    let enrollment = tokio::time::timeout(
        Duration::from_secs(8),
        join(&panel.token("srv-1"), dir.path(), "node-a"),
    )
    .await
    .expect("the enrollment is answered while the attacker holds its sockets")
    .unwrap();
    assert_eq!(enrollment.server_id, "srv-1");
    let (stop, task) = hold(enrollment.clone());
    let channel = panel.next_channel().await;
    let (code, body) = channel.request(Method::GET, "/hello", None).await.unwrap();
    assert_eq!((code, &body[..]), (StatusCode::OK, &b"hi"[..]));
    // The re-join after a lost channel, the attacker still there.
    channel.close();
    let again = panel.next_channel().await;
    assert_eq!(again.server_id(), "srv-1");
    assert_eq!(
        again.request(Method::GET, "/hello", None).await.unwrap().0,
        StatusCode::OK
    );
    drop(idle);
    stop.cancel();
    task.await.unwrap();
    panel.stop().await;
}

/// Silence before TLS, a handshake cut short and an enrollment connection that sends
/// no request are all closed at their (short, here) deadlines; then a node enrolls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_are_closed_at_their_deadlines() {
    let options = PanelOptions {
        handshake_timeout: Duration::from_millis(300),
        first_request_timeout: Duration::from_millis(300),
        ..PanelOptions::default()
    };
    let panel = panel(options).await;
    let mut silent = connect_from("127.0.0.2", panel.addr).await.unwrap();
    let mut cut = connect_from("127.0.0.2", panel.addr).await.unwrap();
    // A TLS record header announcing a 512-byte handshake message, and only 5 bytes of it.
    cut.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03])
        .await
        .unwrap();
    assert!(
        closed_within(&mut silent, Duration::from_secs(5)).await,
        "a silent socket is closed at the handshake deadline"
    );
    assert!(
        closed_within(&mut cut, Duration::from_secs(5)).await,
        "a handshake cut short is closed at the handshake deadline"
    );
    let mut no_request = enroll_connection(&panel).await;
    let mut buf = [0u8; 64];
    let read = tokio::time::timeout(Duration::from_secs(5), no_request.read(&mut buf))
        .await
        .expect("an enrollment connection without a request is closed at its deadline");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    let dir = tempfile::tempdir().unwrap();
    join(&panel.token("srv-1"), dir.path(), "a").await.unwrap();
    panel.stop().await;
}

/// A TLS connection to the listener as a node without a certificate makes it, from
/// 127.0.0.2.
async fn enroll_connection(panel: &Panel) -> tokio_rustls::client::TlsStream<TcpStream> {
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
    let tcp = connect_from("127.0.0.2", panel.addr).await.unwrap();
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(
            rustls::pki_types::ServerName::try_from(PANEL_CERT_NAME).unwrap(),
            tcp,
        )
        .await
        .unwrap()
}
