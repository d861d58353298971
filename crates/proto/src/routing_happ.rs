//! Happ's routing profile ([`happ_link`]): the same routing as the Xray configs, in
//! the profile Happ takes from a subscription's `routing` header
//! (`happ://routing/onadd/BASE64`), with its geo files at the panel
//! (`{rule_sets_url}/xray/geoip.dat` and `geosite.dat`), so Happ routes by the
//! operator's own lists.
//!
//! Happ applies its lists as block, then proxy, then direct (`RouteOrder`); what
//! none names goes through the VPN (`GlobalProxy`). The custom rules join the list of
//! their action, so a custom direct rule cannot override a blocked service's proxy
//! rule as it does in the other formats.

use serde_json::{Value, json};

use super::{Action, Preset, Routing, Step, xray_codes};
use crate::vpn::{DnsKind, RemoteDns};

/// The resolver each preset's country asks for its direct names (plain DNS).
fn domestic_dns(preset: Preset) -> &'static str {
    match preset {
        Preset::Russia => "77.88.8.8",
        Preset::Iran => "178.22.122.100",
        Preset::China => "223.5.5.5",
        Preset::Global => "1.1.1.1",
    }
}

impl Routing {
    /// Happ's routing profile named `name`; `remote` is the resolver asked through
    /// the VPN, `last_updated` (Unix seconds) lets Happ tell a newer profile.
    pub fn happ_profile(&self, name: &str, remote: &RemoteDns, last_updated: u64) -> Value {
        let base = self.rule_sets_url.trim_end_matches('/');
        // (sites, ips) per action: direct, proxy, block.
        let mut lists: [(Vec<String>, Vec<String>); 3] = Default::default();
        // The local network, direct, as in the Xray configs.
        lists[0]
            .1
            .extend(crate::xray::PRIVATE_CIDRS.iter().map(|c| (*c).to_owned()));
        for step in self.steps() {
            let (action, sites, ips) = match step {
                Step::Custom(r) => {
                    let mut sites: Vec<String> =
                        r.domain.iter().map(|d| format!("full:{d}")).collect();
                    sites.extend(r.domain_suffix.iter().map(|d| format!("domain:{d}")));
                    sites.extend(r.domain_keyword.iter().map(|d| format!("keyword:{d}")));
                    let mut ips = r.ip_cidr.clone();
                    for c in &r.country {
                        let (s, i) = xray_codes(&super::country_set(c));
                        sites.extend(s);
                        ips.extend(i);
                    }
                    (r.action, sites, ips)
                }
                Step::Set(name, action) => {
                    let (s, i) = xray_codes(&name);
                    (action, s, i)
                }
            };
            let slot = match action {
                Action::Direct => 0,
                Action::Proxy => 1,
                Action::Block => 2,
            };
            lists[slot].0.extend(sites);
            lists[slot].1.extend(ips);
        }
        let [direct, proxy, block] = lists;
        let remote_type = match remote.kind {
            DnsKind::Https => "DoH",
            DnsKind::Tls => "DoT",
            DnsKind::Tcp | DnsKind::Udp => "DoU",
        };
        json!({
            "Name": name,
            "GlobalProxy": "true",
            "RouteOrder": "block-proxy-direct",
            "RemoteDNSType": remote_type,
            "RemoteDNSDomain": if remote.kind == DnsKind::Https { remote.url() } else { String::new() },
            "RemoteDNSIP": remote.server.to_string(),
            "DomesticDNSType": "DoU",
            "DomesticDNSDomain": "",
            "DomesticDNSIP": domestic_dns(self.preset),
            "Geoipurl": format!("{base}/xray/geoip.dat"),
            "Geositeurl": format!("{base}/xray/geosite.dat"),
            "LastUpdated": last_updated.to_string(),
            "DnsHosts": {},
            "DirectSites": direct.0,
            "DirectIp": direct.1,
            "ProxySites": proxy.0,
            "ProxyIp": proxy.1,
            "BlockSites": block.0,
            "BlockIp": block.1,
            "DomainStrategy": "IPIfNonMatch",
            "FakeDNS": "false",
        })
    }

    /// The profile as Happ's link, `happ://routing/onadd/BASE64`: added and made the
    /// active one (a profile of the same name is replaced).
    pub fn happ_link(&self, name: &str, remote: &RemoteDns, last_updated: u64) -> String {
        let profile = self.happ_profile(name, remote, last_updated).to_string();
        format!(
            "happ://routing/onadd/{}",
            crate::base64::encode_standard(profile.as_bytes())
        )
    }
}
