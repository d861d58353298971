//! HTTPS with a certificate from an ACME server (`acme` in the panel config): the
//! panel obtains it, answers the server's TLS-ALPN-01 challenge on its own listener
//! (a handshake offering ALPN `acme-tls/1` gets the challenge certificate), keeps the
//! certificate, its key and the ACME account in `DATA_DIR/acme/` (0600), serves it,
//! and renews it in place once fewer than `renew_days` are left
//! ([`switchyard_acme`], which nodes' inbounds use too).

use std::path::PathBuf;
use std::sync::Arc;

use switchyard_acme::{ACME_TLS, Keeper};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use crate::config::AcmeSettings;

pub use switchyard_acme::check_issued;

/// Starts obtaining and renewing (until `stop`) and gives the acceptor both listeners
/// use; the error is rustls refusing its settings.
pub(crate) fn start(
    mut settings: AcmeSettings,
    identifiers: Vec<String>,
    dir: PathBuf,
    stop: CancellationToken,
) -> Result<TlsAcceptor, String> {
    settings.identifiers = identifiers;
    let keeper = Keeper::new(settings, dir);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    // The challenge's protocol beside HTTP/1.1: [`switchyard_acme::Served`] gives a
    // handshake that offers it the challenge certificate.
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_cert_resolver(keeper.served().clone());
    config.alpn_protocols = vec![b"http/1.1".to_vec(), ACME_TLS.to_vec()];
    let each = stop.clone();
    switchyard_tunnel::supervise::supervise(
        "panel acme: certificate keeper".into(),
        stop,
        Arc::default(),
        move || keeper.clone().run(each.clone()),
    );
    Ok(TlsAcceptor::from(Arc::new(config)))
}
