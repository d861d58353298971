//! Connecting through a server of a subscription: TCP, then TLS (verified against the
//! system's web roots, a pinned self-signed certificate, or not at all when the entry
//! says `insecure`), then WebSocket, then the protocol's request (VLESS or Trojan).
//! The result is a stream to the destination.
//!
//! Every step has a deadline ([`CONNECT_TIMEOUT`] for all of them together) and every
//! failure names the server and the step, so a probe or a user's app learns what went
//! wrong where.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use rustls::ClientConfig;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use switchyard_proto::Address;
use switchyard_proto::entry::{Entry, EntryProtocol, EntryTls, EntryTransport};
use switchyard_proto::{trojan, vless};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

/// How long connecting to a server may take, every step together.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A byte stream to the destination.
pub trait Stream: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Stream for T {}

/// A boxed [`Stream`].
pub type BoxStream = Box<dyn Stream>;

/// Why a server could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OutboundError {
    /// The entry cannot be used by this client (a protocol or setting it lacks).
    #[error("server {server:?}: {problem}")]
    Unsupported {
        /// The entry's name.
        server: String,
        /// What is missing.
        problem: String,
    },
    /// A step failed.
    #[error("server {server:?}: {step}: {reason}")]
    Failed {
        /// The entry's name.
        server: String,
        /// `tcp`, `tls`, `websocket` or `request`.
        step: &'static str,
        /// Why.
        reason: String,
    },
    /// Every step together took longer than [`CONNECT_TIMEOUT`].
    #[error("server {server:?}: no answer within {0:?}", CONNECT_TIMEOUT)]
    Timeout {
        /// The entry's name.
        server: String,
    },
}

/// One server, ready to connect through: its entry and its TLS settings, built once.
#[derive(Clone)]
pub struct Outbound {
    entry: Entry,
    tls: Option<(Arc<ClientConfig>, ServerName<'static>)>,
    header: Header,
}

impl std::fmt::Debug for Outbound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outbound")
            .field("server", &self.entry.name)
            .finish_non_exhaustive()
    }
}

/// What the protocol's request carries, parsed once.
#[derive(Clone)]
enum Header {
    Vless(vless::Uuid),
    Trojan([u8; trojan::HASH_LEN]),
}

impl Outbound {
    /// Checks `entry` and prepares its TLS settings.
    pub fn new(entry: Entry) -> Result<Self, OutboundError> {
        let unsupported = |problem: &str| OutboundError::Unsupported {
            server: entry.name.clone(),
            problem: problem.to_owned(),
        };
        let header = match &entry.protocol {
            EntryProtocol::Vless { uuid, flow } => {
                if flow.as_deref().is_some_and(|f| !f.is_empty()) {
                    return Err(unsupported(
                        "VLESS flows (xtls-rprx-vision) are not supported",
                    ));
                }
                Header::Vless(
                    vless::parse_uuid(uuid)
                        .ok_or_else(|| unsupported("the VLESS UUID is malformed"))?,
                )
            }
            EntryProtocol::Trojan { password } => Header::Trojan(trojan::password_hash(password)),
            EntryProtocol::Shadowsocks { .. } => {
                return Err(unsupported(
                    "Shadowsocks is not supported by this client yet",
                ));
            }
        };
        let tls = match &entry.tls {
            Some(t) => {
                let name = t
                    .server_name
                    .clone()
                    .unwrap_or_else(|| entry.server.clone());
                let server_name = ServerName::try_from(name.clone())
                    .map_err(|_| unsupported(&format!("{name:?} is not a TLS server name")))?;
                Some((
                    tls_config(t, &name).map_err(|e| unsupported(&e))?,
                    server_name,
                ))
            }
            None => None,
        };
        Ok(Self { entry, tls, header })
    }

    /// The entry.
    pub fn entry(&self) -> &Entry {
        &self.entry
    }

