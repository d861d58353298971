//! Outbounds: `direct` (connect from this node) and `block`, and the rules that keep
//! users away from the node itself: its loopback, private networks and own interface
//! addresses (unless allowed), and its control API (always).

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use thiserror::Error;
use tokio::net::{TcpStream, UdpSocket, lookup_host};

use std::collections::HashMap;
use std::sync::Arc;

use crate::config::{NodeConfig, OutboundKind};
use crate::route::{Network, Routed, Rule, Seen, route, route_with_addresses};

/// Connecting to a destination takes at most this long in all, over every address
/// its name resolves to. 10 s: slow destinations still connect; a dead one frees the
/// user's connection soon.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// One address may take at most this long before the next is tried. 4 s: a
/// blackholed first address (a dead IPv6 route) leaves time for the others.
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(4);
/// Resolving a name takes at most this long. 5 s: the system resolver retries
/// within that; a name that has not resolved by then is treated as not resolving.
pub const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

/// A destination: an address, or a name to resolve, and a port.
pub use switchyard_proto::Address as Destination;

/// Why a destination was not reached.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum DialError {
    /// The route sends this traffic to `block`.
    #[error("{0}: blocked by the route")]
    Blocked(Destination),
    /// The destination is on loopback, a private network or this node's own address,
    /// and those are not allowed.
    #[error("{0}: private, loopback and this node's own addresses are not allowed on this node")]
    Private(Destination),
    /// The destination is this node's control API, which users never reach.
    #[error("{0}: the node's control API is not a destination")]
    Control(Destination),
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

/// Whether `ip` is anything but a globally routable unicast address (the panel's
/// and the node's one test, shared with a REALITY `dest`'s check).
pub use switchyard_proto::dest::is_private;

pub use switchyard_config::Via;

/// Dials destinations for users, through the outbound the route picks.
#[derive(Clone, Debug)]
pub struct Dialer {
    rules: Vec<Rule>,
    /// Whether some rule names a protocol (decided once, asked per connection and
    /// per datagram).
    sniffs: bool,
    final_tag: String,
    outbounds: HashMap<String, Via>,
    /// Whether private and loopback destinations are allowed.
    pub allow_private: bool,
    /// The node's own interface addresses, refused like private ones.
    own: Arc<[IpAddr]>,
    /// The control API's port: never a user's destination on any local address.
    control_port: Option<u16>,
}

/// Where a connection goes, decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Out from this node, to these addresses in order.
    Direct(Vec<SocketAddr>),
    /// Into the tunnel with this tag.
    Tunnel(String),
}

