//! The join token: one copy-pasteable word that tells a node where the panel's channel
//! listener is, which certificate it must show, and the single-use secret that enrolls
//! the node.
//!
//! Text form: `syj1.` followed by base64url (no padding) of
//! `pin kind (1 byte: 'c' certificate, 'k' key) ‖ pin (32 bytes) ‖ secret length (1
//! byte) ‖ secret (ASCII) ‖ panel address (UTF-8, the rest)`.
//!
//! A token that also pins the panel's own binary (what the install script downloads,
//! [`JoinToken::binary`]) is `syj2.` ‖ the binary's sha256 in 64 lowercase hex digits
//! ‖ `.` ‖ the same base64url. The hash is in hex, ahead of the rest, so that a POSIX
//! shell script can cut it out with parameter expansion alone and check a download
//! with `sha256sum` before running anything.

use core::fmt;
use core::str::FromStr;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::Pin;

/// What every join token starts with (the `1` is the format's version).
pub const PREFIX: &str = "syj1.";
/// What a join token that pins the panel's binary starts with.
pub const PREFIX_PINNED: &str = "syj2.";
/// Fewest characters of a secret: 22 base64url characters carry 132 bits.
pub const MIN_SECRET_LEN: usize = 22;
/// Most characters of a secret.
pub const MAX_SECRET_LEN: usize = 128;
/// Most bytes of the panel's address (a DNS name of 253 bytes and a port).
pub const MAX_PANEL_LEN: usize = 260;
/// Random bytes in a secret made by [`JoinToken::generate`] (256 bits).
const SECRET_BYTES: usize = 32;

/// Where a node enrolls and with what; see the module docs for the text form.
#[derive(Clone, PartialEq, Eq)]
pub struct JoinToken {
    /// `host:port` of the panel's channel listener (`[v6]:port` for IPv6).
    pub panel: String,
    /// The pin of the panel's channel certificate ([`crate::PanelIdentity::pin`]).
    pub pin: Pin,
    /// The single-use secret, base64url, at least 128 random bits.
    pub secret: String,
    /// The sha256 of the panel's own binary, which a node installed from the panel
    /// downloads: the install script refuses a download with another hash.
    pub binary: Option<[u8; 32]>,
}

/// Why a text is not a join token. Messages never repeat the text (it holds a secret).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// The text does not start with `syj1.`.
    #[error(
        "not a join token: it must start with `{PREFIX}` (copy the whole token from the panel)"
    )]
    NoPrefix,
    /// A later token format than this node understands.
    #[error("a join token of another version ({0:?}); update this node to the panel's version")]
    UnknownVersion(String),
    /// The part after the prefix is not base64url.
    #[error("the join token is damaged (not base64url); copy it again from the panel")]
    NotBase64,
    /// The token ends before its fields do.
    #[error("the join token is cut short; copy the whole token from the panel")]
    Truncated,
    /// The binary's hash in a `syj2.` token is not 64 hex digits followed by `.`.
    #[error("the join token's binary hash is damaged; copy the whole token from the panel")]
    BadBinaryHash,
    /// The pin kind byte is neither `c` nor `k`.
    #[error("the join token names an unknown kind of pin")]
    BadPinKind,
    /// The secret is too short, too long, or not base64url.
    #[error(
        "the join token's secret must be {MIN_SECRET_LEN} to {MAX_SECRET_LEN} base64url characters"
    )]
    BadSecret,
    /// The system has no randomness for a new secret.
    #[error("no system randomness for a join token's secret")]
    NoRandomness,
    /// The panel address is not `host:port`.
    #[error("the join token's panel address {0:?} is not host:port")]
    BadPanelAddress(String),
}

fn base64url_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

/// Checks `host:port`: a non-empty host of name characters (or a bracketed IPv6
/// address) and a port 1-65535.
pub(crate) fn check_panel_address(panel: &str) -> Result<(), TokenError> {
    let bad = || TokenError::BadPanelAddress(panel.to_owned());
    if panel.is_empty() || panel.len() > MAX_PANEL_LEN {
        return Err(bad());
    }
    let (host, port) = panel.rsplit_once(':').ok_or_else(bad)?;
    match port.parse::<u16>() {
        Ok(p) if p != 0 && !port.starts_with('+') => {}
        _ => return Err(bad()),
    }
    if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        v6.parse::<std::net::Ipv6Addr>().map_err(|_| bad())?;
        return Ok(());
    }
    let name_ok = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_');
    if name_ok { Ok(()) } else { Err(bad()) }
}

