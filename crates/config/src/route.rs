//! Routing on the node: rules by destination choose an outbound; what no rule
//! matches takes the final outbound.
//!
//! Within a rule the listed fields must all match (AND); inside a field any value may
//! match (OR), as in sing-box's route rules. Rules are tried in order; the first that
//! matches wins. Domain rules match only destinations given as names (a user's app
//! that resolved the name itself sends an address, which only IP rules can match).

use std::net::IpAddr;

use serde::{Deserialize, Serialize};
use switchyard_proto::Address;

/// The network of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Network {
    /// A TCP connection.
    Tcp,
    /// UDP datagrams.
    Udp,
}

/// A protocol the node tells from a connection's first bytes
/// (`switchyard_proto::bittorrent`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Sniffed {
    /// BitTorrent: the peer handshake or a tracker announce on TCP; DHT, a UDP
    /// tracker or a uTP connection request on UDP.
    Bittorrent,
}

/// What the node saw of a connection besides its destination: the inbound its user
/// came in by (none: the node's own connection) and the protocol its first bytes
/// showed (none: not looked at, or nothing known).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Seen<'a> {
    /// The inbound's tag.
    pub inbound: Option<&'a str>,
    /// The protocol sniffed.
    pub protocol: Option<Sniffed>,
}

/// An IP network: address and prefix length, written `10.0.0.0/8` or `2001:db8::/32`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Cidr {
    addr: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// Parses `ip/prefix` (a bare address is a /32 or /128).
    pub fn parse(text: &str) -> Option<Self> {
        let (ip, prefix) = match text.split_once('/') {
            Some((ip, p)) => (ip.parse::<IpAddr>().ok()?, p.parse::<u8>().ok()?),
            None => {
                let ip = text.parse::<IpAddr>().ok()?;
                (ip, if ip.is_ipv4() { 32 } else { 128 })
            }
        };
        let max = if ip.is_ipv4() { 32 } else { 128 };
        (prefix <= max).then_some(Self { addr: ip, prefix })
    }

    /// Whether `ip` is inside.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            (IpAddr::V6(_), IpAddr::V4(v4)) => self.contains(IpAddr::V6(v4.to_ipv6_mapped())),
            (IpAddr::V4(_), IpAddr::V6(v6)) => v6
                .to_ipv4_mapped()
                .is_some_and(|v4| self.contains(IpAddr::V4(v4))),
        }
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

impl Serialize for Cidr {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Cidr {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format!("{text:?} is not an IP network like 10.0.0.0/8"))
        })
    }
}

/// A port or an inclusive range, written `443` or `"1000-2000"` in TOML.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Ports {
    /// One port.
    One(u16),
    /// `from-to`, inclusive.
    Range(PortRange),
}

/// An inclusive port range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PortRange(pub u16, pub u16);

impl Serialize for PortRange {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{}-{}", self.0, self.1))
    }
}

impl<'de> Deserialize<'de> for PortRange {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        let parsed = text
            .split_once('-')
            .and_then(|(a, b)| Some(Self(a.trim().parse().ok()?, b.trim().parse().ok()?)))
            .filter(|r| r.0 <= r.1);
        parsed.ok_or_else(|| {
            serde::de::Error::custom(format!("{text:?} is not a port range like \"1000-2000\""))
        })
    }
}

impl Ports {
    fn contains(&self, port: u16) -> bool {
        match *self {
            Self::One(p) => p == port,
            Self::Range(PortRange(a, b)) => (a..=b).contains(&port),
        }
    }
}

/// One routing rule.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Exact domain names (case-insensitive).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub domain: Vec<String>,
    /// Domain suffixes: `example.org` matches it and every subdomain.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub domain_suffix: Vec<String>,
    /// IP networks of destinations given as addresses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ip_cidr: Vec<Cidr>,
    /// Destination ports.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub port: Vec<Ports>,
    /// `tcp` or `udp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<Network>,
    /// The tags of the inbounds whose users' connections it applies to (empty:
    /// every inbound's). A connection the node makes for itself has no inbound and
    /// never matches a rule that names some.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inbound: Vec<String>,
    /// Protocols told from the connection's first bytes (`["bittorrent"]`): the node
    /// looks at them only while some rule names one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protocol: Vec<Sniffed>,
    /// The outbound that carries what matches.
    pub outbound: String,
}

