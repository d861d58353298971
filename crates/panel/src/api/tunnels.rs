//! Tunnels: create, read, change, delete, duplicate for another relay, re-issue the
//! certificate; their state and live status asked from the nodes, Reset, and the
//! usage chart's points, and rotating the credentials. The operator fills in nothing
//! security-related: the certificate is issued here (rcgen, for the tunnel's derived
//! certificate name) and the REALITY key pair and short id made here, credentials are
//! derived when the nodes' halves are rendered, and neither a private key nor a
//! credential is ever in an answer. A new tunnel's first profile is REALITY in front
//! of the panel's default target (`tunnels.reality_dest`) unless it says otherwise.

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::{Method, StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::AppState;
use super::auth::Authed;
use super::problem::{ApiError, Body, Id, Problem, Query};
use crate::model::FieldError;
use crate::model::Id as RowId;
use crate::model::tunnel::{
    LinkSecurity, OriginAddresses, Tunnel, TunnelInput, UsagePoint, UsageStep, check_tunnel_name,
};
use crate::store::{TunnelCertificate, TunnelRealityKeys};

/// A fresh REALITY key pair and short id for tunnel `name`.
fn reality_keys(name: &str) -> Result<TunnelRealityKeys, ApiError> {
    let keys = switchyard_node::reality::generate().map_err(|e| {
        tracing::error!(tunnel = name, "making the tunnel's REALITY keys: {e}");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the tunnel's REALITY keys could not be made",
        )
    })?;
    Ok(TunnelRealityKeys {
        private_key: keys.private_key,
        public_key: keys.public_key,
        short_id: keys.short_id,
    })
}

/// A fresh certificate (and key) for tunnel `name`.
fn issue(name: &str) -> Result<TunnelCertificate, ApiError> {
    let cert = switchyard_tunnel::link::cert::issue(name).map_err(|e| {
        tracing::error!(tunnel = name, "issuing the tunnel certificate: {e}");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the tunnel's certificate could not be issued",
        )
    })?;
    Ok(TunnelCertificate {
        cert_pem: cert.cert_pem,
        key_pem: cert.key_pem,
        pin: cert.pin.to_string(),
    })
}

/// Every tunnel.
#[utoipa::path(get, path = "/api/v1/tunnels", tag = "tunnels",
    responses((status = 200, body = [Tunnel]), (status = 401, body = Problem)))]
pub async fn tunnels(State(s): State<AppState>, _a: Authed) -> Result<Json<Vec<Tunnel>>, ApiError> {
    Ok(Json(s.store().tunnels().await?))
}

/// A new tunnel, with a certificate issued for it and its REALITY keys. A first
/// profile that says no security is REALITY in front of the panel's default target;
/// other profiles default to TLS.
#[utoipa::path(post, path = "/api/v1/tunnels", tag = "tunnels", request_body = TunnelInput,
    responses((status = 201, body = Tunnel), (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 409, body = Problem), (status = 415, body = Problem), (status = 422, body = Problem)))]
pub async fn create_tunnel(
    State(s): State<AppState>,
    _a: Authed,
    Body(mut input): Body<TunnelInput>,
) -> Result<(StatusCode, Json<Tunnel>), ApiError> {
    input.fill_defaults(None, &s.config().tunnels.reality_dest);
    input.check().map_err(ApiError::field)?;
    s.service().check_tunnel_dests(&input).await?;
    let certificate = issue(&input.name)?;
    let reality = reality_keys(&input.name)?;
    Ok((
        StatusCode::CREATED,
        Json(
            s.store()
                .create_tunnel(&input, &certificate, &reality, s.now())
                .await?,
        ),
    ))
}

/// One tunnel.
#[utoipa::path(get, path = "/api/v1/tunnels/{id}", tag = "tunnels", params(("id" = i64, Path)),
    responses((status = 200, body = Tunnel), (status = 400, body = Problem), (status = 401, body = Problem), (status = 404, body = Problem)))]
