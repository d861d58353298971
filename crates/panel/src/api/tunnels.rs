//! Tunnels: create, read, change, delete, duplicate for another relay, re-issue the
//! certificate; their state and live status asked from the nodes, Reset, and the
//! usage chart's points, and rotating the credentials. The operator fills in nothing
//! security-related: the certificate and the REALITY keys are made by the service
//! ([`crate::service`]), credentials are derived when the nodes' halves are rendered,
//! and neither a private key nor a credential is ever in an answer. The nodes are
//! asked through [`crate::nodes::tunnel_status`]. A new tunnel's first profile is
//! REALITY in front of the panel's default target (`tunnels.reality_dest`) unless it
//! says otherwise.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::AppState;
use super::auth::Authed;
use super::problem::{ApiError, Body, Id, Problem, Query};
use crate::model::FieldError;
use crate::model::Id as RowId;
use crate::model::tunnel::{Tunnel, TunnelInput, UsagePoint, UsageStep};
use crate::nodes::tunnel_status::{
    ResetOutcome, TunnelState, TunnelStatus, reset_tunnel, tunnel_states, tunnel_status,
};

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
    Body(input): Body<TunnelInput>,
) -> Result<(StatusCode, Json<Tunnel>), ApiError> {
    let dest = &s.config().tunnels.reality_dest;
    let tunnel = s.service().create_tunnel(input, dest, s.now()).await?;
    Ok((StatusCode::CREATED, Json(tunnel)))
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
    Body(input): Body<TunnelInput>,
) -> Result<Json<Tunnel>, ApiError> {
    let dest = &s.config().tunnels.reality_dest;
    Ok(Json(s.service().update_tunnel(id, input, dest).await?))
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
    let service = s.service();
    let tunnel = service
        .duplicate_tunnel(id, copy.name, copy.relay_server_id, s.now())
        .await?;
    Ok((StatusCode::CREATED, Json(tunnel)))
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
    Ok(Json(s.service().reissue_tunnel_certificate(id).await?))
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
    Ok(Json(tunnel_status(s.nodes(), &t).await))
}

/// Every tunnel's state (each relay asked now, all at once), for the list.
#[utoipa::path(get, path = "/api/v1/tunnels/status", tag = "tunnels",
    responses((status = 200, body = [TunnelState]), (status = 401, body = Problem)))]
pub async fn statuses(
    State(s): State<AppState>,
    _a: Authed,
) -> Result<Json<Vec<TunnelState>>, ApiError> {
    let tunnels = s.store().tunnels().await?;
    Ok(Json(tunnel_states(s.nodes(), &tunnels).await))
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
    Ok(Json(reset_tunnel(s.nodes(), &t).await))
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
