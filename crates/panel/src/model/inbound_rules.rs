//! An inbound's rules: what the node does with its users' connections before they
//! leave the server (`docs/panel.md`, "Rules of an inbound").
//!
//! - `block_bittorrent`: BitTorrent is refused, told from a connection's first bytes
//!   (the peer handshake or a tracker announce on TCP; DHT, a UDP tracker or uTP on
//!   UDP), whatever its port.
//! - `block`: destinations refused.
//! - `direct`: destinations that leave this server itself, never through a tunnel it
//!   relays.
//! - `tunnel`: destinations carried into a tunnel this server relays (when it relays
//!   several, or to pick one by destination).
//!
//! A destination is a domain, which matches it and every subdomain (`example.com`
//! matches `www.example.com`), or an IP address or network (`10.0.0.0/8`,
//! `2001:db8::/32`). Domain destinations match only connections whose app gave the
//! name (a user's app that resolved the name itself sends an address). The rules
//! apply in that order, ahead of the tunnels' own rules: block first, then direct,
//! then each tunnel's list.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{FieldError, Id, check_host};

/// The most destinations one list holds.
pub const MAX_DESTINATIONS: usize = 1024;
/// The most tunnel lists an inbound has.
pub const MAX_TUNNEL_LISTS: usize = 16;

/// What the node does with an inbound's users' connections before they leave.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InboundRules {
    /// Refuse BitTorrent (peer connections, trackers, DHT and uTP), told from the
    /// first bytes of each connection and datagram.
    #[serde(default)]
    pub block_bittorrent: bool,
    /// Destinations refused: domains (each with its subdomains) and IP networks.
    #[serde(default)]
    #[schema(max_items = 1024, example = json!(["ads.example", "203.0.113.0/24"]))]
    pub block: Vec<String>,
    /// Destinations that leave this server itself, never through a tunnel.
    #[serde(default)]
    #[schema(max_items = 1024)]
    pub direct: Vec<String>,
    /// Destinations carried into a tunnel this server relays.
    #[serde(default)]
    #[schema(max_items = 16)]
    pub tunnel: Vec<TunnelDestinations>,
}

/// Destinations carried into one tunnel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TunnelDestinations {
    /// The tunnel; the inbound's server must be its relay.
    pub tunnel_id: Id,
    /// Domains (each with its subdomains) and IP networks.
    #[schema(min_items = 1, max_items = 1024)]
    pub destinations: Vec<String>,
}

impl InboundRules {
    /// Whether there is no rule.
    pub fn is_empty(&self) -> bool {
        !self.block_bittorrent
            && self.block.is_empty()
            && self.direct.is_empty()
            && self.tunnel.is_empty()
    }
}

/// A list split the node's way: domain suffixes, IP networks.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Destinations {
    /// Domains, each matching its subdomains too, lower case.
    pub suffixes: Vec<String>,
    /// Addresses and networks.
    pub cidrs: Vec<String>,
}

/// Splits checked destinations into domains and networks.
pub fn split(list: &[String]) -> Destinations {
    let mut out = Destinations::default();
    for d in list {
        if is_network(d) {
            out.cidrs.push(d.clone());
        } else {
            out.suffixes.push(d.to_ascii_lowercase());
        }
    }
    out
}

fn is_network(d: &str) -> bool {
    d.contains('/') || d.parse::<std::net::IpAddr>().is_ok()
}

/// Checks the rules' shape: list sizes, each destination a domain or a network, a
/// tunnel named once. Whether this server relays each tunnel is the caller's check
/// ([`check_tunnels`]).
pub fn check_inbound_rules(rules: &InboundRules) -> Result<(), FieldError> {
    check_list("rules.block", &rules.block)?;
    check_list("rules.direct", &rules.direct)?;
    if rules.tunnel.len() > MAX_TUNNEL_LISTS {
        return Err(FieldError::new(
            "rules.tunnel",
            format!("at most {MAX_TUNNEL_LISTS} tunnels"),
        ));
    }
    for (i, t) in rules.tunnel.iter().enumerate() {
        let field = format!("rules.tunnel[{i}].destinations");
        if t.destinations.is_empty() {
            return Err(FieldError::new(field, "name at least one destination"));
        }
        check_list(&field, &t.destinations)?;
        if rules.tunnel[..i].iter().any(|o| o.tunnel_id == t.tunnel_id) {
            return Err(FieldError::new(
                format!("rules.tunnel[{i}].tunnel_id"),
                "this tunnel is listed already",
            ));
        }
    }
    Ok(())
}

