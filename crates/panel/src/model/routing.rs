//! Split tunnelling settings ([`RoutingSettings`]): the panel's default
//! (`[subscription.routing]`), a cluster's and a user's own. Pure: which one a user's
//! apps get is [`effective`]; `switchyard_proto::routing` renders it per format.

use serde::{Deserialize, Serialize};
use switchyard_proto::routing::{Action, COUNTRIES, CustomRule, Preset, Routing};
use utoipa::ToSchema;

use super::{FieldError, Id};

/// The most custom rules, and entries in one list of a rule.
pub const MAX_CUSTOM: usize = 256;

/// Where what no custom rule matches goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RoutingPreset {
    /// Everything through the VPN.
    #[default]
    Global,
    /// Russia's sites and addresses direct, the services blocked there through the VPN.
    Russia,
    /// Iran's, likewise.
    Iran,
    /// China's, likewise.
    China,
}

/// What a custom rule does with what it matches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RoutingAction {
    /// Out of the device directly.
    Direct,
    /// Through the VPN.
    #[default]
    Proxy,
    /// Refused.
    Block,
}

/// An operator's rule: any listed destination matches.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RoutingRule {
    /// What happens to what matches (default `proxy`).
    #[serde(default)]
    pub action: RoutingAction,
    /// Exact domains.
    #[serde(default)]
    #[schema(max_items = 256)]
    pub domain: Vec<String>,
    /// Domains with their subdomains.
    #[serde(default)]
    #[schema(max_items = 256)]
    pub domain_suffix: Vec<String>,
    /// Words in a domain (letters, digits and `-`).
    #[serde(default)]
    #[schema(max_items = 256)]
    pub domain_keyword: Vec<String>,
    /// IP networks (`10.0.0.0/8`, a bare address).
    #[serde(default)]
    #[schema(max_items = 256)]
    pub ip_cidr: Vec<String>,
    /// Countries the panel has sets for (`ru`, `ir`, `cn`): their sites and addresses.
    #[serde(default)]
    #[schema(max_items = 3)]
    pub country: Vec<String>,
}

/// Split tunnelling in users' apps (`docs/subscriptions.md`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, default)]
pub struct RoutingSettings {
    /// The preset.
    pub preset: RoutingPreset,
    /// Ads and trackers refused.
    pub block_ads: bool,
    /// The operator's rules, tried first, in order.
    #[schema(max_items = 256)]
    pub custom: Vec<RoutingRule>,
}

impl RoutingSettings {
    /// Checks sizes, domains, networks and countries; the error names the field under
    /// `prefix` (`subscription.routing`, `routing`).
    pub fn validate(&self, prefix: &str) -> Result<(), FieldError> {
        if self.custom.len() > MAX_CUSTOM {
            return Err(FieldError::new(
                format!("{prefix}.custom"),
                format!("at most {MAX_CUSTOM} rules"),
            ));
        }
        for (i, r) in self.custom.iter().enumerate() {
            for (f, list) in [
                ("domain", &r.domain),
                ("domain_suffix", &r.domain_suffix),
                ("domain_keyword", &r.domain_keyword),
                ("ip_cidr", &r.ip_cidr),
                ("country", &r.country),
            ] {
                if list.len() > MAX_CUSTOM {
                    return Err(FieldError::new(
                        format!("{prefix}.custom[{i}].{f}"),
                        format!("at most {MAX_CUSTOM} entries"),
                    ));
                }
                if let Some((j, v)) = list.iter().enumerate().find(|(_, v)| !valid(f, v)) {
                    let what = match f {
                        "ip_cidr" => "an IP network like 10.0.0.0/8",
                        "country" => "one of ru, ir, cn",
                        "domain_keyword" => "letters, digits and -",
                        _ => "a domain",
                    };
                    return Err(FieldError::new(
                        format!("{prefix}.custom[{i}].{f}[{j}]"),
                        format!("{v:?} is not {what}"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The routing for apps, their rule sets at `base` (the panel's public URL).
    pub fn routing(&self, base: &str) -> Routing {
        Routing {
            preset: match self.preset {
                RoutingPreset::Global => Preset::Global,
                RoutingPreset::Russia => Preset::Russia,
                RoutingPreset::Iran => Preset::Iran,
                RoutingPreset::China => Preset::China,
            },
            block_ads: self.block_ads,
            custom: self
                .custom
                .iter()
                .map(|r| CustomRule {
                    action: match r.action {
                        RoutingAction::Direct => Action::Direct,
                        RoutingAction::Proxy => Action::Proxy,
                        RoutingAction::Block => Action::Block,
                    },
                    domain: r.domain.clone(),
                    domain_suffix: r.domain_suffix.clone(),
                    domain_keyword: r.domain_keyword.clone(),
                    ip_cidr: r.ip_cidr.clone(),
                    country: r.country.clone(),
                })
                .collect(),
            rule_sets_url: format!("{}/rules", base.trim_end_matches('/')),
        }
    }
}

fn valid(field: &str, v: &str) -> bool {
    match field {
        "ip_cidr" => switchyard_config::route::Cidr::parse(v).is_some(),
        "country" => COUNTRIES.contains(&v),
        "domain_keyword" => {
            !v.is_empty()
                && v.len() <= 63
                && v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        }
        _ => super::check_host("", v).is_ok() && v.parse::<std::net::IpAddr>().is_err(),
    }
}

/// The routing a user's apps get: the user's own; else that of the first of
/// `clusters` (oldest first: the clusters the user's entries come from) that has its
/// own; else the panel's default.
pub fn effective<'a>(
    user: Option<&'a RoutingSettings>,
    clusters: impl IntoIterator<Item = (Id, Option<&'a RoutingSettings>)>,
    default: &'a RoutingSettings,
) -> &'a RoutingSettings {
    user.or_else(|| clusters.into_iter().find_map(|(_, r)| r))
        .unwrap_or(default)
}

#[cfg(test)]
#[path = "routing_tests.rs"]
mod tests;
