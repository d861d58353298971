//! The REALITY server of tunnel links: our clients get TLS 1.3, everyone else the
//! target site, byte for byte.

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustls::ServerConfig;
use rustls::server::{ClientHello as RustlsHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use switchyard_proto::client_hello::{self, ClientHello, MAX_RECORDS_LEN};
use switchyard_proto::reality::{
    AuthKey, Policy, PrivateKey, Refusal, ReplayFilter, SealForm, authenticate_with,
};

use super::cert::certified_key;
use super::site::SiteDialer;
pub use crate::io::Prefixed;

/// How long the target may take to accept a spliced connection.
const TARGET_CONNECT: Duration = Duration::from_secs(5);
/// A spliced connection idle this long is closed.
const SPLICE_IDLE: Duration = Duration::from_secs(300);

/// A REALITY server's keys and rules.
pub struct ServerSettings {
    /// The server's private key.
    pub key: PrivateKey,
    /// Who is accepted.
    pub policy: Policy,
    /// The target site, `host:port`.
    pub dest: String,
    /// How the target is dialed: a guarded path that refuses private and own
    /// addresses unless allowed ([`super::site`]).
    pub site: SiteDialer,
    /// Hellos accepted lately (kept by the caller across rebuilds).
    pub replay: Arc<Mutex<ReplayFilter>>,
}

impl std::fmt::Debug for ServerSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerSettings")
            .field("dest", &self.dest)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

/// What became of an incoming connection.
pub enum Accepted {
    /// One of our clients: its TLS session.
    Tls(Box<TlsStream<Prefixed<TcpStream>>>),
    /// Not one: spliced to the target (in a task of its own), for this reason.
    Spliced(SpliceReason),
}

/// Why a connection is not one of our clients' (and goes to the target site).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpliceReason {
    /// No whole ClientHello came.
    #[error(transparent)]
    Hello(#[from] ReadHelloError),
    /// The hello was refused.
    #[error(transparent)]
    Refused(#[from] Refusal),
}

/// Why no whole ClientHello could be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadHelloError {
    /// The bytes are not a TLS ClientHello.
    #[error(transparent)]
    Malformed(#[from] client_hello::HelloError),
    /// [`MAX_RECORDS_LEN`] bytes came without a whole ClientHello.
    #[error("no ClientHello in {MAX_RECORDS_LEN} bytes")]
    TooLong,
    /// The peer closed first.
    #[error("closed before a whole ClientHello")]
    Closed,
    /// Reading failed.
    #[error("reading the ClientHello: {0}")]
    Read(#[source] io::Error),
    /// The caller's deadline passed first.
    #[error("no whole ClientHello before the deadline")]
    Deadline,
}

impl std::fmt::Debug for Accepted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Tls(_) => f.write_str("Tls"),
            Self::Spliced(why) => f.debug_tuple("Spliced").field(why).finish(),
        }
    }
}

/// Resolves to the one certificate made for a connection.
#[derive(Debug)]
struct Fixed(Arc<CertifiedKey>);

impl ResolvesServerCert for Fixed {
    fn resolve(&self, _hello: RustlsHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.clone())
    }
}

/// Reads into `buf` until it holds a whole ClientHello (at most
/// [`MAX_RECORDS_LEN`] bytes), which is returned; the error says why not.
pub async fn read_hello<S: AsyncRead + Unpin>(
    io: &mut S,
    buf: &mut Vec<u8>,
) -> Result<ClientHello, ReadHelloError> {
    loop {
        if let Some((hello, _)) = client_hello::parse(buf)? {
            return Ok(hello);
        }
        if buf.len() >= MAX_RECORDS_LEN {
            return Err(ReadHelloError::TooLong);
        }
        let want = (MAX_RECORDS_LEN - buf.len()).min(4096);
        buf.reserve(want);
        let mut limited = (&mut *io).take(want as u64);
        match limited.read_buf(buf).await {
            Ok(0) => return Err(ReadHelloError::Closed),
            Ok(_) => {}
            Err(e) => return Err(ReadHelloError::Read(e)),
        }
    }
}

impl ServerSettings {
    fn decide(&self, hello: &ClientHello, now_ms: i64) -> Result<AuthKey, Refusal> {
        let (auth_key, _) =
            authenticate_with(&self.policy, &self.key, hello, now_ms, SealForm::Tunnel)?;
        let mut replay = self.replay.lock().unwrap_or_else(|p| p.into_inner());
        if !replay.first_time(&hello.random, now_ms) {
            return Err(Refusal::Replay);
        }
        Ok(auth_key)
    }
}

/// Reads the hello on `tcp` (the caller bounds the time) and answers it: a TLS
/// session for our clients, the target for everyone else. `now_ms` is Unix time in
/// milliseconds.
pub async fn accept(
    mut tcp: TcpStream,
    settings: &ServerSettings,
    now_ms: i64,
) -> io::Result<Accepted> {
    let mut buf = Vec::with_capacity(2048);
    let verdict = match read_hello(&mut tcp, &mut buf).await {
        Ok(hello) => settings
            .decide(&hello, now_ms)
            .map_err(SpliceReason::Refused),
        Err(why) => Err(SpliceReason::Hello(why)),
    };
    let auth_key = match verdict {
        Ok(k) => k,
        Err(why) => {
            tokio::spawn(splice(
                tcp,
                buf,
                settings.dest.clone(),
                settings.site.clone(),
            ));
            return Ok(Accepted::Spliced(why));
        }
    };
    let certified = certified_key(&auth_key).map_err(io::Error::other)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| io::Error::other(e.to_string()))?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(Fixed(certified)));
    // A resumed session would skip the certificate, REALITY's proof.
    config.send_tls13_tickets = 0;
    config.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
    let tls = TlsAcceptor::from(Arc::new(config))
        .accept(Prefixed::new(buf, tcp))
        .await?;
    Ok(Accepted::Tls(Box::new(tls)))
}

/// Hands a refused connection to the target, dialed through `site` (a target it
/// refuses is never dialed): what was read, then both ways until either side is done
/// or idle for [`SPLICE_IDLE`].
async fn splice(mut tcp: TcpStream, read: Vec<u8>, dest: String, site: SiteDialer) {
    let mut site = match tokio::time::timeout(TARGET_CONNECT, site.dial(&dest)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e @ super::site::SiteError::Refused { .. })) => {
            tracing::warn!("{e}: a refused connection is closed");
            return;
        }
        Ok(Err(e)) => {
            tracing::debug!("{e}: a refused connection is closed");
            return;
        }
        Err(_) => {
            tracing::debug!(%dest, "REALITY target did not answer: a refused connection is closed");
            return;
        }
    };
    let _ = site.set_nodelay(true);
    if site.write_all(&read).await.is_err() {
        return;
    }
    let (mut a_read, mut a_write) = tcp.split();
    let (mut b_read, mut b_write) = site.split();
    let up = copy_idle(&mut a_read, &mut b_write);
    let down = copy_idle(&mut b_read, &mut a_write);
    let _ = tokio::join!(up, down);
}

/// Copies until the end or [`SPLICE_IDLE`] without a byte.
async fn copy_idle<R, W>(from: &mut R, to: &mut W) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match tokio::time::timeout(SPLICE_IDLE, from.read(&mut buf)).await {
            Ok(r) => r?,
            Err(_) => return Ok(()),
        };
        if n == 0 {
            return to.shutdown().await;
        }
        to.write_all(&buf[..n]).await?;
    }
}
