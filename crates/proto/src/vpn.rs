//! What every format's VPN config shares: the resolver asked through the proxy
//! ([`RemoteDns`], the panel's `subscription.remote_dns`) and the tun's addresses.
//! Each format writes them in its own words ([`crate::singbox_vpn`],
//! [`crate::clash_vpn`]).

use std::net::IpAddr;

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
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Https => "https",
            Self::Tls => "tls",
            Self::Tcp => "tcp",
            Self::Udp => "udp",
        }
    }

    pub(crate) fn default_port(self) -> u16 {
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

impl RemoteDns {
    /// The resolver as a URL (`https://1.1.1.1/dns-query`, `tcp://[::1]:53`): what
    /// [`RemoteDns::parse`] reads, with the port and path always written.
    pub fn url(&self) -> String {
        let host = match self.server {
            IpAddr::V4(v4) => v4.to_string(),
            IpAddr::V6(v6) => format!("[{v6}]"),
        };
        let path = match self.kind {
            DnsKind::Https => self.path.as_deref().unwrap_or("/dns-query"),
            _ => "",
        };
        format!("{}://{host}:{}{path}", self.kind.name(), self.port)
    }
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
        assert_eq!(
            RemoteDns::parse("tcp://[2606:4700::1111]:5353")
                .unwrap()
                .url(),
            "tcp://[2606:4700::1111]:5353"
        );
        assert_eq!(
            RemoteDns::parse(DEFAULT_REMOTE_DNS).unwrap().url(),
            "https://1.1.1.1:443/dns-query"
        );
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
