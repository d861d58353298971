//! The certificate an accepted REALITY client gets, and the key behind it.
//!
//! Each accepted connection gets a fresh Ed25519 key and a certificate for it built
//! here, byte for byte, in the shape Xray's server sends (`x509.CreateCertificate`
//! of a template with only a zero serial number): version 3, serial 0, Ed25519
//! algorithm, empty issuer and subject, both validity times Go's zero time
//! (`00010101000000Z`), no extensions. Its signature field is not a signature but
//! HMAC-SHA512(auth key, the Ed25519 public key), which is all Xray's client checks
//! of it; it then checks the CertificateVerify with that key, as TLS 1.3 says.
//!
//! Browser-like hellos (Xray's `chrome` fingerprint) do not offer Ed25519 among their
//! signature algorithms, yet Xray's server signs with it and Xray's client accepts
//! it (Go's client checks the CertificateVerify against the algorithms it
//! implements, not those it offered). rustls would look for an offered scheme, so
//! the key is wrapped to sign with Ed25519 whatever was offered
//! ([`Ed25519Always`]).

use std::sync::Arc;

use ring::rand::SystemRandom;
use ring::signature::Ed25519KeyPair;
use rustls::SignatureScheme;
use rustls::pki_types::{CertificateDer, PrivatePkcs8KeyDer, SubjectPublicKeyInfoDer};
use rustls::sign::{CertifiedKey, Signer, SigningKey};
use switchyard_proto::reality::{AuthKey, certificate_signature};

/// The DER of the Ed25519 algorithm identifier: SEQUENCE { OID 1.3.101.112 }.
const ED25519_ALGORITHM: [u8; 7] = [0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70];

/// Go's zero `time.Time` as a GeneralizedTime.
const ZERO_TIME: &[u8; 15] = b"00010101000000Z";

/// The length of an Ed25519 SubjectPublicKeyInfo: the algorithm, then a BIT STRING
/// of the 32-byte key.
pub(crate) const SPKI_LEN: usize = 44;

/// The bytes an Ed25519 SubjectPublicKeyInfo starts with, before its 32-byte key.
pub(crate) const SPKI_PREFIX: [u8; 12] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];

/// The SubjectPublicKeyInfo of the Ed25519 key `public`.
pub(crate) fn spki(public: &[u8; 32]) -> Vec<u8> {
    [&SPKI_PREFIX[..], &public[..]].concat()
}

/// A DER element of `tag` holding `content` (shorter than 64 KiB).
fn element(tag: u8, content: &[u8], out: &mut Vec<u8>) {
    out.push(tag);
    match content.len() {
        n @ 0..=0x7f => out.push(n as u8),
        n @ 0x80..=0xff => out.extend_from_slice(&[0x81, n as u8]),
        n => out.extend_from_slice(&[0x82, (n >> 8) as u8, n as u8]),
    }
    out.extend_from_slice(content);
}

/// The certificate's DER for the SubjectPublicKeyInfo `spki`, with `signature` in
/// its signature field.
pub fn certificate_der(spki: &[u8], signature: &[u8; 64]) -> Vec<u8> {
    let mut validity = Vec::with_capacity(34);
    element(0x18, ZERO_TIME, &mut validity);
    element(0x18, ZERO_TIME, &mut validity);
    let mut tbs = Vec::with_capacity(128);
    tbs.extend_from_slice(&[0xa0, 0x03, 0x02, 0x01, 0x02]); // [0] version 3
    tbs.extend_from_slice(&[0x02, 0x01, 0x00]); // serial 0
    tbs.extend_from_slice(&ED25519_ALGORITHM);
    tbs.extend_from_slice(&[0x30, 0x00]); // issuer: empty
    element(0x30, &validity, &mut tbs);
    tbs.extend_from_slice(&[0x30, 0x00]); // subject: empty
    tbs.extend_from_slice(spki);
    let mut bits = Vec::with_capacity(65);
    bits.push(0); // no unused bits
    bits.extend_from_slice(signature);
    let mut body = Vec::with_capacity(256);
    element(0x30, &tbs, &mut body);
    body.extend_from_slice(&ED25519_ALGORITHM);
    element(0x03, &bits, &mut body);
    let mut cert = Vec::with_capacity(body.len() + 4);
    element(0x30, &body, &mut cert);
    cert
}

