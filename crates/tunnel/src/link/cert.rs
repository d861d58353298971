//! The tunnel's certificate: issued (self-signed, ECDSA P-256) for the tunnel's
//! certificate name, and the TLS configs of both sides of a link.
//!
//! The listening side serves the certificate; the dialing side pins it
//! ([`super::pin`]). Both configs speak TLS 1.3 only.

use std::sync::Arc;

use rcgen::{CertificateParams, ExtendedKeyUsagePurpose, KeyPair, PKCS_ECDSA_P256_SHA256};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConfig, ServerConfig};

use super::pin::{Pin, PinError, PinnedVerifier, provider};
use crate::credentials::certificate_name;

/// A certificate the panel issued for a tunnel.
#[derive(Clone, PartialEq, Eq)]
pub struct IssuedCert {
    /// The certificate, PEM.
    pub cert_pem: String,
    /// Its private key (PKCS#8), PEM. `Debug` never shows it.
    pub key_pem: String,
    /// The pin of exactly this certificate (what the other half is given by default).
    pub pin: Pin,
    /// The pin of its key, which also accepts a re-issue with the same key.
    pub key_pin: Pin,
}

impl core::fmt::Debug for IssuedCert {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("IssuedCert")
            .field("pin", &self.pin)
            .field("key_pin", &self.key_pin)
            .finish_non_exhaustive()
    }
}

/// Why a certificate could not be issued or a TLS config built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CertError {
    /// rcgen failed to make the key or certificate.
    #[error("issuing the certificate for {name}: {reason}")]
    Issue {
        /// The certificate name.
        name: String,
        /// What rcgen said.
        reason: String,
    },
    /// The PEM holds no certificate.
    #[error("the tunnel certificate PEM holds no certificate")]
    NoCertificate,
    /// The PEM holds no private key.
    #[error("the tunnel key PEM holds no private key")]
    NoKey,
    /// The PEM could not be read.
    #[error("the tunnel certificate or key PEM is malformed: {0}")]
    Pem(String),
    /// rustls refused the pair (for example a key that does not fit the certificate).
    #[error("the tunnel certificate and key do not make a TLS config: {0}")]
    Tls(String),
    /// The certificate could not be pinned.
    #[error(transparent)]
    Pin(#[from] PinError),
}

/// Issues a fresh self-signed certificate with a fresh key for `tunnel`.
pub fn issue(tunnel: &str) -> Result<IssuedCert, CertError> {
    let name = certificate_name(tunnel);
    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).map_err(|e| CertError::Issue {
        name: name.clone(),
        reason: e.to_string(),
    })?;
    issue_with(&name, key, |_| {})
}

/// Re-issues the certificate for `tunnel` with an existing key (PEM), so a key pin
/// keeps working.
pub fn reissue(tunnel: &str, key_pem: &str) -> Result<IssuedCert, CertError> {
    let key = KeyPair::from_pem(key_pem).map_err(|e| CertError::Pem(e.to_string()))?;
    issue_with(&certificate_name(tunnel), key, |_| {})
}

/// Issues for a certificate name with `key`, letting the caller adjust the parameters
/// (tests make expired certificates with it).
#[doc(hidden)]
pub fn issue_with(
    name: &str,
    key: KeyPair,
    adjust: impl FnOnce(&mut CertificateParams),
) -> Result<IssuedCert, CertError> {
    let fail = |e: rcgen::Error| CertError::Issue {
        name: name.to_owned(),
        reason: e.to_string(),
    };
    let mut params = CertificateParams::new(vec![name.to_owned()]).map_err(fail)?;
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    adjust(&mut params);
    let cert = params.self_signed(&key).map_err(fail)?;
    Ok(IssuedCert {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
        pin: Pin::of_certificate(cert.der()),
        key_pin: Pin::of_public_key(cert.der())?,
    })
}

