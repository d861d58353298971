//! The text forms a Hysteria 2 entry's fields take in links and configs, shared by
//! the writers and readers: the hop range (`first-last`), the hop interval (a Go
//! duration in sing-box), bandwidths in the units apps write, a certificate pin in
//! hex.

/// The shortest hop interval an operator may set and a client uses, seconds: the
/// official client refuses a shorter `hopInterval` ("must be at least 5s"), mihomo
/// raises a shorter `hop-interval` to 5, Xray's `udphop.interval` is at least 5.
pub const MIN_HOP_INTERVAL_SECS: u32 = 5;

/// The longest hop interval an operator may set and a client uses, seconds (an
/// hour: a port held longer is hardly hopping).
pub const MAX_HOP_INTERVAL_SECS: u32 = 3600;

/// A Go duration (`30s`, `1m30s`, `1.5m`, `500ms`, `0`), what sing-box's
/// `hop_interval` holds, in whole seconds rounded up. `None` for anything else, a
/// negative duration, or more than `u32::MAX` seconds.
pub fn go_duration_secs(text: &str) -> Option<u32> {
    const NANOS_PER_SEC: u128 = 1_000_000_000;
    let text = text.trim();
    let mut rest = text.strip_prefix('+').unwrap_or(text);
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut nanos: u128 = 0;
    while !rest.is_empty() {
        let whole_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let whole = &rest[..whole_len];
        rest = &rest[whole_len..];
        let mut frac = "";
        if let Some(after) = rest.strip_prefix('.') {
            let len = after.bytes().take_while(u8::is_ascii_digit).count();
            frac = &after[..len];
            rest = &after[len..];
        }
        // Go takes "1.", ".5" but not "." alone; 18 digits keep 10^len in range.
        if (whole.is_empty() && frac.is_empty()) || whole.len() > 20 || frac.len() > 18 {
            return None;
        }
        let unit_len = rest
            .char_indices()
            .find(|(_, c)| c.is_ascii_digit() || *c == '.')
            .map_or(rest.len(), |(i, _)| i);
        let per_unit: u128 = match &rest[..unit_len] {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => NANOS_PER_SEC,
            "m" => 60 * NANOS_PER_SEC,
            "h" => 3600 * NANOS_PER_SEC,
            _ => return None,
        };
        rest = &rest[unit_len..];
        let whole: u128 = if whole.is_empty() {
            0
        } else {
            whole.parse().ok()?
        };
        let scale = 10u128.checked_pow(u32::try_from(frac.len()).ok()?)?;
        let frac: u128 = if frac.is_empty() {
            0
        } else {
            frac.parse().ok()?
        };
        let part = whole
            .checked_mul(per_unit)?
            .checked_add(frac.checked_mul(per_unit)?.div_ceil(scale))?;
        nanos = nanos.checked_add(part)?;
    }
    u32::try_from(nanos.div_ceil(NANOS_PER_SEC)).ok()
}

