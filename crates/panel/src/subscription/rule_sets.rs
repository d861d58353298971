//! The rule sets the panel serves to users' apps (`/rules/sing-box/NAME.json`,
//! `/rules/clash/NAME-domain.txt`, `/rules/clash/NAME-ip.txt`), which the routing
//! settings name (`crate::model::routing`).
//!
//! A set is domains (each with its subdomains) and IP networks:
//!
//! - `blocked-ru`, `blocked-ir`, `blocked-cn`: the services blocked in that country
//!   ([`switchyard_proto::routing::BLOCKED_SERVICES`]), their domains and Telegram's
//!   networks, built in;
//! - `country-ru`, `country-ir`, `country-cn`: the country's top-level domains built
//!   in (`ru`, `su`, `рф`; `ir`; `cn`);
//! - `ads`: nothing built in.
//!
//! `switchyard panel rules refresh` writes the maintained lists (countries' networks,
//! ads) to `data_dir/rule-sets/maintained/NAME.txt` (`crate::rule_refresh`); the
//! operator adds to any set with a file `data_dir/rule-sets/NAME.txt`: one domain
//! or network per line (a bare address served as a /32 or /128), `#` comments. Files are read when a set is asked for, so a
//! changed list is served at once; the ETag follows the content.

use std::path::Path;

use switchyard_proto::routing::{ADS_SET, BLOCKED_SERVICES, COUNTRIES, blocked_set, country_set};

/// The most lines an operator's file adds to a set.
pub const MAX_LINES: usize = 200_000;
/// The largest operator's file read, in bytes.
pub const MAX_FILE: u64 = 16 << 20;

/// A set's content: domains with their subdomains, and networks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuleSet {
    /// Domains, each matching its subdomains, lower case.
    pub domains: Vec<String>,
    /// IP networks.
    pub cidrs: Vec<String>,
}

/// The domains of each service the presets name.
const SERVICES: &[(&str, &[&str])] = &[
    (
        "youtube",
        &[
            "youtube.com",
            "youtu.be",
            "googlevideo.com",
            "ytimg.com",
            "ggpht.com",
            "youtube-nocookie.com",
        ],
    ),
    ("instagram", &["instagram.com", "cdninstagram.com", "ig.me"]),
    (
        "facebook",
        &[
            "facebook.com",
            "fbcdn.net",
            "fb.com",
            "fb.me",
            "messenger.com",
        ],
    ),
    ("twitter", &["twitter.com", "x.com", "twimg.com", "t.co"]),
    (
        "discord",
        &[
            "discord.com",
            "discord.gg",
            "discordapp.com",
            "discordapp.net",
            "discord.media",
        ],
    ),
    ("linkedin", &["linkedin.com", "licdn.com"]),
    (
        "openai",
        &[
            "openai.com",
            "chatgpt.com",
            "oaistatic.com",
            "oaiusercontent.com",
        ],
    ),
    (
        "telegram",
        &[
            "telegram.org",
            "t.me",
            "telegram.me",
            "telesco.pe",
            "tdesktop.com",
        ],
    ),
    ("whatsapp", &["whatsapp.com", "whatsapp.net", "wa.me"]),
    (
        "google",
        &[
            "google.com",
            "googleapis.com",
            "gstatic.com",
            "gmail.com",
            "googleusercontent.com",
        ],
    ),
    (
        "github",
        &["github.com", "githubusercontent.com", "githubassets.com"],
    ),
];

/// Telegram's networks (its apps connect to addresses, not names).
const TELEGRAM_CIDRS: &[&str] = &[
    "91.105.192.0/23",
    "91.108.4.0/22",
    "91.108.8.0/22",
    "91.108.12.0/22",
    "91.108.16.0/22",
    "91.108.20.0/22",
    "91.108.56.0/22",
    "149.154.160.0/20",
    "185.76.151.0/24",
    "2001:67c:4e8::/48",
    "2001:b28:f23c::/47",
    "2001:b28:f23f::/48",
    "2a0a:f280::/32",
];

/// Every set name the panel serves.
pub fn names() -> Vec<String> {
    let mut out = vec![ADS_SET.to_owned()];
    for cc in COUNTRIES {
        out.push(country_set(cc));
        out.push(blocked_set(cc));
    }
    out
}

/// The built-in part of the set `name`; `None` for a name the panel does not serve.
pub fn built_in(name: &str) -> Option<RuleSet> {
    if name == ADS_SET {
        return Some(RuleSet::default());
    }
    if let Some(cc) = name
        .strip_prefix("country-")
        .filter(|c| COUNTRIES.contains(c))
    {
        let domains: &[&str] = match cc {
            "ru" => &["ru", "su", "xn--p1ai"],
            other => &[other],
        };
        return Some(RuleSet {
            domains: domains.iter().map(|d| (*d).to_owned()).collect(),
            cidrs: Vec::new(),
        });
    }
    let cc = name.strip_prefix("blocked-")?;
    let (_, services) = BLOCKED_SERVICES.iter().find(|(c, _)| *c == cc)?;
    let mut set = RuleSet::default();
    for s in *services {
        if let Some((_, domains)) = SERVICES.iter().find(|(n, _)| n == s) {
            set.domains.extend(domains.iter().map(|d| (*d).to_owned()));
        }
        if *s == "telegram" {
            set.cidrs
                .extend(TELEGRAM_CIDRS.iter().map(|c| (*c).to_owned()));
        }
    }
    Some(set)
}

