//! The maintained lists behind the rule sets, read from the files of the Debian
//! packages that carry them (`crate::rule_refresh` fetches and unpacks them). Pure:
//! text in, lists out.
//!
//! - Countries' IP networks: tor's GeoIP database (`tor-geoipdb`: `/usr/share/tor/geoip`,
//!   lines `FROM,TO,CC` with IPv4 addresses as decimal numbers; `geoip6`, lines
//!   `FROM,TO,CC` with IPv6 addresses written out), ranges turned into networks.
//! - Ads and trackers: EasyList and EasyPrivacy as uBlock Origin ships them
//!   (`webext-ublock-origin-firefox`), their whole-domain rules (`||example.com^`).

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};

/// The smallest networks covering exactly `from..=to` (`u128` addresses, `bits` wide:
/// 32 or 128), as `(first address, prefix length)`.
pub fn range_to_networks(from: u128, to: u128, bits: u32) -> Vec<(u128, u32)> {
    let mut out = Vec::new();
    let mut start = from;
    while start <= to {
        // The largest block that starts at `start` (aligned) and ends within `to`.
        let align = if start == 0 {
            bits
        } else {
            start.trailing_zeros().min(bits)
        };
        let mut size = align;
        loop {
            let last = if size == 128 {
                Some(u128::MAX)
            } else {
                start.checked_add((1u128 << size) - 1)
            };
            // A block of one address always fits: the loop ends by size 0.
            if last.is_some_and(|l| l <= to) || size == 0 {
                break;
            }
            size -= 1;
        }
        out.push((start, bits - size));
        if size == 128 {
            break;
        }
        let Some(next) = start.checked_add(1u128 << size) else {
            break;
        };
        start = next;
    }
    out
}

fn v4(n: u128) -> String {
    Ipv4Addr::from(u32::try_from(n).unwrap_or(u32::MAX)).to_string()
}

fn v6(n: u128) -> String {
    Ipv6Addr::from(n).to_string()
}

/// The networks of `countries` (lower-case codes) in tor's `geoip` (IPv4) or
/// `geoip6` (IPv6) text; lines that do not parse are skipped.
pub fn tor_geoip(text: &str, ipv6: bool, countries: &[&str]) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut parts = line.split(',');
        let (Some(from), Some(to), Some(cc), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let cc = cc.trim().to_ascii_lowercase();
        if !countries.contains(&cc.as_str()) {
            continue;
        }
        let parsed = if ipv6 {
            from.trim()
                .parse::<Ipv6Addr>()
                .ok()
                .zip(to.trim().parse::<Ipv6Addr>().ok())
                .map(|(a, b)| (u128::from(a), u128::from(b)))
        } else {
            from.trim()
                .parse::<u32>()
                .ok()
                .zip(to.trim().parse::<u32>().ok())
                .map(|(a, b)| (u128::from(a), u128::from(b)))
        };
        let Some((from, to)) = parsed.filter(|(a, b)| a <= b) else {
            continue;
        };
        let (bits, show): (u32, fn(u128) -> String) = if ipv6 { (128, v6) } else { (32, v4) };
        let list = out.entry(cc).or_default();
        for (start, prefix) in range_to_networks(from, to, bits) {
            list.push(format!("{}/{prefix}", show(start)));
        }
    }
    out
}

/// The whole domains an Adblock list blocks (`||example.com^` lines, nothing after
/// the `^`), lower case, once each, sorted.
pub fn adblock_domains(text: &str) -> Vec<String> {
    let mut out: Vec<String> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("||")?.strip_suffix('^'))
        .filter(|d| {
            !d.is_empty()
                && d.contains('.')
                && d.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
                && !d.starts_with(['.', '-'])
                && !d.ends_with(['.', '-'])
        })
        .map(str::to_ascii_lowercase)
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ranges_become_the_fewest_aligned_networks() {
        assert_eq!(range_to_networks(0, u128::from(u32::MAX), 32), [(0, 0)]);
        // 10.0.0.0 - 10.0.1.255: one /23.
        let a = u128::from(u32::from(Ipv4Addr::new(10, 0, 0, 0)));
        assert_eq!(range_to_networks(a, a + 511, 32), [(a, 23)]);
        // 10.0.0.1 - 10.0.0.6: /32 /31 /31 /32.
        assert_eq!(
            range_to_networks(a + 1, a + 6, 32),
            [(a + 1, 32), (a + 2, 31), (a + 4, 31), (a + 6, 32)]
        );
        assert_eq!(range_to_networks(0, u128::MAX, 128), [(0, 0)]);
    }

    proptest! {
        #[test]
        fn the_networks_cover_the_range_exactly(from in any::<u32>(), len in 0u32..100_000) {
            let (from, to) = (u128::from(from), u128::from(from.saturating_add(len)));
            let nets = range_to_networks(from, to, 32);
            let mut next = from;
            for (start, prefix) in &nets {
                prop_assert_eq!(*start, next);
                let size = 1u128 << (32 - prefix);
                prop_assert_eq!(start % size, 0, "aligned");
                next = start + size;
            }
            prop_assert_eq!(next, to + 1);
        }
    }

    #[test]
    fn tors_geoip_gives_each_countrys_networks() {
        let v4_text = "# comment\n16777216,16777471,AU\n1297612800,1297613567,RU\n\
                       1297613568,1297613823,ru\nbad line\n5,4,RU\n3,4,5,RU\n";
        let nets = tor_geoip(v4_text, false, &["ru", "ir"]);
        assert_eq!(nets.len(), 1);
        assert_eq!(nets["ru"], ["77.88.0.0/23", "77.88.2.0/24", "77.88.3.0/24"]);
        let v6_text =
            "2a02:6b8::,2a02:6b8:ffff:ffff:ffff:ffff:ffff:ffff,RU\n2001:db8::,2001:db8::1,??\n";
        assert_eq!(tor_geoip(v6_text, true, &["ru"])["ru"], ["2a02:6b8::/32"]);
    }

    #[test]
    fn only_whole_domain_rules_are_taken_from_an_adblock_list() {
        let text = "! Title: EasyList\n||Ads.Example.com^\n||tracker.example^$third-party\n\
                    ||x.example^\n##.banner\n/ads/*\n||ads.example.com^\n||-bad.example^\n||nodot^\n";
        assert_eq!(adblock_domains(text), ["ads.example.com", "x.example"]);
    }
}
