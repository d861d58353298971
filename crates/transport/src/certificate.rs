//! TLS certificates: a chain and its key from PEM files or inline PEM, swappable
//! live. Node inbounds and the panel's own HTTPS serve them.
//!
//! An acceptor asks a [`Certificate`] for its key on every handshake, so a
//! certificate renewed in place (same files, new content, as ACME tools do) is
//! served to new connections once it is read again, while connections already up
//! keep the session they have. Reading the files blocks: callers run [`load`] on the
//! blocking pool.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use rustls::ServerConfig;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio_rustls::TlsAcceptor;

/// A certificate chain and its key, read and checked.
#[derive(Debug, Clone)]
pub struct Loaded {
    key: Arc<CertifiedKey>,
    /// The files' bytes, to tell a renewal from a reload of the same files.
    pem: Arc<(Vec<u8>, Vec<u8>)>,
}

/// Why a certificate chain and key could not be loaded: the file (for inline PEM, the
/// config field) at fault and what is wrong with it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CertificateError {
    /// The inbound names neither PEM files nor inline PEM.
    #[error("security: neither PEM files nor inline PEM")]
    NoSource,
    /// A file could not be read.
    #[error("{}: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why (`NotFound`, `PermissionDenied`...).
        source: std::io::Error,
    },
    /// The certificate is not PEM.
    #[error("{}: not a PEM certificate chain: {source}", .path.display())]
    CertificatePem {
        /// The file or field.
        path: PathBuf,
        /// What the PEM reader said.
        source: std::io::Error,
    },
    /// The certificate PEM holds no certificate.
    #[error("{}: holds no certificate", .path.display())]
    NoCertificate {
        /// The file or field.
        path: PathBuf,
    },
    /// The key is not PEM.
    #[error("{}: not a PEM private key: {source}", .path.display())]
    KeyPem {
        /// The file or field.
        path: PathBuf,
        /// What the PEM reader said.
        source: std::io::Error,
    },
    /// The key PEM holds no private key.
    #[error("{}: holds no private key", .path.display())]
    NoKey {
        /// The file or field.
        path: PathBuf,
    },
    /// The key does not fit the certificate, or rustls can't use the pair.
    #[error("{} and {} don't make a usable pair: {source}", .cert.display(), .key.display())]
    Pair {
        /// The certificate's file or field.
        cert: PathBuf,
        /// The key's file or field.
        key: PathBuf,
        /// What rustls said.
        source: rustls::Error,
    },
}

/// Reads a chain and key from PEM files; the error says which file and what is wrong.
/// Inline PEM is [`load_inline`]; a change of either is a renewal ([`Certificate::set`]).
pub fn load(cert: &Path, key: &Path) -> Result<Loaded, CertificateError> {
    let read = |p: &Path| {
        std::fs::read(p).map_err(|source| CertificateError::Read {
            path: p.to_owned(),
            source,
        })
    };
    let (cert_pem, key_pem) = (read(cert)?, read(key)?);
    let certified = parse(&cert_pem, &key_pem, cert, key)?;
    Ok(Loaded {
        key: Arc::new(certified),
        pem: Arc::new((cert_pem, key_pem)),
    })
}

/// Checks a chain and key given inline (PEM text in the inbound `tag`'s config);
/// errors name the fields.
pub fn load_inline(cert_pem: &str, key_pem: &str, tag: &str) -> Result<Loaded, CertificateError> {
    let (cert_field, key_field) = (
        PathBuf::from(format!("inbound {tag}: security.cert_pem")),
        PathBuf::from(format!("inbound {tag}: security.key_pem")),
    );
    let certified = parse(
        cert_pem.as_bytes(),
        key_pem.as_bytes(),
        &cert_field,
        &key_field,
    )?;
    Ok(Loaded {
        key: Arc::new(certified),
        pem: Arc::new((cert_pem.as_bytes().to_vec(), key_pem.as_bytes().to_vec())),
    })
}

/// Checks a chain and key given as PEM text, read from the files `cert` and `key`
/// (named in the error).
pub fn parse(
    cert_pem: &[u8],
    key_pem: &[u8],
    cert: &Path,
    key: &Path,
) -> Result<CertifiedKey, CertificateError> {
    let certs = rustls_pemfile::certs(&mut &cert_pem[..])
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| CertificateError::CertificatePem {
            path: cert.to_owned(),
            source,
        })?;
    if certs.is_empty() {
        return Err(CertificateError::NoCertificate {
            path: cert.to_owned(),
        });
    }
    let key_der = rustls_pemfile::private_key(&mut &key_pem[..])
        .map_err(|source| CertificateError::KeyPem {
            path: key.to_owned(),
            source,
        })?
        .ok_or_else(|| CertificateError::NoKey {
            path: key.to_owned(),
        })?;
    let provider = rustls::crypto::ring::default_provider();
    CertifiedKey::from_der(certs, key_der, &provider).map_err(|source| CertificateError::Pair {
        cert: cert.to_owned(),
        key: key.to_owned(),
        source,
    })
}

/// The certificate an inbound serves now; [`Certificate::set`] swaps it for new
/// handshakes.
#[derive(Debug)]
pub struct Certificate {
    current: RwLock<Loaded>,
}

impl Certificate {
    /// Serves `loaded`.
    pub fn new(loaded: Loaded) -> Arc<Self> {
        Arc::new(Self {
            current: RwLock::new(loaded),
        })
    }

    /// Serves `loaded` to new handshakes; `true` when it differs from what was served.
    pub fn set(&self, loaded: Loaded) -> bool {
        let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
        let changed = current.pem != loaded.pem;
        if changed {
            *current = loaded;
        }
        changed
    }

    /// An acceptor that serves whatever this holds at each handshake; the error is
    /// rustls refusing its settings.
    pub fn acceptor(self: &Arc<Self>) -> Result<TlsAcceptor, rustls::Error> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_cert_resolver(self.clone());
        // No ALPN: clients of these protocols offer varied lists (h2, http/1.1 or none)
        // and speak raw bytes or HTTP/1.1 WebSocket whatever they offered.
        Ok(TlsAcceptor::from(Arc::new(config)))
    }
}

impl ResolvesServerCert for Certificate {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(
            self.current
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .key
                .clone(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(name: &str, dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
        let c = switchyard_testkit::TestCert::new(name).unwrap();
        let (cert, key) = (dir.join("c.pem"), dir.join("k.pem"));
        std::fs::write(&cert, c.cert_pem()).unwrap();
        std::fs::write(&key, c.key_pem()).unwrap();
        (cert, key)
    }

    #[test]
    fn a_renewal_is_told_from_a_reload_and_bad_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = pair("a.test", dir.path());
        let c = Certificate::new(load(&cert, &key).unwrap());
        assert!(
            !c.set(load(&cert, &key).unwrap()),
            "same files, same content"
        );
        pair("b.test", dir.path());
        assert!(c.set(load(&cert, &key).unwrap()), "renewed in place");
        std::fs::write(&key, "nope").unwrap();
        let e = load(&cert, &key).unwrap_err();
        assert!(matches!(e, CertificateError::NoKey { .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            format!("{}: holds no private key", key.display())
        );
        let e = load(&dir.path().join("missing"), &key).unwrap_err();
        assert!(
            matches!(&e, CertificateError::Read { source, .. } if source.kind() == std::io::ErrorKind::NotFound),
            "{e:?}"
        );
        let e = e.to_string();
        assert!(e.starts_with(&format!("{}: ", dir.path().join("missing").display())));
    }
}