/// Checks that every tunnel the rules name is one `relayed` holds (the tunnels the
/// inbound's server relays).
pub fn check_tunnels(rules: &InboundRules, relayed: &[Id]) -> Result<(), FieldError> {
    match rules
        .tunnel
        .iter()
        .position(|t| !relayed.contains(&t.tunnel_id))
    {
        Some(i) => Err(FieldError::new(
            format!("rules.tunnel[{i}].tunnel_id"),
            "no tunnel with this id has the inbound's server as its relay",
        )),
        None => Ok(()),
    }
}

fn check_list(field: &str, list: &[String]) -> Result<(), FieldError> {
    if list.len() > MAX_DESTINATIONS {
        return Err(FieldError::new(
            field,
            format!("at most {MAX_DESTINATIONS} destinations"),
        ));
    }
    for (i, d) in list.iter().enumerate() {
        let field = format!("{field}[{i}]");
        if is_network(d) {
            if switchyard_config::route::Cidr::parse(d).is_none() {
                return Err(FieldError::new(
                    field,
                    format!("{d:?} is not an IP address or network like 10.0.0.0/8"),
                ));
            }
        } else {
            check_host(&field, d).map_err(|_| {
                FieldError::new(
                    &field,
                    format!("{d:?} is not a domain (example.com) nor an IP network"),
                )
            })?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn destinations_split_into_domains_and_networks() {
        let d = split(&list(&[
            "Example.COM",
            "10.0.0.0/8",
            "2001:db8::/32",
            "192.0.2.7",
            "x.example",
        ]));
        assert_eq!(d.suffixes, ["example.com", "x.example"]);
        assert_eq!(d.cidrs, ["10.0.0.0/8", "2001:db8::/32", "192.0.2.7"]);
    }

    #[test]
    fn a_bad_destination_is_named_by_its_place() {
        let rules = InboundRules {
            block: list(&["ok.example", "10.0.0.0/33"]),
            ..InboundRules::default()
        };
        let e = check_inbound_rules(&rules).unwrap_err();
        assert_eq!(e.field, "rules.block[1]");
        assert!(e.message.contains("10.0.0.0/33"), "{e:?}");
        let rules = InboundRules {
            direct: list(&["bad name!"]),
            ..InboundRules::default()
        };
        assert_eq!(
            check_inbound_rules(&rules).unwrap_err().field,
            "rules.direct[0]"
        );
    }

    #[test]
    fn lists_are_bounded_and_tunnels_named_once_with_destinations() {
        let rules = InboundRules {
            block: vec!["a.example".to_owned(); MAX_DESTINATIONS + 1],
            ..InboundRules::default()
        };
        assert_eq!(
            check_inbound_rules(&rules).unwrap_err().field,
            "rules.block"
        );
        let t = |id, d: &[&str]| TunnelDestinations {
            tunnel_id: id,
            destinations: list(d),
        };
        let rules = InboundRules {
            tunnel: vec![t(1, &["a.example"]), t(1, &["b.example"])],
            ..InboundRules::default()
        };
        assert_eq!(
            check_inbound_rules(&rules).unwrap_err().field,
            "rules.tunnel[1].tunnel_id"
        );
        let rules = InboundRules {
            tunnel: vec![t(1, &[])],
            ..InboundRules::default()
        };
        assert_eq!(
            check_inbound_rules(&rules).unwrap_err().field,
            "rules.tunnel[0].destinations"
        );
        let rules = InboundRules {
            tunnel: vec![t(1, &["a.example"]), t(2, &["10.1.0.0/16"])],
            ..InboundRules::default()
        };
        assert!(check_inbound_rules(&rules).is_ok());
        assert!(check_tunnels(&rules, &[1, 2]).is_ok());
        assert_eq!(
            check_tunnels(&rules, &[1]).unwrap_err().field,
            "rules.tunnel[1].tunnel_id"
        );
    }
}
