//! # Which format a subscription request gets
//!
//! A client app fetching a subscription says who it is only in its `User-Agent`.
//! [`format_for`] maps that string to a [`Format`]: the operator's own rules
//! (config `[subscription] agents = [...]`) are tried first, in their order, then
//! the built-in table ([`builtin`]), in its order; the first rule that matches
//! decides, and a User-Agent no rule matches gets [`Format::Links`], which every
//! app can import. An explicit `?format=` in the request is the handler's to
//! honour before calling this ([`Format::parse`] reads it).
//!
//! ## Matching
//!
//! An [`AgentRule`] matches by `prefix` (the User-Agent, leading white space
//! trimmed, starts with it) or by `contains` (it occurs anywhere); both compare
//! ASCII case-insensitively. A rule may name a version threshold: with
//! `since = "6.40"` the app's version is the first dotted number after the
//! matched text (`v2rayN/6.41` → 6.41), compared numerically component by
//! component with missing components as 0 (so 6.4 < 6.40 and 1.8.29 = 1.8.29.0).
//! At or above the threshold the rule gives `format`, below it `older` (default
//! [`Format::Links`]). A User-Agent with no number after the matched text, or a
//! rule whose `since` does not parse, also gets `older`: an app too old to say its
//! version is given the format every app reads.
//!
//! ## The built-in table
//!
//! Its order matters and is tested row by row ([`TABLE_VERSION`] counts its
//! changes). Hiddify comes first because its User-Agent names the others
//! (`HiddifyNext/2.5.7 (android) like ClashMeta v2ray sing-box`); the specific
//! Clash-family apps come before the generic `clash`, and `v2rayNG/` before
//! `v2rayN/`. The version thresholds are Marzban's
//! (`app/routers/subscription.py`: v2rayN 6.40, v2rayNG 1.8.29, Happ 1.63.1),
//! which remnawave-json's README states too; Remnawave's backend
//! (`subscription-template/constants/extended-clients.ts`) now serves Xray JSON
//! to Happ, INCY, V2Box, Streisand, v2rayN and v2rayNG of any version, when the
//! operator turns that on. Marzban also serves v2rayNG 1.8.18–1.8.28 a reversed
//! Xray JSON; here those get links.
//!
//! This module is pure: no I/O, no clock; matching allocates only to read a
//! version.

use std::cmp::Ordering;
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::features::Feature;
use crate::model::FieldError;

/// A subscription body format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// A sing-box JSON configuration (`sing-box`).
    SingBox,
    /// A Clash configuration in the mihomo (Clash.Meta) YAML dialect (`clash`).
    Clash,
    /// An Xray JSON configuration (`xray`).
    Xray,
    /// Share links (`vless://…`), one a line (`links`).
    Links,
}

impl Format {
    /// Every format, in declaration order.
    pub const ALL: [Self; 4] = [Self::SingBox, Self::Clash, Self::Xray, Self::Links];

    /// The canonical name, as serde writes it and `?format=` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Self::SingBox => "sing-box",
            Self::Clash => "clash",
            Self::Xray => "xray",
            Self::Links => "links",
        }
    }

    /// Reads a `?format=` value: a canonical name or an alias, ASCII
    /// case-insensitive, surrounding white space ignored.
    ///
    /// | format | accepted |
    /// |---|---|
    /// | `sing-box` | `sing-box`, `singbox`, `sing_box`, `sb` |
    /// | `clash` | `clash`, `clash-meta`, `clash.meta`, `clashmeta`, `meta`, `mihomo`, `yaml` |
    /// | `xray` | `xray`, `xray-json`, `v2ray-json` (Marzban's name) |
    /// | `links` | `links`, `base64`, `v2ray` (Marzban's name), `plain`, `uri` |
    ///
    /// A bare `json` is refused: sing-box and Xray are both JSON.
    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim().to_ascii_lowercase();
        Some(match s.as_str() {
            "sing-box" | "singbox" | "sing_box" | "sb" => Self::SingBox,
            "clash" | "clash-meta" | "clash.meta" | "clashmeta" | "meta" | "mihomo" | "yaml" => {
                Self::Clash
            }
            "xray" | "xray-json" | "v2ray-json" => Self::Xray,
            "links" | "base64" | "v2ray" | "plain" | "uri" => Self::Links,
            _ => return None,
        })
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The built-in table's version: bumped whenever a row is added, removed,
/// reordered or changes its pattern, format, threshold or what its app gets, so that
/// operators (and `docs/subscriptions.md`) can tell which table a panel runs.
pub const TABLE_VERSION: u32 = 4;

