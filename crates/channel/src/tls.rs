//! The TLS configs of both ends. TLS 1.3 only, ring, no ALPN (the connection's purpose
//! is told by the client certificate: none means enrollment).

use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use switchyard_tunnel::link::pin::{PinnedVerifier, provider};

use crate::Pin;
use crate::identity::{IdentityError, PANEL_CERT_NAME, PanelIdentity};

fn read_pair(
    cert_pem: &str,
    key_pem: &str,
    what: &'static str,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), IdentityError> {
    let certs = rustls_pemfile::certs(&mut cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| IdentityError::Malformed(what))?;
    if certs.is_empty() {
        return Err(IdentityError::Malformed(what));
    }
    let key = rustls_pemfile::private_key(&mut key_pem.as_bytes())
        .map_err(|_| IdentityError::Malformed(what))?
        .ok_or(IdentityError::Malformed(what))?;
    Ok((certs, key))
}

/// The panel's listener: serves the channel certificate; a client certificate is
/// optional (enrollment has none) and, when shown, must be signed by the panel's CA.
/// Whether it is *pinned* is the [`crate::Enroller`]'s call after the handshake.
pub(crate) fn panel_server_config(id: &PanelIdentity) -> Result<Arc<ServerConfig>, IdentityError> {
    let mut roots = RootCertStore::empty();
    roots
        .add(CertificateDer::from(id.ca_der()?))
        .map_err(|_| IdentityError::Malformed("CA certificate"))?;
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
        .allow_unauthenticated()
        .build()
        .map_err(|_| IdentityError::Malformed("CA certificate"))?;
    let (certs, key) = read_pair(
        &id.cert_pem,
        id.key_pem.expose(),
        "channel certificate or key",
    )?;
    let config = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|_| IdentityError::Malformed("TLS config"))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(certs, key)
        .map_err(|_| IdentityError::Malformed("channel certificate or key"))?;
    Ok(Arc::new(config))
}

fn pinned_builder(
    pin: Pin,
) -> rustls::ConfigBuilder<ClientConfig, rustls::client::WantsClientCert> {
    let provider = provider();
    let verifier = Arc::new(PinnedVerifier::new(PANEL_CERT_NAME, &[pin], &provider));
    ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("ring supports TLS 1.3")
        .dangerous()
        .with_custom_certificate_verifier(verifier)
}

/// The node's enrollment connection: trusts exactly the pinned panel certificate,
/// shows no certificate.
pub(crate) fn node_enroll_config(pin: Pin) -> Arc<ClientConfig> {
    Arc::new(pinned_builder(pin).with_no_client_auth())
}

/// The node's channel connection: trusts exactly the pinned panel certificate and
/// shows the node certificate the panel issued.
pub(crate) fn node_channel_config(
    pin: Pin,
    cert_pem: &str,
    key_pem: &str,
) -> Result<Arc<ClientConfig>, IdentityError> {
    let (certs, key) = read_pair(cert_pem, key_pem, "node certificate or key")?;
    let config = pinned_builder(pin)
        .with_client_auth_cert(certs, key)
        .map_err(|_| IdentityError::Malformed("node certificate or key"))?;
    Ok(Arc::new(config))
}

/// The name the node sends (SNI) and checks: the panel's certificate always has it.
pub(crate) fn panel_server_name() -> rustls::pki_types::ServerName<'static> {
    rustls::pki_types::ServerName::try_from(PANEL_CERT_NAME).expect("a valid DNS name")
}
