//! REALITY's keys, made for a new inbound: what `switchyard node reality-keys` prints
//! (and the panel will make for its inbounds). The inbound itself is served by the
//! node's `inbound::reality` (docs/node.md, "REALITY").

use ring::rand::{SecureRandom, SystemRandom};
use switchyard_proto::reality::{PrivateKey, ShortId};

/// A new inbound's key pair and a short id, each in Xray's form.
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

/// Makes a key pair and a short id from the system's randomness.
pub fn generate() -> Result<Keys, String> {
    let rng = SystemRandom::new();
    let mut secret = [0u8; 32];
    let mut id = [0u8; 8];
    rng.fill(&mut secret)
        .and_then(|()| rng.fill(&mut id))
        .map_err(|_| "the system gave no randomness".to_owned())?;
    let key = PrivateKey::from_random(secret);
    secret.fill(0);
    Ok(Keys {
        private_key: key.encode(),
        public_key: key.public_key().encode(),
        short_id: ShortId(id).encode(),
    })
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
        assert!(!format!("{keys:?}").contains(&keys.private_key));
    }
}
