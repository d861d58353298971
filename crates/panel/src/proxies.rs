//! The operator's trusted reverse proxies (`http.trusted_proxies`) and the client
//! behind them: the connection's address, or, when that address is a trusted proxy,
//! the right-most address in `X-Forwarded-For` that is not a trusted proxy.
//!
//! Off by default: without trusted proxies `X-Forwarded-For` is ignored, because any
//! client can send one. Right-most, not left-most: every proxy appends the address it
//! got the request from, so everything left of the first untrusted hop was written by
//! the client and proves nothing. Validated with the config; the API's `ClientIp`
//! extractor asks it.

use std::net::{IpAddr, SocketAddr};

use http::HeaderMap;

use crate::model::FieldError;

/// An address block (`10.0.0.0/8`, `::1/128`); a bare address is its own block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    net: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// Parses `10.0.0.0/8`, `192.0.2.1`, `2001:db8::/32`; `None` when it is neither.
    pub fn parse(text: &str) -> Option<Self> {
        let (addr, prefix) = match text.trim().split_once('/') {
            Some((a, p)) => (a, Some(p.parse::<u8>().ok()?)),
            None => (text.trim(), None),
        };
        let net: IpAddr = addr.parse().ok()?;
        let max = if net.is_ipv4() { 32 } else { 128 };
        let prefix = prefix.unwrap_or(max);
        (prefix <= max).then_some(Self {
            net: net.to_canonical(),
            prefix,
        })
    }

    /// Whether `ip` is in the block (an IPv4-mapped IPv6 address counts as IPv4).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.net, ip.to_canonical()) {
            (IpAddr::V4(n), IpAddr::V4(a)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(n) & mask == u32::from(a) & mask
            }
            (IpAddr::V6(n), IpAddr::V6(a)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(n) & mask == u128::from(a) & mask
            }
            _ => false,
        }
    }
}

/// The reverse proxies whose `X-Forwarded-For` is believed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<Cidr>);

/// `X-Forwarded-For` entries looked at, at most, from the right: a header longer than
/// this chain of proxies is cut (its left part is the client's own words anyway).
const MAX_HOPS: usize = 16;

impl TrustedProxies {
    /// Parses the configured list; an error names the entry (`http.trusted_proxies[1]`).
    pub fn parse(list: &[String]) -> Result<Self, FieldError> {
        list.iter()
            .enumerate()
            .map(|(i, t)| {
                Cidr::parse(t).ok_or_else(|| {
                    FieldError::new(
                        format!("http.trusted_proxies[{i}]"),
                        format!("{t:?} is not an address or CIDR block (10.0.0.0/8)"),
                    )
                })
            })
            .collect::<Result<_, _>>()
            .map(Self)
    }

    /// Whether `ip` is a trusted proxy.
    pub fn trusts(&self, ip: IpAddr) -> bool {
        self.0.iter().any(|c| c.contains(ip))
    }

    /// The client behind a connection from `peer` that sent `headers`.
    pub fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        let peer = peer.to_canonical();
        if !self.trusts(peer) {
            return peer;
        }
        let hops: Vec<&str> = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .collect();
        let mut client = peer;
        for hop in hops.iter().rev().take(MAX_HOPS) {
            let Some(ip) = parse_hop(hop) else {
                // Not an address: a proxy would not write it; stop at the last one known.
                return client;
            };
            client = ip;
            if !self.trusts(ip) {
                return ip;
            }
        }
        client
    }
}

/// One `X-Forwarded-For` entry: `192.0.2.1`, `2001:db8::1`, `[2001:db8::1]:443`,
/// `192.0.2.1:443`.
fn parse_hop(hop: &str) -> Option<IpAddr> {
    let hop = hop.trim();
    if let Ok(ip) = hop.parse::<IpAddr>() {
        return Some(ip.to_canonical());
    }
    hop.parse::<SocketAddr>()
        .ok()
        .map(|s| s.ip().to_canonical())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn blocks_contain_their_addresses_only() {
        let c = Cidr::parse("10.1.0.0/16").unwrap();
        assert!(c.contains(ip("10.1.200.3")));
        assert!(!c.contains(ip("10.2.0.1")));
        assert!(c.contains(ip("::ffff:10.1.0.9")));
        assert!(Cidr::parse("0.0.0.0/0").unwrap().contains(ip("192.0.2.1")));
        assert!(Cidr::parse("::1").unwrap().contains(ip("::1")));
        assert!(
            !Cidr::parse("2001:db8::/32")
                .unwrap()
                .contains(ip("2001:db9::1"))
        );
        for bad in ["", "10.0.0.0/33", "::/129", "x", "10.0.0.0/-1", "10.0.0.0/"] {
            assert_eq!(Cidr::parse(bad), None, "{bad}");
        }
        let e = TrustedProxies::parse(&["127.0.0.1".into(), "nope".into()]).unwrap_err();
        assert_eq!(e.field, "http.trusted_proxies[1]");
    }

    #[test]
    fn forwarded_for_counts_only_from_a_trusted_proxy_and_from_the_right() {
        let mut h = HeaderMap::new();
        h.append(
            "x-forwarded-for",
            HeaderValue::from_static("198.51.100.1, 203.0.113.7"),
        );
        h.append("x-forwarded-for", HeaderValue::from_static("10.0.0.2"));
        // Off: the header is ignored.
        let none = TrustedProxies::default();
        assert_eq!(none.client(ip("127.0.0.1"), &h), ip("127.0.0.1"));
        // The connection is from a proxy, which got it from another trusted proxy,
        // which got it from 203.0.113.7; 198.51.100.1 is what the client claimed.
        let t = TrustedProxies::parse(&["127.0.0.1".into(), "10.0.0.0/8".into()]).unwrap();
        assert_eq!(t.client(ip("127.0.0.1"), &h), ip("203.0.113.7"));
        // A connection from anyone else: its own address, whatever it claims.
        assert_eq!(t.client(ip("192.0.2.9"), &h), ip("192.0.2.9"));
        // Garbage stops the walk at the last address a proxy wrote.
        let mut g = HeaderMap::new();
        g.insert(
            "x-forwarded-for",
            HeaderValue::from_static("junk, 10.0.0.3"),
        );
        assert_eq!(t.client(ip("127.0.0.1"), &g), ip("10.0.0.3"));
        // Ports and brackets are proxies' habits too.
        let mut p = HeaderMap::new();
        p.insert(
            "x-forwarded-for",
            HeaderValue::from_static("[2001:db8::5]:4711"),
        );
        assert_eq!(t.client(ip("::ffff:127.0.0.1"), &p), ip("2001:db8::5"));
        // No header from a trusted proxy: the proxy is the client.
        assert_eq!(
            t.client(ip("127.0.0.1"), &HeaderMap::new()),
            ip("127.0.0.1")
        );
    }
}