/// The node's interface addresses (empty when they can't be read).
fn own_addresses() -> Arc<[IpAddr]> {
    match if_addrs::get_if_addrs() {
        Ok(ifs) => ifs.into_iter().map(|i| i.ip()).collect(),
        Err(e) => {
            tracing::warn!("reading this node's interface addresses: {e}");
            Arc::new([])
        }
    }
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
            sniffs: crate::route::sniffs(&c.route.rules),
            rules: c.route.rules.clone(),
            final_tag: c.final_tag(),
            outbounds,
            allow_private: c.node.allow_private_destinations,
            own: own_addresses(),
            control_port: Some(c.control.listen.port()),
        }
    }

    /// A dialer sending everything through one kind of outbound.
    pub fn all(kind: OutboundKind, allow_private: bool) -> Self {
        Self {
            rules: Vec::new(),
            sniffs: false,
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
            own: own_addresses(),
            control_port: None,
        }
    }

    fn tag_via(&self, tag: &str) -> Via {
        self.outbounds.get(tag).cloned().unwrap_or(Via::Block)
    }

    /// Why this node refuses to send a user to `addr`, if it does.
    fn refuse(&self, dest: &Destination, addr: SocketAddr) -> Option<DialError> {
        let ip = match addr.ip() {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
            v4 => v4,
        };
        let local = ip.is_loopback() || ip.is_unspecified() || self.own.contains(&ip);
        if local && self.control_port == Some(addr.port()) {
            return Some(DialError::Control(dest.clone()));
        }
        (!self.allow_private && (is_private(ip) || self.own.contains(&ip)))
            .then(|| DialError::Private(dest.clone()))
    }

    async fn lookup(dest: &Destination) -> Result<Vec<SocketAddr>, DialError> {
        match dest {
            Destination::Ip(a) => Ok(vec![*a]),
            Destination::Domain(name, port) => {
                Self::resolved_within(dest, lookup_host((name.as_str(), *port))).await
            }
        }
    }

    /// What `lookup` (a resolution of `dest`) gives within [`RESOLVE_TIMEOUT`].
    async fn resolved_within<I: Iterator<Item = SocketAddr>>(
        dest: &Destination,
        lookup: impl Future<Output = io::Result<I>>,
    ) -> Result<Vec<SocketAddr>, DialError> {
        let found = tokio::time::timeout(RESOLVE_TIMEOUT, lookup)
            .await
            .map_err(|_| {
                let e = io::Error::new(io::ErrorKind::TimedOut, "resolving timed out");
                DialError::Resolve(dest.clone(), e)
            })?
            .map_err(|e| DialError::Resolve(dest.clone(), e))?;
        let addrs: Vec<SocketAddr> = found.collect();
        if addrs.is_empty() {
            let e = io::Error::new(io::ErrorKind::NotFound, "no addresses");
            return Err(DialError::Resolve(dest.clone(), e));
        }
        Ok(addrs)
    }

    /// Whether some rule looks at a protocol: then users' connections are sniffed
    /// before they are routed.
    pub fn sniffs(&self) -> bool {
        self.sniffs
    }

    /// Routes `dest` over `network`, with what the node `seen` of the connection (the
    /// inbound, the protocol sniffed): resolves the name when a rule with IP networks
    /// needs its addresses (or the route is direct), and checks every address against
    /// the node's refusals.
    pub async fn plan(
        &self,
        dest: &Destination,
        network: Network,
        seen: Seen<'_>,
    ) -> Result<Plan, DialError> {
        let mut addrs = None;
        let tag = match route(&self.rules, &self.final_tag, dest, network, seen, None) {
            Routed::Outbound(tag) => tag,
            Routed::NeedsAddresses => {
                let found = Self::lookup(dest).await?;
                let ips: Vec<IpAddr> = found.iter().map(SocketAddr::ip).collect();
                addrs = Some(found);
                route_with_addresses(&self.rules, &self.final_tag, dest, network, seen, &ips)
            }
        };
        match self.tag_via(tag) {
            Via::Direct => {}
            Via::Block => return Err(DialError::Blocked(dest.clone())),
            Via::Tunnel(tag) => return Ok(Plan::Tunnel(tag)),
        }
        let addrs = match addrs {
            Some(a) => a,
            None => Self::lookup(dest).await?,
        };
        // A name that resolves to any refused address is refused whole: otherwise a
        // user could pick a record that points at the node's LAN.
        if let Some(refused) = addrs.iter().find_map(|a| self.refuse(dest, *a)) {
            return Err(refused);
        }
        Ok(Plan::Direct(addrs))
    }

    /// The addresses `dest` stands for, routed and checked against the refusals; a
    /// route into a tunnel is an error here.
    pub async fn resolve(
        &self,
        dest: &Destination,
        network: Network,
    ) -> Result<Vec<SocketAddr>, DialError> {
        match self.plan(dest, network, Seen::default()).await? {
            Plan::Direct(addrs) => Ok(addrs),
            Plan::Tunnel(tag) => Err(DialError::Tunnel(dest.clone(), tag)),
        }
    }

    /// The addresses of a REALITY inbound's `dest` (`host:port`, validated), each
    /// checked against the node's refusals: a name that resolves to any refused
    /// address is refused whole. The route's rules do not apply: the target site is
    /// the node's, not a user's.
    pub async fn reality_site(&self, dest: &str) -> Result<Vec<SocketAddr>, DialError> {
        let site = switchyard_proto::dest::check(dest, true).map_err(|e| {
            DialError::Resolve(
                Destination::Domain(dest.chars().take(64).collect(), 0),
                io::Error::new(io::ErrorKind::InvalidInput, e),
            )
        })?;
        let addrs = Self::lookup(&site).await?;
        if let Some(refused) = addrs.iter().find_map(|a| self.refuse(&site, *a)) {
            return Err(refused);
        }
        Ok(addrs)
    }

    /// Opens a TCP connection to `dest` (which must route directly).
    pub async fn connect(&self, dest: &Destination) -> Result<TcpStream, DialError> {
        let addrs = self.resolve(dest, Network::Tcp).await?;
        Self::connect_to(dest, &addrs).await
    }

    /// Connects to the first of `addrs` that answers: each gets [`ATTEMPT_TIMEOUT`],
    /// all together [`CONNECT_TIMEOUT`].
    pub async fn connect_to(
        dest: &Destination,
        addrs: &[SocketAddr],
    ) -> Result<TcpStream, DialError> {
        let mut last = io::Error::new(io::ErrorKind::NotFound, "no addresses");
        let all = async {
            for addr in addrs {
                match tokio::time::timeout(ATTEMPT_TIMEOUT, TcpStream::connect(addr)).await {
                    Ok(Ok(s)) => {
                        let _ = s.set_nodelay(true);
                        return Ok(s);
                    }
                    Ok(Err(e)) => last = e,
                    Err(_) => {
                        last = io::Error::new(
                            io::ErrorKind::TimedOut,
                            format!("{addr}: connect timed out"),
                        );
                    }
                }
            }
            Err(())
        };
        match tokio::time::timeout(CONNECT_TIMEOUT, all).await {
            Ok(Ok(s)) => Ok(s),
            Ok(Err(())) => Err(DialError::Connect(dest.clone(), last)),
            Err(_) => {
                let e = io::Error::new(io::ErrorKind::TimedOut, "connect timed out");
                Err(DialError::Connect(dest.clone(), e))
            }
        }
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
            "fec0::1",
            "64:ff9b::a00:1",
            "64:ff9b:1::1",
            "::10.0.0.1",
            "::8.8.8.8",
            "2002:a00:1::1",
            "192.0.0.8",
        ] {
            assert!(is_private(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "1.1.1.1",
            "8.8.8.8",
            "2606:4700::1111",
            "100.128.0.1",
            "172.32.0.1",
            "192.0.1.1",
            "2001:4860::8888",
            "64:ff9b:2::1",
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

    fn ip(a: &str) -> Destination {
        Destination::Ip(a.parse().unwrap())
    }

    #[tokio::test]
    async fn the_control_api_is_never_a_destination_even_with_private_allowed() {
        let mut open = Dialer::all(OutboundKind::Direct, true);
        open.control_port = Some(9090);
        for dest in [
            "127.0.0.1:9090",
            "127.0.0.2:9090",
            "0.0.0.0:9090",
            "[::1]:9090",
            "[::ffff:127.0.0.1]:9090",
        ] {
            let err = open.resolve(&ip(dest), Network::Tcp).await.unwrap_err();
            assert!(matches!(err, DialError::Control(_)), "{dest}: {err}");
        }
        let name = Destination::Domain("localhost".into(), 9090);
        assert!(matches!(
            open.resolve(&name, Network::Tcp).await,
            Err(DialError::Control(_))
        ));
        assert!(
            open.resolve(&ip("127.0.0.1:9091"), Network::Tcp)
                .await
                .is_ok()
        );
    }

    #[tokio::test]
    async fn the_nodes_own_addresses_are_refused_like_private_ones() {
        let mut strict = Dialer::all(OutboundKind::Direct, false);
        strict.own = Arc::new([
            "93.184.216.7".parse().unwrap(),
            "2001:db9::7".parse().unwrap(),
        ]);
        for dest in [
            "93.184.216.7:22",
            "[2001:db9::7]:22",
            "[::ffff:93.184.216.7]:22",
        ] {
            let err = strict.resolve(&ip(dest), Network::Tcp).await.unwrap_err();
            assert!(matches!(err, DialError::Private(_)), "{dest}: {err}");
        }
        assert!(
            strict
                .resolve(&ip("93.184.216.8:22"), Network::Tcp)
                .await
                .is_ok()
        );
    }

    #[tokio::test]
    async fn ip_rules_apply_to_the_addresses_a_name_resolves_to() {
        let text = r#"
            [node]
            allow_private_destinations = true
            [[route.rules]]
            ip_cidr = ["127.0.0.0/8"]
            port = [7]
            outbound = "block"
        "#;
        let config = NodeConfig::from_toml(text).unwrap();
        let dialer = Dialer::from_config(&config);
        let name = Destination::Domain("localhost".into(), 7);
        let err = dialer
            .plan(&name, Network::Tcp, Seen::default())
            .await
            .unwrap_err();
        assert!(matches!(err, DialError::Blocked(_)), "{err}");
        let other_port = Destination::Domain("localhost".into(), 8);
        assert!(matches!(
            dialer
                .plan(&other_port, Network::Tcp, Seen::default())
                .await,
            Ok(Plan::Direct(_))
        ));
    }

    /// A listener whose accept queue is full: the kernel drops further SYNs, so a
    /// connect to it hangs like one to a blackholed address. Keep the returned pair.
    async fn blackholed() -> (tokio::net::TcpListener, TcpStream, SocketAddr) {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let listener = socket.listen(0).unwrap();
        let addr = listener.local_addr().unwrap();
        let queued = TcpStream::connect(addr).await.unwrap();
        (listener, queued, addr)
    }

    /// Each address gets 4 s, all of them 10 s together (paused time: exact).
    #[tokio::test(start_paused = true)]
    async fn a_connect_is_bounded_per_address_and_in_total() {
        let (_l, _q, dead) = blackholed().await;
        let live = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let dest = ip("127.0.0.1:1");
        let started = tokio::time::Instant::now();
        let to = [dead, live.local_addr().unwrap()];
        Dialer::connect_to(&dest, &to).await.unwrap();
        assert_eq!(
            started.elapsed(),
            ATTEMPT_TIMEOUT,
            "the next address after 4 s"
        );
        let started = tokio::time::Instant::now();
        let err = Dialer::connect_to(&dest, &[dead; 3]).await.unwrap_err();
        assert_eq!(
            started.elapsed(),
            CONNECT_TIMEOUT,
            "three dead addresses: 10 s, not 12"
        );
        assert!(
            matches!(err, DialError::Connect(_, ref e) if e.kind() == io::ErrorKind::TimedOut),
            "{err}"
        );
    }

    /// A resolver that never answers is given up after 5 s (paused time: exact).
    #[tokio::test(start_paused = true)]
    async fn a_name_that_never_resolves_is_given_up_after_5_s() {
        let dest = Destination::Domain("stalled.example".into(), 443);
        let started = tokio::time::Instant::now();
        let never = std::future::pending::<io::Result<std::vec::IntoIter<SocketAddr>>>();
        let err = Dialer::resolved_within(&dest, never).await.unwrap_err();
        assert_eq!(started.elapsed(), RESOLVE_TIMEOUT);
        assert!(
            matches!(err, DialError::Resolve(_, ref e) if e.kind() == io::ErrorKind::TimedOut),
            "{err}"
        );
    }
}
