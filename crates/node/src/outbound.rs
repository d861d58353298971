//! Outbounds: `direct` (connect from this node) and `block`, and the rule that keeps
//! users away from the node's own loopback and private networks.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use thiserror::Error;
use tokio::net::{TcpStream, UdpSocket, lookup_host};

use std::collections::HashMap;

use crate::config::{NodeConfig, OutboundKind};
use crate::route::{Network, Rule, route};

/// Connecting to a destination takes at most this long. 10 s: slow destinations
/// still connect; a dead one frees the user's connection soon.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A destination: an address, or a name to resolve, and a port.
pub use switchyard_proto::Address as Destination;

/// Why a destination was not reached.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum DialError {
    /// The route sends this traffic to `block`.
    #[error("{0}: blocked by the route")]
    Blocked(Destination),
    /// The destination is on loopback or a private network and those are not allowed.
    #[error("{0}: private and loopback destinations are not allowed on this node")]
    Private(Destination),
    /// The name does not resolve.
    #[error("{0}: does not resolve: {1}")]
    Resolve(Destination, io::Error),
    /// Connecting failed or timed out.
    #[error("{0}: {1}")]
    Connect(Destination, io::Error),
    /// The route sends this into a tunnel, and the tunnel can't take it.
    #[error(
        "{0}: tunnel {1}: no stream could be opened (no origin connected, or UDP, which tunnels don't carry yet)"
    )]
    Tunnel(Destination, String),
}

/// Whether `ip` is anything but a globally routable unicast address: loopback,
/// private, link-local, shared (CGNAT), unspecified, multicast, documentation,
/// benchmarking, or IPv4-mapped forms of those.
pub fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => private_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return private_v4(v4);
            }
            let s = v6.segments();
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local
                || (s[0] & 0xffc0) == 0xfe80 // link-local
                || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
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
        || (o[0] == 198 && (o[1] & 0xfe) == 18) // 198.18.0.0/15 benchmarking
        || o[0] >= 240
}

/// Where an outbound sends traffic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Via {
    /// Out from this node.
    Direct,
    /// Nowhere.
    Block,
    /// Into the tunnel with this tag (this node is its relay).
    Tunnel(String),
}

/// Dials destinations for users, through the outbound the route picks.
#[derive(Clone, Debug)]
pub struct Dialer {
    rules: Vec<Rule>,
    final_tag: String,
    outbounds: HashMap<String, Via>,
    /// Whether private and loopback destinations are allowed.
    pub allow_private: bool,
}

impl Dialer {
    /// The dialer of a (validated) config: its rules, outbounds and final outbound.
    pub fn from_config(c: &NodeConfig) -> Self {
        let mut outbounds: HashMap<String, Via> = [
            ("direct".to_owned(), Via::Direct),
            ("block".to_owned(), Via::Block),
        ]
        .into();
        for o in &c.outbounds {
            let via = match o.kind {
                OutboundKind::Direct => Via::Direct,
                OutboundKind::Block => Via::Block,
            };
            outbounds.insert(o.tag.clone(), via);
        }
        for tag in c.relay_tags() {
            outbounds.insert(tag.clone(), Via::Tunnel(tag));
        }
        Self {
            rules: c.route.rules.clone(),
            final_tag: c.final_tag(),
            outbounds,
            allow_private: c.node.allow_private_destinations,
        }
    }

    /// A dialer sending everything through one kind of outbound.
    pub fn all(kind: OutboundKind, allow_private: bool) -> Self {
        Self {
            rules: Vec::new(),
            final_tag: "all".into(),
            outbounds: [(
                "all".to_owned(),
                match kind {
                    OutboundKind::Direct => Via::Direct,
                    OutboundKind::Block => Via::Block,
                },
            )]
            .into(),
            allow_private,
        }
    }

    /// Where a connection to `dest` over `network` goes.
    pub fn via(&self, dest: &Destination, network: Network) -> Via {
        let tag = route(&self.rules, &self.final_tag, dest, network);
        self.outbounds.get(tag).cloned().unwrap_or(Via::Block)
    }

