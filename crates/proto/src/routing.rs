//! Split tunnelling in users' apps: which destinations go direct, which through the
//! proxy, which are refused, in each format's own words.
//!
//! A [`Routing`] is a preset (everything through the proxy, or one country's sites
//! and addresses direct with the services blocked there always through the proxy),
//! ad and tracker blocking, and the operator's own rules. Rules apply in this order,
//! the first match winning: the custom rules as listed, ads refused, the country's
//! blocked services through the proxy, the country direct, then the rest through the
//! proxy.
//!
//! - **sing-box**: remote rule sets of the panel's (`{rule_sets_url}/sing-box/NAME.json`,
//!   source format) named in route rules; names in a direct set are resolved by the
//!   local resolver (a DNS rule), so a local site gets its local answer.
//! - **Clash/mihomo**: rule providers of the panel's (`{rule_sets_url}/clash/NAME-domain.txt`
//!   and `NAME-ip.txt`, text format) named by `RULE-SET` rules.
//! - **Xray**: routing rules with the `geosite:` and `geoip:` codes the Xray apps ship
//!   in their `geosite.dat` and `geoip.dat` ([`xray_codes`]); the custom rules inline.
//!   Happ also gets a routing profile pointing it at the panel's own geo files
//!   (`routing_happ.rs`).
//!
//! The apps fetch the panel's rule sets themselves, so a list never comes from a site
//! that may be blocked where the user is.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// A preset: where what no custom rule matches goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Preset {
    /// Everything through the proxy.
    #[default]
    Global,
    /// Russia's sites and addresses direct, the services blocked there through the
    /// proxy.
    Russia,
    /// Iran's, likewise.
    Iran,
    /// China's, likewise.
    China,
}

impl Preset {
    /// The country the preset keeps direct (ISO 3166 code, lower case).
    pub fn country(self) -> Option<&'static str> {
        match self {
            Self::Global => None,
            Self::Russia => Some("ru"),
            Self::Iran => Some("ir"),
            Self::China => Some("cn"),
        }
    }
}

/// The countries the panel has rule sets for.
pub const COUNTRIES: [&str; 3] = ["ru", "ir", "cn"];

/// What a rule does with what it matches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Out of the device directly.
    Direct,
    /// Through the proxy (the group the user picks a server in).
    #[default]
    Proxy,
    /// Refused.
    Block,
}

/// An operator's rule: any listed destination matches (an empty list matches
/// nothing).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CustomRule {
    /// What happens to what matches (default: through the proxy).
    #[serde(default)]
    pub action: Action,
    /// Exact domains.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub domain: Vec<String>,
    /// Domains with their subdomains.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub domain_suffix: Vec<String>,
    /// Words in a domain.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub domain_keyword: Vec<String>,
    /// IP networks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ip_cidr: Vec<String>,
    /// Countries ([`COUNTRIES`]): their sites and addresses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub country: Vec<String>,
}

impl CustomRule {
    fn action(&self) -> Action {
        self.action
    }

    /// Whether it lists nothing.
    pub fn is_empty(&self) -> bool {
        self.domain.is_empty()
            && self.domain_suffix.is_empty()
            && self.domain_keyword.is_empty()
            && self.ip_cidr.is_empty()
            && self.country.is_empty()
    }
}

/// An app's routing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Routing {
    /// The preset.
    pub preset: Preset,
    /// Ads and trackers refused.
    pub block_ads: bool,
    /// The operator's rules, first.
    pub custom: Vec<CustomRule>,
    /// Where the panel serves its rule sets (`https://panel.example.com/rules`).
    pub rule_sets_url: String,
}

/// The rule set of a country's sites and addresses.
pub fn country_set(cc: &str) -> String {
    format!("country-{cc}")
}

/// The rule set of the services blocked in a country.
pub fn blocked_set(cc: &str) -> String {
    format!("blocked-{cc}")
}

/// The rule set of ads and trackers.
pub const ADS_SET: &str = "ads";

/// One step of the routing, in order: what it matches and where it sends it.
enum Step<'a> {
    Custom(&'a CustomRule),
    Set(String, Action),
}

impl Routing {
    /// Whether the routing changes nothing (everything through the proxy).
    pub fn is_global(&self) -> bool {
        self.preset == Preset::Global
            && !self.block_ads
            && self.custom.iter().all(CustomRule::is_empty)
    }

