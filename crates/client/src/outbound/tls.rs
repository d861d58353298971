//! TLS to a server: verified against the web's roots, a pinned self-signed
//! certificate (its PEM, or its SHA-256 from a Clash config), or not at all when the
//! entry says `insecure`.

use std::sync::Arc;

use rustls::ClientConfig;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use switchyard_proto::entry::EntryTls;
use switchyard_tunnel::link::pin as cert_pin;

use super::UnsupportedEntry;

/// The TLS settings an entry asks for.
pub(super) fn tls_config(t: &EntryTls, name: &str) -> Result<Arc<ClientConfig>, UnsupportedEntry> {
    let provider = switchyard_tunnel::link::pin::provider();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let mut config = if t.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAny(provider)))
            .with_no_client_auth()
    } else if let Some(pin) = pin(t)? {
        let verifier = cert_pin::PinnedVerifier::new(name, &[pin], &provider);
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

/// The certificate an entry pins: its PEM's, or the SHA-256 a Clash config's
/// `fingerprint` gave when there is no PEM.
fn pin(t: &EntryTls) -> Result<Option<cert_pin::Pin>, UnsupportedEntry> {
    if let Some(pem) = &t.certificate_pem {
        let der = rustls_pemfile::certs(&mut pem.as_bytes())
            .next()
            .and_then(Result::ok)
            .ok_or(UnsupportedEntry::PinNotPem)?;
        return Ok(Some(cert_pin::Pin::of_certificate(&der)));
    }
    Ok(t.certificate_sha256.map(cert_pin::Pin::Certificate))
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