    /// The server's stable identity for Auto's memory: its protocol, host, port and
    /// (hashed) credential, so a subscription update that renames it keeps its history.
    pub fn identity(&self) -> String {
        let (protocol, credential) = match &self.entry.protocol {
            EntryProtocol::Vless { uuid, .. } => ("vless", uuid.as_str()),
            EntryProtocol::Trojan { password } => ("trojan", password.as_str()),
            EntryProtocol::Shadowsocks { password, .. } => ("shadowsocks", password.as_str()),
        };
        switchyard_auto::ServerId::derive(protocol, &self.entry.server, self.entry.port, credential)
            .as_str()
            .to_owned()
    }

    /// A stream to `destination` through this server.
    pub async fn connect(&self, destination: &Address) -> Result<BoxStream, OutboundError> {
        tokio::time::timeout(CONNECT_TIMEOUT, self.connect_now(destination))
            .await
            .map_err(|_| OutboundError::Timeout {
                server: self.entry.name.clone(),
            })?
    }

    async fn connect_now(&self, destination: &Address) -> Result<BoxStream, OutboundError> {
        let fail = |step: &'static str| {
            let server = self.entry.name.clone();
            move |e: String| OutboundError::Failed {
                server,
                step,
                reason: e,
            }
        };
        let tcp = TcpStream::connect((self.entry.server.as_str(), self.entry.port))
            .await
            .map_err(|e| fail("tcp")(e.to_string()))?;
        let _ = tcp.set_nodelay(true);
        let mut stream: BoxStream = match &self.tls {
            Some((config, name)) => Box::new(
                tokio_rustls::TlsConnector::from(config.clone())
                    .connect(name.clone(), tcp)
                    .await
                    .map_err(|e| fail("tls")(e.to_string()))?,
            ),
            None => Box::new(tcp),
        };
        if let EntryTransport::Ws { path, host } = &self.entry.transport {
            let host = host
                .clone()
                .or_else(|| self.entry.tls.as_ref().and_then(|t| t.server_name.clone()))
                .unwrap_or_else(|| self.entry.server.clone());
            let request = format!("ws://{host}{path}")
                .into_client_request()
                .map_err(|e| fail("websocket")(e.to_string()))?;
            let (ws, _) = tokio_tungstenite::client_async_with_config(
                request,
                stream,
                Some(switchyard_tunnel::ws::config()),
            )
            .await
            .map_err(|e| fail("websocket")(e.to_string()))?;
            stream = Box::new(switchyard_tunnel::ws::WsStream::new(ws));
        }
        let mut head = Vec::with_capacity(64);
        match &self.header {
            Header::Vless(uuid) => {
                vless::Request {
                    uuid: *uuid,
                    command: vless::Command::Tcp(destination.clone()),
                }
                .encode(&mut head);
                stream
                    .write_all(&head)
                    .await
                    .map_err(|e| fail("request")(e.to_string()))?;
                Ok(Box::new(VlessResponse::new(stream)))
            }
            Header::Trojan(hash) => {
                trojan::Request {
                    hash: *hash,
                    command: trojan::Command::Connect,
                    destination: destination.clone(),
                }
                .encode(&mut head);
                stream
                    .write_all(&head)
                    .await
                    .map_err(|e| fail("request")(e.to_string()))?;
                Ok(stream)
            }
        }
    }
}