pub async fn tunnel(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<Json<Tunnel>, ApiError> {
    Ok(Json(s.store().tunnel(id).await?))
}

/// Changes a tunnel (everything but its name). A profile that says no security keeps
/// that of the tunnel's profile on the same port (TLS for a new port), and a REALITY
/// profile that names no target keeps its target.
#[utoipa::path(put, path = "/api/v1/tunnels/{id}", tag = "tunnels", params(("id" = i64, Path)), request_body = TunnelInput,
    responses((status = 200, body = Tunnel), (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 404, body = Problem), (status = 409, body = Problem), (status = 415, body = Problem), (status = 422, body = Problem)))]
pub async fn update_tunnel(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
    Body(mut input): Body<TunnelInput>,
) -> Result<Json<Tunnel>, ApiError> {
    let current = s.store().tunnel(id).await?;
    input.fill_defaults(Some(&current.profiles), &s.config().tunnels.reality_dest);
    input.check().map_err(ApiError::field)?;
    s.service().check_tunnel_dests(&input).await?;
    let uses_reality = input
        .profiles
        .iter()
        .any(|p| p.link_security() == LinkSecurity::Reality);
    if uses_reality && current.reality_public_key.is_none() {
        // A tunnel made before REALITY: its keys are made on its first REALITY profile.
        let reality = reality_keys(&current.name)?;
        s.store().init_tunnel_reality_keys(id, &reality).await?;
    }
    Ok(Json(s.store().update_tunnel(id, &input).await?))
}

