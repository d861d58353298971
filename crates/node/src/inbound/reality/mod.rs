//! REALITY on a VLESS inbound over TCP: the node answers its own clients with TLS
//! 1.3 and splices everyone else, byte for byte, to a real site (`dest`).
//!
//! The handshake is split between this module and rustls:
//!
//! 1. **Here**: the first records are read (within the handshake deadline, at most
//!    [`MAX_RECORDS_LEN`] bytes) and the ClientHello parsed by
//!    [`switchyard_proto::client_hello`]; [`switchyard_proto::reality::authenticate`]
//!    checks the SNI, opens the sealed session id with the X25519 shared secret of
//!    the hello's key share and the inbound's private key, and checks the short id,
//!    the clock and the client's version; an accepted hello's random must be new to
//!    the inbound's [`ReplayFilter`].
//! 2. **Refused** (not TLS, not TLS 1.3, another SNI, no or wrong auth, a replay, a
//!    hello cut short by silence, EOF or the deadline): the node connects to `dest`
//!    (within 5 s), writes it every byte read so far and relays both ways. The prober
//!    talks to the target site itself and sees its certificate and content. If `dest`
//!    does not answer, the connection is held like any failed handshake without a
//!    fallback.
//! 3. **Accepted**: the bytes read and the socket go to a rustls `ServerConnection`
//!    (TLS 1.3 only, no session tickets, no ALPN, as Xray's server) through
//!    rustls's `Acceptor`, with a config made for this connection: its certificate
//!    resolver returns a fresh Ed25519 key and a certificate whose signature field is
//!    HMAC-SHA512(auth key, that key) ([`cert`]), which is what Xray's client checks.
//!    rustls does the rest of TLS 1.3: the key schedule, the CertificateVerify
//!    (Ed25519, even though browser-like hellos do not offer it), Finished, records.
//!    The session then carries VLESS as a TLS inbound does.
//!
//! What this does not do yet, unlike Xray's server: it does not dial `dest` for an
//! accepted client to copy the target's ServerHello (cipher suite, extension order)
//! and the lengths of its encrypted handshake records. Xray's *client* needs none of
//! that (it checks only the certificate's HMAC and TLS itself); it hides from a
//! passive observer who compares the sizes of the server's first flight with the
//! target's. It is hardening left for later (docs/node.md, "REALITY").

use switchyard_transport::reality::cert;

use std::sync::{Arc, Mutex};