    /// The addresses `dest` stands for, routed and checked against the private-range
    /// rule.
    pub async fn resolve(
        &self,
        dest: &Destination,
        network: Network,
    ) -> Result<Vec<SocketAddr>, DialError> {
        match self.via(dest, network) {
            Via::Direct => {}
            Via::Block => return Err(DialError::Blocked(dest.clone())),
            // UDP through tunnels is not in this build: such datagrams are dropped.
            Via::Tunnel(tag) => return Err(DialError::Tunnel(dest.clone(), tag)),
        }
        let addrs: Vec<SocketAddr> = match dest {
            Destination::Ip(a) => vec![*a],
            Destination::Domain(name, port) => lookup_host((name.as_str(), *port))
                .await
                .map_err(|e| DialError::Resolve(dest.clone(), e))?
                .collect(),
        };
        // A name that resolves to any private address is refused whole: otherwise a
        // user could pick a record that points at the node's LAN.
        if !self.allow_private && addrs.iter().any(|a| is_private(a.ip())) {
            return Err(DialError::Private(dest.clone()));
        }
        if addrs.is_empty() {
            let e = io::Error::new(io::ErrorKind::NotFound, "no addresses");
            return Err(DialError::Resolve(dest.clone(), e));
        }
        Ok(addrs)
    }

    /// Opens a TCP connection to `dest`.
    pub async fn connect(&self, dest: &Destination) -> Result<TcpStream, DialError> {
        let addrs = self.resolve(dest, Network::Tcp).await?;
        let mut last = io::Error::new(io::ErrorKind::NotFound, "no addresses");
        for addr in addrs {
            match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
                Ok(Ok(s)) => {
                    let _ = s.set_nodelay(true);
                    return Ok(s);
                }
                Ok(Err(e)) => last = e,
                Err(_) => last = io::Error::new(io::ErrorKind::TimedOut, "connect timed out"),
            }
        }
        Err(DialError::Connect(dest.clone(), last))
    }

    /// A UDP socket for a user's datagrams (bound to all addresses of the family of
    /// `like`).
    pub async fn udp_socket(&self, like: SocketAddr) -> io::Result<UdpSocket> {
        let bind: SocketAddr = if like.is_ipv4() {
            (Ipv4Addr::UNSPECIFIED, 0).into()
        } else {
            (Ipv6Addr::UNSPECIFIED, 0).into()
        };
        UdpSocket::bind(bind).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_ranges_are_recognised() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.1.1",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "198.18.0.1",
            "::1",
            "fc00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::",
        ] {
            assert!(is_private(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "1.1.1.1",
            "8.8.8.8",
            "2606:4700::1111",
            "100.128.0.1",
            "172.32.0.1",
        ] {
            assert!(!is_private(ip.parse().unwrap()), "{ip}");
        }
    }

    #[tokio::test]
    async fn loopback_is_refused_unless_allowed_and_block_blocks() {
        let strict = Dialer::all(OutboundKind::Direct, false);
        let dest = Destination::Ip("127.0.0.1:9".parse().unwrap());
        assert!(matches!(
            strict.resolve(&dest, Network::Tcp).await,
            Err(DialError::Private(_))
        ));
        let name = Destination::Domain("localhost".into(), 9);
        assert!(matches!(
            strict.resolve(&name, Network::Tcp).await,
            Err(DialError::Private(_))
        ));
        let open = Dialer::all(OutboundKind::Direct, true);
        assert_eq!(
            open.resolve(&dest, Network::Tcp).await.unwrap(),
            ["127.0.0.1:9".parse().unwrap()]
        );
        let block = Dialer::all(OutboundKind::Block, true);
        let err = block.resolve(&dest, Network::Tcp).await.unwrap_err();
        assert_eq!(err.to_string(), "127.0.0.1:9: blocked by the route");
    }
}
