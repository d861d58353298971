//! A REALITY inbound's `dest`: the site a node splices everyone but its own clients
//! to. One check for the panel's validation and the node's config ([`check`]), and
//! the address test both use ([`is_private`]) for the addresses a name resolves to
//! when the node dials it.
//!
//! A `dest` is `host:port`: a host name, an IPv4 address or `[v6]`, and a port 1 to
//! 65535. Unless the server allows private destinations, it must be somewhere a
//! prober could reach anyway: not an address of the node's own machine or its
//! networks (loopback, private, link-local, shared/CGNAT, unspecified, unique local,
//! documentation, multicast …), and not a name that means this machine or its local
//! network (`localhost`, `*.localhost`, `*.local`, `*.internal`, `*.home.arpa`,
//! `*.localdomain`). Otherwise anyone could reach the node's own services (its control
//! API, a panel on the same machine) through the inbound's port.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::Address;

/// Why a `dest` is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DestError {
    /// Not `host:port` (a host name, an IPv4 address or `[v6]`, a port 1 to 65535).
    #[error("must be host:port (a host name, an IPv4 address or [v6]), port 1 to 65535")]
    Syntax,
    /// The address is not a global one, and private destinations are not allowed.
    #[error(
        "{0} is a loopback, private or otherwise non-global address: it would expose this \
         server's own services (allow private destinations on the server to use it)"
    )]
    Private(IpAddr),
    /// The name means this machine or its local network, and private destinations are
    /// not allowed.
    #[error(
        "{0:?} names this machine or its local network: it would expose this server's own \
         services (allow private destinations on the server to use it)"
    )]
    LocalName(String),
}

/// Checks a `dest` (see the module's doc); `allow_private` lifts the refusal of
/// non-global addresses and local names. The destination, parsed.
pub fn check(dest: &str, allow_private: bool) -> Result<Address, DestError> {
    let (host, port) = dest.rsplit_once(':').ok_or(DestError::Syntax)?;
    if port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()) {
        return Err(DestError::Syntax);
    }
    let port = port
        .parse::<u16>()
        .ok()
        .filter(|p| *p != 0)
        .ok_or(DestError::Syntax)?;
    if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        let ip: IpAddr = v6
            .parse::<Ipv6Addr>()
            .map_err(|_| DestError::Syntax)?
            .into();
        return checked_ip(ip, port, allow_private);
    }
    if let Ok(v4) = host.parse::<Ipv4Addr>() {
        return checked_ip(v4.into(), port, allow_private);
    }
    if !is_host_name(host) {
        return Err(DestError::Syntax);
    }
    if !allow_private && is_local_name(host) {
        return Err(DestError::LocalName(host.to_owned()));
    }
    Address::domain(host, port).map_err(|_| DestError::Syntax)
}

fn checked_ip(ip: IpAddr, port: u16, allow_private: bool) -> Result<Address, DestError> {
    if !allow_private && is_private(ip) {
        return Err(DestError::Private(ip));
    }
    Ok(Address::Ip(SocketAddr::new(ip, port)))
}

/// Whether `name` is a DNS host name: labels of 1 to 63 letters, digits, `-` (not at
/// either end) and `_`, 253 bytes at most; the last label not all digits nor `0x`
/// hex, which the system's resolver would read as an IPv4 address (`2130706433`,
/// `127.1`, `0x7f000001` are 127.0.0.1 to it).
fn is_host_name(name: &str) -> bool {
    if name.is_empty() || name.len() > 253 {
        return false;
    }
    let labels_ok = name.split('.').all(|label| {
        !label.is_empty()
            && label.len() <= 63
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            && !label.starts_with('-')
            && !label.ends_with('-')
    });
    let last = name.rsplit('.').next().unwrap_or_default();
    let numeric = last.bytes().all(|b| b.is_ascii_digit())
        || last.get(..2).is_some_and(|p| p.eq_ignore_ascii_case("0x"))
            && last[2..].bytes().all(|b| b.is_ascii_hexdigit());
    labels_ok && !numeric
}

/// Whether `name` means this machine or its local network.
fn is_local_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name == "localhost"
        || [
            ".localhost",
            ".local",
            ".internal",
            ".home.arpa",
            ".localdomain",
        ]
        .iter()
        .any(|suffix| name.ends_with(suffix))
}

/// Whether `ip` is anything but a globally routable unicast address: loopback,
/// private, link-local, shared (CGNAT), unspecified, multicast, documentation,
/// benchmarking, reserved, unique local, NAT64 and 6to4 (which embed any IPv4
/// address); an IPv4-mapped IPv6 address is judged as its IPv4 address.
pub fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => private_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return private_v4(v4);
            }
            let s = v6.segments();
            v6.is_multicast()
                || s[..6] == [0; 6] // ::/96: unspecified, loopback, IPv4-compatible
                || (s[0] & 0xfe00) == 0xfc00 // unique local
                || (s[0] & 0xffc0) == 0xfe80 // link-local
                || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated, still routed on LANs)
                || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
                || (s[0] == 0x0064 && s[1] == 0xff9b && s[2..6] == [0; 4]) // NAT64 64:ff9b::/96
                || (s[0] == 0x0064 && s[1] == 0xff9b && s[2] == 1) // local NAT64 64:ff9b:1::/48
                || s[0] == 0x2002 // 6to4: embeds any IPv4, the private ones too
                || v6 == Ipv6Addr::new(0, 0, 0, 0, 0, 0xffff, 0, 0)
        }
    }
}