use rustls::ServerConfig;
use rustls::server::{Acceptor, ClientHello as RustlsHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::net::TcpStream;
use tokio::time::{Instant, timeout_at};
use tokio_rustls::LazyConfigAcceptor;

use switchyard_proto::client_hello::ClientHello;
use switchyard_proto::reality::{
    AuthKey, ClientVersion, KeyError, Policy, PrivateKey, Refusal, ReplayFilter, ShortId,
    authenticate,
};
use switchyard_transport::reality::server::{ReadHelloError, SpliceReason};

use super::{Conn, Ctx, Prefixed, RawTls, Records, fallback};
use crate::accounting::now_ms;
use crate::config::{InboundConfig, Security};
use crate::runtime::Runtime;

/// Why an inbound's REALITY settings can't be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RealityError {
    /// The inbound's security is not REALITY.
    #[error("security: not REALITY")]
    NotReality,
    /// `security.private_key` is not a key.
    #[error("security.private_key: {0}")]
    PrivateKey(#[source] KeyError),
    /// One of `security.short_ids` is not a short id.
    #[error("security.short_ids: {0}")]
    ShortId(#[source] KeyError),
    /// `security.min_client_version` or `max_client_version` is not a version.
    #[error("security: client version: {0}")]
    ClientVersion(#[source] KeyError),
    /// No certificate could be made for connections.
    #[error(transparent)]
    Certificate(#[from] cert::CertifiedKeyError),
    /// rustls refused the TLS settings.
    #[error(transparent)]
    Tls(#[from] rustls::Error),
}

/// A REALITY inbound's keys and rules, built when the inbound is (re)built.
pub(crate) struct Reality {
    key: PrivateKey,
    policy: Policy,
    dest: String,
    /// TLS 1.3 only, no tickets, no ALPN; each connection gets a copy with its own
    /// certificate.
    base: Arc<ServerConfig>,
    /// Kept by the inbound's tag across rebuilds.
    replay: Arc<Mutex<ReplayFilter>>,
}

impl std::fmt::Debug for Reality {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reality")
            .field("dest", &self.dest)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
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

impl Reality {
    /// Reads the inbound's REALITY settings (validated already); `replay` is its
    /// tag's filter.
    pub(crate) fn build(
        config: &InboundConfig,
        replay: Arc<Mutex<ReplayFilter>>,
    ) -> Result<Arc<Self>, RealityError> {
        let Security::Reality {
            dest,
            server_names,
            private_key,
            short_ids,
            max_time_diff_ms,
            min_client_version,
            max_client_version,
        } = &config.security
        else {
            return Err(RealityError::NotReality);
        };
        let key = PrivateKey::parse(private_key.expose()).map_err(RealityError::PrivateKey)?;
        let short_ids = short_ids
            .iter()
            .map(|s| ShortId::parse(s))
            .collect::<Result<_, _>>()
            .map_err(RealityError::ShortId)?;
        let version = |v: &Option<String>| {
            v.as_deref()
                .map(ClientVersion::parse)
                .transpose()
                .map_err(RealityError::ClientVersion)
        };
        let policy = Policy {
            server_names: server_names
                .iter()
                .map(|n| n.to_ascii_lowercase())
                .collect(),
            short_ids,
            max_time_diff_ms: *max_time_diff_ms,
            min_client_version: version(min_client_version)?,
            max_client_version: version(max_client_version)?,
        };
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let placeholder = cert::certified_key(&AuthKey([0; 32]))?;
        let mut base = ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])?
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(Fixed(placeholder)));
        // A resumed session would skip the certificate, REALITY's proof: never offer one.
        base.send_tls13_tickets = 0;
        base.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
        Ok(Arc::new(Self {
            key,
            policy,
            dest: dest.clone(),
            base: Arc::new(base),
            replay,
        }))
    }

    /// Whether `hello` is one of this inbound's clients' at `now_ms`: its auth key,
    /// or why not. A hello accepted once is refused after.
    fn decide(&self, hello: &ClientHello, now_ms: i64) -> Result<AuthKey, Refusal> {
        let (auth_key, _) = authenticate(&self.policy, &self.key, hello, now_ms)?;
        let mut replay = self.replay.lock().unwrap_or_else(|p| p.into_inner());
        if !replay.first_time(&hello.random, now_ms) {
            return Err(Refusal::Replay);
        }
        Ok(auth_key)
    }

    /// Reads the ClientHello and either returns an authenticated client's TLS stream
    /// (its socket read a TLS record at a time, for Vision) or splices the connection to `dest` (or holds it) and returns `None`.
    pub(crate) async fn accept(
        &self,
        ctx: &Ctx,
        rt: &Runtime,
        mut tcp: TcpStream,
        conn: &Conn,
    ) -> Option<RawTls> {
        let peer = conn.peer;
        let mut buf = Vec::with_capacity(2048);
        let verdict = match read_hello(&mut tcp, &mut buf, conn.deadline).await {
            Ok(hello) => self.decide(&hello, now_ms()).map_err(SpliceReason::Refused),
            Err(why) => Err(SpliceReason::Hello(why)),
        };
        let auth_key = match verdict {
            Ok(k) => k,
            Err(why) => {
                tracing::debug!(%peer, inbound = %ctx.config.tag, "REALITY refused ({why}): spliced to the target");
                fallback::splice_reality(ctx, rt, Box::new(tcp), buf, conn, &self.dest).await;
                return None;
            }
        };
        let certified = match cert::certified_key(&auth_key) {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(inbound = %ctx.config.tag, "REALITY certificate: {e}");
                return None;
            }
        };
        let mut config = (*self.base).clone();
        config.cert_resolver = Arc::new(Fixed(certified));
        let handshake = async {
            let raw = Records::new(Prefixed::new(buf, tcp), true);
            let start = LazyConfigAcceptor::new(Acceptor::default(), raw).await?;
            start.into_stream(Arc::new(config)).await
        };
        match timeout_at(conn.deadline, handshake).await {
            Ok(Ok(tls)) => Some(tls),
            Ok(Err(e)) => {
                tracing::debug!(%peer, inbound = %ctx.config.tag, "REALITY TLS handshake: {e}");
                None
            }
            Err(_) => {
                tracing::debug!(%peer, inbound = %ctx.config.tag, "REALITY TLS handshake timed out");
                None
            }
        }
    }
}

/// Reads into `buf` until it holds a whole ClientHello, which is returned, or the
/// deadline passes; the error says why not (for logs). `buf` keeps every byte read
/// either way.
async fn read_hello(
    tcp: &mut TcpStream,
    buf: &mut Vec<u8>,
    deadline: Instant,
) -> Result<ClientHello, ReadHelloError> {
    match timeout_at(
        deadline,
        switchyard_transport::reality::server::read_hello(tcp, buf),
    )
    .await
    {
        Ok(r) => r,
        Err(_) => Err(ReadHelloError::Deadline),
    }
}
