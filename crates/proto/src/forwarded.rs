//! A user's own address behind a CDN or reverse proxy: `X-Forwarded-For` read only
//! when the connection comes from a proxy the operator trusts.
//!
//! - [`Cidr`]: a trusted network, `"173.245.48.0/20"`, `"2400:cb00::/32"`, or a bare
//!   address (`/32` or `/128`); low bits past the prefix are ignored, as nginx's
//!   `set_real_ip_from` does.
//! - [`client_ip`]: the rule. When the TCP peer is trusted, `X-Forwarded-For` is
//!   walked from the right (the proxy nearest the node appends last); addresses that
//!   are themselves trusted are skipped, and the first valid address that is not is
//!   the user's. No valid untrusted address, no header, or a peer that is not
//!   trusted: the peer's address (anyone else could forge the header).
//!
//! Items are read leniently: spaces around them, `"quotes"`, a port
//! (`198.51.100.7:5000`), brackets (`[2001:db8::1]`, `[2001:db8::1]:443`); anything
//! else (`unknown`, a name, garbage) is skipped. Bounded: at most [`MAX_ITEMS`] items
//! are looked at, and a header line longer than [`MAX_VALUE_LEN`] is ignored whole.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::str::FromStr;

/// The header's name, lower case (HTTP/2 and `http::HeaderMap` spell it so).
pub const HEADER: &str = "x-forwarded-for";

/// The most list items looked at, from the right.
pub const MAX_ITEMS: usize = 64;

/// The longest header line read; a longer one is ignored.
pub const MAX_VALUE_LEN: usize = 4 * 1024;

/// A network: an address and a prefix length.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Cidr {
    addr: IpAddr,
    prefix: u8,
}

/// Why a text is not a network.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CidrError {
    /// The address part is not an IPv4 or IPv6 address.
    #[error(
        "{0:?} is not an IP address (write a network as \"192.0.2.0/24\" or \"2001:db8::/32\")"
    )]
    Address(String),
    /// The prefix length is not a number within the address's bits.
    #[error("prefix length {prefix:?} is not 0-{max}")]
    Prefix {
        /// The prefix as written.
        prefix: String,
        /// 32 for IPv4, 128 for IPv6.
        max: u8,
    },
}

impl Cidr {
    /// The network of `addr` with `prefix` bits (at most 32 or 128; more is cut to it).
    pub fn new(addr: IpAddr, prefix: u8) -> Self {
        let prefix = prefix.min(bits(addr));
        // An IPv4-mapped network is its IPv4 network (addresses are compared so).
        let (addr, prefix) = match addr {
            IpAddr::V6(v6) if prefix >= 96 => match v6.to_ipv4_mapped() {
                Some(v4) => (IpAddr::V4(v4), prefix - 96),
                None => (addr, prefix),
            },
            _ => (addr, prefix),
        };
        Self {
            addr: mask(addr, prefix),
            prefix,
        }
    }

    /// The network's first address.
    pub fn addr(&self) -> IpAddr {
        self.addr
    }

    /// The prefix length.
    pub fn prefix(&self) -> u8 {
        self.prefix
    }

    /// Whether `ip` is in the network (an IPv4-mapped IPv6 address counts as its IPv4
    /// address).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        ip.is_ipv4() == self.addr.is_ipv4() && mask(ip, self.prefix) == self.addr
    }
}

impl FromStr for Cidr {
    type Err = CidrError;

    fn from_str(s: &str) -> Result<Self, CidrError> {
        let s = s.trim();
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = addr
            .parse()
            .map_err(|_| CidrError::Address(addr.chars().take(64).collect()))?;
        let max = bits(addr);
        let prefix = match prefix {
            None => max,
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|n| *n <= max && !p.starts_with('+'))
                .ok_or_else(|| CidrError::Prefix {
                    prefix: p.chars().take(16).collect(),
                    max,
                })?,
        };
        Ok(Self::new(addr, prefix))
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// The user's address: `peer` (the TCP peer) unless it is in `trusted`; then the
/// rightmost valid address of the `X-Forwarded-For` lines `values` (in the order they
/// came) that is not in `trusted`, or `peer` when there is none.
pub fn client_ip<V: AsRef<[u8]>>(peer: IpAddr, trusted: &[Cidr], values: &[V]) -> IpAddr {
    let is_trusted = |ip: IpAddr| trusted.iter().any(|net| net.contains(ip));
    if !is_trusted(peer) {
        return peer;
    }
    values
        .iter()
        .rev()
        .map(AsRef::as_ref)
        .filter(|v| v.len() <= MAX_VALUE_LEN)
        .flat_map(|v| v.rsplit(|b| *b == b','))
        .take(MAX_ITEMS)
        .filter_map(parse_item)
        .find(|ip| !is_trusted(*ip))
        .unwrap_or(peer)
}

/// One list item as an address, leniently (see the module's documentation).
pub fn parse_item(item: &[u8]) -> Option<IpAddr> {
    let item = std::str::from_utf8(item).ok()?;
    let item = item.trim_matches(|c: char| c == ' ' || c == '\t' || c == '"');
    if item.is_empty() || item.len() > 64 {
        return None;
    }
    if let Ok(ip) = item.parse::<IpAddr>() {
        return Some(canonical(ip));
    }
    if let Ok(addr) = item.parse::<SocketAddr>() {
        return Some(canonical(addr.ip()));
    }
    // `[v6]` without a port.
    let inner = item.strip_prefix('[')?.strip_suffix(']')?;
    inner
        .parse::<Ipv6Addr>()
        .ok()
        .map(|ip| canonical(ip.into()))
}

/// An IPv4-mapped IPv6 address as its IPv4 address; others as they are.
fn canonical(ip: IpAddr) -> IpAddr {
    ip.to_canonical()
}

fn bits(ip: IpAddr) -> u8 {
    if ip.is_ipv4() { 32 } else { 128 }
}

fn mask(ip: IpAddr, prefix: u8) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => {
            let m = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(u32::from(v4) & m))
        }
        IpAddr::V6(v6) => {
            let m = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(u128::from(v6) & m))
        }
    }
}

#[cfg(test)]
#[path = "forwarded_tests.rs"]
mod tests;
