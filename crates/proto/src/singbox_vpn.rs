//! What makes a sing-box config a VPN in sing-box's own apps (SFA, SFI, SFM, SFT),
//! which build their VPN from the config's `tun` inbound: a config with only a local
//! proxy imports, says "connected", and carries nothing.
//!
//! With [`VpnOptions`], [`crate::singbox::client_config`] adds:
//!
//! ```text
//! inbounds: tun `tun-in` (172.19.0.1/30 and fdfe:dcba:9876::1/126, auto_route,
//!           strict_route, the system stack, which every platform's build has)
//! dns:      `remote`, the resolver the options name, reached through the selector
//!           (so proxied names are asked on the far side, never of the local
//!           network), the final one; `local`, the system's, for the servers' own
//!           names (`route.default_domain_resolver`)
//! route:    sniff, then DNS hijacked (the apps' own questions reach `remote`),
//!           private addresses direct (the local network stays reachable),
//!           auto_detect_interface (the proxy's own connections leave by the real
//!           interface, not the tun)
//! ```
//!
//! With no entries, nothing is selected: the config rejects both inbounds, so nothing
//! leaves unproxied, and asks only `local` (there is nothing to reach `remote` by).

use std::net::IpAddr;

use serde::{Serialize, Serializer};

/// The tag of the `tun` inbound.
pub const TUN_TAG: &str = "tun-in";
/// The tag of the resolver reached through the proxy.
pub const REMOTE_DNS_TAG: &str = "remote";
/// The tun's addresses: private ranges no network in use is likely to have.
pub const TUN_ADDRESSES: [&str; 2] = ["172.19.0.1/30", "fdfe:dcba:9876::1/126"];

/// The VPN parts of a config.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VpnOptions {
    /// The resolver asked through the proxy.
    pub remote_dns: RemoteDns,
}

impl Default for VpnOptions {
    fn default() -> Self {
        Self {
            remote_dns: RemoteDns::parse(DEFAULT_REMOTE_DNS).unwrap_or(RemoteDns {
                kind: DnsKind::Tcp,
                server: IpAddr::from([1, 1, 1, 1]),
                port: 53,
                path: None,
            }),
        }
    }
}

/// The default remote resolver: Cloudflare's, over HTTPS.
pub const DEFAULT_REMOTE_DNS: &str = "https://1.1.1.1/dns-query";

/// How the remote resolver is spoken to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DnsKind {
    /// DNS over HTTPS (`https://IP[:port][/path]`).
    Https,
    /// DNS over TLS (`tls://IP[:port]`).
    Tls,
    /// Plain DNS over TCP (`tcp://IP[:port]`).
    Tcp,
    /// Plain DNS over UDP (`udp://IP[:port]`).
    Udp,
}

impl DnsKind {
    fn name(self) -> &'static str {
        match self {
            Self::Https => "https",
            Self::Tls => "tls",
            Self::Tcp => "tcp",
            Self::Udp => "udp",
        }
    }

    fn default_port(self) -> u16 {
        match self {
            Self::Https => 443,
            Self::Tls => 853,
            Self::Tcp | Self::Udp => 53,
        }
    }
}

/// A resolver at an IP address (a name would need a resolver to find it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteDns {
    /// Its protocol.
    pub kind: DnsKind,
    /// Its address.
    pub server: IpAddr,
    /// Its port.
    pub port: u16,
    /// The HTTPS path (DNS over HTTPS only; `/dns-query` when unset).
    pub path: Option<String>,
}

impl RemoteDns {
    /// Reads `https://1.1.1.1/dns-query`, `tls://9.9.9.9`, `tcp://[2606:4700::1111]:53`,
    /// `udp://8.8.8.8`; the error says what is wrong.
    pub fn parse(url: &str) -> Result<Self, String> {
        let (scheme, rest) = url
            .split_once("://")
            .ok_or("must look like https://1.1.1.1/dns-query, tls://, tcp:// or udp://")?;
        let kind = match scheme {
            "https" => DnsKind::Https,
            "tls" => DnsKind::Tls,
            "tcp" => DnsKind::Tcp,
            "udp" => DnsKind::Udp,
            other => return Err(format!("{other:?}: use https, tls, tcp or udp")),
        };
        let (authority, path) = match rest.find('/') {
            Some(at) => (&rest[..at], Some(&rest[at..])),
            None => (rest, None),
        };
        if path.is_some() && kind != DnsKind::Https {
            return Err("only https:// takes a path".into());
        }
        if let Some(p) = path
            && (p.len() > 256 || !p.bytes().all(|b| b.is_ascii_graphic()) || p.contains(['?', '#']))
        {
            return Err("the path: printable ASCII, no query, at most 256 bytes".into());
        }
        let (host, port) = match authority.strip_prefix('[') {
            Some(v6) => {
                let (host, after) = v6.split_once(']').ok_or("an unclosed [")?;
                let port = match after {
                    "" => None,
                    p => Some(p.strip_prefix(':').ok_or("junk after ]")?),
                };
                (host, port)
            }
            None => match authority.rsplit_once(':') {
                Some((h, p)) if !h.contains(':') => (h, Some(p)),
                _ => (authority, None),
            },
        };
        let server: IpAddr = host
            .parse()
            .map_err(|_| format!("{host:?} is not an IP address (a name would need a resolver)"))?;
        let port = match port {
            None => kind.default_port(),
            Some(p) => p
                .parse::<u16>()
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| format!("{p:?} is not a port"))?,
        };
        Ok(Self {
            kind,
            server,
            port,
            path: path.filter(|p| *p != "/dns-query").map(str::to_owned),
        })
    }
}

