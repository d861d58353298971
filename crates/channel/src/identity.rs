//! The panel's identity: its CA (which signs nodes' client certificates) and the
//! certificate its channel listener serves.
//!
//! The channel certificate is **self-signed** (ECDSA P-256), not signed by the CA:
//! nodes trust it by its pin alone (the join token carries it), never through a chain,
//! so the CA's only job is to sign nodes' client certificates. Both certificates are
//! valid from 1975 to 4096 (rcgen's defaults): trust is the pin, not a date.

use core::fmt;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, PKCS_ECDSA_P256_SHA256, PublicKeyData, SignatureAlgorithm,
};
use serde::{Deserialize, Serialize};

use crate::Pin;

/// The name every panel channel certificate carries (besides the operator's names),
/// and the name nodes check, whatever address they dialed.
pub const PANEL_CERT_NAME: &str = "panel.switchyard.invalid";
/// The CA's common name.
const CA_NAME: &str = "Switchyard panel CA";
/// Most bytes of a server id put in a certificate.
pub const MAX_SERVER_ID_LEN: usize = 128;

/// A private key (PKCS#8 PEM) whose `Debug` never shows it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct KeyPem(String);

impl KeyPem {
    /// Wraps a PEM private key.
    pub fn new(pem: impl Into<String>) -> Self {
        Self(pem.into())
    }

    /// The PEM text, for the code that must use it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for KeyPem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("KeyPem(***)")
    }
}

/// Why an identity could not be made or used, or a node certificate not issued.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IdentityError {
    /// rcgen could not make a key or certificate (for example a name that is not a DNS
    /// name or an IP address).
    #[error("issuing {what}: {reason}")]
    Issue {
        /// Which certificate.
        what: String,
        /// What rcgen said.
        reason: String,
    },
    /// A stored PEM does not hold what it should.
    #[error("the panel identity's {0} is malformed; generate a new identity")]
    Malformed(&'static str),
    /// The node's public key is not an uncompressed P-256 point (65 bytes, `04 ‖ x ‖ y`).
    #[error("the node's public key is not an uncompressed P-256 point (65 bytes starting with 04)")]
    BadPublicKey,
    /// A name for the channel certificate is neither a DNS name nor an IP address.
    #[error("{0:?} is neither a DNS name nor an IP address")]
    BadName(String),
    /// The system has no randomness for a serial number.
    #[error("no system randomness for a certificate serial number")]
    NoRandomness,
    /// The server id is empty or longer than [`MAX_SERVER_ID_LEN`].
    #[error("server id {0:?} must be 1 to {MAX_SERVER_ID_LEN} bytes")]
    BadServerId(String),
}

fn issue_error(what: &str) -> impl FnOnce(rcgen::Error) -> IdentityError + '_ {
    move |e| IdentityError::Issue {
        what: what.to_owned(),
        reason: e.to_string(),
    }
}

/// The panel's CA and channel certificate, with their keys. Store it (serde) in the
/// panel's database; everything else is derived from it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PanelIdentity {
    /// The CA certificate (self-signed), PEM.
    pub ca_cert_pem: String,
    /// The CA's private key.
    pub ca_key_pem: KeyPem,
    /// The channel listener's certificate (self-signed), PEM.
    pub cert_pem: String,
    /// Its private key.
    pub key_pem: KeyPem,
}

impl fmt::Debug for PanelIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PanelIdentity")
            .field("pin", &self.pin().ok())
            .finish_non_exhaustive()
    }
}

/// The CA's parameters: the same every time, so an [`Issuer`] rebuilt from the stored
/// key names the stored CA certificate's subject and key identifier.
fn ca_params() -> CertificateParams {
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, CA_NAME);
    params.distinguished_name = dn;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    params
}

fn serial() -> Result<rcgen::SerialNumber, IdentityError> {
    let mut bytes = [0u8; 16];
    crate::random(&mut bytes).map_err(|()| IdentityError::NoRandomness)?;
    bytes[0] &= 0x7f;
    Ok(rcgen::SerialNumber::from_slice(&bytes))
}

/// A node's public key as rcgen signs it: a raw uncompressed P-256 point.
struct NodeKey<'a>(&'a [u8]);

impl PublicKeyData for NodeKey<'_> {
    fn der_bytes(&self) -> &[u8] {
        self.0
    }

    fn algorithm(&self) -> &'static SignatureAlgorithm {
        &PKCS_ECDSA_P256_SHA256
    }
}

