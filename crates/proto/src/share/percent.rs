//! Percent-encoding (RFC 3986) for the parts of a share link.
//!
//! Writing encodes every byte but the unreserved ones (`A-Z a-z 0-9 - . _ ~`), so a
//! value means the same to every reader: `/` becomes `%2F`, `+` `%2B` (Go's query
//! parser would read a bare `+` as a space), UTF-8 bytes of a name `%F0%9F...`.
//! Reading decodes `%XX` and leaves every other byte as it is (a bare `+` stays `+`,
//! as RFC 3986 has it), then requires UTF-8.

/// Appends `value` to `out`, percent-encoded.
pub(super) fn encode_into(out: &mut String, value: &str) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in value.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0x0f)]));
        }
    }
}

/// `value`, percent-encoded.
#[cfg(test)]
pub(super) fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    encode_into(&mut out, value);
    out
}

/// Decodes `%XX` escapes; `None` for a malformed escape or bytes that are not UTF-8.
pub(super) fn decode(value: &str) -> Option<String> {
    if !value.contains('%') {
        return Some(value.to_owned());
    }
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hi = hex(*bytes.get(i + 1)?)?;
            let lo = hex(*bytes.get(i + 2)?)?;
            out.push((hi << 4) | lo);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn hex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_values() {
        assert_eq!(encode("/ws?ed=2048"), "%2Fws%3Fed%3D2048");
        assert_eq!(encode("a+b c"), "a%2Bb%20c");
        assert_eq!(encode("🚀"), "%F0%9F%9A%80");
        assert_eq!(decode("%F0%9F%9A%80").as_deref(), Some("🚀"));
        assert_eq!(decode("a+b%20c").as_deref(), Some("a+b c"));
        assert_eq!(decode("%2f%2F").as_deref(), Some("//"));
    }

    #[test]
    fn malformed() {
        assert_eq!(decode("%"), None);
        assert_eq!(decode("%4"), None);
        assert_eq!(decode("%zz"), None);
        assert_eq!(decode("%FF"), None, "not UTF-8");
    }

    proptest! {
        #[test]
        fn round_trip(value in any::<String>()) {
            let encoded = encode(&value);
            prop_assert!(encoded.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~%".contains(&b)));
            prop_assert_eq!(decode(&encoded), Some(value));
        }

        #[test]
        fn never_panics(value in any::<String>()) {
            let _ = decode(&value);
        }
    }
}
