//! The panel's rule sets as Xray's `geosite.dat` and `geoip.dat`
//! (`/rules/xray/geosite.dat`, `/rules/xray/geoip.dat`), under the codes the Xray
//! configs name ([`switchyard_proto::routing::xray_codes`]), so an Xray app pointed
//! at them (Happ's routing profile does) routes by the operator's lists.
//!
//! The files are protocol buffers, written here by hand (two messages each):
//!
//! ```text
//! GeoSiteList { repeated GeoSite entry = 1 }
//! GeoSite     { string country_code = 1; repeated Domain domain = 2 }
//! Domain      { Type type = 1 (Plain 0, Regex 1, Domain 2, Full 3); string value = 2 }
//! GeoIPList   { repeated GeoIP entry = 1 }
//! GeoIP       { string country_code = 1; repeated CIDR cidr = 2 }
//! CIDR        { bytes ip = 1 (4 or 16 bytes); uint32 prefix = 2 }
//! ```
//!
//! Codes are written in upper case, as Xray looks them up. A code with nothing in it
//! (the `ads` set before the operator adds to it) holds a placeholder that matches
//! nothing ([`NOTHING_DOMAIN`], [`NOTHING_NETWORK`]): Xray refuses a rule whose codes
//! are all empty.

/// What an empty site code holds: a name under `.invalid`, which never resolves.
pub const NOTHING_DOMAIN: &str = "nothing.switchyard.invalid";
/// What an empty IP code holds: `0.0.0.0/32`, never a destination.
pub const NOTHING_NETWORK: &str = "0.0.0.0/32";

use std::net::IpAddr;

use switchyard_config::route::Cidr;

use super::rule_sets::RuleSet;

/// A `Domain`'s type for a domain with its subdomains.
const ROOT_DOMAIN: u64 = 2;

fn varint(mut n: u64, out: &mut Vec<u8>) {
    while n >= 0x80 {
        out.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Field `field` with wire type 2 (length-delimited): `bytes`.
fn bytes_field(field: u64, bytes: &[u8], out: &mut Vec<u8>) {
    varint(field << 3 | 2, out);
    varint(bytes.len() as u64, out);
    out.extend_from_slice(bytes);
}

/// Field `field` with wire type 0 (varint).
fn varint_field(field: u64, n: u64, out: &mut Vec<u8>) {
    varint(field << 3, out);
    varint(n, out);
}

/// `geosite.dat` of `codes`: each code with its set's domains (each with its
/// subdomains).
pub fn geosite(codes: &[(String, RuleSet)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (code, set) in codes {
        let mut site = Vec::new();
        bytes_field(1, code.to_ascii_uppercase().as_bytes(), &mut site);
        let nothing = [NOTHING_DOMAIN.to_owned()];
        let domains = if set.domains.is_empty() {
            &nothing[..]
        } else {
            &set.domains[..]
        };
        for d in domains {
            let mut domain = Vec::new();
            varint_field(1, ROOT_DOMAIN, &mut domain);
            bytes_field(2, d.as_bytes(), &mut domain);
            bytes_field(2, &domain, &mut site);
        }
        bytes_field(1, &site, &mut out);
    }
    out
}

/// `geoip.dat` of `codes`: each code with its set's networks.
pub fn geoip(codes: &[(String, RuleSet)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (code, set) in codes {
        let mut entry = Vec::new();
        bytes_field(1, code.to_ascii_uppercase().as_bytes(), &mut entry);
        let nothing = [NOTHING_NETWORK.to_owned()];
        let cidrs = if set.cidrs.is_empty() {
            &nothing[..]
        } else {
            &set.cidrs[..]
        };
        for c in cidrs.iter().filter_map(|c| Cidr::parse(c)) {
            let text = c.to_string();
            let Some((ip, prefix)) = text.split_once('/') else {
                continue;
            };
            let (Ok(ip), Ok(prefix)) = (ip.parse::<IpAddr>(), prefix.parse::<u64>()) else {
                continue;
            };
            let ip = match ip {
                IpAddr::V4(v4) => v4.octets().to_vec(),
                IpAddr::V6(v6) => v6.octets().to_vec(),
            };
            let mut cidr = Vec::new();
            bytes_field(1, &ip, &mut cidr);
            varint_field(2, prefix, &mut cidr);
            bytes_field(2, &cidr, &mut entry);
        }
        bytes_field(1, &entry, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(domains: &[&str], cidrs: &[&str]) -> RuleSet {
        RuleSet {
            domains: domains.iter().map(|d| (*d).to_owned()).collect(),
            cidrs: cidrs.iter().map(|c| (*c).to_owned()).collect(),
        }
    }

    #[test]
    fn a_geosite_entry_is_its_upper_case_code_and_root_domains() {
        let dat = geosite(&[("ru".into(), set(&["ru"], &[]))]);
        // entry(1) { code(1) "RU", domain(2) { type(1) 2, value(2) "ru" } }
        assert_eq!(
            dat,
            [
                0x0a, 0x0c, 0x0a, 0x02, b'R', b'U', 0x12, 0x06, 0x08, 0x02, 0x12, 0x02, b'r', b'u'
            ]
        );
    }

    #[test]
    fn a_geoip_entry_holds_each_network_as_bytes_and_prefix() {
        let dat = geoip(&[(
            "x".into(),
            set(&[], &["10.0.0.0/8", "2001:db8::/32", "bad"]),
        )]);
        let mut want = vec![0x0a, 0x23, 0x0a, 0x01, b'X'];
        want.extend([0x12, 0x08, 0x0a, 0x04, 10, 0, 0, 0, 0x10, 8]);
        let mut v6 = vec![0x12, 0x14, 0x0a, 0x10, 0x20, 0x01, 0x0d, 0xb8];
        v6.extend([0; 12]);
        v6.extend([0x10, 32]);
        want.extend(v6);
        assert_eq!(dat, want);
        // An empty code holds what matches nothing.
        let empty = geoip(&[("e".into(), set(&[], &[]))]);
        assert_eq!(empty, geoip(&[("e".into(), set(&[], &[NOTHING_NETWORK]))]));
        let empty = geosite(&[("e".into(), set(&[], &[]))]);
        assert_eq!(empty, geosite(&[("e".into(), set(&[NOTHING_DOMAIN], &[]))]));
        // Lengths past 127 take two bytes.
        let mut n = Vec::new();
        varint(300, &mut n);
        assert_eq!(n, [0xac, 0x02]);
    }
}