/// An IP address, or a DNS name (letters, digits, `-`, `_`, dots; `*.` first allowed).
fn name_ok(name: &str) -> bool {
    if name.parse::<std::net::IpAddr>().is_ok() {
        return true;
    }
    let name = name.strip_prefix("*.").unwrap_or(name);
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// The first certificate in `pem`, DER.
pub(crate) fn first_cert_der(pem: &str) -> Option<Vec<u8>> {
    rustls_pemfile::certs(&mut pem.as_bytes())
        .next()?
        .ok()
        .map(|c| c.to_vec())
}

impl PanelIdentity {
    /// Makes a fresh CA and a channel certificate for `names` (DNS names or IP
    /// addresses the panel is reached at; [`PANEL_CERT_NAME`] is always added).
    pub fn generate(names: &[String]) -> Result<Self, IdentityError> {
        if let Some(bad) = names.iter().find(|n| !name_ok(n)) {
            return Err(IdentityError::BadName(bad.clone()));
        }
        let ca_key =
            KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).map_err(issue_error("the CA key"))?;
        let mut ca = ca_params();
        ca.serial_number = Some(serial()?);
        let ca_cert = ca
            .self_signed(&ca_key)
            .map_err(issue_error("the CA certificate"))?;

        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)
            .map_err(issue_error("the channel key"))?;
        let mut all = vec![PANEL_CERT_NAME.to_owned()];
        all.extend(names.iter().filter(|n| *n != PANEL_CERT_NAME).cloned());
        let mut params =
            CertificateParams::new(all).map_err(issue_error("the channel certificate"))?;
        params
            .distinguished_name
            .push(DnType::CommonName, "Switchyard panel");
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.serial_number = Some(serial()?);
        let cert = params
            .self_signed(&key)
            .map_err(issue_error("the channel certificate"))?;
        Ok(Self {
            ca_cert_pem: ca_cert.pem(),
            ca_key_pem: KeyPem::new(ca_key.serialize_pem()),
            cert_pem: cert.pem(),
            key_pem: KeyPem::new(key.serialize_pem()),
        })
    }

    /// The pin of the channel certificate (SHA-256 of its DER): what join tokens carry.
    pub fn pin(&self) -> Result<Pin, IdentityError> {
        let der = first_cert_der(&self.cert_pem)
            .ok_or(IdentityError::Malformed("channel certificate"))?;
        Ok(Pin::of_certificate(&der))
    }

    /// Signs a client certificate for a node's public key (`node_public_key_raw`: the
    /// uncompressed P-256 point, 65 bytes) with the CA; the server id is its common
    /// name. Returns the certificate as PEM.
    pub fn issue_node_certificate(
        &self,
        node_public_key_raw: &[u8],
        server_id: &str,
    ) -> Result<String, IdentityError> {
        if node_public_key_raw.len() != 65 || node_public_key_raw[0] != 0x04 {
            return Err(IdentityError::BadPublicKey);
        }
        if server_id.is_empty() || server_id.len() > MAX_SERVER_ID_LEN {
            return Err(IdentityError::BadServerId(server_id.to_owned()));
        }
        let ca_key = KeyPair::from_pem(self.ca_key_pem.expose())
            .map_err(|_| IdentityError::Malformed("CA key"))?;
        let issuer = Issuer::new(ca_params(), ca_key);
        let mut params = CertificateParams::default();
        params.distinguished_name = DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::CommonName, server_id);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.serial_number = Some(serial()?);
        params.use_authority_key_identifier_extension = true;
        let cert = params
            .signed_by(&NodeKey(node_public_key_raw), &issuer)
            .map_err(issue_error("the node certificate"))?;
        Ok(cert.pem())
    }

    /// The CA certificate, DER.
    pub(crate) fn ca_der(&self) -> Result<Vec<u8>, IdentityError> {
        first_cert_der(&self.ca_cert_pem).ok_or(IdentityError::Malformed("CA certificate"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_identity_pins_its_certificate_signs_nodes_and_hides_its_keys() {
        let id = PanelIdentity::generate(&["panel.test".into(), "127.0.0.1".into()]).unwrap();
        let der = first_cert_der(&id.cert_pem).unwrap();
        assert_eq!(id.pin().unwrap(), Pin::of_certificate(&der));
        let shown = format!("{id:?}");
        assert!(!shown.contains("PRIVATE"), "{shown}");
        let again: PanelIdentity =
            serde_json::from_str(&serde_json::to_string(&id).unwrap()).unwrap();
        assert_eq!(again, id);

        let node = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
        let pem = id
            .issue_node_certificate(node.public_key_raw(), "srv-1")
            .unwrap();
        assert!(first_cert_der(&pem).is_some());
        assert_eq!(
            id.issue_node_certificate(&[4; 10], "srv-1"),
            Err(IdentityError::BadPublicKey)
        );
        assert_eq!(
            id.issue_node_certificate(node.public_key_raw(), ""),
            Err(IdentityError::BadServerId(String::new()))
        );
        assert_eq!(
            PanelIdentity::generate(&["not a name".into()]),
            Err(IdentityError::BadName("not a name".into()))
        );
    }
}
