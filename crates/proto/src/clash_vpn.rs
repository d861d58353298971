//! What a Clash (mihomo) config needs to be a VPN when the app's TUN switch is on
//! (Clash Verge, FlClash, Clash Meta for Android and the like take the config's `tun`
//! section and turn `enable` on themselves):
//!
//! ```text
//! dns:   fake-ip (apps get addresses from 198.18.0.0/16 and the name travels to the
//!        node, which resolves it on the far side), respect-rules (the resolver's
//!        own connections follow the rules: through the select group), the
//!        `remote_dns` resolver, the system's for the servers' own names and for
//!        direct connections, local names (`.lan`, `.local`, `.home.arpa`) kept real
//! tun:   enable false (the app's switch), the system stack, auto-route,
//!        strict-route, auto-detect-interface, DNS on port 53 hijacked (UDP and TCP)
//! rules: private addresses direct (the local network stays reachable), before MATCH
//! ```

use serde_json::{Value, json};

use crate::vpn::VpnOptions;

/// The fake addresses mihomo hands out for names (mihomo's default range).
pub const FAKE_IP_RANGE: &str = "198.18.0.1/16";

/// The `dns` section.
pub(crate) fn dns(vpn: &VpnOptions) -> Value {
    json!({
        "enable": true,
        "ipv6": false,
        "respect-rules": true,
        "enhanced-mode": "fake-ip",
        "fake-ip-range": FAKE_IP_RANGE,
        "fake-ip-filter": ["+.lan", "+.local", "+.localdomain", "+.home.arpa"],
        "nameserver": [vpn.remote_dns.url()],
        "proxy-server-nameserver": ["system"],
        "direct-nameserver": ["system"],
    })
}

/// The `tun` section, off until the app's switch turns it on.
pub(crate) fn tun() -> Value {
    json!({
        "enable": false,
        "stack": "system",
        "auto-route": true,
        "auto-detect-interface": true,
        "strict-route": true,
        "dns-hijack": ["any:53", "tcp://any:53"],
    })
}

/// Private, loopback and link-local addresses, direct (no name resolved for them).
pub(crate) fn private_rules() -> [&'static str; 8] {
    [
        "IP-CIDR,10.0.0.0/8,DIRECT,no-resolve",
        "IP-CIDR,172.16.0.0/12,DIRECT,no-resolve",
        "IP-CIDR,192.168.0.0/16,DIRECT,no-resolve",
        "IP-CIDR,127.0.0.0/8,DIRECT,no-resolve",
        "IP-CIDR,169.254.0.0/16,DIRECT,no-resolve",
        "IP-CIDR6,fc00::/7,DIRECT,no-resolve",
        "IP-CIDR6,fe80::/10,DIRECT,no-resolve",
        "IP-CIDR6,::1/128,DIRECT,no-resolve",
    ]
}

/// Names in the routing's direct sets asked of the system's resolver and given real
/// addresses (not fake ones): a local site gets its local answer.
pub(crate) fn direct_names_locally(dns: &mut Value, routing: &crate::routing::Routing) {
    let mut policy = serde_json::Map::new();
    let mut filter: Vec<Value> = dns["fake-ip-filter"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for set in routing.direct_sets() {
        let provider = format!("rule-set:{set}-domain");
        policy.insert(provider.clone(), json!(["system"]));
        filter.push(json!(provider));
    }
    if policy.is_empty() {
        return;
    }
    dns["nameserver-policy"] = Value::Object(policy);
    dns["fake-ip-filter"] = Value::Array(filter);
}
