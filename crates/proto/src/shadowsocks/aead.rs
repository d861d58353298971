//! The session cipher of a Shadowsocks 2022 TCP stream, on ring's AES-GCM and
//! ChaCha20-Poly1305 (its assembly runs several times faster than the pure-Rust
//! ciphers of `shadowsocks-crypto`: `docs/benchmarks.md` has the figures).
//!
//! The session subkey is `BLAKE3-derive("shadowsocks 2022 session subkey", key ‖
//! salt)`, cut to the method's key length; the nonce is a 12-byte little-endian
//! counter, one step per AEAD operation, failed openings included (as SIP022's
//! reference and `shadowsocks-crypto` count).

use ring::aead::{
    AES_128_GCM, AES_256_GCM, Aad, CHACHA20_POLY1305, LessSafeKey, Nonce, UnboundKey,
};

use super::Method;

/// Key-derivation context of session subkeys.
const SESSION_SUBKEY: &str = "shadowsocks 2022 session subkey";
/// Every method's tag.
const TAG: usize = 16;

/// One direction's cipher of a stream.
pub struct TcpAead {
    key: LessSafeKey,
    counter: u128,
}

impl std::fmt::Debug for TcpAead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TcpAead").finish_non_exhaustive()
    }
}

impl TcpAead {
    /// The cipher of the direction whose salt is `salt`, under the user's `key`.
    pub fn new(method: Method, key: &[u8], salt: &[u8]) -> Self {
        let mut hasher = blake3::Hasher::new_derive_key(SESSION_SUBKEY);
        hasher.update(key);
        hasher.update(salt);
        let mut subkey = [0u8; 32];
        hasher.finalize_xof().fill(&mut subkey);
        let (algorithm, len) = match method {
            Method::Aes128Gcm => (&AES_128_GCM, 16),
            Method::Aes256Gcm => (&AES_256_GCM, 32),
            Method::Chacha20Poly1305 => (&CHACHA20_POLY1305, 32),
        };
        let unbound = match UnboundKey::new(algorithm, &subkey[..len]) {
            Ok(k) => k,
            // The lengths above are each algorithm's own: ring takes them.
            Err(_) => unreachable!("a {len}-byte key for {algorithm:?}"),
        };
        Self {
            key: LessSafeKey::new(unbound),
            counter: 0,
        }
    }

    fn nonce(&mut self) -> Nonce {
        let mut bytes = [0u8; 12];
        bytes.copy_from_slice(&self.counter.to_le_bytes()[..12]);
        self.counter = self.counter.wrapping_add(1);
        Nonce::assume_unique_for_key(bytes)
    }

    /// Seals `buf` in place: the plaintext, then 16 bytes of room that get the
    /// tag. A buffer shorter than a tag is left as it is.
    pub fn encrypt_packet(&mut self, buf: &mut [u8]) {
        let Some(at) = buf.len().checked_sub(TAG) else {
            return;
        };
        let nonce = self.nonce();
        let (data, tag) = buf.split_at_mut(at);
        if let Ok(t) = self
            .key
            .seal_in_place_separate_tag(nonce, Aad::empty(), data)
        {
            tag.copy_from_slice(t.as_ref());
        }
    }

    /// Opens `buf` in place (ciphertext then tag): true with the plaintext in its
    /// first `len - 16` bytes; false when the tag does not match.
    pub fn decrypt_packet(&mut self, buf: &mut [u8]) -> bool {
        let nonce = self.nonce();
        buf.len() >= TAG && self.key.open_in_place(nonce, Aad::empty(), buf).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shadowsocks_crypto::v2::tcp::TcpCipher;

    /// The ring cipher and `shadowsocks-crypto`'s agree byte for byte, both ways,
    /// for every method, over several chunks (the nonce counting).
    #[test]
    fn seals_and_opens_as_shadowsocks_crypto_does() {
        for method in [
            Method::Aes128Gcm,
            Method::Aes256Gcm,
            Method::Chacha20Poly1305,
        ] {
            let key: Vec<u8> = (0..method.key_len() as u8).collect();
            let salt: Vec<u8> = (100..100 + method.key_len() as u8).collect();
            let mut ours = TcpAead::new(method, &key, &salt);
            let mut theirs = TcpCipher::new(method.kind(), &key, &salt);
            let mut opener = TcpAead::new(method, &key, &salt);
            for len in [0usize, 2, 1000, 16384] {
                let plain: Vec<u8> = (0..len).map(|i| (i * 31) as u8).collect();
                let mut a = plain.clone();
                a.extend_from_slice(&[0; TAG]);
                let mut b = a.clone();
                ours.encrypt_packet(&mut a);
                theirs.encrypt_packet(&mut b);
                assert_eq!(a, b, "{method:?}, {len} bytes");
                assert!(opener.decrypt_packet(&mut a));
                assert_eq!(&a[..len], &plain[..]);
            }
            // A flipped bit fails, and the count moves on as theirs does.
            let mut sealed = vec![1u8; 40];
            ours.encrypt_packet(&mut sealed);
            sealed[0] ^= 1;
            assert!(!opener.decrypt_packet(&mut sealed));
            let mut next = vec![2u8; 20];
            let mut twin = next.clone();
            ours.encrypt_packet(&mut next);
            theirs.encrypt_packet(&mut [1u8; 40]);
            theirs.encrypt_packet(&mut twin);
            assert_eq!(next, twin);
            assert!(!opener.decrypt_packet(&mut [0u8; 3]), "shorter than a tag");
        }
    }
}