/// Deletes a tunnel.
#[utoipa::path(delete, path = "/api/v1/tunnels/{id}", tag = "tunnels", params(("id" = i64, Path)),
    responses((status = 204), (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn delete_tunnel(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<StatusCode, ApiError> {
    s.store().delete_tunnel(id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The copy's name and relay.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DuplicateInput {
    /// The new tunnel's name (its credentials and certificate follow from it).
    #[schema(min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.-]+$")]
    pub name: String,
    /// The other relay.
    pub relay_server_id: RowId,
}

/// Copies a tunnel for another relay: the same origins (with their direct-mode
/// addresses), mode, balancing, links, profiles (REALITY targets included) and rules, a new name, a new certificate and
/// new REALITY keys and therefore new credentials: nothing of one relay's opens the
/// other. The profiles' link addresses
/// are not copied (they name the first relay): the copy's are the new relay's.
#[utoipa::path(post, path = "/api/v1/tunnels/{id}/duplicate", tag = "tunnels", params(("id" = i64, Path)), request_body = DuplicateInput,
    responses((status = 201, body = Tunnel), (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 404, body = Problem), (status = 409, body = Problem), (status = 415, body = Problem), (status = 422, body = Problem)))]
pub async fn duplicate_tunnel(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
    Body(copy): Body<DuplicateInput>,
) -> Result<(StatusCode, Json<Tunnel>), ApiError> {
    check_tunnel_name("name", &copy.name).map_err(ApiError::field)?;
    let from = s.store().tunnel(id).await?;
    if from
        .origins
        .iter()
        .any(|o| o.server_id == copy.relay_server_id)
    {
        return Err(ApiError::field(FieldError::new(
            "relay_server_id",
            "that server is an origin of the tunnel: it cannot be its relay too",
        )));
    }
    let origin_addresses = from
        .origins
        .iter()
        .filter(|o| !o.addresses.is_empty())
        .map(|o| OriginAddresses {
            server_id: o.server_id,
            addresses: o.addresses.clone(),
        })
        .collect();
    let input = TunnelInput {
        name: copy.name,
        relay_server_id: copy.relay_server_id,
        origin_server_ids: from.origins.iter().map(|o| o.server_id).collect(),
        origin_addresses,
        mode: from.mode,
        balancing: from.balancing,
        links: from.links,
        window_mib: from.window_mib,
        profiles: from
            .profiles
            .into_iter()
            .map(|mut p| {
                p.addresses.clear();
                p.security = Some(p.link_security());
                p
            })
            .collect(),
        rules: from.rules,
        enabled: from.enabled,
    };
    input.check().map_err(ApiError::field)?;
    // The new relay listens: a private REALITY target needs its allowance.
    s.service().check_tunnel_dests(&input).await?;
    let certificate = issue(&input.name)?;
    let reality = reality_keys(&input.name)?;
    Ok((
        StatusCode::CREATED,
        Json(
            s.store()
                .create_tunnel(&input, &certificate, &reality, s.now())
                .await?,
        ),
    ))
}

/// Re-issues the tunnel's certificate with a new key. The previous pin stays accepted
/// beside the new one (`previous_pin`) while both halves take the new certificate, so
/// no link drops. The REALITY keys stay as they are.
#[utoipa::path(post, path = "/api/v1/tunnels/{id}/certificate", tag = "tunnels", params(("id" = i64, Path)),
    responses((status = 200, body = Tunnel), (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn reissue_certificate(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<Json<Tunnel>, ApiError> {
    let name = s.store().tunnel(id).await?.name;
    let certificate = issue(&name)?;
    Ok(Json(
        s.store()
            .reissue_tunnel_certificate(id, &certificate)
            .await?,
    ))
}

/// Rotates the tunnel's credentials: every origin gets a new one (derived at the next
/// credential epoch), pushed live. The listening side accepts the previous and the new
/// credential of each origin (`previous_credential_epoch`) until every server of the
/// tunnel runs the new one, then only the new: links up stay up, and the previous
/// credentials open nothing from then on. No credential is in the answer.
#[utoipa::path(post, path = "/api/v1/tunnels/{id}/rotate-credentials", tag = "tunnels", params(("id" = i64, Path)),
    responses((status = 200, body = Tunnel), (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn rotate_credentials(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<Json<Tunnel>, ApiError> {
    Ok(Json(s.store().rotate_tunnel_credentials(id).await?))
}

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
async fn ask(s: &AppState, server: RowId, path: &str, method: Method) -> Half {
    let Some(nodes) = s.nodes() else {
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
    pub id: RowId,
    /// "Connections: n" (the relay has n links up), "No connections" (the relay answers,
    /// no origin is connected) or "Relay unreachable" (the panel cannot reach it).
    pub state: String,
    /// Links the relay has up.
    pub links: u64,
    /// Why the relay is unreachable, when it is.
    pub error: Option<String>,
}

fn state_of(id: RowId, relay: &Half) -> TunnelState {
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
    pub server_id: RowId,
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

/// The live status of a tunnel: every node of it asked now, at once (through the
/// instance holding its channel when that is another).
#[utoipa::path(get, path = "/api/v1/tunnels/{id}/status", tag = "tunnels", params(("id" = i64, Path)),
    responses((status = 200, body = TunnelStatus), (status = 400, body = Problem), (status = 401, body = Problem), (status = 404, body = Problem)))]
pub async fn status(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<Json<TunnelStatus>, ApiError> {
    let t = s.store().tunnel(id).await?;
    let path = status_path(&t.name);
    let relay = ask(&s, t.relay_server_id, &path, Method::GET);
    let origins = futures_util::future::join_all(
        t.origins
            .iter()
            .map(|o| ask(&s, o.server_id, &path, Method::GET)),
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
    Ok(Json(TunnelStatus {
        state: state_of(id, &relay),
        relay: match relay {
            Half::Running(v) => Some(v),
            _ => None,
        },
        origins,
    }))
}

/// Every tunnel's state (each relay asked now, all at once), for the list.
#[utoipa::path(get, path = "/api/v1/tunnels/status", tag = "tunnels",
    responses((status = 200, body = [TunnelState]), (status = 401, body = Problem)))]
pub async fn statuses(
    State(s): State<AppState>,
    _a: Authed,
) -> Result<Json<Vec<TunnelState>>, ApiError> {
    let tunnels = s.store().tunnels().await?;
    let asked = futures_util::future::join_all(tunnels.iter().map(|t| {
        let s = s.clone();
        let path = status_path(&t.name);
        async move { ask(&s, t.relay_server_id, &path, Method::GET).await }
    }))
    .await;
    Ok(Json(
        tunnels
            .iter()
            .zip(&asked)
            .map(|(t, relay)| state_of(t.id, relay))
            .collect(),
    ))
}

/// What a reset did on one node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct ResetOutcome {
    /// The server.
    pub server_id: RowId,
    /// Whether its half was rebuilt (false: it runs none, or it could not be asked).
    pub reset: bool,
    /// Why it could not be asked, when it could not.
    pub error: Option<String>,
}

/// Reset: every node of the tunnel rebuilds its half from its config (the one the
/// panel pushed from the database): links drop and the dialing side starts over at
/// once, without back-off. Traffic through this tunnel stops until it reconnects.
/// Nodes held by another panel instance are reset through it.
#[utoipa::path(post, path = "/api/v1/tunnels/{id}/reset", tag = "tunnels", params(("id" = i64, Path)),
    responses((status = 200, body = [ResetOutcome]), (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn reset(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<Json<Vec<ResetOutcome>>, ApiError> {
    let t = s.store().tunnel(id).await?;
    let path = format!("{}/reset", status_path(&t.name));
    let servers: Vec<RowId> = std::iter::once(t.relay_server_id)
        .chain(t.origins.iter().map(|o| o.server_id))
        .collect();
    let done = futures_util::future::join_all(
        servers
            .iter()
            .map(|server| ask(&s, *server, &path, Method::POST)),
    )
    .await;
    Ok(Json(
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
            .collect(),
    ))
}

/// Which points of the usage to answer.
#[derive(Clone, Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UsageQuery {
    /// `minute` (the default; kept 48 hours) or `hour` (kept 90 days).
    pub step: Option<String>,
    /// From this time on (Unix ms); default: as far back as the step is kept.
    pub since_ms: Option<i64>,
}

impl UsageQuery {
    /// The step asked for and where its points start: `since_ms`, but no earlier than
    /// the step keeps points at `now_ms`.
    pub(super) fn window(&self, now_ms: i64) -> Result<(UsageStep, i64), ApiError> {
        let step = match self.step.as_deref() {
            None | Some("minute") => UsageStep::Minute,
            Some("hour") => UsageStep::Hour,
            Some(_) => {
                return Err(ApiError::field(FieldError::new(
                    "step",
                    "must be minute or hour",
                )));
            }
        };
        let since = self
            .since_ms
            .unwrap_or(i64::MIN)
            .max(now_ms.saturating_sub(step.kept_ms()));
        Ok((step, since))
    }
}

/// A tunnel's usage for its chart.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct TunnelUsage {
    /// The step.
    pub step: UsageStep,
    /// The step's length, ms.
    pub step_ms: i64,
    /// Payload bytes per step with any, oldest first (steps without traffic are left
    /// out).
    pub points: Vec<UsagePoint>,
}

/// The tunnel's payload bytes over time, as its relay reported them: per minute for
/// the last 48 hours, or per hour for the last 90 days.
#[utoipa::path(get, path = "/api/v1/tunnels/{id}/usage", tag = "tunnels", params(("id" = i64, Path), UsageQuery),
    responses((status = 200, body = TunnelUsage), (status = 400, body = Problem), (status = 401, body = Problem), (status = 404, body = Problem), (status = 422, body = Problem)))]
pub async fn usage(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
    Query(q): Query<UsageQuery>,
) -> Result<Json<TunnelUsage>, ApiError> {
    let (step, since) = q.window(s.now())?;
    s.store().tunnel(id).await?;
    Ok(Json(TunnelUsage {
        step,
        step_ms: step.ms(),
        points: s.store().tunnel_usage(id, step, since).await?,
    }))
}
