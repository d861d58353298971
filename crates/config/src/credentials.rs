//! Values derived from the panel's tunnel secret: nothing is stored that could drift
//! between the two halves.
//!
//! ```text
//! credential(origin) = HMAC-SHA-256(secret, "switchyard tunnel credential v1" ‖ len‖tunnel ‖ len‖origin)
//! tag                = "tunnel-" ‖ hex(SHA-256("switchyard tunnel tag v1" ‖ len‖tunnel))[..16]
//! certificate name   = hex(SHA-256("switchyard tunnel certificate v1" ‖ len‖tunnel))[..32] ‖ ".tunnel.switchyard.invalid"
//! ```
//! Lengths are 4-byte big-endian, so no two (tunnel, origin) pairs encode alike. The
//! secret never leaves the panel; a node receives only its half's values.
//!
//! A rotation gives every origin a new credential without a new secret: epoch `n > 0`
//! appends `n` (8 bytes big-endian) to the message ([`origin_credential_at`]); epoch 0
//! is the message above, so credentials never rotated stay what they were.

use core::fmt;

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// The panel's secret for one tunnel (32 random bytes). `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct TunnelSecret(pub [u8; 32]);

impl fmt::Debug for TunnelSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TunnelSecret(***)")
    }
}

/// An origin's credential: what it proves on every link.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Credential(pub [u8; 32]);

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Credential(***)")
    }
}

impl Credential {
    /// Compares in constant time.
    pub fn matches(&self, presented: &[u8]) -> bool {
        if presented.len() != self.0.len() {
            return false;
        }
        self.0
            .iter()
            .zip(presented)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }

    /// Lowercase hex, for config files.
    pub fn to_hex(&self) -> String {
        crate::hex::encode(&self.0)
    }

    /// Parses 64 hex digits.
    pub fn from_hex(text: &str) -> Option<Self> {
        crate::hex::decode32(text).map(Self)
    }
}

fn field(out: &mut Vec<u8>, value: &str) {
    out.extend_from_slice(&(value.len() as u32).to_be_bytes());
    out.extend_from_slice(value.as_bytes());
}

fn labelled(label: &str, tunnel: &str) -> [u8; 32] {
    let mut msg = label.as_bytes().to_vec();
    field(&mut msg, tunnel);
    Sha256::digest(&msg).into()
}

/// The credential of `origin` in `tunnel`.
pub fn origin_credential(secret: &TunnelSecret, tunnel: &str, origin: &str) -> Credential {
    let mut msg = b"switchyard tunnel credential v1".to_vec();
    field(&mut msg, tunnel);
    field(&mut msg, origin);
    let mut mac =
        <Hmac<Sha256> as Mac>::new_from_slice(&secret.0).expect("HMAC takes any key length");
    mac.update(&msg);
    Credential(mac.finalize().into_bytes().into())
}

/// The credential of `origin` in `tunnel` after `epoch` rotations (epoch 0: exactly
/// [`origin_credential`]). The origin-name field's length prefix ends the message's
/// names, so an appended epoch never makes one pair's message another's.
pub fn origin_credential_at(
    secret: &TunnelSecret,
    tunnel: &str,
    origin: &str,
    epoch: u64,
) -> Credential {
    if epoch == 0 {
        return origin_credential(secret, tunnel, origin);
    }
    let mut msg = b"switchyard tunnel credential v1".to_vec();
    field(&mut msg, tunnel);
    field(&mut msg, origin);
    msg.extend_from_slice(&epoch.to_be_bytes());
    let mut mac =
        <Hmac<Sha256> as Mac>::new_from_slice(&secret.0).expect("HMAC takes any key length");
    mac.update(&msg);
    Credential(mac.finalize().into_bytes().into())
}

/// The tag both halves carry for `tunnel`.
pub fn tunnel_tag(tunnel: &str) -> String {
    format!(
        "tunnel-{}",
        &crate::hex::encode(&labelled("switchyard tunnel tag v1", tunnel))[..16]
    )
}

