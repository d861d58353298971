//! The REALITY client of tunnel links, on rustls.
//!
//! Before the hello: a fresh client random and X25519 key pair; the auth key from that
//! key and the server's public key; the session id sealed over the random and the
//! key's public half ([`tunnel_session_id`]). rustls builds its ClientHello inside
//! `ClientConnection::new`, synchronously, on this thread: its crypto provider here
//! has one key exchange group (X25519) and a random source that, for that call only,
//! hand it the prepared key pair, session id and random (rustls draws the session id
//! first, then the random; a test checks the hello on the wire carries ours, and the
//! connection is refused before any byte is sent if rustls took them in any other
//! way). The server's certificate must be the one the auth key makes for its key,
//! byte for byte, and the CertificateVerify must verify with that key.

use std::cell::RefCell;
use std::io;
use std::sync::Arc;

use ring::rand::{SecureRandom as _, SystemRandom};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{
    ActiveKeyExchange, GetRandomFailed, SecureRandom, SharedSecret, SupportedKxGroup,
};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, NamedGroup, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use switchyard_proto::reality::{
    AuthKey, ClientAuth, ClientVersion, PrivateKey, PublicKey, ShortId, certificate_signature,
    tunnel_session_id,
};

use super::cert::{SPKI_PREFIX, certificate_der, spki};

/// What a client needs to reach a REALITY server.
#[derive(Clone)]
pub struct ClientSettings {
    /// The SNI: one of the server's names (the target site's).
    pub server_name: String,
    /// The server's REALITY public key.
    pub public_key: PublicKey,
    /// A short id the server accepts.
    pub short_id: ShortId,
}

impl std::fmt::Debug for ClientSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientSettings")
            .field("server_name", &self.server_name)
            .field("public_key", &self.public_key.encode())
            .finish_non_exhaustive()
    }
}

/// The version our links seal in their hello.
const VERSION: ClientVersion = ClientVersion([0, 1, 0]);

/// What the next ClientHello built on this thread takes.
struct Prepared {
    key: Option<PrivateKey>,
    session_id: Option<[u8; 32]>,
    random: Option<[u8; 32]>,
}

thread_local! {
    static NEXT: RefCell<Option<Prepared>> = const { RefCell::new(None) };
}

/// The random source of our client provider: the prepared session id, then the
/// prepared random, while a hello is being built; the system's otherwise.
#[derive(Debug)]
struct Scripted;

impl SecureRandom for Scripted {
    fn fill(&self, buf: &mut [u8]) -> Result<(), GetRandomFailed> {
        let scripted = NEXT.with(|next| {
            let mut next = next.borrow_mut();
            let p = next.as_mut()?;
            if buf.len() != 32 {
                return None;
            }
            let value = p.session_id.take().or_else(|| p.random.take())?;
            buf.copy_from_slice(&value);
            Some(())
        });
        if scripted.is_some() {
            return Ok(());
        }
        SystemRandom::new().fill(buf).map_err(|_| GetRandomFailed)
    }
}

/// X25519 with the prepared key.
#[derive(Debug)]
struct PreparedX25519;

struct Exchange {
    key: PrivateKey,
    public: [u8; 32],
}

impl SupportedKxGroup for PreparedX25519 {
    fn start(&self) -> Result<Box<dyn ActiveKeyExchange>, rustls::Error> {
        let key = NEXT
            .with(|next| next.borrow_mut().as_mut().and_then(|p| p.key.take()))
            .ok_or_else(|| rustls::Error::General("REALITY: no key share prepared".into()))?;
        let public = key.public_key().0;
        Ok(Box::new(Exchange { key, public }))
    }

    fn name(&self) -> NamedGroup {
        NamedGroup::X25519
    }
}

impl ActiveKeyExchange for Exchange {
    fn complete(self: Box<Self>, peer: &[u8]) -> Result<SharedSecret, rustls::Error> {
        let peer: [u8; 32] = peer
            .try_into()
            .map_err(|_| rustls::Error::General("X25519 share of the wrong length".into()))?;
        let shared = self
            .key
            .agree(&peer)
            .ok_or_else(|| rustls::Error::General("low-order X25519 share".into()))?;
        Ok(SharedSecret::from(&shared[..]))
    }

    fn pub_key(&self) -> &[u8] {
        &self.public
    }

    fn group(&self) -> NamedGroup {
        NamedGroup::X25519
    }
}

static PREPARED_X25519: PreparedX25519 = PreparedX25519;
static SCRIPTED: Scripted = Scripted;