/// An Ed25519 key that signs with Ed25519 whatever the client offered.
#[derive(Debug)]
pub struct Ed25519Always(Arc<dyn SigningKey>);

impl SigningKey for Ed25519Always {
    fn choose_scheme(&self, _offered: &[SignatureScheme]) -> Option<Box<dyn Signer>> {
        self.0.choose_scheme(&[SignatureScheme::ED25519])
    }

    fn public_key(&self) -> Option<SubjectPublicKeyInfoDer<'_>> {
        self.0.public_key()
    }

    fn algorithm(&self) -> rustls::SignatureAlgorithm {
        self.0.algorithm()
    }
}

/// Why a connection's certificate could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CertifiedKeyError {
    /// The system's randomness failed.
    #[error("no randomness for an Ed25519 key")]
    NoRandomness,
    /// rustls refused the fresh key.
    #[error(transparent)]
    Key(#[from] rustls::Error),
    /// The key came without its public half.
    #[error("an Ed25519 key without its public key")]
    NoPublicKey,
}

/// A fresh Ed25519 key and its certificate for the connection whose auth key is
/// `auth_key`.
pub fn certified_key(auth_key: &AuthKey) -> Result<Arc<CertifiedKey>, CertifiedKeyError> {
    let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new())
        .map_err(|_| CertifiedKeyError::NoRandomness)?;
    let der = PrivatePkcs8KeyDer::from(pkcs8.as_ref());
    let key = rustls::crypto::ring::sign::any_eddsa_type(&der)?;
    let spki = key
        .public_key()
        .map(|s| s.as_ref().to_vec())
        .filter(|s| s.len() == SPKI_LEN)
        .ok_or(CertifiedKeyError::NoPublicKey)?;
    let mut public = [0u8; 32];
    public.copy_from_slice(&spki[SPKI_LEN - 32..]);
    let cert = certificate_der(&spki, &certificate_signature(auth_key, &public));
    Ok(Arc::new(CertifiedKey::new(
        vec![CertificateDer::from(cert)],
        Arc::new(Ed25519Always(key)),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_certificate_has_xrays_shape_and_the_hmac_of_its_key() {
        let spki: Vec<u8> = [
            0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
        ]
        .into_iter()
        .chain([0x11; 32])
        .collect();
        let der = certificate_der(&spki, &[0x22; 64]);
        let mut expected = vec![0x30, 0x81, 0xaf, 0x30, 0x63];
        expected.extend_from_slice(&[0xa0, 0x03, 0x02, 0x01, 0x02, 0x02, 0x01, 0x00]);
        expected.extend_from_slice(&ED25519_ALGORITHM);
        expected.extend_from_slice(&[0x30, 0x00, 0x30, 0x22]);
        expected.extend_from_slice(b"\x18\x0f00010101000000Z\x18\x0f00010101000000Z");
        expected.extend_from_slice(&[0x30, 0x00]);
        expected.extend_from_slice(&spki);
        expected.extend_from_slice(&ED25519_ALGORITHM);
        expected.extend_from_slice(&[0x03, 0x41, 0x00]);
        expected.extend_from_slice(&[0x22; 64]);
        assert_eq!(der, expected);
    }

    #[test]
    fn a_certified_key_carries_the_hmac_and_signs_with_ed25519_regardless() {
        let auth = AuthKey([5; 32]);
        let certified = certified_key(&auth).unwrap();
        let der = certified.cert[0].as_ref();
        let spki = certified.key.public_key().unwrap();
        let public: [u8; 32] = spki.as_ref()[12..].try_into().unwrap();
        assert_eq!(
            &der[der.len() - 64..],
            &certificate_signature(&auth, &public)
        );
        assert!(der.windows(SPKI_LEN).any(|w| w == spki.as_ref()));
        let offered = [
            SignatureScheme::ECDSA_NISTP256_SHA256,
            SignatureScheme::RSA_PSS_SHA256,
        ];
        let signer = certified.key.choose_scheme(&offered).unwrap();
        assert_eq!(signer.scheme(), SignatureScheme::ED25519);
        // The signature verifies with the certificate's key.
        let sig = signer.sign(b"transcript").unwrap();
        ring::signature::UnparsedPublicKey::new(&ring::signature::ED25519, public)
            .verify(b"transcript", &sig)
            .unwrap();
        assert_ne!(
            certified_key(&auth).unwrap().cert[0].as_ref(),
            der,
            "a fresh key each time"
        );
    }
}
