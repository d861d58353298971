//! Lowercase hex, as configs, pins, credentials and join tokens write hashes.

/// `bytes` in lowercase hex.
pub fn encode(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// 32 bytes from exactly 64 hex digits (either case; no sign, no spaces).
pub fn decode32(text: &str) -> Option<[u8; 32]> {
    let bytes = text.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let nibble = |c: u8| {
        char::from(c)
            .to_digit(16)
            .and_then(|d| u8::try_from(d).ok())
    };
    let mut out = [0u8; 32];
    for (byte, pair) in out.iter_mut().zip(bytes.chunks_exact(2)) {
        *byte = (nibble(pair[0])? << 4) | nibble(pair[1])?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_and_refuses_signs_and_odd_lengths() {
        let mut b = [0u8; 32];
        b[0] = 0xab;
        b[31] = 0x0f;
        let text = encode(&b);
        assert_eq!(text, format!("ab{}0f", "00".repeat(30)));
        assert_eq!(decode32(&text), Some(b));
        assert_eq!(decode32(&text.to_uppercase()), Some(b));
        assert_eq!(
            decode32(&format!("+f{}", &text[2..])),
            None,
            "from_str_radix takes a sign"
        );
        assert_eq!(decode32(&format!("zz{}", &text[2..])), None);
        assert_eq!(decode32(&text[1..]), None);
        assert_eq!(decode32(&format!("{text}0")), None);
    }
}
