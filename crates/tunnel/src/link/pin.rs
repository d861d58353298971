//! Pins and the dialing side's certificate check.
//!
//! A [`Pin`] names exactly one certificate (SHA-256 of its DER) or one key (SHA-256 of
//! its SubjectPublicKeyInfo, which survives re-issuing the certificate with the same
//! key). [`PinnedVerifier`] accepts a server certificate only when it matches the pin,
//! is valid now, is signed by its own key and names the expected tunnel; it never
//! consults a CA and never accepts any other certificate. Links speak TLS 1.3 only.

use core::fmt;
use core::str::FromStr;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, OtherError, SignatureScheme};
use sha2::{Digest, Sha256};

/// What a peer's certificate is pinned to. In config: `cert:<64 hex>` or `key:<64 hex>`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pin {
    /// SHA-256 of the exact certificate (DER).
    Certificate([u8; 32]),
    /// SHA-256 of the certificate's SubjectPublicKeyInfo (DER, with its outer SEQUENCE).
    PublicKey([u8; 32]),
}

/// Why a certificate was refused, or a pin could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PinError {
    /// The peer showed a certificate other than the pinned ones.
    #[error(
        "pin mismatch: the peer for {name} showed a certificate with {found}, expected {}; \
         re-sync the tunnel so both halves have the current certificate",
        list(.expected)
    )]
    Mismatch {
        /// The name the link expected.
        name: String,
        /// The pins configured (any one of them would do).
        expected: Vec<Pin>,
        /// The kind of pin of the first one, computed from what the peer showed.
        found: Pin,
    },
    /// No pin is configured, so no certificate could be trusted.
    #[error("no pin is configured for {0}")]
    NoPin(String),
    /// The pinned certificate does not name the tunnel.
    #[error("the pinned certificate is not issued for {0}")]
    WrongName(String),
    /// The certificate could not be parsed.
    #[error("the peer's certificate is malformed: {0}")]
    BadCertificate(String),
    /// A pin in config is not `cert:<64 hex>` or `key:<64 hex>`.
    #[error("pin {0:?} is not `cert:<64 hex digits>` or `key:<64 hex digits>`")]
    Syntax(String),
}

impl Pin {
    /// The pin of exactly this certificate.
    pub fn of_certificate(der: &[u8]) -> Self {
        Self::Certificate(Sha256::digest(der).into())
    }

    /// The pin of this certificate's key.
    pub fn of_public_key(der: &[u8]) -> Result<Self, PinError> {
        let cert = CertificateDer::from(der);
        let ee = webpki::EndEntityCert::try_from(&cert)
            .map_err(|e| PinError::BadCertificate(e.to_string()))?;
        Ok(Self::PublicKey(
            Sha256::digest(ee.subject_public_key_info().as_ref()).into(),
        ))
    }

    /// The same kind of pin computed from `der`.
    pub fn same_kind_of(&self, der: &[u8]) -> Result<Self, PinError> {
        match self {
            Self::Certificate(_) => Ok(Self::of_certificate(der)),
            Self::PublicKey(_) => Self::of_public_key(der),
        }
    }

    /// Whether `der` is the pinned certificate (or carries the pinned key).
    pub fn matches(&self, der: &[u8]) -> Result<bool, PinError> {
        Ok(self.same_kind_of(der)? == *self)
    }
}

impl fmt::Display for Pin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (kind, hash) = match self {
            Self::Certificate(h) => ("cert", h),
            Self::PublicKey(h) => ("key", h),
        };
        f.write_str(kind)?;
        f.write_str(":")?;
        hash.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Debug for Pin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pin({self})")
    }
}

impl FromStr for Pin {
    type Err = PinError;

    /// Reads the config's syntax (`switchyard_config::tunnel::parse_pin`).
    fn from_str(text: &str) -> Result<Self, PinError> {
        use switchyard_config::tunnel::{PinKind, parse_pin};
        match parse_pin(text) {
            Some((PinKind::Certificate, hash)) => Ok(Self::Certificate(hash)),
            Some((PinKind::PublicKey, hash)) => Ok(Self::PublicKey(hash)),
            None => Err(PinError::Syntax(text.to_owned())),
        }
    }
}

fn list(pins: &[Pin]) -> String {
    let all: Vec<String> = pins.iter().map(Pin::to_string).collect();
    all.join(" or ")
}

/// The crypto every link uses: ring, as the rest of the workspace, with AES-128-GCM
/// first. Both ends of a link are ours, so their order decides: AES-128-GCM costs
/// about a fifth less per byte than AES-256-GCM (10 rounds against 14) with no
/// practical loss of strength, and it is what Go's clients pick on AES hardware.
pub fn provider() -> Arc<CryptoProvider> {
    let mut provider = rustls::crypto::ring::default_provider();
    provider
        .cipher_suites
        .sort_by_key(|s| s.suite() != rustls::CipherSuite::TLS13_AES_128_GCM_SHA256);
    Arc::new(provider)
}

