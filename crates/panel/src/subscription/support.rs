//! # Which entries an app can run
//!
//! Some apps cannot run some servers whatever format they get: Xray 24.11.21 (the
//! core of v2rayN, v2rayNG, Happ and the other Xray-JSON apps) has no Hysteria 2
//! outbound; sing-box has no XHTTP transport; neither has mihomo before 1.19.22,
//! and a Clash app's User-Agent rarely says its mihomo's version. Such an entry in
//! the app's config would make the app refuse the whole config, or show a server
//! that never connects, so it is left out before the entries are named and
//! rendered, and the subscription says why: [`LeftOut::note`] is appended to the
//! announcement apps show (and the HTML page).
//!
//! What an app lacks ([`Lacks`]) is its format's default ([`Lacks::of_format`]:
//! the table below), changed by the User-Agent row that chose the format: a row's
//! `lacks` adds to it, its `runs` takes away (the built-in table's rows and the
//! operator's `[subscription] agents` alike). A `?format=` the app asked for keeps
//! the overrides of the row its User-Agent matches when that row gives the same
//! format; links (and the HTML page) lack nothing: every link is shown.
//!
//! | format | lacks |
//! |---|---|
//! | `xray` | `hysteria2` |
//! | `sing-box` | `xhttp` |
//! | `clash` | `xhttp` |
//! | `links` | nothing |
//!
//! Pure: no I/O.

use std::collections::{BTreeMap, BTreeSet};

use switchyard_proto::entry::{Entry, EntryProtocol, EntryTransport};

use super::agents::{AgentRule, Format, matching_rule};
pub use super::features::Feature;

/// What one app cannot run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lacks(BTreeSet<Feature>);

impl Lacks {
    /// What every app of `format` lacks (see the [module docs](self)).
    pub fn of_format(format: Format) -> Self {
        let features: &[Feature] = match format {
            Format::Xray => &[Feature::Hysteria2],
            Format::SingBox | Format::Clash => &[Feature::Xhttp],
            Format::Links => &[],
        };
        Self(features.iter().copied().collect())
    }

    /// What the app behind `user_agent` lacks when it gets `format`: the format's
    /// default with the overrides of the first matching rule (operator's first,
    /// then built-in), when that rule gives `format`.
    pub fn for_request(format: Format, user_agent: &str, rules: &[AgentRule]) -> Self {
        let mut out = Self::of_format(format);
        if let Some((rule, given)) = matching_rule(user_agent, rules)
            && given == format
        {
            out.0.extend(rule.lacks.iter().copied());
            for feature in &rule.runs {
                out.0.remove(feature);
            }
        }
        out
    }

    /// Whether the app lacks `feature`.
    pub fn contains(&self, feature: Feature) -> bool {
        self.0.contains(&feature)
    }

    /// The first feature `entry` needs that the app lacks; `None` when it can run
    /// the entry.
    pub fn missing(&self, entry: &Entry) -> Option<Feature> {
        needs(entry).into_iter().find(|f| self.contains(*f))
    }
}

/// The features `entry` needs. Exhaustive on purpose: a new protocol or transport
/// must say here what it needs.
pub fn needs(entry: &Entry) -> Vec<Feature> {
    let mut out = Vec::new();
    match &entry.protocol {
        EntryProtocol::Hysteria2 { .. } => out.push(Feature::Hysteria2),
        EntryProtocol::Vless { .. }
        | EntryProtocol::Trojan { .. }
        | EntryProtocol::Shadowsocks { .. } => {}
    }
    match &entry.transport {
        EntryTransport::Tcp
        | EntryTransport::Ws { .. }
        | EntryTransport::HttpUpgrade { .. }
        | EntryTransport::Grpc { .. } => {}
        EntryTransport::Xhttp { .. } => out.push(Feature::Xhttp),
    }
    out
}

/// The entries left out of one subscription, counted by the feature the app
/// lacked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeftOut(BTreeMap<Feature, usize>);

impl LeftOut {
    /// Counts one entry left out for want of `feature`.
    pub fn add(&mut self, feature: Feature) {
        *self.0.entry(feature).or_default() += 1;
    }

    /// How many entries were left out.
    pub fn total(&self) -> usize {
        self.0.values().sum()
    }

    /// What the subscription says, e.g. "1 server left out: this app cannot run
    /// Hysteria 2"; `None` when nothing was left out.
    pub fn note(&self) -> Option<String> {
        let total = self.total();
        if total == 0 {
            return None;
        }
        let what: Vec<&str> = self.0.keys().map(|f| f.label()).collect();
        let servers = if total == 1 { "server" } else { "servers" };
        Some(format!(
            "{total} {servers} left out: this app cannot run {}",
            what.join(" or ")
        ))
    }

    /// `announce` with the note appended (on a line of its own), or the note alone.
    pub fn announce(&self, announce: Option<String>) -> Option<String> {
        match (announce, self.note()) {
            (Some(a), Some(n)) => Some(format!("{a}\n{n}")),
            (a, n) => a.or(n),
        }
    }
}

/// `entries` without those the app lacks a feature for, and what was left out.
pub fn keep_runnable(entries: Vec<Entry>, lacks: &Lacks) -> (Vec<Entry>, LeftOut) {
    let mut left = LeftOut::default();
    let kept = entries
        .into_iter()
        .filter(|e| match lacks.missing(e) {
            Some(feature) => {
                left.add(feature);
                false
            }
            None => true,
        })
        .collect();
    (kept, left)
}

#[cfg(test)]
#[path = "support_tests.rs"]
mod tests;