impl JoinToken {
    /// A token for `panel` (`host:port`) and `pin` with a fresh 256-bit secret from the
    /// system's randomness.
    pub fn generate(panel: impl Into<String>, pin: Pin) -> Result<Self, TokenError> {
        let panel = panel.into();
        check_panel_address(&panel)?;
        let mut bytes = [0u8; SECRET_BYTES];
        crate::random(&mut bytes).map_err(|()| TokenError::NoRandomness)?;
        Ok(Self {
            panel,
            pin,
            secret: URL_SAFE_NO_PAD.encode(bytes),
            binary: None,
        })
    }

    /// This token, pinning the panel's binary by its sha256.
    pub fn pinning_binary(self, sha256: [u8; 32]) -> Self {
        Self {
            binary: Some(sha256),
            ..self
        }
    }

    /// The token as one word: `syj1.` and base64url, or `syj2.`, the binary's hash and
    /// base64url.
    pub fn encode(&self) -> String {
        let (kind, hash) = match self.pin {
            Pin::Certificate(h) => (b'c', h),
            Pin::PublicKey(h) => (b'k', h),
        };
        let secret = self.secret.as_bytes();
        let mut raw = Vec::with_capacity(34 + secret.len() + self.panel.len());
        raw.push(kind);
        raw.extend_from_slice(&hash);
        // A secret longer than a byte can count is cut: `parse` refuses such a token.
        let len = secret.len().min(255);
        raw.push(len as u8);
        raw.extend_from_slice(&secret[..len]);
        raw.extend_from_slice(self.panel.as_bytes());
        let body = URL_SAFE_NO_PAD.encode(raw);
        match self.binary {
            Some(hash) => format!(
                "{PREFIX_PINNED}{}.{body}",
                switchyard_config::hex::encode(&hash)
            ),
            None => format!("{PREFIX}{body}"),
        }
    }

    /// Reads a token (surrounding whitespace is ignored).
    pub fn parse(text: &str) -> Result<Self, TokenError> {
        let text = text.trim();
        let (binary, body) = if let Some(pinned) = text.strip_prefix(PREFIX_PINNED) {
            let (hash, body) = pinned.split_once('.').ok_or(TokenError::BadBinaryHash)?;
            (
                Some(switchyard_config::hex::decode32(hash).ok_or(TokenError::BadBinaryHash)?),
                body,
            )
        } else {
            (None, text.strip_prefix(PREFIX).unwrap_or(text))
        };
        if binary.is_none() && !text.starts_with(PREFIX) {
            if let Some((version, _)) = text.split_once('.')
                && version.starts_with("syj")
                && version.len() <= 8
            {
                return Err(TokenError::UnknownVersion(version.to_owned()));
            }
            return Err(TokenError::NoPrefix);
        }
        // The longest valid token is well under this; a huge input is refused early.
        if body.len() > 4 * (34 + MAX_SECRET_LEN + MAX_PANEL_LEN) / 3 + 4 {
            return Err(TokenError::NotBase64);
        }
        let raw = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| TokenError::NotBase64)?;
        let (&kind, rest) = raw.split_first().ok_or(TokenError::Truncated)?;
        if rest.len() < 33 {
            return Err(TokenError::Truncated);
        }
        let (hash, rest) = rest.split_at(32);
        let hash: [u8; 32] = hash.try_into().map_err(|_| TokenError::Truncated)?;
        let pin = match kind {
            b'c' => Pin::Certificate(hash),
            b'k' => Pin::PublicKey(hash),
            _ => return Err(TokenError::BadPinKind),
        };
        let (&len, rest) = rest.split_first().ok_or(TokenError::Truncated)?;
        let len = usize::from(len);
        if rest.len() < len {
            return Err(TokenError::Truncated);
        }
        let (secret, panel) = rest.split_at(len);
        if !(MIN_SECRET_LEN..=MAX_SECRET_LEN).contains(&secret.len())
            || !secret.iter().copied().all(base64url_char)
        {
            return Err(TokenError::BadSecret);
        }
        let panel = core::str::from_utf8(panel)
            .map_err(|_| TokenError::BadPanelAddress(String::from_utf8_lossy(panel).into()))?;
        check_panel_address(panel)?;
        Ok(Self {
            panel: panel.to_owned(),
            pin,
            // Checked ASCII above.
            secret: String::from_utf8_lossy(secret).into_owned(),
            binary,
        })
    }
}

impl FromStr for JoinToken {
    type Err = TokenError;

    fn from_str(s: &str) -> Result<Self, TokenError> {
        Self::parse(s)
    }
}

