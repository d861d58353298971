//! PasarGuard's subscription tokens, checked as PasarGuard 1.0 to 5.2 check them, so
//! a user's old link (`/sub/TOKEN`) reaches their subscription here.
//!
//! All are signed with PasarGuard's JWT secret (imported with the users):
//! - since 5.0, `BASE64URL(v3,id,unix_s).BASE64URL(HMAC-SHA256(secret, BASE64URL(…)))`;
//! - before, `BASE64URL(v3,id,unix_s)` (or `v2`, or Marzban's `name,unix_s` for users
//!   that came from Marzban) followed by 10 characters of `SHA-256(data + secret)`,
//!   hex or URL-safe Base64;
//! - and Marzban's old HS256 JWTs, with the user's name.
//!
//! Its `/sub/{token}` refuses a token issued before the user was created or before
//! their link was last revoked ([`super::marzban_token::accepted`]'s rule). Every
//! input comes from an anonymous client: lengths are bounded, nothing panics, and
//! signatures are compared in constant time.

use base64::Engine as _;
use base64::engine::general_purpose::{URL_SAFE, URL_SAFE_NO_PAD};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::marzban_token::{self, MAX_TOKEN};

/// Whom a valid token names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Subject {
    /// A user by id (PasarGuard's own tokens).
    Id(i64),
    /// A user by name (tokens Marzban issued before the move to PasarGuard).
    Name(String),
}

/// Who a valid token names, and when it was issued.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubToken {
    /// The user.
    pub subject: Subject,
    /// When the token was made (Unix seconds).
    pub issued_s: i64,
}

/// The user `token` names if `secret` signed it; `None` for anything else.
pub fn verify(token: &str, secret: &str) -> Option<SubToken> {
    if token.len() < 15 || token.len() > MAX_TOKEN || !token.is_ascii() {
        return None;
    }
    if token.starts_with("eyJ") {
        let t = marzban_token::verify(token, secret)?;
        return token.contains('.').then_some(SubToken {
            subject: Subject::Name(t.username),
            issued_s: t.issued_s,
        });
    }
    let data = if let Some((data, signature)) = token.rsplit_once('.') {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).ok()?;
        mac.update(data.as_bytes());
        let expected = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
        if !bool::from(expected.as_bytes().ct_eq(signature.as_bytes())) {
            return None;
        }
        data
    } else {
        let (data, signature) = token.split_at(token.len() - 10);
        let digest = Sha256::new()
            .chain_update(data.as_bytes())
            .chain_update(secret.as_bytes())
            .finalize();
        let b64 = URL_SAFE.encode(digest);
        let hexed = hex(&digest);
        let signature = signature.as_bytes();
        if !bool::from(
            b64.as_bytes()[..10].ct_eq(signature) | hexed.as_bytes()[..10].ct_eq(signature),
        ) {
            return None;
        }
        data
    };
    // Python's b64decode(validate=True) after padding: the URL-safe alphabet only.
    let text = String::from_utf8(URL_SAFE_NO_PAD.decode(data.trim_end_matches('=')).ok()?).ok()?;
    let parts: Vec<&str> = text.split(',').collect();
    match parts.as_slice() {
        [version, id, issued] if *version == "v2" || *version == "v3" => Some(SubToken {
            subject: Subject::Id(id.parse().ok()?),
            issued_s: issued.parse().ok()?,
        }),
        [name, issued] => Some(SubToken {
            subject: Subject::Name((*name).to_owned()),
            issued_s: issued.parse().ok()?,
        }),
        _ => None,
    }
}

/// `bytes` in lower-case hex, as Python's `hexdigest`.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A token as PasarGuard 5 makes one (for tests).
pub fn issue(id: i64, issued_s: i64, secret: &str) -> String {
    let data = URL_SAFE_NO_PAD.encode(format!("v3,{id},{issued_s}"));
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.as_bytes()) else {
        return String::new();
    };
    mac.update(data.as_bytes());
    format!(
        "{data}.{}",
        URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
    )
}

/// A token as PasarGuard 1 to 4 made one (for tests): `v3,id,unix_s` and 10 hex
/// characters of the digest.
pub fn issue_short(id: i64, issued_s: i64, secret: &str) -> String {
    let data = URL_SAFE_NO_PAD.encode(format!("v3,{id},{issued_s}"));
    let digest = Sha256::new()
        .chain_update(data.as_bytes())
        .chain_update(secret.as_bytes())
        .finalize();
    format!("{data}{}", &hex(&digest)[..10])
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "16e601e1f448192de971ac3232076b1f424821b6b636fa0bfd2bc8f666d9c483";

    #[test]
    fn tokens_pasarguard_made_are_read_back_and_forged_ones_are_not() {
        // Made by PasarGuard 3.1.0's create_subscription_token for user 1 with SECRET.
        let made = "djMsMSwxNzk2NDI5NjMw12aae88049";
        let at = SubToken {
            subject: Subject::Id(1),
            issued_s: 1_796_429_630,
        };
        assert_eq!(verify(made, SECRET), Some(at.clone()));
        assert_eq!(issue_short(1, 1_796_429_630, SECRET), made);
        assert_eq!(verify(made, "another secret"), None);
        let new = issue(1, 1_796_429_630, SECRET);
        assert!(new.contains('.'));
        assert_eq!(verify(&new, SECRET), Some(at));
        assert_eq!(verify(&new, "another secret"), None);
        let mut forged = new.clone().into_bytes();
        forged[3] ^= 1;
        assert_eq!(verify(&String::from_utf8(forged).unwrap(), SECRET), None);
        // Marzban's own links, for users that came from Marzban.
        let marzban = marzban_token::issue("alice", 1_700_000_000, SECRET);
        assert_eq!(
            verify(&marzban, SECRET),
            Some(SubToken {
                subject: Subject::Name("alice".into()),
                issued_s: 1_700_000_000
            })
        );
        for bad in ["short", "", "ééééééééééééééééé", &"A".repeat(MAX_TOKEN + 1)] {
            assert_eq!(verify(bad, SECRET), None);
        }
        // Four parts, or a version PasarGuard does not know, name nobody.
        let data = URL_SAFE_NO_PAD.encode("v4,1,1796429630");
        let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
        mac.update(data.as_bytes());
        let v4 = format!(
            "{data}.{}",
            URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
        );
        assert_eq!(verify(&v4, SECRET), None);
    }
}
