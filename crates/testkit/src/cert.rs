//! Self-signed certificates for TLS between the tests' peers.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use tempfile::TempDir;

/// A self-signed certificate (ECDSA P-256) for one name, with its key, as PEM text
/// and as files `cert.pem` and `key.pem` in a temporary directory removed on drop.
///
/// A client trusts it by the certificate alone (sing-box: `"certificate_path"` or
/// `"certificate"` with [`Self::name`] as `"server_name"`, see
/// [`crate::config::tls_client`]). The name may be a DNS name or an IP address.
#[derive(Debug)]
pub struct TestCert {
    name: String,
    cert_pem: String,
    key_pem: String,
    cert_path: PathBuf,
    key_path: PathBuf,
    _dir: TempDir,
}

impl TestCert {
    /// Generates a certificate for `name` and writes its PEM files.
    pub fn new(name: &str) -> Result<Self> {
        let certified = rcgen::generate_simple_self_signed(vec![name.to_owned()])
            .with_context(|| format!("generating a self-signed certificate for {name}"))?;
        let cert_pem = certified.cert.pem();
        let key_pem = certified.signing_key.serialize_pem();
        let dir = tempfile::Builder::new()
            .prefix("switchyard-cert-")
            .tempdir()
            .context("creating a temporary directory for a certificate")?;
        let cert_path = dir.path().join("cert.pem");
        let key_path = dir.path().join("key.pem");
        fs::write(&cert_path, &cert_pem)
            .with_context(|| format!("writing {}", cert_path.display()))?;
        fs::write(&key_path, &key_pem)
            .with_context(|| format!("writing {}", key_path.display()))?;
        Ok(Self {
            name: name.to_owned(),
            cert_pem,
            key_pem,
            cert_path,
            key_path,
            _dir: dir,
        })
    }

    /// The name the certificate is for (its only subject alternative name).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The certificate, PEM.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The private key, PKCS#8 PEM.
    pub fn key_pem(&self) -> &str {
        &self.key_pem
    }

    /// The certificate's PEM file.
    pub fn cert_path(&self) -> &Path {
        &self.cert_path
    }

    /// The private key's PEM file.
    pub fn key_path(&self) -> &Path {
        &self.key_path
    }

    /// A rustls server config serving this certificate (TLS 1.3 and 1.2, ring), for
    /// the tests' own TLS servers; the caller sets ALPN.
    pub fn server_config(&self) -> Result<rustls::ServerConfig> {
        let chain = rustls_pemfile::certs(&mut self.cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .context("reading the test certificate")?;
        let key = rustls_pemfile::private_key(&mut self.key_pem.as_bytes())
            .context("reading the test key")?
            .context("no key in the test key's PEM")?;
        rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .context("TLS versions")?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .context("a server config with the test certificate")
    }

    /// A rustls client config that trusts this certificate alone (its name checked),
    /// for the tests' own TLS clients; the caller sets ALPN.
    pub fn client_config(&self) -> Result<rustls::ClientConfig> {
        Self::client_config_trusting(&[self])
    }

    /// A rustls client config that trusts any of `certs` (a certificate and its
    /// renewal, say).
    pub fn client_config_trusting(certs: &[&Self]) -> Result<rustls::ClientConfig> {
        let mut roots = rustls::RootCertStore::empty();
        for c in certs {
            for cert in rustls_pemfile::certs(&mut c.cert_pem.as_bytes()) {
                roots
                    .add(cert.context("reading the test certificate")?)
                    .context("trusting the test certificate")?;
            }
        }
        Ok(rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .context("TLS versions")?
        .with_root_certificates(roots)
        .with_no_client_auth())
    }
}

impl TestCert {
    /// The certificate, DER.
    pub fn der(&self) -> Result<rustls::pki_types::CertificateDer<'static>> {
        rustls_pemfile::certs(&mut self.cert_pem.as_bytes())
            .next()
            .context("the test certificate holds no certificate")?
            .context("reading the test certificate")
    }
}

/// A TLS connection to `addr` for `name`, trusting any of `trusted`.
pub async fn connect_trusting(
    addr: std::net::SocketAddr,
    name: &str,
    trusted: &[&TestCert],
) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
    let config = TestCert::client_config_trusting(trusted)?;
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .with_context(|| format!("connecting to {addr}"))?;
    let name = rustls::pki_types::ServerName::try_from(name.to_owned())
        .with_context(|| format!("{name:?} is not a server name"))?;
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .with_context(|| format!("TLS handshake with {addr}"))
}

/// The leaf certificate the server showed on `s`.
pub fn served<S>(
    s: &tokio_rustls::client::TlsStream<S>,
) -> Option<rustls::pki_types::CertificateDer<'static>> {
    s.get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
        .map(|c| c.clone().into_owned())
}
