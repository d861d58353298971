//! TLS for inbounds: certificate chain and key from PEM files.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use std::sync::Arc;

use rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

/// Builds an acceptor from PEM files; the error says which file and what is wrong.
pub fn acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor, String> {
    let open = |p: &Path| {
        File::open(p)
            .map(BufReader::new)
            .map_err(|e| format!("{}: {e}", p.display()))
    };
    let certs = rustls_pemfile::certs(&mut open(cert)?)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: not a PEM certificate chain: {e}", cert.display()))?;
    if certs.is_empty() {
        return Err(format!("{}: holds no certificate", cert.display()));
    }
    let key_der = rustls_pemfile::private_key(&mut open(key)?)
        .map_err(|e| format!("{}: not a PEM private key: {e}", key.display()))?
        .ok_or_else(|| format!("{}: holds no private key", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(certs, key_der)
        .map_err(|e| {
            format!(
                "{} and {} don't make a usable pair: {e}",
                cert.display(),
                key.display()
            )
        })?;
    // No ALPN: clients of these protocols offer varied lists (h2, http/1.1 or none)
    // and speak raw bytes or HTTP/1.1 WebSocket whatever they offered.
    Ok(TlsAcceptor::from(Arc::new(config)))
}