/// The DNS name the tunnel's certificate is issued for (and the SNI links send).
pub fn certificate_name(tunnel: &str) -> String {
    format!(
        "{}.tunnel.switchyard.invalid",
        &crate::hex::encode(&labelled("switchyard tunnel certificate v1", tunnel))[..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: TunnelSecret = TunnelSecret([7; 32]);

    #[test]
    fn derivation_is_stable_and_separates_every_input() {
        let a = origin_credential(&SECRET, "eu", "fi-1");
        assert_eq!(a, origin_credential(&SECRET, "eu", "fi-1"));
        assert_ne!(a, origin_credential(&SECRET, "eu", "fi-2"));
        assert_ne!(a, origin_credential(&SECRET, "us", "fi-1"));
        assert_ne!(a, origin_credential(&TunnelSecret([8; 32]), "eu", "fi-1"));
        // Length prefixes: moving a byte between the names changes the value.
        assert_ne!(
            origin_credential(&SECRET, "ab", "c"),
            origin_credential(&SECRET, "a", "bc")
        );
    }

    #[test]
    fn known_answers_match_an_independent_implementation() {
        // Python: hmac.new(bytes([7]*32), b"switchyard tunnel credential v1"
        //   + bytes([0,0,0,2]) + b"eu" + bytes([0,0,0,4]) + b"fi-1", hashlib.sha256)
        let c = origin_credential(&SECRET, "eu", "fi-1");
        assert_eq!(
            c.to_hex(),
            "548f4b95db973e6182967b86b175dc191188654277629fc360e1679bef41af53"
        );
        assert_eq!(Credential::from_hex(&c.to_hex()), Some(c));
        assert_eq!(tunnel_tag("eu"), "tunnel-402e2be88b5724b9");
    }

    #[test]
    fn epochs_rotate_the_credential_and_epoch_zero_is_the_first() {
        assert_eq!(
            origin_credential_at(&SECRET, "eu", "fi-1", 0),
            origin_credential(&SECRET, "eu", "fi-1")
        );
        let one = origin_credential_at(&SECRET, "eu", "fi-1", 1);
        assert_ne!(one, origin_credential(&SECRET, "eu", "fi-1"));
        assert_ne!(one, origin_credential_at(&SECRET, "eu", "fi-1", 2));
        assert_ne!(one, origin_credential_at(&SECRET, "eu", "fi-2", 1));
        assert_eq!(one, origin_credential_at(&SECRET, "eu", "fi-1", 1));
        // Python: hmac.new(bytes([7]*32), b"switchyard tunnel credential v1"
        //   + bytes([0,0,0,2]) + b"eu" + bytes([0,0,0,4]) + b"fi-1"
        //   + (1).to_bytes(8, "big"), hashlib.sha256)
        assert_eq!(
            one.to_hex(),
            "c3fbb3438c86abc4265192a454b949d1e2674b2451b1d744614e8a0a30b833e3"
        );
    }

    #[test]
    fn matching_is_exact() {
        let c = origin_credential(&SECRET, "eu", "fi-1");
        assert!(c.matches(&c.0));
        let mut other = c.0;
        other[31] ^= 1;
        assert!(!c.matches(&other));
        assert!(!c.matches(&c.0[..31]));
        assert_eq!(
            format!("{c:?} {SECRET:?}"),
            "Credential(***) TunnelSecret(***)"
        );
    }

    #[test]
    fn tag_and_certificate_name_come_from_the_tunnel_name() {
        assert_eq!(tunnel_tag("eu"), tunnel_tag("eu"));
        assert_ne!(tunnel_tag("eu"), tunnel_tag("us"));
        assert!(tunnel_tag("eu").starts_with("tunnel-"));
        let name = certificate_name("eu");
        assert!(name.ends_with(".tunnel.switchyard.invalid"));
        assert!(
            name.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.')
        );
    }
}
