//! Routes: create, change, delete, order, and the inbound ↔ route assignment (an
//! inbound is in at most one route: assigning moves it). The list with its warning is
//! [`super::resources::routes`].

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use utoipa::ToSchema;

use super::AppState;
use super::auth::Authed;
use super::problem::{ApiError, Body, Id, Problem};
use super::resources::{ClusterRoutes, cluster_routes};
use crate::model::{Id as RowId, Inbound, Route};
use crate::store::RouteInput;

/// A new route in a cluster, at the end of its order.
#[utoipa::path(post, path = "/api/v1/clusters/{id}/routes", tag = "routes", params(("id" = i64, Path)), request_body = RouteInput,
    responses((status = 201, body = Route), (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 404, body = Problem), (status = 409, body = Problem), (status = 415, body = Problem), (status = 422, body = Problem)))]
pub async fn create_route(
    State(s): State<AppState>,
    _a: Authed,
    Id(cluster): Id<i64>,
    Body(input): Body<RouteInput>,
) -> Result<(StatusCode, Json<Route>), ApiError> {
    input.check().map_err(ApiError::field)?;
    Ok((
        StatusCode::CREATED,
        Json(s.store().create_route(cluster, &input, s.now()).await?),
    ))
}

/// One route.
#[utoipa::path(get, path = "/api/v1/routes/{id}", tag = "routes", params(("id" = i64, Path)),
    responses((status = 200, body = Route), (status = 400, body = Problem), (status = 401, body = Problem), (status = 404, body = Problem)))]
pub async fn route(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<Json<Route>, ApiError> {
    Ok(Json(s.store().route(id).await?))
}

/// Changes a route: its sign, its algorithm, and its pool when `inbound_ids` is given.
#[utoipa::path(put, path = "/api/v1/routes/{id}", tag = "routes", params(("id" = i64, Path)), request_body = RouteInput,
    responses((status = 200, body = Route), (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 404, body = Problem), (status = 409, body = Problem), (status = 415, body = Problem), (status = 422, body = Problem)))]
pub async fn update_route(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
    Body(input): Body<RouteInput>,
) -> Result<Json<Route>, ApiError> {
    input.check().map_err(ApiError::field)?;
    Ok(Json(s.store().update_route(id, &input).await?))
}

/// Deletes a route; its inbounds are then in no route.
#[utoipa::path(delete, path = "/api/v1/routes/{id}", tag = "routes", params(("id" = i64, Path)),
    responses((status = 204), (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn delete_route(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<StatusCode, ApiError> {
    s.store().delete_route(id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Which way a route moves in its cluster's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// One place earlier (at the top it stays).
    Up,
    /// One place later (at the bottom it stays).
    Down,
}

/// A move of a route.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MoveInput {
    /// `up` or `down`.
    pub direction: Direction,
}

/// Moves a route one place up or down (the arrows next to a route box); answers
/// the cluster's routes in their new order.
#[utoipa::path(post, path = "/api/v1/routes/{id}/move", tag = "routes", params(("id" = i64, Path)), request_body = MoveInput,
    responses((status = 200, body = ClusterRoutes), (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 404, body = Problem), (status = 415, body = Problem), (status = 422, body = Problem)))]
pub async fn move_route(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
    Body(input): Body<MoveInput>,
) -> Result<Json<ClusterRoutes>, ApiError> {
    let by = match input.direction {
        Direction::Up => -1,
        Direction::Down => 1,
    };
    let routes = s.store().move_route(id, by).await?;
    let cluster = s.store().route(id).await?.cluster_id;
    Ok(Json(cluster_routes(&s, cluster, routes).await?))
}

/// The order of a cluster's routes.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OrderInput {
    /// Every route of the cluster, once each, in the new order.
    pub route_ids: Vec<RowId>,
}

/// Sets the order of a cluster's routes (a drag of a route box); it is also the order
/// of the entries in users' apps.
#[utoipa::path(put, path = "/api/v1/clusters/{id}/routes/order", tag = "routes", params(("id" = i64, Path)), request_body = OrderInput,
    responses((status = 200, body = ClusterRoutes), (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 404, body = Problem), (status = 415, body = Problem), (status = 422, body = Problem)))]
pub async fn order_routes(
    State(s): State<AppState>,
    _a: Authed,
    Id(cluster): Id<i64>,
    Body(input): Body<OrderInput>,
) -> Result<Json<ClusterRoutes>, ApiError> {
    s.store().cluster(cluster).await?;
    let routes = s.store().order_routes(cluster, &input.route_ids).await?;
    Ok(Json(cluster_routes(&s, cluster, routes).await?))
}

/// Where an inbound goes.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AttachInput {
    /// The route (of the inbound's cluster) to put it in, at the end of the pool; it
    /// leaves any other route. `null` detaches it (the "Not attached" zone).
    pub route_id: Option<RowId>,
}

/// Puts an inbound into a route (moving it out of any other) or detaches it.
#[utoipa::path(put, path = "/api/v1/inbounds/{id}/route", tag = "routes", params(("id" = i64, Path)), request_body = AttachInput,
    responses((status = 200, body = Inbound), (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 404, body = Problem), (status = 415, body = Problem), (status = 422, body = Problem)))]
pub async fn attach_inbound(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
    Body(input): Body<AttachInput>,
) -> Result<Json<Inbound>, ApiError> {
    Ok(Json(s.store().attach_inbound(id, input.route_id).await?))
}