/// The TLS settings an entry asks for.
fn tls_config(t: &EntryTls, name: &str) -> Result<Arc<ClientConfig>, String> {
    let provider = switchyard_tunnel::link::pin::provider();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let mut config = if t.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAny(provider)))
            .with_no_client_auth()
    } else if let Some(pem) = &t.certificate_pem {
        let der = rustls_pemfile::certs(&mut pem.as_bytes())
            .next()
            .and_then(Result::ok)
            .ok_or("the pinned certificate is not PEM")?;
        let pin = switchyard_tunnel::link::pin::Pin::of_certificate(&der);
        let verifier = switchyard_tunnel::link::pin::PinnedVerifier::new(name, &[pin], &provider);
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth()
    } else {
        let roots =
            rustls::RootCertStore::from_iter(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    config.alpn_protocols = t.alpn.iter().map(|a| a.as_bytes().to_vec()).collect();
    Ok(Arc::new(config))
}

/// Accepts any certificate: only for entries that say `insecure` (the operator chose
/// it, e.g. a self-signed certificate that a share link cannot pin). The handshake's
/// signatures are still checked, so the peer holds the key of what it presented.
#[derive(Debug)]
struct AcceptAny(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// A VLESS stream (public for the fuzz target): the server's response header (`version`, `addons length`, addons)
/// comes before the destination's bytes and is taken off them here.
pub struct VlessResponse<S> {
    inner: S,
    /// Bytes of the header still to skip; `None` until its length is known.
    skip: Option<usize>,
    head: [u8; 2],
    have: usize,
}

impl<S> VlessResponse<S> {
    /// Reads the destination's bytes from `inner`, the server's header taken off.
    pub fn new(inner: S) -> Self {
        Self {
            inner,
            skip: None,
            head: [0; 2],
            have: 0,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for VlessResponse<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        loop {
            match this.skip {
                Some(0) => return Pin::new(&mut this.inner).poll_read(cx, buf),
                None => {
                    let mut head = ReadBuf::new(&mut this.head[this.have..]);
                    std::task::ready!(Pin::new(&mut this.inner).poll_read(cx, &mut head))?;
                    let n = head.filled().len();
                    if n == 0 {
                        return Poll::Ready(Ok(()));
                    }
                    this.have += n;
                    if this.have == 2 {
                        if this.head[0] != 0 {
                            return Poll::Ready(Err(std::io::Error::new(
                                std::io::ErrorKind::InvalidData,
                                format!("VLESS response version {} (not 0)", this.head[0]),
                            )));
                        }
                        this.skip = Some(usize::from(this.head[1]));
                    }
                }
                Some(left) => {
                    let mut scratch = [0u8; 255];
                    let mut rb = ReadBuf::new(&mut scratch[..left]);
                    std::task::ready!(Pin::new(&mut this.inner).poll_read(cx, &mut rb))?;
                    let n = rb.filled().len();
                    if n == 0 {
                        return Poll::Ready(Ok(()));
                    }
                    this.skip = Some(left - n);
                }
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for VlessResponse<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn the_vless_response_header_is_taken_off_in_any_split() {
        let body = b"hello";
        let mut wire = vec![0u8, 3, 9, 9, 9];
        wire.extend_from_slice(body);
        for split in 1..wire.len() {
            let (a, mut b) = tokio::io::duplex(64);
            let w = wire.clone();
            tokio::spawn(async move {
                b.write_all(&w[..split]).await.unwrap();
                tokio::time::sleep(Duration::from_millis(5)).await;
                b.write_all(&w[split..]).await.unwrap();
            });
            let mut r = VlessResponse::new(a);
            let mut got = vec![0u8; body.len()];
            r.read_exact(&mut got).await.unwrap();
            assert_eq!(got, body, "split at {split}");
        }
        let (a, mut b) = tokio::io::duplex(64);
        b.write_all(&[1, 0]).await.unwrap();
        let err = VlessResponse::new(a).read(&mut [0u8; 4]).await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
    }

    #[test]
    fn entries_this_client_cannot_use_are_refused_by_name() {
        let entry = |protocol| Entry {
            name: "🇩🇪 Frankfurt".into(),
            server: "203.0.113.1".into(),
            port: 443,
            protocol,
            transport: EntryTransport::Tcp,
            tls: None,
        };
        let e = Outbound::new(entry(EntryProtocol::Vless {
            uuid: "nope".into(),
            flow: None,
        }))
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "server \"🇩🇪 Frankfurt\": the VLESS UUID is malformed"
        );
        let e = Outbound::new(entry(EntryProtocol::Shadowsocks {
            method: "2022-blake3-aes-128-gcm".into(),
            password: "x".into(),
        }))
        .unwrap_err();
        assert!(e.to_string().contains("Shadowsocks"), "{e}");
        assert!(
            Outbound::new(entry(EntryProtocol::Trojan {
                password: "p".into()
            }))
            .is_ok()
        );
    }
}