/// The longest pattern a rule may have, in bytes.
pub const MAX_PATTERN_LEN: usize = 128;

/// One User-Agent rule. Operators add their own in config, under
/// `[subscription] agents = [...]`; they are tried before the built-in ones.
///
/// ```toml
/// [[subscription.agents]]
/// app = "MyApp"
/// prefix = "myapp/"
/// format = "xray"
/// since = "2.1"
/// older = "links"
/// lacks = ["hysteria2"]   # its entries that need these are left out
/// runs = ["xhttp"]        # kept although its format's apps usually lack them
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AgentRule {
    /// The app this rule is for; a label for docs and logs, not matched.
    pub app: String,
    /// Matches a User-Agent that starts with this (ASCII case-insensitive,
    /// leading white space ignored). Exactly one of `prefix` and `contains`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Matches a User-Agent that contains this anywhere (ASCII
    /// case-insensitive). Exactly one of `prefix` and `contains`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contains: Option<String>,
    /// The format a matching app gets (at or above `since`, when set).
    pub format: Format,
    /// The lowest app version that gets `format`, as dotted numbers (`"6.40"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// What a matching app below `since` (or with no version) gets. Only with
    /// `since`; default [`Format::Links`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub older: Option<Format>,
    /// Features a matching app cannot run although its format can carry them
    /// (`["hysteria2"]`); its entries that need one are left out
    /// ([`super::support`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lacks: Vec<Feature>,
    /// Features a matching app runs although its format's apps usually cannot
    /// (`["xhttp"]`): its entries that need one are kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<Feature>,
    /// The app builds its VPN from the config (sing-box's own apps): its sing-box
    /// config carries a `tun` inbound and DNS through the proxy.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub vpn: bool,
}

impl AgentRule {
    /// The pattern and whether it is a prefix; `None` for a rule with neither
    /// (which [`check_rules`] refuses and matching skips).
    fn pattern(&self) -> Option<(&str, bool)> {
        match (&self.prefix, &self.contains) {
            (Some(p), _) => Some((p, true)),
            (None, Some(c)) => Some((c, false)),
            (None, None) => None,
        }
    }

    /// Where the matched text ends in `ua`, if this rule matches it.
    fn match_end(&self, ua: &str) -> Option<usize> {
        let (pattern, is_prefix) = self.pattern()?;
        let pattern = pattern.as_bytes();
        if pattern.is_empty() {
            return None;
        }
        // Byte-wise ASCII case folding: a match of a UTF-8 pattern starts and
        // ends on character boundaries, so `ua[end..]` is safe.
        if is_prefix {
            let start = ua.len() - ua.trim_start().len();
            let head = ua.as_bytes().get(start..start + pattern.len())?;
            head.eq_ignore_ascii_case(pattern)
                .then_some(start + pattern.len())
        } else {
            ua.as_bytes()
                .windows(pattern.len())
                .position(|w| w.eq_ignore_ascii_case(pattern))
                .map(|at| at + pattern.len())
        }
    }

    /// The format this rule gives a User-Agent it matched, `rest` being the
    /// text after the match.
    fn resolve(&self, rest: &str) -> Format {
        let Some(since) = &self.since else {
            return self.format;
        };
        let older = self.older.unwrap_or(Format::Links);
        match (parse_version(since), version_in(rest)) {
            (Some(since), Some(have)) if compare_versions(&have, &since) != Ordering::Less => {
                self.format
            }
            _ => older,
        }
    }
}

