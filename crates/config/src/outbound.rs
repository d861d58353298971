//! Outbounds (where traffic can go) and the routing that picks one.

use serde::{Deserialize, Serialize};

use crate::route::Rule;

/// Where traffic can go.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutboundConfig {
    /// Unique tag that routes name.
    pub tag: String,
    /// What it does.
    #[serde(rename = "type")]
    pub kind: OutboundKind,
}

/// Kinds of outbound.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutboundKind {
    /// Connect to the destination from this node.
    Direct,
    /// Refuse.
    Block,
}

/// Routing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RouteConfig {
    /// The outbound for what no rule matches. Unset: the tunnel when this node is the
    /// relay of exactly one, else `direct`.
    #[serde(rename = "final", default, skip_serializing_if = "Option::is_none")]
    pub final_outbound: Option<String>,
    /// Rules tried in order; the first that matches picks the outbound.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<Rule>,
}

/// Where an outbound sends traffic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Via {
    /// Out from this node.
    Direct,
    /// Nowhere.
    Block,
    /// Into the tunnel with this tag (this node is its relay).
    Tunnel(String),
}