/// Whether `name` is `suffix` or a subdomain of it. Compares bytes, never slices the
/// string: a name from the wire may hold any UTF-8, and a byte index inside a
/// character must not panic.
fn suffix_matches(name: &str, suffix: &str) -> bool {
    let (name, suffix) = (name.as_bytes(), suffix.trim_start_matches('.').as_bytes());
    let Some(cut) = name.len().checked_sub(suffix.len()) else {
        return false;
    };
    name[cut..].eq_ignore_ascii_case(suffix) && (cut == 0 || name[cut - 1] == b'.')
}

impl Rule {
    /// Whether a connection to `dest` over `network`, with what the node `seen` of
    /// it, matches. A name matches a rule's IP networks when any address it resolves
    /// to (`resolved`) is inside; `None` when that is what decides and the name is not
    /// resolved yet.
    pub fn matches(
        &self,
        dest: &Address,
        network: Network,
        seen: Seen<'_>,
        resolved: Option<&[IpAddr]>,
    ) -> Option<bool> {
        let by_inbound = self.inbound.is_empty()
            || seen
                .inbound
                .is_some_and(|i| self.inbound.iter().any(|t| t == i));
        let by_protocol =
            self.protocol.is_empty() || seen.protocol.is_some_and(|p| self.protocol.contains(&p));
        if !(by_inbound && by_protocol) {
            return Some(false);
        }
        let name = match dest {
            Address::Domain(d, _) => Some(d.trim_end_matches('.')),
            Address::Ip(_) => None,
        };
        let by_name = self.domain.is_empty() && self.domain_suffix.is_empty()
            || name.is_some_and(|n| {
                self.domain.iter().any(|d| d.eq_ignore_ascii_case(n))
                    || self.domain_suffix.iter().any(|s| suffix_matches(n, s))
            });
        let by_port = self.port.is_empty() || self.port.iter().any(|p| p.contains(dest.port()));
        let by_network = self.network.is_none_or(|n| n == network);
        if !(by_name && by_port && by_network) {
            return Some(false);
        }
        if self.ip_cidr.is_empty() {
            return Some(true);
        }
        let inside = |ip: &IpAddr| self.ip_cidr.iter().any(|c| c.contains(*ip));
        match dest {
            Address::Ip(a) => Some(inside(&a.ip())),
            Address::Domain(..) => resolved.map(|ips| ips.iter().any(inside)),
        }
    }

    /// Whether the rule has no condition at all (it would match everything).
    pub fn is_catch_all(&self) -> bool {
        self.domain.is_empty()
            && self.domain_suffix.is_empty()
            && self.ip_cidr.is_empty()
            && self.port.is_empty()
            && self.network.is_none()
            && self.inbound.is_empty()
            && self.protocol.is_empty()
    }
}

/// Whether any of `rules` looks at a protocol: then connections are sniffed.
pub fn sniffs(rules: &[Rule]) -> bool {
    rules.iter().any(|r| !r.protocol.is_empty())
}

/// Where routing sends a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Routed<'a> {
    /// The outbound with this tag.
    Outbound(&'a str),
    /// A rule with IP networks was reached for a name: resolve it and route again
    /// with its addresses.
    NeedsAddresses,
}

/// The outbound for a connection (with what the node `seen` of it): the first
/// matching rule's, else `final_tag`. `resolved` holds the addresses of a name
/// destination, once known.
pub fn route<'a>(
    rules: &'a [Rule],
    final_tag: &'a str,
    dest: &Address,
    network: Network,
    seen: Seen<'_>,
    resolved: Option<&[IpAddr]>,
) -> Routed<'a> {
    for rule in rules {
        match rule.matches(dest, network, seen, resolved) {
            Some(true) => return Routed::Outbound(&rule.outbound),
            Some(false) => {}
            None => return Routed::NeedsAddresses,
        }
    }
    Routed::Outbound(final_tag)
}