/// Reads the certificate chain and key from PEM.
pub fn read_pem(
    cert_pem: &str,
    key_pem: &str,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), CertError> {
    let certs = rustls_pemfile::certs(&mut cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CertError::Pem(e.to_string()))?;
    if certs.is_empty() {
        return Err(CertError::NoCertificate);
    }
    let key = rustls_pemfile::private_key(&mut key_pem.as_bytes())
        .map_err(|e| CertError::Pem(e.to_string()))?
        .ok_or(CertError::NoKey)?;
    Ok((certs, key))
}

/// The listening side's TLS config: serves the tunnel certificate, TLS 1.3 only.
pub fn server_config(cert_pem: &str, key_pem: &str) -> Result<Arc<ServerConfig>, CertError> {
    let (certs, key) = read_pem(cert_pem, key_pem)?;
    let config = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| CertError::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| CertError::Tls(e.to_string()))?;
    Ok(Arc::new(config))
}

/// The certificate a listening side serves, swappable while it runs: a re-issued
/// certificate applies to new links; links already up keep theirs.
#[derive(Debug)]
pub struct CertSwap {
    current: std::sync::RwLock<Arc<rustls::sign::CertifiedKey>>,
}

impl CertSwap {
    fn certified(
        cert_pem: &str,
        key_pem: &str,
    ) -> Result<Arc<rustls::sign::CertifiedKey>, CertError> {
        let (certs, key) = read_pem(cert_pem, key_pem)?;
        let signing = provider()
            .key_provider
            .load_private_key(key)
            .map_err(|e| CertError::Tls(e.to_string()))?;
        Ok(Arc::new(rustls::sign::CertifiedKey::new(certs, signing)))
    }

    /// Serves this certificate and key from now on.
    pub fn set(&self, cert_pem: &str, key_pem: &str) -> Result<(), CertError> {
        let next = Self::certified(cert_pem, key_pem)?;
        *self.current.write().unwrap_or_else(|p| p.into_inner()) = next;
        Ok(())
    }
}

impl rustls::server::ResolvesServerCert for CertSwap {
    fn resolve(
        &self,
        _hello: rustls::server::ClientHello<'_>,
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        Some(
            self.current
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        )
    }
}

/// Like [`server_config`], with the certificate behind a [`CertSwap`].
pub fn swappable_server_config(
    cert_pem: &str,
    key_pem: &str,
) -> Result<(Arc<ServerConfig>, Arc<CertSwap>), CertError> {
    let swap = Arc::new(CertSwap {
        current: std::sync::RwLock::new(CertSwap::certified(cert_pem, key_pem)?),
    });
    let config = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| CertError::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_cert_resolver(swap.clone());
    Ok((Arc::new(config), swap))
}

/// The dialing side's TLS config: accepts only `pins` for `name`, TLS 1.3 only.
pub fn client_config(name: &str, pins: &[Pin]) -> Arc<ClientConfig> {
    let provider = provider();
    let verifier = Arc::new(PinnedVerifier::new(name, pins, &provider));
    let config = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("ring supports TLS 1.3")
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Arc::new(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issued_certificates_are_pinned_by_certificate_and_by_key() {
        let a = issue("eu").unwrap();
        let (certs, _) = read_pem(&a.cert_pem, &a.key_pem).unwrap();
        assert_eq!(a.pin, Pin::of_certificate(&certs[0]));
        assert!(a.key_pin.matches(&certs[0]).unwrap());
        let again = reissue("eu", &a.key_pem).unwrap();
        assert_ne!(again.pin, a.pin);
        assert_eq!(again.key_pin, a.key_pin);
        assert_ne!(issue("eu").unwrap().key_pin, a.key_pin);
        assert!(server_config(&a.cert_pem, &a.key_pem).is_ok());
        let other = issue("eu").unwrap();
        assert!(matches!(
            server_config(&a.cert_pem, &other.key_pem),
            Err(CertError::Tls(_))
        ));
        assert_eq!(
            server_config("", &a.key_pem).unwrap_err(),
            CertError::NoCertificate
        );
        assert!(!format!("{a:?}").contains("PRIVATE"));
    }
}
