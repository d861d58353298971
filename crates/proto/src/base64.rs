//! The little base64 the WebSocket upgrade and REALITY need: standard encoding with
//! padding for `Sec-WebSocket-Accept`, URL-safe without padding for REALITY's X25519
//! keys (Xray's form), and a lenient decoder for `Sec-WebSocket-Key`, early data and
//! keys (standard or URL-safe alphabet, padding optional, as Xray's hub accepts).

const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// The URL-safe alphabet (RFC 4648 section 5).
const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Encodes `input` with the standard alphabet and `=` padding.
pub(crate) fn encode_standard(input: &[u8]) -> String {
    encode(input, STANDARD, true)
}

/// Encodes `input` with the URL-safe alphabet and no padding: Go's
/// `base64.RawURLEncoding`, the form of Xray's X25519 keys.
pub(crate) fn encode_url_unpadded(input: &[u8]) -> String {
    encode(input, URL_SAFE, false)
}

fn encode(input: &[u8], alphabet: &[u8; 64], pad: bool) -> String {
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(alphabet[(n >> (18 - 6 * i)) as usize & 63]));
            } else if pad {
                out.push('=');
            }
        }
    }
    out
}

fn value(c: u8) -> Option<u32> {
    let v = match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' | b'-' => 62,
        b'/' | b'_' => 63,
        _ => return None,
    };
    Some(u32::from(v))
}

/// Decodes base64 in either alphabet, with or without trailing `=` padding. `None`
/// for any other byte, a lone trailing character, or padding in the middle. The
/// output is at most three quarters of the input, so the input's own bound bounds it.
pub(crate) fn decode_lenient(input: &[u8]) -> Option<Vec<u8>> {
    let trimmed = match input {
        [rest @ .., b'=', b'='] | [rest @ .., b'='] => rest,
        _ => input,
    };
    if trimmed.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(trimmed.len() / 4 * 3 + 2);
    for chunk in trimmed.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= value(c)? << (18 - 6 * i);
        }
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn rfc4648_vectors() {
        let cases: [(&[u8], &str); 7] = [
            (b"", ""),
            (b"f", "Zg=="),
            (b"fo", "Zm8="),
            (b"foo", "Zm9v"),
            (b"foob", "Zm9vYg=="),
            (b"fooba", "Zm9vYmE="),
            (b"foobar", "Zm9vYmFy"),
        ];
        for (raw, text) in cases {
            assert_eq!(encode_standard(raw), text);
            assert_eq!(encode_url_unpadded(raw), text.trim_end_matches('='));
            assert_eq!(decode_lenient(text.as_bytes()).as_deref(), Some(raw));
            let unpadded = text.trim_end_matches('=');
            assert_eq!(decode_lenient(unpadded.as_bytes()).as_deref(), Some(raw));
        }
    }

    #[test]
    fn url_safe_alphabet_and_junk() {
        assert_eq!(encode_url_unpadded(&[0xfb, 0xff]), "-_8");
        assert_eq!(decode_lenient(b"-_8").as_deref(), Some(&[0xfb, 0xff][..]));
        assert_eq!(decode_lenient(b"+/8").as_deref(), Some(&[0xfb, 0xff][..]));
        assert_eq!(decode_lenient(b"Zm9v!"), None);
        assert_eq!(decode_lenient(b"Z"), None);
        assert_eq!(decode_lenient(b"Zg==Zg=="), None);
    }

    proptest! {
        #[test]
        fn round_trip(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            let text = encode_standard(&data);
            prop_assert_eq!(decode_lenient(text.as_bytes()), Some(data));
        }

        #[test]
        fn never_panics(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode_lenient(&data);
        }
    }
}