/// `first-last` (or one port, `first`) with `1 <= first <= last`: the range a
/// Hysteria 2 server also accepts on. `None` for anything else (lists, `0`, a
/// range backwards): an entry holds one range.
pub fn hop_range(text: &str) -> Option<(u16, u16)> {
    let port = |t: &str| {
        let t = t.trim();
        (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
            .then(|| t.parse::<u16>().ok())
            .flatten()
            .filter(|p| *p != 0)
    };
    let (first, last) = match text.split_once('-') {
        Some((first, last)) => (port(first)?, port(last)?),
        None => {
            let one = port(text)?;
            (one, one)
        }
    };
    (first <= last).then_some((first, last))
}

/// A bandwidth as mihomo and the official client write it, in whole Mbit/s
/// (rounded up): a bare number is Mbit/s; else a number and a unit `bps`, `Kbps`,
/// `Mbps`, `Gbps`, `Tbps` (bits) or `Bps`, `KBps`, `MBps`, `GBps`, `TBps` (bytes),
/// a space between them or none. `None` for anything else or more than `u32::MAX`
/// Mbit/s.
pub fn mbps(text: &str) -> Option<u32> {
    let text = text.trim();
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let number: u128 = text[..digits].parse().ok()?;
    let unit = text[digits..].trim_start();
    let bits_per_unit: u128 = match unit {
        "" | "Mbps" => 1_000_000,
        "bps" => 1,
        "Bps" => 8,
        "Kbps" => 1_000,
        "KBps" => 8_000,
        "MBps" => 8_000_000,
        "Gbps" => 1_000_000_000,
        "GBps" => 8_000_000_000,
        "Tbps" => 1_000_000_000_000,
        "TBps" => 8_000_000_000_000,
        _ => return None,
    };
    let bits = number.checked_mul(bits_per_unit)?;
    u32::try_from(bits.div_ceil(1_000_000)).ok()
}

/// The SHA-256 of a certificate in lowercase hex, no colons (what
/// `pinSHA256` and mihomo's `fingerprint` hold).
pub fn pin_hex(digest: &[u8; 32]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// A SHA-256 in hex, with or without colons, either case (`openssl x509
/// -fingerprint -sha256` prints `AB:CD:...`). `None` unless 64 hex digits.
pub fn pin_from_hex(text: &str) -> Option<[u8; 32]> {
    let digits: Vec<u8> = text.bytes().filter(|b| *b != b':').collect();
    if digits.len() != 64 || !digits.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    let mut out = [0u8; 32];
    for (byte, pair) in out.iter_mut().zip(digits.chunks(2)) {
        *byte = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hop_ranges() {
        assert_eq!(hop_range("20000-20010"), Some((20000, 20010)));
        assert_eq!(hop_range("443"), Some((443, 443)));
        assert_eq!(hop_range(" 5-6 "), Some((5, 6)));
        for bad in ["", "0-5", "6-5", "1-2,5", "a-b", "-5", "5-", "70000", "+5"] {
            assert_eq!(hop_range(bad), None, "{bad}");
        }
    }

    #[test]
    fn go_durations_in_whole_seconds() {
        for (text, secs) in [
            ("30s", 30),
            ("0", 0),
            ("0s", 0),
            ("1m", 60),
            ("1m30s", 90),
            ("1.5m", 90),
            ("2h", 7200),
            ("500ms", 1),
            ("1500ms", 2),
            ("1s500ms", 2),
            (".5s", 1),
            ("1.s", 1),
            ("1000000us", 1),
            ("5µs", 1),
            (" 45s ", 45),
            ("+5s", 5),
        ] {
            assert_eq!(go_duration_secs(text), Some(secs), "{text}");
        }
        for bad in [
            "",
            "30",
            "s",
            "-5s",
            "+-5s",
            "5 s",
            "5sec",
            "1d",
            ".s",
            "1..5s",
            "99999999999h",
        ] {
            assert_eq!(go_duration_secs(bad), None, "{bad}");
        }
    }

    #[test]
    fn bandwidths() {
        assert_eq!(mbps("100"), Some(100));
        assert_eq!(mbps("30 Mbps"), Some(30));
        assert_eq!(mbps("2Gbps"), Some(2000));
        assert_eq!(mbps("1 MBps"), Some(8));
        assert_eq!(mbps("640 KBps"), Some(6));
        assert_eq!(mbps("1 bps"), Some(1));
        for bad in [
            "",
            "fast",
            "10 mbps",
            "-1",
            "1.5 Mbps",
            "99999999999999 TBps",
        ] {
            assert_eq!(mbps(bad), None, "{bad}");
        }
    }

    #[test]
    fn pins() {
        let digest = [0xab; 32];
        assert_eq!(pin_from_hex(&pin_hex(&digest)), Some(digest));
        let colons = vec!["AB"; 32].join(":");
        assert_eq!(pin_from_hex(&colons), Some(digest));
        assert_eq!(pin_from_hex("ab"), None);
        assert_eq!(pin_from_hex(&"zz".repeat(32)), None);
    }
}
