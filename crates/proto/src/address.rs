//! The destination a client asks for, and its two wire forms.
//!
//! - **SOCKS5/Trojan form** (RFC 1928 §5, also Trojan's request and UDP packets):
//!   `ATYP` then the address then the port, big-endian. `ATYP` 1 = IPv4 (4 bytes),
//!   3 = domain (1 length byte, then the name), 4 = IPv6 (16 bytes).
//! - **VLESS form** (VLESS requests and Mux.Cool/XUDP frames): the port first,
//!   big-endian, then `ATYP` 1 = IPv4, 2 = domain, 3 = IPv6. This is Xray's
//!   `protocol.PortThenAddress()` parser in `proxy/vless/encoding/encoding.go` and
//!   sing-vmess's `AddressSerializer` in `protocol.go`.
//!
//! A domain on the wire is 1 to 255 bytes of hostname characters (`A-Z a-z 0-9 - . _`,
//! the set Xray's `common/protocol/address.go` accepts). A "domain" that is an IP
//! literal (`1.2.3.4`, `::1`, `[::1]`) becomes [`Address::Ip`], as Xray does.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The longest domain name either wire form can carry (its length is one byte).
pub const MAX_DOMAIN_LEN: usize = 255;

/// A destination: an IP socket address or a domain name with a port.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Address {
    /// An IPv4 or IPv6 address and port.
    Ip(SocketAddr),
    /// A domain name (1 to 255 hostname characters, see [`Address::domain`]) and port.
    Domain(String, u16),
}

/// Why bytes could not be read as an [`Address`], or a name is not a valid domain.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AddressError {
    /// The address type byte is none of the form's known types.
    #[error("unknown address type {0}")]
    UnknownType(u8),
    /// The domain has length zero.
    #[error("empty domain name")]
    EmptyDomain,
    /// The domain is longer than 255 bytes (only from [`Address::domain`]).
    #[error("domain name of {0} bytes is longer than 255")]
    DomainTooLong(usize),
    /// The domain holds a byte that is not a hostname character (NUL, space, non-ASCII...).
    #[error("domain name holds byte {0:#04x}, which is not a hostname character")]
    InvalidDomainByte(u8),
}

/// The address type bytes of one wire form.
#[derive(Clone, Copy)]
struct Types {
    ipv4: u8,
    domain: u8,
    ipv6: u8,
}

const SOCKS: Types = Types {
    ipv4: 1,
    domain: 3,
    ipv6: 4,
};
const VLESS: Types = Types {
    ipv4: 1,
    domain: 2,
    ipv6: 3,
};

impl Address {
    /// A domain destination, checked: 1 to 255 hostname characters. An IP literal
    /// (`127.0.0.1`, `::1`, `[::1]`) gives [`Address::Ip`] instead.
    pub fn domain(name: &str, port: u16) -> Result<Self, AddressError> {
        Self::from_name_bytes(name.as_bytes(), port)
    }

    /// The destination's port.
    pub fn port(&self) -> u16 {
        match self {
            Self::Ip(addr) => addr.port(),
            Self::Domain(_, port) => *port,
        }
    }

    fn from_name_bytes(name: &[u8], port: u16) -> Result<Self, AddressError> {
        if name.is_empty() {
            return Err(AddressError::EmptyDomain);
        }
        if name.len() > MAX_DOMAIN_LEN {
            return Err(AddressError::DomainTooLong(name.len()));
        }
        if let Some(ip) = ip_literal(name) {
            return Ok(Self::Ip(SocketAddr::new(ip, port)));
        }
        if let Some(&bad) = name.iter().find(|b| !is_hostname_byte(**b)) {
            return Err(AddressError::InvalidDomainByte(bad));
        }
        // Every byte is ASCII, so this is valid UTF-8.
        let name = String::from_utf8_lossy(name).into_owned();
        Ok(Self::Domain(name, port))
    }

    /// Parses the SOCKS5/Trojan form (`ATYP`, address, port) at the start of `buf`.
    pub fn parse_socks(buf: &[u8]) -> Result<Option<(Self, usize)>, AddressError> {
        let Some((&atyp, rest)) = buf.split_first() else {
            return Ok(None);
        };
        let Some((ip_or_name, used)) = parse_host(atyp, rest, SOCKS)? else {
            return Ok(None);
        };
        let Some(port) = rest.get(used..used + 2) else {
            return Ok(None);
        };
        let port = u16::from_be_bytes([port[0], port[1]]);
        Ok(Some((ip_or_name.with_port(port)?, 1 + used + 2)))
    }

