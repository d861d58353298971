//! What a listener with an ACME certificate serves: the certificate, or the
//! TLS-ALPN-01 challenge certificate to a handshake that offers `acme-tls/1`.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, RwLock};

use rustls::ServerConfig;
use rustls::server::{Acceptor, ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::server::TlsStream;
use tokio_rustls::{LazyConfigAcceptor, TlsAcceptor};

/// The ALPN protocol of TLS-ALPN-01 (RFC 8737).
pub const ACME_TLS: &[u8] = b"acme-tls/1";

/// The most challenges pending at once (one per identifier of an order).
const MAX_PENDING: usize = switchyard_config::acme::MAX_IDENTIFIERS;

/// The certificate served now, and the challenge certificates pending, by the name
/// a validating server sends in SNI ([`challenge_name`]).
#[derive(Debug, Default)]
pub struct Served {
    current: RwLock<Option<Arc<CertifiedKey>>>,
    challenges: RwLock<HashMap<String, Arc<CertifiedKey>>>,
}

/// The SNI a validating server sends for `identifier`: the name itself (lower case,
/// no trailing dot), or for an IP address its reverse-DNS name (RFC 8738).
pub fn challenge_name(identifier: &str) -> String {
    match identifier.parse::<IpAddr>() {
        Ok(IpAddr::V4(v4)) => {
            let [a, b, c, d] = v4.octets();
            format!("{d}.{c}.{b}.{a}.in-addr.arpa")
        }
        Ok(IpAddr::V6(v6)) => {
            let mut name = String::with_capacity(72);
            for byte in v6.octets().iter().rev() {
                name.push_str(&format!("{:x}.{:x}.", byte & 0xf, byte >> 4));
            }
            name.push_str("ip6.arpa");
            name
        }
        Err(_) => identifier.trim_end_matches('.').to_ascii_lowercase(),
    }
}

fn offers_acme(hello: &ClientHello<'_>) -> bool {
    hello.alpn().is_some_and(|mut p| p.any(|p| p == ACME_TLS))
}

impl Served {
    /// The certificate served now, if any.
    pub fn current(&self) -> Option<Arc<CertifiedKey>> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub(crate) fn set_current(&self, key: Arc<CertifiedKey>) {
        *self.current.write().unwrap_or_else(|p| p.into_inner()) = Some(key);
    }

    pub(crate) fn set_challenge(&self, identifier: &str, key: Arc<CertifiedKey>) {
        let mut pending = self.challenges.write().unwrap_or_else(|p| p.into_inner());
        if pending.len() < MAX_PENDING {
            pending.insert(challenge_name(identifier), key);
        }
    }

    pub(crate) fn clear_challenges(&self) {
        self.challenges
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// The challenge certificate for a hello: the one for its SNI, or without SNI
    /// the only one pending.
    fn challenge(&self, hello: &ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let pending = self.challenges.read().unwrap_or_else(|p| p.into_inner());
        match hello.server_name() {
            Some(name) => pending.get(&name.to_ascii_lowercase()).cloned(),
            None if pending.len() == 1 => pending.values().next().cloned(),
            None => None,
        }
    }

    /// A server config that answers challenges only (ALPN `acme-tls/1`).
    fn challenge_config(self: &Arc<Self>) -> Result<Arc<ServerConfig>, rustls::Error> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(Challenges(self.clone())));
        config.alpn_protocols = vec![ACME_TLS.to_vec()];
        Ok(Arc::new(config))
    }
}

/// Resolves a handshake that offers `acme-tls/1` to the pending challenge and every
/// other one to the current certificate: for a listener whose own ALPN list has
/// `acme-tls/1` beside its protocols (the panel's).
impl ResolvesServerCert for Served {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        if offers_acme(&hello) {
            self.challenge(&hello)
        } else {
            self.current()
        }
    }
}

#[derive(Debug)]
struct Challenges(Arc<Served>);

impl ResolvesServerCert for Challenges {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.0.challenge(&hello)
    }
}

/// Accepts a TLS connection on a listener whose certificate `served` holds: a
/// validation (ALPN `acme-tls/1`) gets the challenge certificate and ends there
/// (`None`); any other handshake goes on with `acceptor`'s config (its own ALPN
/// list, resolver and all), so clients see exactly the listener they always did.
pub async fn accept<IO>(
    acceptor: &TlsAcceptor,
    served: &Arc<Served>,
    io: IO,
) -> std::io::Result<Option<TlsStream<IO>>>
where
    IO: AsyncRead + AsyncWrite + Unpin,
{
    let start = LazyConfigAcceptor::new(Acceptor::default(), io).await?;
    if offers_acme(&start.client_hello()) {
        let config = served.challenge_config().map_err(std::io::Error::other)?;
        let mut tls = start.into_stream(config).await?;
        // The validation only looks at the certificate: close cleanly.
        let _ = tokio::io::AsyncWriteExt::shutdown(&mut tls).await;
        return Ok(None);
    }
    start.into_stream(acceptor.config().clone()).await.map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_validation_s_sni_is_the_name_or_the_address_s_reverse_name() {
        assert_eq!(challenge_name("VPN.Example.com."), "vpn.example.com");
        assert_eq!(challenge_name("127.0.0.1"), "1.0.0.127.in-addr.arpa");
        assert_eq!(
            challenge_name("2001:db8::567:89ab"),
            "b.a.9.8.7.6.5.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa"
        );
    }
}
