//! TLS for inbounds: the certificate chain and key from PEM files or inline PEM,
//! swappable live.
//!
//! An inbound's acceptor asks a [`Certificate`] for its key on every handshake, so a
//! certificate renewed in place (same files, new content, as ACME tools do) is
//! served to new connections once the node reloads, while connections already up
//! keep the session they have. Reading the files blocks: callers run [`load`] on the
//! blocking pool.

use std::path::Path;
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

/// Reads a chain and key from PEM files; the error says which file and what is wrong.
/// Inline PEM is [`load_inline`]; a change of either is a renewal ([`Certificate::set`]).
pub fn load(cert: &Path, key: &Path) -> Result<Loaded, String> {
    let read = |p: &Path| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
    let (cert_pem, key_pem) = (read(cert)?, read(key)?);
    let certified = parse(&cert_pem, &key_pem, cert, key)?;
    Ok(Loaded {
        key: Arc::new(certified),
        pem: Arc::new((cert_pem, key_pem)),
    })
}

/// Checks a chain and key given inline (PEM text in the inbound `tag`'s config);
/// errors name the fields.
pub fn load_inline(cert_pem: &str, key_pem: &str, tag: &str) -> Result<Loaded, String> {
    let (cert_field, key_field) = (
        std::path::PathBuf::from(format!("inbound {tag}: security.cert_pem")),
        std::path::PathBuf::from(format!("inbound {tag}: security.key_pem")),
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
) -> Result<CertifiedKey, String> {
    let certs = rustls_pemfile::certs(&mut &cert_pem[..])
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: not a PEM certificate chain: {e}", cert.display()))?;
    if certs.is_empty() {
        return Err(format!("{}: holds no certificate", cert.display()));
    }
    let key_der = rustls_pemfile::private_key(&mut &key_pem[..])
        .map_err(|e| format!("{}: not a PEM private key: {e}", key.display()))?
        .ok_or_else(|| format!("{}: holds no private key", key.display()))?;
    let provider = rustls::crypto::ring::default_provider();
    CertifiedKey::from_der(certs, key_der, &provider).map_err(|e| {
        format!(
            "{} and {} don't make a usable pair: {e}",
            cert.display(),
            key.display()
        )
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

    /// An acceptor that serves whatever this holds at each handshake.
    pub fn acceptor(self: &Arc<Self>) -> Result<TlsAcceptor, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
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
        assert_eq!(e, format!("{}: holds no private key", key.display()));
        let e = load(&dir.path().join("missing"), &key).unwrap_err();
        assert!(e.starts_with(&format!("{}: ", dir.path().join("missing").display())));
    }
}
