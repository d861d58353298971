//! How the panel keeps the tokens it hands out. Join tokens, session ids, API tokens
//! and subscription tokens are stored as [`hash_token`] of their text, the hex SHA-256,
//! so the database never holds a usable token; a presented token is hashed the same way
//! and looked up by its hash. (A subscription token is also kept as it is, for its
//! link; its lookup by hash is confirmed by comparing the text in constant time.)
//!
//! The tokens are random (at least 24 bytes from the OS), so a plain hash suffices: no
//! salt or slow hash is needed against guessing, unlike passwords.

use sha2::{Digest, Sha256};

/// The hex SHA-256 of `token` (64 lower-case hex digits): how a token is kept and
/// looked up.
pub fn hash_token(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::hash_token;

    #[test]
    fn a_token_is_kept_as_its_hex_sha256() {
        assert_eq!(hash_token("abc").len(), 64);
        // FIPS 180-2's test vector: every stored hash depends on this exact form.
        assert_eq!(
            hash_token("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            hash_token(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_ne!(hash_token("sy_a"), hash_token("sy_b"));
        assert!(
            hash_token("any token")
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        );
    }
}
