//! What makes a sing-box config a VPN in sing-box's own apps (SFA, SFI, SFM, SFT),
//! which build their VPN from the config's `tun` inbound: a config with only a local
//! proxy imports, says "connected", and carries nothing.
//!
//! With [`crate::vpn::VpnOptions`], [`crate::singbox::client_config`] adds:
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

use serde::{Serialize, Serializer};

use crate::vpn::RemoteDns;

/// The tag of the `tun` inbound.
pub const TUN_TAG: &str = "tun-in";
/// The tag of the resolver reached through the proxy.
pub const REMOTE_DNS_TAG: &str = "remote";

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
            address: crate::vpn::TUN_ADDRESSES,
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

/// The rules, in order; private addresses go to the outbound tagged `direct`.
pub(crate) fn rules(direct: &'static str) -> [VpnRule; 3] {
    [
        VpnRule::Sniff { action: "sniff" },
        VpnRule::HijackDns {
            protocol: "dns",
            action: "hijack-dns",
        },
        VpnRule::Private {
            ip_is_private: true,
            action: "route",
            outbound: direct,
        },
    ]
}