/// The outbound for a connection whose addresses are known (`ips`: the destination's
/// own, or what its name resolved to): the first matching rule's, else `final_tag`.
pub fn route_with_addresses<'a>(
    rules: &'a [Rule],
    final_tag: &'a str,
    dest: &Address,
    network: Network,
    seen: Seen<'_>,
    ips: &[IpAddr],
) -> &'a str {
    rules
        .iter()
        .find(|r| r.matches(dest, network, seen, Some(ips)) == Some(true))
        .map_or(final_tag, |r| r.outbound.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(toml: &str) -> Vec<Rule> {
        #[derive(Deserialize)]
        struct R {
            rules: Vec<Rule>,
        }
        toml::from_str::<R>(toml).unwrap().rules
    }

    fn dom(d: &str, port: u16) -> Address {
        Address::Domain(d.into(), port)
    }

    fn ip(s: &str) -> Address {
        Address::Ip(s.parse().unwrap())
    }

    #[test]
    fn first_matching_rule_wins_and_the_rest_takes_the_final_outbound() {
        let r = rules(
            r#"
            [[rules]]
            domain_suffix = ["ads.example"]
            outbound = "block"
            [[rules]]
            domain = ["intranet.corp"]
            ip_cidr = []
            outbound = "direct"
            [[rules]]
            ip_cidr = ["10.0.0.0/8", "2001:db8::/32"]
            outbound = "direct"
            [[rules]]
            port = [25, "6881-6889"]
            network = "tcp"
            outbound = "block"
            "#,
        );
        let t = |d: &Address, n| route_with_addresses(&r, "tunnel-eu", d, n, Seen::default(), &[]);
        assert_eq!(t(&dom("x.ads.example", 443), Network::Tcp), "block");
        assert_eq!(t(&dom("ads.example", 443), Network::Udp), "block");
        assert_eq!(
            t(&dom("badads.example", 443), Network::Tcp),
            "tunnel-eu",
            "suffix needs a dot boundary"
        );
        assert_eq!(t(&dom("INTRANET.corp.", 80), Network::Tcp), "direct");
        assert_eq!(t(&ip("10.1.2.3:80"), Network::Tcp), "direct");
        assert_eq!(t(&ip("[2001:db8::1]:80"), Network::Udp), "direct");
        assert_eq!(t(&ip("[::ffff:10.0.0.1]:80"), Network::Tcp), "direct");
        assert_eq!(t(&ip("11.0.0.1:80"), Network::Tcp), "tunnel-eu");
        assert_eq!(t(&dom("mail.example", 25), Network::Tcp), "block");
        assert_eq!(
            t(&dom("mail.example", 25), Network::Udp),
            "tunnel-eu",
            "network must match too"
        );
        assert_eq!(t(&ip("1.2.3.4:6885"), Network::Tcp), "block");
        assert_eq!(t(&ip("1.2.3.4:6890"), Network::Tcp), "tunnel-eu");
        // Domain rules never match an address; a name with no address matches no IP
        // rule.
        assert_eq!(t(&dom("10.in-addr.arpa", 80), Network::Tcp), "tunnel-eu");
    }

    #[test]
    fn ip_rules_match_the_addresses_a_name_resolves_to() {
        let r = rules(
            r#"
            [[rules]]
            domain = ["pinned.example"]
            outbound = "direct"
            [[rules]]
            ip_cidr = ["10.0.0.0/8"]
            outbound = "block"
            "#,
        );
        let name = dom("lan.example", 80);
        // The name rule decides first without resolving.
        assert_eq!(
            route(
                &r,
                "tunnel",
                &dom("pinned.example", 80),
                Network::Tcp,
                Seen::default(),
                None
            ),
            Routed::Outbound("direct")
        );
        assert_eq!(
            route(&r, "tunnel", &name, Network::Tcp, Seen::default(), None),
            Routed::NeedsAddresses
        );
        let lan: [IpAddr; 2] = ["1.1.1.1".parse().unwrap(), "10.1.1.1".parse().unwrap()];
        assert_eq!(
            route_with_addresses(&r, "tunnel", &name, Network::Tcp, Seen::default(), &lan),
            "block"
        );
        assert_eq!(
            route_with_addresses(
                &r,
                "tunnel",
                &name,
                Network::Tcp,
                Seen::default(),
                &lan[..1]
            ),
            "tunnel"
        );
    }

    #[test]
    fn suffixes_compare_bytes_so_non_ascii_names_do_not_panic() {
        let r = rules("[[rules]]\ndomain_suffix = [\"x.org\", \"é.org\"]\noutbound = \"block\"");
        let t = |name: &str| {
            route_with_addresses(
                &r,
                "direct",
                &dom(name, 443),
                Network::Tcp,
                Seen::default(),
                &[],
            )
        };
        // "é" is two bytes: the cut for "x.org" falls inside it.
        assert_eq!(t("aé.org"), "direct", "needs a dot boundary");
        assert_eq!(t("a.é.org"), "block");
        assert_eq!(t("é.org"), "block");
        assert_eq!(t("org"), "direct");
    }

    #[test]
    fn cidrs_and_ranges_parse_strictly() {
        assert!(Cidr::parse("10.0.0.0/33").is_none());
        assert!(Cidr::parse("10.0.0/8").is_none());
        assert!(
            Cidr::parse("0.0.0.0/0")
                .unwrap()
                .contains("8.8.8.8".parse().unwrap())
        );
        assert!(
            Cidr::parse("192.168.1.1")
                .unwrap()
                .contains("192.168.1.1".parse().unwrap())
        );
        let bad: Result<Vec<Rule>, _> =
            toml::from_str::<toml::Table>("[[rules]]\nport = [\"9-1\"]\noutbound = \"x\"")
                .map(|t| t["rules"].clone().try_into().unwrap_or_default());
        assert!(bad.map_or(true, |r: Vec<Rule>| r.is_empty()));
    }

    #[test]
    fn a_rule_that_names_inbounds_applies_to_their_users_alone() {
        let r = rules(
            r#"
            [[rules]]
            domain_suffix = ["blocked.example"]
            inbound = ["free", "trial"]
            outbound = "block"
            "#,
        );
        let t = |inbound| {
            let seen = Seen {
                inbound,
                protocol: None,
            };
            route_with_addresses(
                &r,
                "direct",
                &dom("a.blocked.example", 443),
                Network::Tcp,
                seen,
                &[],
            )
        };
        assert_eq!(t(Some("free")), "block");
        assert_eq!(t(Some("trial")), "block");
        assert_eq!(t(Some("paid")), "direct");
        assert_eq!(t(None), "direct", "the node's own connections");
        assert!(!r[0].is_catch_all());
    }

    #[test]
    fn a_protocol_rule_matches_what_was_sniffed_alone() {
        let r = rules(
            r#"
            [[rules]]
            protocol = ["bittorrent"]
            inbound = ["main"]
            outbound = "block"
            "#,
        );
        let t = |inbound, protocol| {
            let seen = Seen { inbound, protocol };
            route_with_addresses(
                &r,
                "direct",
                &ip("203.0.113.9:6881"),
                Network::Tcp,
                seen,
                &[],
            )
        };
        assert_eq!(t(Some("main"), Some(Sniffed::Bittorrent)), "block");
        assert_eq!(t(Some("main"), None), "direct", "not sniffed");
        assert_eq!(t(Some("other"), Some(Sniffed::Bittorrent)), "direct");
        assert!(sniffs(&r));
        assert!(!sniffs(&rules("[[rules]]\nport = [1]\noutbound = \"x\"")));
        assert!(!r[0].is_catch_all());
    }
}
