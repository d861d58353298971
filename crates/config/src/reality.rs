//! REALITY, as the panel and the node both check it: what a REALITY inbound's fields
//! must be ([`check_inbound`]), when the Vision flow may be set ([`check_flow`]), and
//! the keys of a new inbound or tunnel ([`generate`]: what `switchyard node
//! reality-keys` prints and what the panel makes). The node serves REALITY in its
//! `inbound::reality` (docs/node.md, "REALITY"); the wire rules are
//! `switchyard_proto::reality`'s.
//!
//! Each side adds its own rules after these: the node the private key and the client
//! versions, the panel the SNI, the limits on names and short ids, the clock
//! difference and the fingerprint.

use ring::rand::{SecureRandom, SystemRandom};
use switchyard_proto::reality::{PrivateKey, ShortId};

/// A field of an inbound that can't work, named as the inbound's own field
/// (`security.dest`): each side puts its own path in front (`inbounds[0].`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct FieldProblem {
    /// The field, within the inbound (`security.server_names[1]`).
    pub field: String,
    /// What is wrong and what would be right.
    pub problem: String,
}

impl FieldProblem {
    fn new(field: impl Into<String>, problem: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            problem: problem.into(),
        }
    }
}

/// The settings of a REALITY inbound that the panel and the node both hold.
#[derive(Clone, Copy, Debug)]
pub struct RealityInbound<'a> {
    /// Whether the inbound is of a kind REALITY serves: VLESS over plain TCP, or VLESS
    /// or Trojan over gRPC or XHTTP (HTTP/2 inside REALITY's TLS).
    pub vless_tcp: bool,
    /// The target site, `host:port`.
    pub dest: &'a str,
    /// Whether `dest` may be a loopback, private or other non-global address (the
    /// server's `allow_private_destinations`; true checks the form alone).
    pub allow_private: bool,
    /// The SNI names a client may ask for; `""` stands for a hello without SNI.
    pub server_names: &'a [String],
    /// The short ids clients may present.
    pub short_ids: &'a [String],
}

/// Checks a REALITY inbound's shared rules, in this order: VLESS over TCP
/// (`security`), the target (`security.dest`, by `switchyard_proto::dest::check`), at
/// least one server name, each one a name (`security.server_names[i]`), and each
/// short id 0 to 16 hex digits, an even number of them (`security.short_ids[i]`).
pub fn check_inbound(r: &RealityInbound<'_>) -> Result<(), FieldProblem> {
    if !r.vless_tcp {
        return Err(FieldProblem::new(
            "security",
            "REALITY is served for VLESS over plain TCP, and for VLESS or Trojan over gRPC or XHTTP",
        ));
    }
    switchyard_proto::dest::check(r.dest, r.allow_private)
        .map_err(|e| FieldProblem::new("security.dest", e.to_string()))?;
    if r.server_names.is_empty() {
        return Err(FieldProblem::new(
            "security.server_names",
            "needs at least one name: the target's, which clients put in their SNI",
        ));
    }
    for (i, name) in r.server_names.iter().enumerate() {
        if name.len() > 253 || !name.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(FieldProblem::new(
                format!("security.server_names[{i}]"),
                "is not a host name (or \"\" for a hello without SNI)",
            ));
        }
    }
    for (i, id) in r.short_ids.iter().enumerate() {
        ShortId::parse(id)
            .map_err(|e| FieldProblem::new(format!("security.short_ids[{i}]"), e.to_string()))?;
    }
    Ok(())
}

/// Checks that the Vision flow (`flow`, when `flow_set`) is on an inbound that can
/// carry it: VLESS over plain TCP with TLS or REALITY (`encrypted`), because its
/// direct copy writes to the TCP connection under the TLS.
pub fn check_flow(flow_set: bool, vless_tcp: bool, encrypted: bool) -> Result<(), FieldProblem> {
    if flow_set && !(vless_tcp && encrypted) {
        return Err(FieldProblem::new(
            "flow",
            "xtls-rprx-vision needs VLESS over TCP with TLS or REALITY (its direct copy writes to the TCP connection under the TLS)",
        ));
    }
    Ok(())
}

/// A new inbound's (or tunnel's) key pair and a short id, each in Xray's form.
#[derive(Clone, PartialEq, Eq)]
pub struct Keys {
    /// The X25519 private key (base64url, no padding): the inbound's
    /// `security.private_key`. A secret.
    pub private_key: String,
    /// Its public key, what clients call `publicKey` (Xray) or `pbk` (share links).
    pub public_key: String,
    /// A random short id (16 hex digits), for `security.short_ids` and the clients'
    /// `shortId` (`sid`).
    pub short_id: String,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keys")
            .field("public_key", &self.public_key)
            .field("short_id", &self.short_id)
            .finish_non_exhaustive()
    }
}

impl Keys {
    /// The keys made from random bytes: 32 for the private key, 8 for the short id.
    pub fn from_random(mut secret: [u8; 32], short_id: [u8; 8]) -> Self {
        let key = PrivateKey::from_random(secret);
        secret.fill(0);
        Self {
            private_key: key.encode(),
            public_key: key.public_key().encode(),
            short_id: ShortId(short_id).encode(),
        }
    }
}

/// The public key (Xray's form) of the X25519 private key `private_key` (base64url,
/// as Xray's `privateKey`), or `None` when it is not one: for a key made elsewhere,
/// such as an inbound brought from another panel.
pub fn public_key_of(private_key: &str) -> Option<String> {
    PrivateKey::parse(private_key)
        .ok()
        .map(|k| k.public_key().encode())
}

/// Why no keys were made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the system gave no randomness")]
pub struct NoRandomness;

/// Makes a key pair and a short id from the system's randomness.
pub fn generate() -> Result<Keys, NoRandomness> {
    let rng = SystemRandom::new();
    let mut secret = [0u8; 32];
    let mut id = [0u8; 8];
    rng.fill(&mut secret)
        .and_then(|()| rng.fill(&mut id))
        .map_err(|_| NoRandomness)?;
    let keys = Keys::from_random(secret, id);
    secret.fill(0);
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_read_back_and_pair_up() {
        let keys = generate().unwrap();
        assert_eq!((keys.private_key.len(), keys.public_key.len()), (43, 43));
        let key = PrivateKey::parse(&keys.private_key).unwrap();
        assert_eq!(key.public_key().encode(), keys.public_key);
        assert_eq!(
            ShortId::parse(&keys.short_id).unwrap().encode(),
            keys.short_id
        );
        assert_ne!(generate().unwrap().private_key, keys.private_key);
        assert_eq!(
            public_key_of(&keys.private_key).as_deref(),
            Some(keys.public_key.as_str())
        );
        assert_eq!(public_key_of("not a key"), None);
        assert_eq!(public_key_of(&keys.public_key[..40]), None);
        assert!(!format!("{keys:?}").contains(&keys.private_key));
    }
}