impl fmt::Debug for JoinToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinToken")
            .field("panel", &self.panel)
            .field("pin", &self.pin)
            .field("secret", &"***")
            .field(
                "binary",
                &self.binary.map(|h| switchyard_config::hex::encode(&h)),
            )
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token() -> JoinToken {
        JoinToken::generate("panel.example.org:7443", Pin::Certificate([7; 32])).unwrap()
    }

    #[test]
    fn tokens_round_trip_and_hide_their_secret() {
        let t = token();
        let text = t.encode();
        assert!(text.starts_with(PREFIX));
        assert!(
            text.bytes().all(|b| b == b'.' || base64url_char(b)),
            "{text}"
        );
        assert_eq!(JoinToken::parse(&text), Ok(t.clone()));
        assert_eq!(format!(" {text}\n").parse::<JoinToken>(), Ok(t.clone()));
        assert!(!format!("{t:?}").contains(&t.secret));
        let v6 = JoinToken {
            panel: "[2001:db8::1]:443".into(),
            pin: Pin::PublicKey([1; 32]),
            ..t
        };
        assert_eq!(JoinToken::parse(&v6.encode()), Ok(v6));
    }

    #[test]
    fn a_token_pinning_the_binary_carries_its_hash_in_hex_ahead_of_the_rest() {
        let t = token();
        let mut hash = [0u8; 32];
        hash[0] = 0xab;
        hash[31] = 0x0f;
        let pinned = t.clone().pinning_binary(hash);
        let text = pinned.encode();
        let hex = format!("ab{}0f", "00".repeat(30));
        assert_eq!(text, format!("syj2.{hex}.{}", &t.encode()[PREFIX.len()..]));
        assert_eq!(JoinToken::parse(&text), Ok(pinned.clone()));
        let upper = format!(
            "syj2.{}.{}",
            hex.to_uppercase(),
            &t.encode()[PREFIX.len()..]
        );
        assert_eq!(JoinToken::parse(&upper), Ok(pinned));
        assert_eq!(JoinToken::parse(&t.encode()).map(|t| t.binary), Ok(None));
        for bad in [
            "syj2.".to_owned(),
            format!("syj2.{hex}"),
            format!("syj2.{}.AAAA", &hex[..62]),
            format!("syj2.{}+f.AAAA", &hex[..62]),
            format!("syj2.{}zz.AAAA", &hex[..62]),
            format!("syj2.{hex}0.AAAA"),
        ] {
            assert_eq!(
                JoinToken::parse(&bad),
                Err(TokenError::BadBinaryHash),
                "{bad}"
            );
        }
        assert_eq!(
            JoinToken::parse(&format!("syj2.{hex}.")),
            Err(TokenError::Truncated)
        );
    }

    #[test]
    fn garbage_is_refused_with_a_reason() {
        let t = token();
        assert_eq!(JoinToken::parse(""), Err(TokenError::NoPrefix));
        assert_eq!(JoinToken::parse("hello"), Err(TokenError::NoPrefix));
        assert_eq!(
            JoinToken::parse("syj3.AAAA"),
            Err(TokenError::UnknownVersion("syj3".into()))
        );
        assert_eq!(JoinToken::parse("syj1.!!!"), Err(TokenError::NotBase64));
        assert_eq!(JoinToken::parse("syj1."), Err(TokenError::Truncated));
        let text = t.encode();
        assert_eq!(
            JoinToken::parse(&text[..20]),
            Err(TokenError::Truncated),
            "cut inside the pin"
        );
        let short = JoinToken {
            secret: "abc".into(),
            ..t.clone()
        };
        assert_eq!(
            JoinToken::parse(&short.encode()),
            Err(TokenError::BadSecret)
        );
        let spaced = JoinToken {
            secret: "a b".repeat(10),
            ..t.clone()
        };
        assert_eq!(
            JoinToken::parse(&spaced.encode()),
            Err(TokenError::BadSecret)
        );
        for panel in [
            "",
            "host",
            "host:0",
            "host:99999",
            "ho st:1",
            "[::1:1",
            "[zz]:1",
        ] {
            let bad = JoinToken {
                panel: panel.into(),
                ..t.clone()
            };
            assert_eq!(
                JoinToken::parse(&bad.encode()),
                Err(TokenError::BadPanelAddress(panel.into())),
                "{panel:?}"
            );
        }
        let mut raw = URL_SAFE_NO_PAD.decode(&text[PREFIX.len()..]).unwrap();
        raw[0] = b'x';
        let kind = format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(&raw));
        assert_eq!(JoinToken::parse(&kind), Err(TokenError::BadPinKind));
        assert!(JoinToken::parse(&format!("{PREFIX}{}", "A".repeat(100_000))).is_err());
    }
}