fn private_v4(v4: Ipv4Addr) -> bool {
    let o = v4.octets();
    v4.is_loopback()
        || v4.is_private()
        || v4.is_link_local()
        || v4.is_unspecified()
        || v4.is_broadcast()
        || v4.is_multicast()
        || v4.is_documentation()
        || o[0] == 0
        || (o[0] == 100 && (o[1] & 0xc0) == 64) // 100.64.0.0/10 shared
        || (o[0] == 192 && o[1] == 0 && o[2] == 0) // 192.0.0.0/24 protocol assignments
        || (o[0] == 198 && (o[1] & 0xfe) == 18) // 198.18.0.0/15 benchmarking
        || o[0] >= 240
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_destinations_pass_and_parse() {
        for (dest, want) in [
            (
                "www.example.com:443",
                Address::Domain("www.example.com".into(), 443),
            ),
            ("1.1.1.1:443", Address::Ip("1.1.1.1:443".parse().unwrap())),
            (
                "[2606:4700::1111]:8443",
                Address::Ip("[2606:4700::1111]:8443".parse().unwrap()),
            ),
            (
                "_acme.example.org:443",
                Address::Domain("_acme.example.org".into(), 443),
            ),
        ] {
            assert_eq!(check(dest, false), Ok(want), "{dest}");
        }
    }

    #[test]
    fn malformed_destinations_are_refused() {
        for dest in [
            "",
            "www.example.com",
            "www.example.com:",
            "www.example.com:0",
            "www.example.com:65536",
            "www.example.com:+443",
            "www.example.com:0443x",
            "2001:db8::1:443",
            "[2001:db8::1:443",
            "[not-v6]:443",
            ":443",
            "bad host:443",
            "-x.example:443",
            "a..example:443",
            "x.example.:443",
            "é.example:443",
            // What the system's resolver reads as 127.0.0.1.
            "2130706433:443",
            "127.1:443",
            "0x7f000001:443",
            "0x7f.0.0.1:443",
        ] {
            assert_eq!(check(dest, false), Err(DestError::Syntax), "{dest:?}");
            assert_eq!(check(dest, true), Err(DestError::Syntax), "{dest:?}");
        }
    }

    #[test]
    fn non_global_addresses_are_refused_unless_allowed() {
        for dest in [
            "127.0.0.1:443",
            "127.8.9.10:80",
            "10.1.2.3:443",
            "172.16.0.1:443",
            "192.168.1.1:443",
            "169.254.169.254:80",
            "0.0.0.0:443",
            "100.64.0.1:443",
            "255.255.255.255:443",
            "224.0.0.1:443",
            "[::1]:443",
            "[::]:443",
            "[fd00::1]:443",
            "[fe80::1]:443",
            "[::ffff:127.0.0.1]:443",
            "[::ffff:10.0.0.1]:443",
            "[64:ff9b::a00:1]:443",
            "[2002:a00:1::]:443",
        ] {
            assert!(
                matches!(check(dest, false), Err(DestError::Private(_))),
                "{dest}: {:?}",
                check(dest, false)
            );
            assert!(check(dest, true).is_ok(), "{dest}");
        }
    }

    #[test]
    fn names_of_this_machine_or_its_network_are_refused_unless_allowed() {
        for dest in [
            "localhost:443",
            "LocalHost:8080",
            "panel.localhost:443",
            "printer.local:443",
            "db.internal:5432",
            "nas.home.arpa:443",
            "host.localdomain:443",
        ] {
            assert!(
                matches!(check(dest, false), Err(DestError::LocalName(_))),
                "{dest}: {:?}",
                check(dest, false)
            );
            assert!(check(dest, true).is_ok(), "{dest}");
        }
        // Not local: only a suffix after a dot counts.
        assert!(check("notlocalhost.com:443", false).is_ok());
        assert!(check("global.example:443", false).is_ok());
    }

    #[test]
    fn the_errors_say_what_is_wrong() {
        assert_eq!(
            check("127.0.0.1:9443", false).unwrap_err().to_string(),
            "127.0.0.1 is a loopback, private or otherwise non-global address: it would \
             expose this server's own services (allow private destinations on the server \
             to use it)"
        );
        assert!(
            check("localhost:1", false)
                .unwrap_err()
                .to_string()
                .starts_with("\"localhost\" names this machine or its local network")
        );
    }
}