    fn steps(&self) -> Vec<Step<'_>> {
        let mut steps: Vec<Step<'_>> = self
            .custom
            .iter()
            .filter(|r| !r.is_empty())
            .map(Step::Custom)
            .collect();
        if self.block_ads {
            steps.push(Step::Set(ADS_SET.to_owned(), Action::Block));
        }
        if let Some(cc) = self.preset.country() {
            steps.push(Step::Set(blocked_set(cc), Action::Proxy));
            steps.push(Step::Set(country_set(cc), Action::Direct));
        }
        steps
    }

    /// Every rule set the routing names, once each, in order.
    pub fn rule_sets(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for step in self.steps() {
            let names = match step {
                Step::Custom(r) => r.country.iter().map(|c| country_set(c)).collect(),
                Step::Set(name, _) => vec![name],
            };
            for n in names {
                if !out.contains(&n) {
                    out.push(n);
                }
            }
        }
        out
    }

    /// The sets sent direct, whose names are resolved locally.
    pub fn direct_sets(&self) -> Vec<String> {
        self.steps()
            .into_iter()
            .filter_map(|s| match s {
                Step::Set(name, Action::Direct) => Some(vec![name]),
                Step::Custom(r) if r.action() == Action::Direct => {
                    Some(r.country.iter().map(|c| country_set(c)).collect())
                }
                _ => None,
            })
            .flatten()
            .collect()
    }

    /// sing-box's `route.rule_set`: each set, remote, from the panel.
    pub fn singbox_rule_sets(&self) -> Vec<Value> {
        let base = self.rule_sets_url.trim_end_matches('/');
        self.rule_sets()
            .into_iter()
            .map(|name| {
                json!({
                    "type": "remote",
                    "tag": name,
                    "format": "source",
                    "url": format!("{base}/sing-box/{name}.json"),
                    "update_interval": "1d",
                })
            })
            .collect()
    }

    /// sing-box's route rules: `proxy` and `direct` are the outbounds' tags.
    pub fn singbox_rules(&self, proxy: &str, direct: &str) -> Vec<Value> {
        self.steps()
            .into_iter()
            .map(|step| {
                let (mut rule, action) = match step {
                    Step::Custom(r) => {
                        let mut v = json!({});
                        for (key, list) in [
                            ("domain", &r.domain),
                            ("domain_suffix", &r.domain_suffix),
                            ("domain_keyword", &r.domain_keyword),
                            ("ip_cidr", &r.ip_cidr),
                        ] {
                            if !list.is_empty() {
                                v[key] = json!(list);
                            }
                        }
                        if !r.country.is_empty() {
                            let sets: Vec<String> =
                                r.country.iter().map(|c| country_set(c)).collect();
                            v["rule_set"] = json!(sets);
                        }
                        (v, r.action())
                    }
                    Step::Set(name, action) => (json!({ "rule_set": [name] }), action),
                };
                match action {
                    Action::Block => rule["action"] = json!("reject"),
                    Action::Direct | Action::Proxy => {
                        rule["action"] = json!("route");
                        rule["outbound"] = json!(if action == Action::Direct {
                            direct
                        } else {
                            proxy
                        });
                    }
                }
                rule
            })
            .collect()
    }

    /// sing-box's DNS rules: names in the direct sets asked of `local`.
    pub fn singbox_dns_rules(&self, local: &str) -> Vec<Value> {
        let sets = self.direct_sets();
        if sets.is_empty() {
            return Vec::new();
        }
        vec![json!({ "rule_set": sets, "action": "route", "server": local })]
    }

    /// mihomo's `rule-providers`: a domain and an IP provider per set, from the panel.
    pub fn clash_providers(&self) -> serde_json::Map<String, Value> {
        let base = self.rule_sets_url.trim_end_matches('/');
        let mut out = serde_json::Map::new();
        for name in self.rule_sets() {
            for (kind, behavior) in [("domain", "domain"), ("ip", "ipcidr")] {
                out.insert(
                    format!("{name}-{kind}"),
                    json!({
                        "type": "http",
                        "behavior": behavior,
                        "format": "text",
                        "url": format!("{base}/clash/{name}-{kind}.txt"),
                        "interval": 86400,
                    }),
                );
            }
        }
        out
    }

    /// mihomo's rules, before `MATCH`; `group` is the select group.
    pub fn clash_rules(&self, group: &str) -> Vec<String> {
        let mut out = Vec::new();
        for step in self.steps() {
            let (action, lines): (Action, Vec<(String, &str)>) = match step {
                Step::Custom(r) => {
                    let mut lines = Vec::new();
                    lines.extend(r.domain.iter().map(|d| (format!("DOMAIN,{d}"), "")));
                    lines.extend(
                        r.domain_suffix
                            .iter()
                            .map(|d| (format!("DOMAIN-SUFFIX,{d}"), "")),
                    );
                    lines.extend(
                        r.domain_keyword
                            .iter()
                            .map(|d| (format!("DOMAIN-KEYWORD,{d}"), "")),
                    );
                    lines.extend(r.ip_cidr.iter().map(|c| {
                        let kind = if c.contains(':') {
                            "IP-CIDR6"
                        } else {
                            "IP-CIDR"
                        };
                        (format!("{kind},{c}"), ",no-resolve")
                    }));
                    for c in &r.country {
                        let set = country_set(c);
                        lines.push((format!("RULE-SET,{set}-domain"), ""));
                        lines.push((format!("RULE-SET,{set}-ip"), ""));
                    }
                    (r.action(), lines)
                }
                Step::Set(name, action) => (
                    action,
                    vec![
                        (format!("RULE-SET,{name}-domain"), ""),
                        (format!("RULE-SET,{name}-ip"), ""),
                    ],
                ),
            };
            let target = match action {
                Action::Direct => "DIRECT",
                Action::Proxy => group,
                Action::Block => "REJECT",
            };
            out.extend(
                lines
                    .into_iter()
                    .map(|(head, tail)| format!("{head},{target}{tail}")),
            );
        }
        out
    }

    /// Xray's routing rules; `proxy`, `direct` and `block` are the outbounds' tags.
    pub fn xray_rules(&self, proxy: &str, direct: &str, block: &str) -> Vec<Value> {
        let mut out = Vec::new();
        for step in self.steps() {
            let (action, domains, ips): (Action, Vec<String>, Vec<String>) = match step {
                Step::Custom(r) => {
                    let mut domains: Vec<String> =
                        r.domain.iter().map(|d| format!("full:{d}")).collect();
                    domains.extend(r.domain_suffix.iter().map(|d| format!("domain:{d}")));
                    domains.extend(r.domain_keyword.iter().map(|d| format!("keyword:{d}")));
                    let mut ips = r.ip_cidr.clone();
                    for c in &r.country {
                        let (sites, addresses) = xray_codes(&country_set(c));
                        domains.extend(sites);
                        ips.extend(addresses);
                    }
                    (r.action(), domains, ips)
                }
                Step::Set(name, action) => {
                    let (sites, addresses) = xray_codes(&name);
                    (action, sites, addresses)
                }
            };
            let tag = match action {
                Action::Direct => direct,
                Action::Proxy => proxy,
                Action::Block => block,
            };
            if !domains.is_empty() {
                out.push(json!({ "type": "field", "domain": domains, "outboundTag": tag }));
            }
            if !ips.is_empty() {
                out.push(json!({ "type": "field", "ip": ips, "outboundTag": tag }));
            }
        }
        out
    }
}