/// The `tun` inbound.
#[derive(Serialize)]
pub(crate) struct Tun {
    #[serde(rename = "type")]
    kind: &'static str,
    tag: &'static str,
    address: [&'static str; 2],
    auto_route: bool,
    strict_route: bool,
    stack: &'static str,
}

impl Tun {
    pub(crate) fn new() -> Self {
        Self {
            kind: "tun",
            tag: TUN_TAG,
            address: TUN_ADDRESSES,
            auto_route: true,
            strict_route: true,
            stack: "system",
        }
    }
}

/// The remote resolver as a sing-box DNS server, through `detour`.
pub(crate) struct RemoteServer<'a> {
    pub(crate) dns: &'a RemoteDns,
    pub(crate) detour: &'a str,
}

impl Serialize for RemoteServer<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Server<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            tag: &'static str,
            server: String,
            #[serde(skip_serializing_if = "Option::is_none")]
            server_port: Option<u16>,
            #[serde(skip_serializing_if = "Option::is_none")]
            path: Option<&'a str>,
            detour: &'a str,
        }
        let d = self.dns;
        Server {
            kind: d.kind.name(),
            tag: REMOTE_DNS_TAG,
            server: d.server.to_string(),
            server_port: (d.port != d.kind.default_port()).then_some(d.port),
            path: d.path.as_deref(),
            detour: self.detour,
        }
        .serialize(serializer)
    }
}

/// The route rules a VPN config starts with: sniff, hijack DNS, private addresses
/// direct.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum VpnRule {
    Sniff {
        action: &'static str,
    },
    HijackDns {
        protocol: &'static str,
        action: &'static str,
    },
    Private {
        ip_is_private: bool,
        action: &'static str,
        outbound: &'static str,
    },
}

/// The rules, in order.
pub(crate) fn rules() -> [VpnRule; 3] {
    [
        VpnRule::Sniff { action: "sniff" },
        VpnRule::HijackDns {
            protocol: "dns",
            action: "hijack-dns",
        },
        VpnRule::Private {
            ip_is_private: true,
            action: "route",
            outbound: crate::singbox::DIRECT_TAG,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_resolvers_are_read_with_their_defaults() {
        let d = RemoteDns::parse(DEFAULT_REMOTE_DNS).unwrap();
        assert_eq!(
            (d.kind, d.server, d.port, d.path),
            (DnsKind::Https, IpAddr::from([1, 1, 1, 1]), 443, None)
        );
        let d = RemoteDns::parse("https://9.9.9.9:5053/custom").unwrap();
        assert_eq!((d.port, d.path.as_deref()), (5053, Some("/custom")));
        let d = RemoteDns::parse("tcp://[2606:4700::1111]:5353").unwrap();
        assert_eq!(
            (d.kind, d.server.to_string(), d.port),
            (DnsKind::Tcp, "2606:4700::1111".into(), 5353)
        );
        assert_eq!(RemoteDns::parse("tls://9.9.9.9").unwrap().port, 853);
        assert_eq!(RemoteDns::parse("udp://8.8.8.8").unwrap().port, 53);
        for bad in [
            "1.1.1.1",
            "quic://1.1.1.1",
            "https://dns.google/dns-query",
            "tcp://1.1.1.1/path",
            "udp://1.1.1.1:0",
            "udp://1.1.1.1:99999",
            "tcp://[::1",
            "https://1.1.1.1/a?b",
        ] {
            assert!(RemoteDns::parse(bad).is_err(), "{bad}");
        }
    }
}
