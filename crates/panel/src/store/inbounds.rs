//! Inbounds (a server's listeners): the part of the [`Store`](super::Store) behind
//! `/api/v1/inbounds`.
//!
//! Rules kept here: an inbound never moves to another server; no two inbounds of a
//! server, nor an inbound and a tunnel listening there, share a port; a cluster's first
//! inbound lands in its default route (made then if the cluster has no route), so a
//! fresh install works with no routes set up.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::StoreError;
use crate::model::{
    Flow, Id, Inbound, InboundHysteria2, InboundRules, InboundSecrets, InboundSecurity,
    InboundTransport, Protocol,
};

/// A new or changed inbound.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InboundInput {
    /// The server it runs on.
    pub server_id: Id,
    /// The name users see.
    #[schema(
        min_length = 1,
        max_length = 64,
        pattern = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$"
    )]
    pub name: String,
    /// The protocol.
    pub protocol: Protocol,
    /// The port the node listens on.
    #[schema(minimum = 1)]
    pub port: u16,
    /// Transport (`{"type":"tcp"}` by default).
    #[serde(default)]
    pub transport: InboundTransport,
    /// Security (`{"type":"none"}` by default).
    #[serde(default)]
    pub security: InboundSecurity,
    /// The address clients dial; the server's address when unset.
    #[serde(default)]
    #[schema(
        min_length = 1,
        max_length = 253,
        pattern = r"^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$|^[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*$"
    )]
    pub host: Option<String>,
    /// The TLS server name; the host when unset.
    #[serde(default)]
    #[schema(
        min_length = 1,
        max_length = 253,
        pattern = r"^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$|^[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*$"
    )]
    pub sni: Option<String>,
    /// Round-robin weight, default 1.0.
    #[serde(default = "one")]
    #[schema(exclusive_minimum = 0.0, maximum = 1000.0)]
    pub coefficient: f64,
    /// Shadowsocks only: the 2022 method.
    #[serde(default)]
    pub method: Option<String>,
    /// VLESS over TCP with TLS or REALITY only: `xtls-rprx-vision`, or none.
    #[serde(default)]
    pub flow: Option<Flow>,
    /// Hysteria 2 only: its settings (obfs, rates, udp, hop ports); the defaults
    /// when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hysteria2: Option<InboundHysteria2>,
    /// WebSocket, HTTPUpgrade, XHTTP and gRPC only: the CDN's or reverse proxy's
    /// networks (`173.245.48.0/20`, `2400:cb00::/32`, a bare address) whose
    /// `X-Forwarded-For` names the user's address, for the address limit and the
    /// node's logs. Empty (the default): the header is ignored.
    #[serde(default)]
    #[schema(max_items = 256, example = json!(["173.245.48.0/20", "2400:cb00::/32"]))]
    pub trusted_proxies: Vec<String>,
    /// What the node does with this inbound's users' connections before they leave:
    /// block BitTorrent, block destinations, send destinations direct or into a
    /// tunnel the server relays. None by default.
    #[serde(default)]
    pub rules: InboundRules,
}

fn one() -> f64 {
    1.0
}

/// Inbounds.
#[async_trait]
pub trait InboundStore: Send + Sync {
    /// Inbounds, of one server, one cluster, or all.
    async fn inbounds(
        &self,
        server: Option<Id>,
        cluster: Option<Id>,
    ) -> Result<Vec<Inbound>, StoreError>;

    /// One inbound.
    async fn inbound(&self, id: Id) -> Result<Inbound, StoreError>;

    /// A new inbound; the cluster's first one also gets a default route holding it.
    async fn create_inbound(
        &self,
        input: &InboundInput,
        secrets: &InboundSecrets,
        now_ms: i64,
    ) -> Result<Inbound, StoreError>;

    /// Changes an inbound (secrets replaced when given).
    async fn update_inbound(
        &self,
        id: Id,
        input: &InboundInput,
        secrets: Option<&InboundSecrets>,
    ) -> Result<Inbound, StoreError>;

    /// Deletes an inbound.
    async fn delete_inbound(&self, id: Id) -> Result<(), StoreError>;

    /// Inbounds of a cluster with their secrets (for subscriptions).
    async fn cluster_inbounds(
        &self,
        cluster: Id,
    ) -> Result<Vec<(Inbound, InboundSecrets)>, StoreError>;
}