/// A built-in row, written compactly.
fn row(app: &str, prefix: bool, pattern: &str, format: Format) -> AgentRule {
    AgentRule {
        app: app.to_owned(),
        prefix: prefix.then(|| pattern.to_owned()),
        contains: (!prefix).then(|| pattern.to_owned()),
        format,
        since: None,
        older: None,
        lacks: Vec::new(),
        runs: Vec::new(),
        vpn: false,
    }
}

/// A built-in row of an app that builds its VPN from the config.
fn row_vpn(app: &str, pattern: &str, format: Format) -> AgentRule {
    AgentRule {
        vpn: true,
        ..row(app, true, pattern, format)
    }
}

/// A built-in row whose app lacks `lacks` beyond its format's defaults.
fn row_lacking(
    app: &str,
    prefix: bool,
    pattern: &str,
    format: Format,
    lacks: &[Feature],
) -> AgentRule {
    AgentRule {
        lacks: lacks.to_vec(),
        ..row(app, prefix, pattern, format)
    }
}

/// A built-in row with a version threshold; below it, links.
fn row_since(app: &str, prefix: &str, format: Format, since: &str) -> AgentRule {
    AgentRule {
        since: Some(since.to_owned()),
        older: Some(Format::Links),
        ..row(app, true, prefix, format)
    }
}

static BUILTIN: LazyLock<Vec<AgentRule>> = LazyLock::new(|| {
    use Format::{Clash, SingBox, Xray};
    const PREFIX: bool = true;
    const CONTAINS: bool = false;
    vec![
        // First: its User-Agent also names ClashMeta, v2ray and sing-box.
        row("Hiddify", CONTAINS, "hiddify", SingBox),
        // The Clash family; the generic "clash" last.
        // Before Clash Verge: FlClash's User-Agent says "clash-verge" too.
        row("FlClash / FlClashX", CONTAINS, "flclash", Clash),
        row(
            "Clash Verge / Clash Verge Rev",
            CONTAINS,
            "clash-verge",
            Clash,
        ),
        row(
            "Clash Meta for Android",
            PREFIX,
            "clashmetaforandroid",
            Clash,
        ),
        row("ClashX Meta", PREFIX, "clashx meta", Clash),
        row("Mihomo Party", PREFIX, "mihomo.party", Clash),
        row("mihomo", CONTAINS, "mihomo", Clash),
        row("clash.meta", CONTAINS, "clash.meta", Clash),
        // Its core is Clash Premium, not mihomo: no Hysteria 2.
        row_lacking(
            "Clash for Windows",
            PREFIX,
            "clashforwindows",
            Clash,
            &[Feature::Hysteria2],
        ),
        row("Stash", PREFIX, "stash", Clash),
        row("Clash (any other)", CONTAINS, "clash", Clash),
        // sing-box and the apps built on it.
        row_vpn("sing-box for Android (SFA)", "sfa", SingBox),
        row_vpn("sing-box for iOS (SFI)", "sfi", SingBox),
        row_vpn("sing-box for macOS (SFM)", "sfm", SingBox),
        row_vpn("sing-box for tvOS (SFT)", "sft", SingBox),
        row("Karing", CONTAINS, "karing", SingBox),
        row("sing-box", CONTAINS, "sing-box", SingBox),
        // Xray apps; some read Xray JSON only from a version on.
        row_since("Happ", "happ/", Xray, "1.63.1"),
        row("Streisand", PREFIX, "streisand", Xray),
        row_since("v2rayNG", "v2rayng/", Xray, "1.8.29"),
        row_since("v2rayN", "v2rayn/", Xray, "6.40"),
        row("INCY", PREFIX, "incy/", Xray),
        row("V2Box", PREFIX, "v2box", Xray),
        // Ours: sing-box JSON carries the pinned self-signed certificates links can't.
        row("Switchyard client", PREFIX, "switchyard-client/", SingBox),
    ]
});

/// The built-in table, in the order it is tried (see the module docs).
pub fn builtin() -> &'static [AgentRule] {
    &BUILTIN
}

