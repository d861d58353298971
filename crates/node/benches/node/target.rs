//! Where the load goes: the plain HTTP target, or the same behind TLS 1.3.
//!
//! [`TlsSite`] is a TLS 1.3 server for [`SITE_NAME`] on 127.0.0.1 that forwards what
//! it decrypts to the [`HttpTarget`]. It plays two parts: the REALITY `dest` of both
//! servers (a REALITY server hands it the hellos it does not accept, and Xray's dials
//! it for every connection to mirror its handshake), and the HTTPS target of the
//! "inner TLS 1.3" cases, where the bench's client speaks TLS to it through the
//! proxy. Only then is Vision's direct copy used: it engages when the traffic inside
//! is TLS 1.3.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio::time::timeout;
use tokio_rustls::{TlsAcceptor, TlsConnector};

use switchyard_testkit::{HttpTarget, LOCALHOST, TestCert, http, socks5};

use crate::case::{Case, Inner, Peer, SITE_NAME};

/// How long a TLS handshake with the site may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The TLS 1.3 site in front of the HTTP target; it stops accepting when dropped.
pub(crate) struct TlsSite {
    addr: SocketAddr,
    connector: TlsConnector,
    accept: JoinHandle<()>,
    _cert: TestCert,
}

impl TlsSite {
    /// Serves TLS 1.3 only (REALITY needs it of its `dest`) with a fresh certificate
    /// for [`SITE_NAME`], forwarding each connection to `upstream`.
    pub(crate) async fn start(upstream: SocketAddr) -> Result<Self> {
        let cert = TestCert::new(SITE_NAME)?;
        let chain = rustls_pemfile::certs(&mut cert.cert_pem().as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .context("reading the site's certificate")?;
        let key = rustls_pemfile::private_key(&mut cert.key_pem().as_bytes())
            .context("reading the site's key")?
            .context("the site's key PEM holds no key")?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let server = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_protocol_versions(&[&rustls::version::TLS13])?
            .with_no_client_auth()
            .with_single_cert(chain.clone(), key)?;
        let mut roots = rustls::RootCertStore::empty();
        for c in chain {
            roots.add(c)?;
        }
        let client = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])?
            .with_root_certificates(roots)
            .with_no_client_auth();

        let acceptor = TlsAcceptor::from(Arc::new(server));
        let listener = TcpListener::bind((LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let accept = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    // Hellos a REALITY server mirrors and then drops end here.
                    let Ok(Ok(mut tls)) = timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await
                    else {
                        return;
                    };
                    let Ok(mut up) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    // The target's close becomes a close_notify to the client.
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut up).await;
                });
            }
        });
        Ok(Self {
            addr,
            connector: TlsConnector::from(Arc::new(client)),
            accept,
            _cert: cert,
        })
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for TlsSite {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// Where a response ends for the bench's client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// At the close of the stream, which must come right after the announced bytes:
    /// the sing-box cases, whose client closes as soon as the server does.
    Close,
    /// After the announced `Content-Length` bytes, as a browser reads it: the Xray
    /// cases. Xray's client holds a connection whose server side has ended open for
    /// its `uplinkOnly` policy (2 s by default) before it closes the SOCKS side, so
    /// waiting for the close would time that policy, not the servers.
    Length,
}

impl End {
    pub(crate) fn of(peer: Peer) -> Self {
        match peer {
            Peer::SingBox => Self::Close,
            Peer::Xray => Self::Length,
        }
    }
}

/// A case's target: where the proxy connects, whether the bench's client speaks TLS
/// to it, and where a response ends. Cheap to clone into each connection's task.
#[derive(Clone)]
pub(crate) struct Target {
    addr: SocketAddr,
    tls: Option<TlsConnector>,
    end: End,
}

impl Target {
    pub(crate) fn new(case: Case, http: &HttpTarget, site: &TlsSite) -> Self {
        match case.inner {
            Inner::Http => Self::plain(http, End::of(case.peer)),
            Inner::Tls13 => Self {
                addr: site.addr,
                tls: Some(site.connector.clone()),
                end: End::of(case.peer),
            },
        }
    }

    /// The plain HTTP target.
    pub(crate) fn plain(http: &HttpTarget, end: End) -> Self {
        Self {
            addr: http.addr(),
            tls: None,
            end,
        }
    }

    /// Fetches `n` bytes through the SOCKS5 proxy at `proxy`, every byte checked;
    /// the body's length.
    pub(crate) async fn get(&self, proxy: SocketAddr, n: u64) -> Result<u64> {
        self.fetch(socks5::connect(proxy, self.addr).await?, n)
            .await
    }

    /// Fetches `n` bytes over TCP straight from the target, no proxy between: the
    /// physical reference.
    pub(crate) async fn get_direct(&self, n: u64) -> Result<u64> {
        self.fetch(TcpStream::connect(self.addr).await?, n).await
    }

    async fn fetch(&self, tcp: TcpStream, n: u64) -> Result<u64> {
        match &self.tls {
            None => read(tcp, n, self.end).await,
            Some(connector) => {
                let name = ServerName::try_from(SITE_NAME)?;
                let tls = timeout(HANDSHAKE_TIMEOUT, connector.connect(name, tcp))
                    .await
                    .context("the TLS handshake with the site timed out")?
                    .context("the TLS handshake with the site")?;
                read(tls, n, self.end).await
            }
        }
    }
}

async fn read<S>(mut stream: S, n: u64, end: End) -> Result<u64>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    match end {
        End::Close => http::get_bytes(stream, n).await,
        End::Length => {
            http::get_bytes_by_length(&mut stream, n).await?;
            Ok(n)
        }
    }
}
