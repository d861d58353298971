//! A tunnel's halves as its nodes report them, asked now and all at once: the state
//! its list and page show, its live status, and Reset. Each node is asked through the
//! channel this instance holds, or through the instance holding it (several instances
//! on PostgreSQL); a node that cannot be asked is reported with the reason.

use std::time::Duration;

use http::{Method, StatusCode};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::Nodes;
use crate::model::Id;
use crate::model::tunnel::Tunnel;

/// How long the panel waits for a node's answer about a tunnel.
const ASK_WITHIN: Duration = Duration::from_secs(3);

/// What a node said about its half of a tunnel.
enum Half {
    /// The node could not be asked (no channel here, or no answer): why.
    Unreachable(String),
    /// It answers and runs no half of the tunnel (disabled, or not applied yet).
    Absent,
    /// Its half, as it reports it.
    Running(Value),
}

/// Asks `server`'s node through the channel this instance holds, or through the
/// instance holding it (several instances on PostgreSQL).
async fn ask(nodes: Option<&Nodes>, server: Id, path: &str, method: Method) -> Half {
    let Some(nodes) = nodes else {
        return Half::Unreachable("this panel instance holds no node channels".into());
    };
    match nodes.ask(server, method, path, ASK_WITHIN).await {
        Err(e) => Half::Unreachable(e.to_string()),
        Ok((StatusCode::NOT_FOUND, _)) => Half::Absent,
        Ok((status, body)) if status.is_success() => {
            Half::Running(serde_json::from_slice(&body).unwrap_or(Value::Null))
        }
        Ok((status, _)) => Half::Unreachable(format!("the node answered {status}")),
    }
}

/// A tunnel's state, as its list and its page show it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct TunnelState {
    /// The tunnel.
    pub id: Id,
    /// "Connections: n" (the relay has n links up), "No connections" (the relay answers,
    /// no origin is connected) or "Relay unreachable" (the panel cannot reach it).
    pub state: String,
    /// Links the relay has up.
    pub links: u64,
    /// Why the relay is unreachable, when it is.
    pub error: Option<String>,
}

fn state_of(id: Id, relay: &Half) -> TunnelState {
    match relay {
        Half::Unreachable(why) => TunnelState {
            id,
            state: "Relay unreachable".into(),
            links: 0,
            error: Some(why.clone()),
        },
        Half::Absent => TunnelState {
            id,
            state: "No connections".into(),
            links: 0,
            error: None,
        },
        Half::Running(v) => {
            let links = v["links"].as_u64().unwrap_or(0);
            TunnelState {
                id,
                state: if links > 0 {
                    format!("Connections: {links}")
                } else {
                    "No connections".into()
                },
                links,
                error: None,
            }
        }
    }
}

/// An origin's half as the live status shows it.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct OriginStatus {
    /// The origin server.
    pub server_id: Id,
    /// Its name in the tunnel.
    pub name: String,
    /// Why it could not be asked, when it could not.
    pub error: Option<String>,
    /// Its half as it reports it: its links and, per link address, the links wanted
    /// and up, the failures, the time to the next attempt and the last error. Absent
    /// when it runs no half (or could not be asked).
    #[schema(value_type = Option<Object>)]
    pub half: Option<Value>,
}

/// A tunnel's live status: its state and what every node of it reports.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct TunnelStatus {
    /// The state.
    #[serde(flatten)]
    pub state: TunnelState,
    /// The relay's half as it reports it: its links and streams per origin, payload
    /// bytes, refusals and, in direct mode, its dialing state.
    #[schema(value_type = Option<Object>)]
    pub relay: Option<Value>,
    /// Every origin, in the tunnel's order.
    pub origins: Vec<OriginStatus>,
}

fn status_path(name: &str) -> String {
    // Names are letters, digits and `_ . -` (checked on save): nothing to escape.
    format!("/v1/tunnels/{name}")
}

/// The live status of tunnel `t`: every node of it asked now, at once, through
/// `nodes` (none: this instance holds no channels, every node is unreachable).
pub async fn tunnel_status(nodes: Option<&Nodes>, t: &Tunnel) -> TunnelStatus {
    let path = status_path(&t.name);
    let relay = ask(nodes, t.relay_server_id, &path, Method::GET);
    let origins = futures_util::future::join_all(
        t.origins
            .iter()
            .map(|o| ask(nodes, o.server_id, &path, Method::GET)),
    );
    let (relay, origins) = tokio::join!(relay, origins);
    let origins = t
        .origins
        .iter()
        .zip(origins)
        .map(|(o, half)| {
            let (error, half) = match half {
                Half::Unreachable(why) => (Some(why), None),
                Half::Absent => (None, None),
                Half::Running(v) => (None, Some(v)),
            };
            OriginStatus {
                server_id: o.server_id,
                name: o.name.clone(),
                error,
                half,
            }
        })
        .collect();
    TunnelStatus {
        state: state_of(t.id, &relay),
        relay: match relay {
            Half::Running(v) => Some(v),
            _ => None,
        },
        origins,
    }
}

/// Every tunnel's state (each relay asked now, all at once), in `tunnels`' order.
pub async fn tunnel_states(nodes: Option<&Nodes>, tunnels: &[Tunnel]) -> Vec<TunnelState> {
    let asked = futures_util::future::join_all(tunnels.iter().map(|t| {
        let path = status_path(&t.name);
        async move { ask(nodes, t.relay_server_id, &path, Method::GET).await }
    }))
    .await;
    tunnels
        .iter()
        .zip(&asked)
        .map(|(t, relay)| state_of(t.id, relay))
        .collect()
}

/// What a reset did on one node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct ResetOutcome {
    /// The server.
    pub server_id: Id,
    /// Whether its half was rebuilt (false: it runs none, or it could not be asked).
    pub reset: bool,
    /// Why it could not be asked, when it could not.
    pub error: Option<String>,
}

/// Reset: every node of tunnel `t` (relay first, then the origins) rebuilds its half
/// from its config; links drop and the dialing side starts over at once, without
/// back-off.
pub async fn reset_tunnel(nodes: Option<&Nodes>, t: &Tunnel) -> Vec<ResetOutcome> {
    let path = format!("{}/reset", status_path(&t.name));
    let servers: Vec<Id> = std::iter::once(t.relay_server_id)
        .chain(t.origins.iter().map(|o| o.server_id))
        .collect();
    let done = futures_util::future::join_all(
        servers
            .iter()
            .map(|server| ask(nodes, *server, &path, Method::POST)),
    )
    .await;
    servers
        .iter()
        .zip(done)
        .map(|(server, half)| match half {
            Half::Unreachable(why) => ResetOutcome {
                server_id: *server,
                reset: false,
                error: Some(why),
            },
            Half::Absent => ResetOutcome {
                server_id: *server,
                reset: false,
                error: None,
            },
            Half::Running(_) => ResetOutcome {
                server_id: *server,
                reset: true,
                error: None,
            },
        })
        .collect()
}
