//! TLS to a CDN or reverse proxy in front of a profile's listening side.
//!
//! ```text
//! WebSocket behind a CDN:    TCP ─ TLS (the CDN's certificate) ─ HTTP/1.1 Upgrade ─ messages ─ TLS 1.3 (pinned) ─ link bytes
//! HTTPUpgrade behind a CDN:  TCP ─ TLS (the CDN's certificate) ─ HTTP/1.1 Upgrade ─ TLS 1.3 (pinned) ─ link bytes
//! XHTTP, gRPC behind a CDN:  TCP ─ TLS (the CDN's certificate, ALPN h2) ─ HTTP requests ─ TLS 1.3 (pinned) ─ link bytes
//! ```
//! The CDN ends the outer TLS and passes the upgrade on to the listening side in
//! plain HTTP; the link's own TLS, pinned, runs inside, end to end. The outer
//! certificate is checked the way a browser checks it: the web's roots (and, for a
//! proxy with a private CA, the one root the profile names), for the CDN's name.

use std::sync::{Arc, OnceLock};

use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use switchyard_transport::dial::Layer;

use super::pin::provider;

/// What the dialing side needs for the outer TLS. Its client config is built once,
/// on the first dial, and shared by the dials after it (and by clones).
#[derive(Clone)]
pub struct OuterTls {
    /// The CDN's name: the SNI sent and the name checked.
    pub server_name: String,
    /// A root trusted besides the web's, PEM.
    pub ca_pem: Option<String>,
    built: Arc<OnceLock<Result<Layer, OuterTlsError>>>,
    built_h2: Arc<OnceLock<Result<Layer, OuterTlsError>>>,
}

impl OuterTls {
    /// TLS to the CDN `server_name`, trusting the web's roots and `ca_pem`.
    pub fn new(server_name: String, ca_pem: Option<String>) -> Self {
        Self {
            server_name,
            ca_pem,
            built: Arc::default(),
            built_h2: Arc::default(),
        }
    }
}

impl PartialEq for OuterTls {
    fn eq(&self, other: &Self) -> bool {
        (&self.server_name, &self.ca_pem) == (&other.server_name, &other.ca_pem)
    }
}

impl Eq for OuterTls {}

impl std::hash::Hash for OuterTls {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (&self.server_name, &self.ca_pem).hash(state);
    }
}

impl std::fmt::Debug for OuterTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OuterTls")
            .field("server_name", &self.server_name)
            .field("ca_pem", &self.ca_pem.is_some())
            .finish()
    }
}

/// Why the outer TLS cannot be set up (the profile's config; validation catches these
/// first).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OuterTlsError {
    /// `server_name` is not a DNS name or an IP address.
    #[error("outer_tls.server_name {0:?} is not a DNS name or an IP address")]
    Name(String),
    /// `ca_pem` holds no certificate the verifier takes.
    #[error("outer_tls.ca_pem: {0}")]
    Ca(String),
}

impl OuterTls {
    /// The transport layer that speaks it: TLS for `server_name`, offering HTTP/1.1
    /// (the upgrade above is HTTP/1.1), checked against the web's roots and `ca_pem`.
    pub fn layer(&self) -> Result<Layer, OuterTlsError> {
        self.built
            .get_or_init(|| self.build(&[b"http/1.1"]))
            .clone()
    }

    /// The same, offering HTTP/2 first and HTTP/1.1 (XHTTP and gRPC, whose
    /// requests go over it).
    pub fn layer_h2(&self) -> Result<Layer, OuterTlsError> {
        self.built_h2
            .get_or_init(|| self.build(&[b"h2", b"http/1.1"]))
            .clone()
    }

    fn build(&self, alpn: &[&[u8]]) -> Result<Layer, OuterTlsError> {
        let server_name = ServerName::try_from(self.server_name.clone())
            .map_err(|_| OuterTlsError::Name(self.server_name.clone()))?;
        let mut roots =
            rustls::RootCertStore::from_iter(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        if let Some(pem) = &self.ca_pem {
            let mut added = 0;
            for cert in rustls_pemfile::certs(&mut pem.as_bytes()) {
                let cert = cert.map_err(|e| OuterTlsError::Ca(e.to_string()))?;
                roots
                    .add(cert)
                    .map_err(|e| OuterTlsError::Ca(e.to_string()))?;
                added += 1;
            }
            if added == 0 {
                return Err(OuterTlsError::Ca("no certificate in it".into()));
            }
        }
        let mut config = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| OuterTlsError::Ca(e.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Ok(Layer::Tls {
            config: Arc::new(config),
            server_name,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_name_or_ca_is_named() {
        let outer =
            |name: &str, ca: Option<&str>| OuterTls::new(name.into(), ca.map(str::to_owned));
        assert!(outer("cdn.example.com", None).layer().is_ok());
        assert_eq!(
            outer("not a name", None).layer().err(),
            Some(OuterTlsError::Name("not a name".into()))
        );
        assert!(matches!(
            outer("cdn.example.com", Some("no pem here")).layer(),
            Err(OuterTlsError::Ca(_))
        ));
        // Built once: later dials and clones share the client config.
        let once = outer("cdn.example.com", None);
        let config = |o: &OuterTls| match o.layer() {
            Ok(Layer::Tls { config, .. }) => config,
            other => panic!("{other:?}"),
        };
        assert!(Arc::ptr_eq(&config(&once), &config(&once.clone())));
        let cert = rcgen::generate_simple_self_signed(vec!["cdn.test".into()]).unwrap();
        assert!(outer("cdn.test", Some(&cert.cert.pem())).layer().is_ok());
    }
}
