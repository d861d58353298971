//! A cluster's and a user's own split tunnelling: `GET` and `PUT`
//! `/api/v1/clusters/{id}/routing` and `/api/v1/users/{id}/routing`
//! (`crate::model::routing`). `{"routing": null}` clears it: the user inherits the
//! cluster's, the cluster the panel's `[subscription.routing]`.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::AppState;
use super::auth::Authed;
use super::problem::{ApiError, Body, Id, Problem};
use crate::model::routing::RoutingSettings;

/// A cluster's or a user's own routing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OwnRouting {
    /// Its own split tunnelling; `null`: none of its own (inherited).
    pub routing: Option<RoutingSettings>,
}

fn checked(input: &OwnRouting) -> Result<Option<&RoutingSettings>, ApiError> {
    if let Some(r) = &input.routing {
        r.validate("routing").map_err(ApiError::field)?;
    }
    Ok(input.routing.as_ref())
}

/// A cluster's own routing.
#[utoipa::path(get, path = "/api/v1/clusters/{id}/routing", tag = "clusters", params(("id" = i64, Path)),
    responses((status = 200, body = OwnRouting), (status = 400, body = Problem), (status = 401, body = Problem), (status = 404, body = Problem)))]
pub async fn cluster_routing(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<Json<OwnRouting>, ApiError> {
    let routing = s.store().cluster_routing(id).await?;
    Ok(Json(OwnRouting { routing }))
}

/// Sets or clears a cluster's own routing; its users' apps get it at their next fetch.
#[utoipa::path(put, path = "/api/v1/clusters/{id}/routing", tag = "clusters", params(("id" = i64, Path)), request_body = OwnRouting,
    responses((status = 200, body = OwnRouting), (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 404, body = Problem), (status = 415, body = Problem), (status = 422, body = Problem)))]
pub async fn set_cluster_routing(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
    Body(input): Body<OwnRouting>,
) -> Result<Json<OwnRouting>, ApiError> {
    s.store().set_cluster_routing(id, checked(&input)?).await?;
    Ok(Json(input))
}

/// A user's own routing.
#[utoipa::path(get, path = "/api/v1/users/{id}/routing", tag = "users", params(("id" = i64, Path)),
    responses((status = 200, body = OwnRouting), (status = 400, body = Problem), (status = 401, body = Problem), (status = 404, body = Problem)))]
pub async fn user_routing(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<Json<OwnRouting>, ApiError> {
    let routing = s.store().user_routing(id).await?;
    Ok(Json(OwnRouting { routing }))
}

/// Sets or clears a user's own routing; their apps get it at their next fetch.
#[utoipa::path(put, path = "/api/v1/users/{id}/routing", tag = "users", params(("id" = i64, Path)), request_body = OwnRouting,
    responses((status = 200, body = OwnRouting), (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 404, body = Problem), (status = 415, body = Problem), (status = 422, body = Problem)))]
pub async fn set_user_routing(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
    Body(input): Body<OwnRouting>,
) -> Result<Json<OwnRouting>, ApiError> {
    s.store().set_user_routing(id, checked(&input)?).await?;
    Ok(Json(input))
}