/// Checks the server's certificate and CertificateVerify against the auth key.
#[derive(Debug)]
struct Verifier {
    auth_key: AuthKey,
}

/// The Ed25519 key of a certificate in the REALITY shape.
fn ed25519_key(der: &[u8]) -> Option<[u8; 32]> {
    let at = der
        .windows(SPKI_PREFIX.len())
        .position(|w| w == SPKI_PREFIX)?;
    der.get(at + SPKI_PREFIX.len()..at + SPKI_PREFIX.len() + 32)?
        .try_into()
        .ok()
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let der = end_entity.as_ref();
        let expected = ed25519_key(der)
            .map(|key| certificate_der(&spki(&key), &certificate_signature(&self.auth_key, &key)));
        if expected.as_deref() == Some(der) {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::ApplicationVerificationFailure,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Err(rustls::Error::PeerIncompatible(
            rustls::PeerIncompatible::Tls12NotOffered,
        ))
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let bad = || rustls::Error::InvalidCertificate(rustls::CertificateError::BadSignature);
        if dss.scheme != SignatureScheme::ED25519 {
            return Err(bad());
        }
        let key = ed25519_key(cert.as_ref()).ok_or_else(bad)?;
        ring::signature::UnparsedPublicKey::new(&ring::signature::ED25519, key)
            .verify(message, dss.signature())
            .map_err(|_| bad())?;
        Ok(HandshakeSignatureValid::assertion())
    }

    /// What an ordinary rustls client offers (the hello should not stand out); only
    /// Ed25519 is accepted in [`Self::verify_tls13_signature`], and the REALITY
    /// server signs with it whatever is offered.
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        rustls::crypto::ring::default_provider()
            .signature_verification_algorithms
            .supported_schemes()
    }
}

fn io_error(what: impl Into<String>) -> io::Error {
    io::Error::other(what.into())
}

/// Completes a REALITY handshake over `io` (a connected TCP stream, or anything
/// carrying one) at Unix time `unix_time` (seconds).
pub async fn connect<IO>(
    io: IO,
    settings: &ClientSettings,
    unix_time: u32,
) -> io::Result<TlsStream<IO>>
where
    IO: AsyncRead + AsyncWrite + Unpin,
{
    let rng = SystemRandom::new();
    let mut random = [0u8; 32];
    let mut secret = [0u8; 32];
    rng.fill(&mut random)
        .and_then(|()| rng.fill(&mut secret))
        .map_err(|_| io_error("no randomness for a REALITY hello"))?;
    let key = PrivateKey::from_random(secret);
    let share = key.public_key().0;
    let shared = key
        .agree(&settings.public_key.0)
        .ok_or_else(|| io_error("the server's REALITY public key is a low-order point"))?;
    let auth_key = AuthKey::derive(&shared, &random);
    let mut provider = rustls::crypto::ring::default_provider();
    // X25519 first (its share is the one the hello carries), then the usual others.
    provider.kx_groups = vec![
        &PREPARED_X25519,
        rustls::crypto::ring::kx_group::SECP256R1,
        rustls::crypto::ring::kx_group::SECP384R1,
    ];
    provider.secure_random = &SCRIPTED;
    provider
        .cipher_suites
        .retain(|s| s.version() == &rustls::version::TLS13);
    let suites: Vec<u16> = provider
        .cipher_suites
        .iter()
        .map(|s| u16::from(s.suite()))
        .collect();
    let auth = ClientAuth {
        version: VERSION,
        unix_time,
        short_id: settings.short_id,
    };
    let session_id = tunnel_session_id(&auth_key, &random, &share, &suites, &auth);
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| io_error(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(Verifier { auth_key }))
        .with_no_client_auth();
    let name = ServerName::try_from(settings.server_name.clone())
        .map_err(|e| io_error(format!("server name {:?}: {e}", settings.server_name)))?;
    NEXT.with(|next| {
        *next.borrow_mut() = Some(Prepared {
            key: Some(key),
            session_id: Some(session_id),
            random: Some(random),
        })
    });
    // rustls writes the hello here, taking what was prepared.
    let connecting = TlsConnector::from(Arc::new(config)).connect(name, io);
    let left = NEXT.with(|next| next.borrow_mut().take());
    if left.is_some_and(|p| p.key.is_some() || p.session_id.is_some() || p.random.is_some()) {
        return Err(io_error(
            "rustls did not take the prepared REALITY hello (its ClientHello is built differently in this version)",
        ));
    }
    connecting.await
}