    /// Parses the VLESS form (port, `ATYP`, address) at the start of `buf`.
    pub fn parse_vless(buf: &[u8]) -> Result<Option<(Self, usize)>, AddressError> {
        let Some(&[p0, p1, atyp]) = buf.first_chunk::<3>() else {
            return Ok(None);
        };
        let Some((ip_or_name, used)) = parse_host(atyp, &buf[3..], VLESS)? else {
            return Ok(None);
        };
        let port = u16::from_be_bytes([p0, p1]);
        Ok(Some((ip_or_name.with_port(port)?, 3 + used)))
    }

    /// Appends the SOCKS5/Trojan form. A [`Address::Domain`] built by hand with more
    /// than 255 bytes is cut to its first 255 (parsers and [`Address::domain`] never
    /// build one).
    pub fn encode_socks(&self, out: &mut Vec<u8>) {
        self.encode_host(out, SOCKS);
        out.extend_from_slice(&self.port().to_be_bytes());
    }

    /// Appends the VLESS form (see [`Address::encode_socks`] for overlong domains).
    pub fn encode_vless(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.port().to_be_bytes());
        self.encode_host(out, VLESS);
    }

    /// The number of bytes either wire form takes for this address.
    pub fn wire_len(&self) -> usize {
        let host = match self {
            Self::Ip(SocketAddr::V4(_)) => 4,
            Self::Ip(SocketAddr::V6(_)) => 16,
            Self::Domain(name, _) => 1 + name.len().min(MAX_DOMAIN_LEN),
        };
        1 + host + 2
    }

    fn encode_host(&self, out: &mut Vec<u8>, types: Types) {
        match self {
            Self::Ip(SocketAddr::V4(a)) => {
                out.push(types.ipv4);
                out.extend_from_slice(&a.ip().octets());
            }
            Self::Ip(SocketAddr::V6(a)) => {
                out.push(types.ipv6);
                out.extend_from_slice(&a.ip().octets());
            }
            Self::Domain(name, _) => {
                let name = &name.as_bytes()[..name.len().min(MAX_DOMAIN_LEN)];
                out.push(types.domain);
                out.push(name.len() as u8);
                out.extend_from_slice(name);
            }
        }
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ip(addr) => addr.fmt(f),
            Self::Domain(name, port) => write!(f, "{name}:{port}"),
        }
    }
}

/// The host part before the port is known.
enum Host<'a> {
    Ip(IpAddr),
    Name(&'a [u8]),
}

impl Host<'_> {
    fn with_port(self, port: u16) -> Result<Address, AddressError> {
        match self {
            Self::Ip(ip) => Ok(Address::Ip(SocketAddr::new(ip, port))),
            Self::Name(name) => Address::from_name_bytes(name, port),
        }
    }
}

/// Reads the host that follows `atyp`: `Ok(None)` when `rest` is too short.
fn parse_host(
    atyp: u8,
    rest: &[u8],
    types: Types,
) -> Result<Option<(Host<'_>, usize)>, AddressError> {
    if atyp == types.ipv4 {
        Ok(rest
            .first_chunk::<4>()
            .map(|o| (Host::Ip(IpAddr::V4(Ipv4Addr::from(*o))), 4)))
    } else if atyp == types.ipv6 {
        Ok(rest
            .first_chunk::<16>()
            .map(|o| (Host::Ip(IpAddr::V6(Ipv6Addr::from(*o))), 16)))
    } else if atyp == types.domain {
        let Some((&len, name)) = rest.split_first() else {
            return Ok(None);
        };
        if len == 0 {
            return Err(AddressError::EmptyDomain);
        }
        let len = usize::from(len);
        // Reject a bad byte as soon as it arrives rather than after the whole name.
        if let Some(&bad) = name
            .iter()
            .take(len)
            .find(|b| !is_hostname_byte(**b) && !is_ip_literal_byte(**b))
        {
            return Err(AddressError::InvalidDomainByte(bad));
        }
        Ok(name.get(..len).map(|n| (Host::Name(n), 1 + len)))
    } else {
        Err(AddressError::UnknownType(atyp))
    }
}

fn is_hostname_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_')
}

/// Bytes an IPv6 literal adds to the hostname characters.
fn is_ip_literal_byte(b: u8) -> bool {
    matches!(b, b':' | b'[' | b']')
}

fn ip_literal(name: &[u8]) -> Option<IpAddr> {
    let text = std::str::from_utf8(name).ok()?;
    let text = text
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .unwrap_or(text);
    text.parse().ok()
}

#[cfg(test)]
#[path = "address_tests.rs"]
mod tests;
