//! Tunnels: create, read, change, delete, duplicate for another relay, re-issue the
//! certificate. The operator fills in nothing security-related: the certificate is
//! issued here (rcgen, for the tunnel's derived certificate name), credentials are
//! derived when the nodes' halves are rendered, and neither the key nor a credential
//! is ever in an answer.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use utoipa::ToSchema;

use super::AppState;
use super::auth::Authed;
use super::problem::{ApiError, Body, Id, Problem};
use crate::model::FieldError;
use crate::model::Id as RowId;
use crate::model::tunnel::{Tunnel, TunnelInput, check_tunnel_name};
use crate::store::TunnelCertificate;

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

/// A new tunnel, with a certificate issued for it.
#[utoipa::path(post, path = "/api/v1/tunnels", tag = "tunnels", request_body = TunnelInput,
    responses((status = 201, body = Tunnel), (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 409, body = Problem), (status = 415, body = Problem), (status = 422, body = Problem)))]
pub async fn create_tunnel(
    State(s): State<AppState>,
    _a: Authed,
    Body(input): Body<TunnelInput>,
) -> Result<(StatusCode, Json<Tunnel>), ApiError> {
    input.check().map_err(ApiError::field)?;
    let certificate = issue(&input.name)?;
    Ok((
        StatusCode::CREATED,
        Json(
            s.store()
                .create_tunnel(&input, &certificate, s.now())
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

/// Changes a tunnel (everything but its name).
#[utoipa::path(put, path = "/api/v1/tunnels/{id}", tag = "tunnels", params(("id" = i64, Path)), request_body = TunnelInput,
    responses((status = 200, body = Tunnel), (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 404, body = Problem), (status = 409, body = Problem), (status = 415, body = Problem), (status = 422, body = Problem)))]
pub async fn update_tunnel(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
    Body(input): Body<TunnelInput>,
) -> Result<Json<Tunnel>, ApiError> {
    input.check().map_err(ApiError::field)?;
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

/// Copies a tunnel for another relay: the same origins, mode, balancing, links,
/// profiles and rules, a new name, a new certificate (so new keys) and therefore new
/// credentials: nothing of one relay's opens the other. The profiles' link addresses
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
    let input = TunnelInput {
        name: copy.name,
        relay_server_id: copy.relay_server_id,
        origin_server_ids: from.origins.iter().map(|o| o.server_id).collect(),
        mode: from.mode,
        balancing: from.balancing,
        links: from.links,
        profiles: from
            .profiles
            .into_iter()
            .map(|mut p| {
                p.addresses.clear();
                p
            })
            .collect(),
        rules: from.rules,
        enabled: from.enabled,
    };
    input.check().map_err(ApiError::field)?;
    let certificate = issue(&input.name)?;
    Ok((
        StatusCode::CREATED,
        Json(
            s.store()
                .create_tunnel(&input, &certificate, s.now())
                .await?,
        ),
    ))
}

/// Re-issues the tunnel's certificate with a new key. The previous pin stays accepted
/// beside the new one (`previous_pin`) while both halves take the new certificate, so
/// no link drops.
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