/// Accepts exactly the pinned certificates (or keys) for one name. Several pins let a
/// re-issued certificate, new key included, be rolled out with an overlap: the
/// dialing side accepts the old and the new one until the listening side has switched.
#[derive(Debug)]
pub struct PinnedVerifier {
    name: String,
    pins: Vec<Pin>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl PinnedVerifier {
    /// A verifier for links to `name` pinned to any of `pins`.
    pub fn new(name: &str, pins: &[Pin], provider: &CryptoProvider) -> Self {
        Self {
            name: name.to_owned(),
            pins: pins.to_vec(),
            algorithms: provider.signature_verification_algorithms,
        }
    }

    /// Whether `der` matches one of the pins; else the mismatch to report.
    fn check_pins(&self, der: &[u8]) -> Result<(), PinError> {
        let first = self
            .pins
            .first()
            .ok_or_else(|| PinError::NoPin(self.name.clone()))?;
        for pin in &self.pins {
            if pin.matches(der)? {
                return Ok(());
            }
        }
        Err(PinError::Mismatch {
            name: self.name.clone(),
            expected: self.pins.clone(),
            found: first.same_kind_of(der)?,
        })
    }

    fn refuse(e: PinError) -> rustls::Error {
        rustls::Error::InvalidCertificate(CertificateError::Other(OtherError(Arc::new(e))))
    }
}

/// The [`PinError`] inside an error a TLS handshake returned, if it was ours.
pub fn pin_error_in<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a PinError> {
    let mut cur = Some(e);
    while let Some(e) = cur {
        if let Some(p) = e.downcast_ref::<PinError>() {
            return Some(p);
        }
        if let Some(rustls::Error::InvalidCertificate(CertificateError::Other(o))) =
            e.downcast_ref::<rustls::Error>()
        {
            return o.0.downcast_ref::<PinError>();
        }
        cur = e.source();
    }
    None
}

fn webpki_to_rustls(e: webpki::Error) -> rustls::Error {
    let c = match e {
        webpki::Error::CertExpired { .. } => CertificateError::Expired,
        webpki::Error::CertNotValidYet { .. } => CertificateError::NotValidYet,
        webpki::Error::InvalidSignatureForPublicKey | webpki::Error::UnknownIssuer => {
            CertificateError::BadSignature
        }
        webpki::Error::CertNotValidForName(_) => CertificateError::NotValidForName,
        other => CertificateError::Other(OtherError(Arc::new(other))),
    };
    rustls::Error::InvalidCertificate(c)
}

impl ServerCertVerifier for PinnedVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        // Intermediates play no part: trust comes from the pins alone, never a chain.
        self.check_pins(end_entity).map_err(Self::refuse)?;
        // A pinned key may sit in a re-issued certificate: it must still be valid now,
        // signed by that key, and for this tunnel.
        let ee = webpki::EndEntityCert::try_from(end_entity)
            .map_err(|e| Self::refuse(PinError::BadCertificate(e.to_string())))?;
        let anchor = webpki::anchor_from_trusted_cert(end_entity).map_err(webpki_to_rustls)?;
        ee.verify_for_usage(
            self.algorithms.all,
            &[anchor],
            &[],
            now,
            webpki::KeyUsage::server_auth(),
            None,
            None,
        )
        .map_err(webpki_to_rustls)?;
        let name = ServerName::try_from(self.name.as_str())
            .map_err(|_| Self::refuse(PinError::WrongName(self.name.clone())))?;
        ee.verify_is_valid_for_subject_name(&name)
            .map_err(|_| Self::refuse(PinError::WrongName(self.name.clone())))?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        // Link configs offer TLS 1.3 only, so this is never reached.
        Err(rustls::Error::General("links speak TLS 1.3 only".into()))
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn links_prefer_aes_128_gcm_and_keep_the_rest() {
        let suites: Vec<_> = super::provider()
            .cipher_suites
            .iter()
            .map(|s| s.suite())
            .collect();
        assert_eq!(suites[0], rustls::CipherSuite::TLS13_AES_128_GCM_SHA256);
        let all = rustls::crypto::ring::default_provider().cipher_suites.len();
        assert_eq!(suites.len(), all);
    }

    use super::*;

    #[test]
    fn pins_round_trip_through_config_text() {
        let c = Pin::Certificate([0xab; 32]);
        let k = Pin::PublicKey([1; 32]);
        assert_eq!(c.to_string(), format!("cert:{}", "ab".repeat(32)));
        assert_eq!(c.to_string().parse::<Pin>(), Ok(c));
        assert_eq!(k.to_string().parse::<Pin>(), Ok(k));
        for bad in ["", "cert:", "spki:00", &format!("sha:{}", "00".repeat(32))] {
            assert_eq!(bad.parse::<Pin>(), Err(PinError::Syntax(bad.into())));
        }
        assert!(format!("cert:{}", "zz".repeat(32)).parse::<Pin>().is_err());
    }
}