/// The set `name`: built in, plus the maintained list (`dir/maintained/NAME.txt`,
/// written by `switchyard panel rules refresh`) and the operator's file in `dir`
/// (`NAME.txt`) when there are; lines that are neither a domain nor a network are
/// skipped.
pub fn load(dir: &Path, name: &str) -> Option<RuleSet> {
    let mut set = built_in(name)?;
    let files = [
        dir.join(crate::rule_refresh::MAINTAINED)
            .join(format!("{name}.txt")),
        dir.join(format!("{name}.txt")),
    ];
    for path in files {
        add_file(&mut set, &path);
    }
    set.domains.sort();
    set.domains.dedup();
    set.cidrs.sort();
    set.cidrs.dedup();
    Some(set)
}

/// Adds the file at `path` to `set`, when there is one (too large or unreadable:
/// logged, left out).
fn add_file(set: &mut RuleSet, path: &Path) {
    let Ok(meta) = std::fs::metadata(path) else {
        return;
    };
    if meta.len() > MAX_FILE {
        tracing::warn!(path = %path.display(), "rule set file over {MAX_FILE} bytes: not read");
        return;
    }
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            tracing::warn!(path = %path.display(), "rule set file not read: {e}");
            return;
        }
    };
    for line in text.lines().take(MAX_LINES) {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if line.contains('/') || line.parse::<std::net::IpAddr>().is_ok() {
            // Written address/length: mihomo reads no bare address.
            if let Some(cidr) = switchyard_config::route::Cidr::parse(line) {
                set.cidrs.push(cidr.to_string());
            }
        } else {
            let d = line.trim_start_matches("+.").trim_start_matches('.');
            if crate::model::check_host("", d).is_ok() {
                set.domains.push(d.to_ascii_lowercase());
            }
        }
    }
}

impl RuleSet {
    /// sing-box's source format (version 2, which sing-box 1.10 and later read).
    pub fn singbox(&self) -> String {
        let mut rules = Vec::new();
        if !self.domains.is_empty() {
            rules.push(serde_json::json!({ "domain_suffix": self.domains }));
        }
        if !self.cidrs.is_empty() {
            rules.push(serde_json::json!({ "ip_cidr": self.cidrs }));
        }
        serde_json::json!({ "version": 2, "rules": rules }).to_string()
    }

    /// mihomo's text format of the domains (`+.example.com`: it and its subdomains).
    pub fn clash_domains(&self) -> String {
        self.domains.iter().map(|d| format!("+.{d}\n")).collect()
    }

    /// mihomo's text format of the networks.
    pub fn clash_cidrs(&self) -> String {
        self.cidrs.iter().map(|c| format!("{c}\n")).collect()
    }
}

#[cfg(test)]
#[path = "rule_sets_tests.rs"]
mod tests;

/// Codes of a geo file with what each holds.
pub type Codes = Vec<(String, RuleSet)>;

/// What the panel's `geosite.dat` and `geoip.dat` hold: every code the Xray configs
/// name ([`switchyard_proto::routing::xray_codes`]) with its domains and networks. A
/// country's and the ads' codes hold their set (the operator's additions included); a
/// service's code its built-in domains, Telegram's its networks.
pub fn xray_codes(dir: &Path) -> (Codes, Codes) {
    let (mut sites, mut ips) = (Codes::new(), Codes::new());
    for name in names() {
        let Some(set) = load(dir, &name) else {
            continue;
        };
        let (site_codes, ip_codes) = switchyard_proto::routing::xray_codes(&name);
        let service = name.starts_with("blocked-");
        for code in site_codes {
            let code = code.trim_start_matches("geosite:").to_owned();
            if sites.iter().any(|(c, _)| *c == code) {
                continue;
            }
            let domains = if service {
                SERVICES
                    .iter()
                    .find(|(s, _)| *s == code)
                    .map(|(_, d)| d.iter().map(|d| (*d).to_owned()).collect())
                    .unwrap_or_default()
            } else {
                set.domains.clone()
            };
            sites.push((
                code,
                RuleSet {
                    domains,
                    cidrs: Vec::new(),
                },
            ));
        }
        for code in ip_codes {
            let code = code.trim_start_matches("geoip:").to_owned();
            if ips.iter().any(|(c, _)| *c == code) {
                continue;
            }
            let cidrs = if service {
                TELEGRAM_CIDRS.iter().map(|c| (*c).to_owned()).collect()
            } else {
                set.cidrs.clone()
            };
            ips.push((
                code,
                RuleSet {
                    domains: Vec::new(),
                    cidrs,
                },
            ));
        }
    }
    (sites, ips)
}