/// The first rule of `extra`, then of [`builtin`], that matches `user_agent`,
/// with the format it gives; `None` when none matches.
pub fn matching_rule<'r>(
    user_agent: &str,
    extra: &'r [AgentRule],
) -> Option<(&'r AgentRule, Format)> {
    let builtin: &'r [AgentRule] = builtin();
    extra.iter().chain(builtin).find_map(|rule| {
        let end = rule.match_end(user_agent)?;
        Some((rule, rule.resolve(&user_agent[end..])))
    })
}

/// Whether the app behind `user_agent` builds its VPN from a config in `format`.
pub fn wants_vpn(user_agent: &str, extra: &[AgentRule], format: Format) -> bool {
    matching_rule(user_agent, extra).is_some_and(|(rule, given)| rule.vpn && given == format)
}

/// The format for a request with this `User-Agent`: the first matching rule of
/// `extra` (the operator's), then of [`builtin`]; [`Format::Links`] when none
/// matches.
pub fn format_for(user_agent: &str, extra: &[AgentRule]) -> Format {
    matching_rule(user_agent, extra).map_or(Format::Links, |(_, format)| format)
}

/// Checks operator rules for config validation; the error names the rule by its
/// index and the field, as `subscription.agents[2].since`.
pub fn check_rules(rules: &[AgentRule]) -> Result<(), FieldError> {
    for (i, rule) in rules.iter().enumerate() {
        let field = |name: &str| format!("subscription.agents[{i}].{name}");
        if rule.app.trim().is_empty() {
            return Err(FieldError::new(field("app"), "must not be empty"));
        }
        let (name, pattern) = match (&rule.prefix, &rule.contains) {
            (Some(_), Some(_)) => {
                return Err(FieldError::new(
                    field("contains"),
                    "set either prefix or contains, not both",
                ));
            }
            (None, None) => {
                return Err(FieldError::new(
                    field("prefix"),
                    "one of prefix or contains is required",
                ));
            }
            (Some(p), None) => ("prefix", p),
            (None, Some(c)) => ("contains", c),
        };
        if pattern.trim().is_empty() {
            return Err(FieldError::new(field(name), "must not be empty"));
        }
        if pattern.len() > MAX_PATTERN_LEN {
            return Err(FieldError::new(
                field(name),
                format!("must be at most {MAX_PATTERN_LEN} bytes"),
            ));
        }
        match &rule.since {
            Some(since) if parse_version(since).is_none() => {
                return Err(FieldError::new(
                    field("since"),
                    format!("{since:?} is not a version: dotted numbers, as \"6.40\""),
                ));
            }
            None if rule.older.is_some() => {
                return Err(FieldError::new(
                    field("older"),
                    "only meaningful with since",
                ));
            }
            _ => {}
        }
        if let Some(both) = rule.runs.iter().find(|f| rule.lacks.contains(f)) {
            return Err(FieldError::new(
                field("runs"),
                format!("{both} is in lacks too: an app cannot both run and lack it"),
            ));
        }
    }
    Ok(())
}

/// Parses a whole version text: numbers joined by single dots.
fn parse_version(s: &str) -> Option<Vec<u64>> {
    s.split('.')
        .map(|part| {
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            part.parse().ok()
        })
        .collect()
}

/// The first dotted number in `rest`: a run of digits and dots starting at the
/// first digit, trailing dots dropped (`"/v1.8.29 (android)"` → 1.8.29).
fn version_in(rest: &str) -> Option<Vec<u64>> {
    let start = rest.find(|c: char| c.is_ascii_digit())?;
    let run = &rest[start..];
    let end = run
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(run.len());
    let text = run[..end].trim_end_matches('.');
    // "1..2" is not a version; take what comes before the gap.
    let text = text.split("..").next().unwrap_or(text);
    // A component too large for u64 is as new as can be.
    Some(
        text.split('.')
            .map(|part| part.parse().unwrap_or(u64::MAX))
            .collect(),
    )
}

/// Numeric, component by component, missing components as 0.
fn compare_versions(a: &[u64], b: &[u64]) -> Ordering {
    let len = a.len().max(b.len());
    (0..len)
        .map(|i| {
            let x = a.get(i).copied().unwrap_or(0);
            let y = b.get(i).copied().unwrap_or(0);
            x.cmp(&y)
        })
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}

#[cfg(test)]
mod tests;