/// The services blocked in each country that the presets send through the proxy, by
/// their `geosite:` codes (the panel's own `blocked-CC` sets hold their domains).
pub const BLOCKED_SERVICES: [(&str, &[&str]); 3] = [
    (
        "ru",
        &[
            "youtube",
            "instagram",
            "facebook",
            "twitter",
            "discord",
            "linkedin",
            "openai",
            "telegram",
            "whatsapp",
        ],
    ),
    (
        "ir",
        &[
            "youtube",
            "instagram",
            "facebook",
            "twitter",
            "telegram",
            "whatsapp",
            "openai",
            "google",
        ],
    ),
    (
        "cn",
        &[
            "google",
            "youtube",
            "facebook",
            "instagram",
            "twitter",
            "telegram",
            "whatsapp",
            "openai",
            "github",
        ],
    ),
];

/// A set's `geosite:` and `geoip:` codes, as the Xray apps' bundled `geosite.dat` and
/// `geoip.dat` name them.
pub fn xray_codes(set: &str) -> (Vec<String>, Vec<String>) {
    if set == ADS_SET {
        return (vec!["geosite:category-ads-all".to_owned()], Vec::new());
    }
    if let Some(cc) = set.strip_prefix("country-") {
        let site = if cc == "cn" {
            "geosite:cn".to_owned()
        } else {
            format!("geosite:category-{cc}")
        };
        return (vec![site], vec![format!("geoip:{cc}")]);
    }
    if let Some(cc) = set.strip_prefix("blocked-")
        && let Some((_, services)) = BLOCKED_SERVICES.iter().find(|(c, _)| *c == cc)
    {
        let sites = services.iter().map(|s| format!("geosite:{s}")).collect();
        let ips = if services.contains(&"telegram") {
            vec!["geoip:telegram".to_owned()]
        } else {
            Vec::new()
        };
        return (sites, ips);
    }
    (Vec::new(), Vec::new())
}

#[path = "routing_happ.rs"]
mod happ;

#[cfg(test)]
#[path = "routing_tests.rs"]
mod tests;
