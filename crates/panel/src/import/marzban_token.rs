//! Marzban's subscription tokens, checked as Marzban checks them, so a user's old
//! link (`/sub/TOKEN` on the old domain) reaches their subscription here.
//!
//! Marzban issues two kinds, both signed with its JWT secret (imported with the
//! users):
//! - since 0.4, `BASE64URL(name,unix_s)` followed by 10 characters of
//!   `BASE64URL(SHA-256(BASE64URL(name,unix_s) + secret))`;
//! - before, an HS256 JWT with `sub` (the name), `access: "subscription"` and `iat`.
//!
//! Marzban refuses a token issued before the user was created or before their link
//! was last revoked; [`accepted`] does the same. Every input here comes from an
//! anonymous client: lengths are bounded, nothing panics, signatures are compared in
//! constant time.

use base64::Engine as _;
use base64::engine::general_purpose::{URL_SAFE, URL_SAFE_NO_PAD};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The longest token looked at (Marzban's names are at most 32 characters; a JWT
/// with them is well under this).
pub const MAX_TOKEN: usize = 512;

/// The header every Marzban JWT starts with (HS256, typ JWT, as PyJWT writes it).
const JWT_HEAD: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.";

/// Who a valid token names, and when it was issued.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubToken {
    /// The Marzban user name.
    pub username: String,
    /// When the token was made (Unix seconds).
    pub issued_s: i64,
}

/// The user `token` names if `secret` signed it; `None` for anything else.
pub fn verify(token: &str, secret: &str) -> Option<SubToken> {
    if token.len() < 15 || token.len() > MAX_TOKEN || !token.is_ascii() {
        return None;
    }
    match token.strip_prefix(JWT_HEAD) {
        Some(rest) => verify_jwt(rest, secret),
        None => verify_short(token, secret),
    }
}

fn verify_short(token: &str, secret: &str) -> Option<SubToken> {
    let (data, signature) = token.split_at(token.len() - 10);
    let digest = Sha256::new()
        .chain_update(data.as_bytes())
        .chain_update(secret.as_bytes())
        .finalize();
    let expected = URL_SAFE.encode(digest);
    if !bool::from(expected.as_bytes()[..10].ct_eq(signature.as_bytes())) {
        return None;
    }
    // Python's b64decode(validate=True) after padding: the URL-safe alphabet only.
    let decoded = URL_SAFE_NO_PAD.decode(data.trim_end_matches('=')).ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (username, issued) = text.split_once(',')?;
    let issued_s = issued.split(',').next()?.parse().ok()?;
    Some(SubToken {
        username: username.to_owned(),
        issued_s,
    })
}

fn verify_jwt(rest: &str, secret: &str) -> Option<SubToken> {
    let (payload, signature) = rest.rsplit_once('.')?;
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).ok()?;
    mac.update(JWT_HEAD.as_bytes());
    mac.update(payload.as_bytes());
    let signature = URL_SAFE_NO_PAD.decode(signature).ok()?;
    mac.verify_slice(&signature).ok()?;
    let claims: serde_json::Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()?;
    if claims.get("access")?.as_str()? != "subscription" {
        return None;
    }
    Some(SubToken {
        username: claims.get("sub")?.as_str()?.to_owned(),
        issued_s: claims.get("iat")?.as_i64()?,
    })
}

/// Whether Marzban (and PasarGuard) would still serve a token issued at `issued_s`
/// to a user created at `created_ms` whose link was last revoked at `revoked_ms`:
/// issued neither before the one nor the other (they compare whole seconds to the
/// stored times).
pub fn accepted(issued_s: i64, created_ms: i64, revoked_ms: Option<i64>) -> bool {
    let issued_ms = issued_s.saturating_mul(1000);
    created_ms <= issued_ms && revoked_ms.is_none_or(|r| r <= issued_ms)
}

/// A token as Marzban makes one (for tests and the import's report).
pub fn issue(username: &str, issued_s: i64, secret: &str) -> String {
    let data = URL_SAFE_NO_PAD.encode(format!("{username},{issued_s}"));
    let digest = Sha256::new()
        .chain_update(data.as_bytes())
        .chain_update(secret.as_bytes())
        .finalize();
    let signature = URL_SAFE.encode(digest);
    format!("{data}{}", &signature[..10])
}

#[cfg(test)]
mod tests {
    use base64::engine::general_purpose::STANDARD;

    use super::*;

    const SECRET: &str = "a7c82079ae914a9b6b69a22f8259e0de20832f65f046d5f6ce0ff2fc7eeaad28";

    #[test]
    fn a_token_marzban_made_is_read_back_and_a_forged_one_is_not() {
        let token = issue("alice", 1_796_400_000, SECRET);
        assert_eq!(
            verify(&token, SECRET),
            Some(SubToken {
                username: "alice".into(),
                issued_s: 1_796_400_000
            })
        );
        assert_eq!(verify(&token, "another secret"), None);
        let mut forged = token.clone().into_bytes();
        forged[2] ^= 1;
        assert_eq!(verify(&String::from_utf8(forged).unwrap(), SECRET), None);
        assert_eq!(verify("short", SECRET), None);
        assert_eq!(verify(&"A".repeat(MAX_TOKEN + 1), SECRET), None);
        assert_eq!(verify("ééééééééééééééééé", SECRET), None);
        // The alphabet is Python's altchars "-_": the standard one differs only there.
        let std = STANDARD.encode([0xfb, 0xff]);
        assert_eq!(
            std.replace('+', "-").replace('/', "_"),
            URL_SAFE.encode([0xfb, 0xff])
        );
    }

    #[test]
    fn an_old_jwt_is_checked_with_the_secret_and_must_be_for_subscriptions() {
        let jwt = |claims: &str, secret: &str| {
            let payload = URL_SAFE_NO_PAD.encode(claims);
            let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
            mac.update(format!("{JWT_HEAD}{payload}").as_bytes());
            let sig = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
            format!("{JWT_HEAD}{payload}.{sig}")
        };
        let good = jwt(
            r#"{"sub":"bob","access":"subscription","iat":1700000000}"#,
            SECRET,
        );
        assert_eq!(
            verify(&good, SECRET),
            Some(SubToken {
                username: "bob".into(),
                issued_s: 1_700_000_000
            })
        );
        assert_eq!(verify(&good, "wrong"), None);
        let admin = jwt(r#"{"sub":"bob","access":"sudo","iat":1700000000}"#, SECRET);
        assert_eq!(verify(&admin, SECRET), None);
    }

    #[test]
    fn a_token_from_before_the_user_or_before_a_revocation_is_refused() {
        let t = 1_000;
        assert!(accepted(t, 1_000_000, None));
        assert!(!accepted(t, 1_000_001, None));
        assert!(accepted(t, 999_000, Some(1_000_000)));
        assert!(!accepted(t, 999_000, Some(1_000_001)));
    }
}
