//! The optional firewall, pure: which ports a node serves (from the config the panel
//! renders for it) and the nftables ruleset that leaves only those and SSH open.
//!
//! The rules live in a table of their own, `inet switchyard`, whose input chain
//! drops what it does not accept; a packet dropped by any table's hook is dropped, so
//! the table is enough whatever else the server's ruleset holds, and deleting it
//! (`nft delete table inet switchyard`) undoes it all. The file starts by declaring
//! and deleting the table, so applying it again replaces it rather than adding to it.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use switchyard_config::{NodeConfig, Protocol, TunnelMode};

/// The ports to leave open, by protocol; each a range (`first..=last`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ports {
    /// TCP.
    pub tcp: BTreeSet<(u16, u16)>,
    /// UDP.
    pub udp: BTreeSet<(u16, u16)>,
}

impl Ports {
    /// The ports `config` listens on, and SSH's.
    ///
    /// Inbounds: TCP, and UDP too for Shadowsocks (its UDP relay) and Hysteria 2
    /// (UDP only, its hopping range too). VLESS and Trojan carry UDP inside their TCP
    /// connection; SOCKS5's UDP ASSOCIATE ports are not opened (it is for local use).
    /// Tunnels: each profile's port on the side that listens (the relay in reverse
    /// mode, an origin in direct mode), TCP.
    pub fn of(config: &NodeConfig, ssh_port: u16) -> Self {
        let mut p = Self::default();
        p.tcp.insert((ssh_port, ssh_port));
        for inbound in &config.inbounds {
            let port = (inbound.port, inbound.port);
            match inbound.protocol {
                Protocol::Hysteria2 => {
                    p.udp.insert(port);
                    if let Some(Ok(Some(hop))) = inbound.hysteria2.as_ref().map(|h| h.hop_ports()) {
                        p.udp.insert((*hop.start(), *hop.end()));
                    }
                }
                Protocol::Shadowsocks => {
                    p.tcp.insert(port);
                    p.udp.insert(port);
                }
                Protocol::Vless | Protocol::Trojan | Protocol::Socks => {
                    p.tcp.insert(port);
                }
            }
        }
        for tunnel in &config.tunnels {
            let listens = match tunnel.mode {
                TunnelMode::Reverse => tunnel.relay.is_some(),
                TunnelMode::Direct => tunnel.origin.is_some(),
            };
            if listens {
                for profile in &tunnel.profiles {
                    p.tcp.insert((profile.port, profile.port));
                }
            }
        }
        p
    }
}

fn set(ports: &BTreeSet<(u16, u16)>) -> String {
    let items: Vec<String> = ports
        .iter()
        .map(|&(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect();
    format!("{{ {} }}", items.join(", "))
}

/// The `nft -f` file for `ports`. ICMP and ICMPv6 go by number: a minimal system has
/// no `/etc/protocols` to name them.
pub fn ruleset(ports: &Ports) -> String {
    let mut r = String::from(
        "# Written by the Switchyard panel's install over SSH; undo it with\n\
         # `nft delete table inet switchyard`.\n\
         table inet switchyard\n\
         delete table inet switchyard\n\
         table inet switchyard {\n\
         \tchain input {\n\
         \t\ttype filter hook input priority filter; policy drop;\n\
         \t\tct state established,related accept\n\
         \t\tct state invalid drop\n\
         \t\tiifname \"lo\" accept\n\
         \t\tmeta l4proto { 1, 58 } accept comment \"ICMP and ICMPv6\"\n",
    );
    if !ports.tcp.is_empty() {
        let _ = writeln!(r, "\t\ttcp dport {} accept", set(&ports.tcp));
    }
    if !ports.udp.is_empty() {
        let _ = writeln!(r, "\t\tudp dport {} accept", set(&ports.udp));
    }
    r.push_str("\t}\n}\n");
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(json: serde_json::Value) -> NodeConfig {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn inbounds_open_their_protocols_ports() {
        let c = config(serde_json::json!({
            "inbounds": [
                {"tag": "a", "protocol": "vless", "port": 443},
                {"tag": "b", "protocol": "shadowsocks", "port": 8388},
                {"tag": "c", "protocol": "hysteria2", "port": 8443,
                 "hysteria2": {"ports": "20000-20099"}},
            ]
        }));
        let p = Ports::of(&c, 2222);
        assert_eq!(
            p.tcp.iter().copied().collect::<Vec<_>>(),
            [(443, 443), (2222, 2222), (8388, 8388)]
        );
        assert_eq!(
            p.udp.iter().copied().collect::<Vec<_>>(),
            [(8388, 8388), (8443, 8443), (20000, 20099)]
        );
        let r = ruleset(&p);
        assert!(
            r.contains("\t\ttcp dport { 443, 2222, 8388 } accept\n"),
            "{r}"
        );
        assert!(
            r.contains("\t\tudp dport { 8388, 8443, 20000-20099 } accept\n"),
            "{r}"
        );
        assert!(r.contains("policy drop;"));
        assert!(r.starts_with("# Written"));
    }

    #[test]
    fn ssh_alone_when_nothing_else_listens() {
        let r = ruleset(&Ports::of(&NodeConfig::default(), 22));
        assert!(r.contains("tcp dport { 22 } accept"), "{r}");
        assert!(!r.contains("udp dport"), "{r}");
    }
}
