//! Plans: `GET`/`POST /api/v1/plans`, `GET`/`PUT`/`DELETE /api/v1/plans/{id}`, and
//! `POST /api/v1/plans/{id}/users` to make a user from one (a reseller may list plans
//! and make their users from them, within their quota).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use utoipa::ToSchema;

use super::AppState;
use super::auth::Authed;
use super::problem::{ApiError, Body, Id, Problem};
use crate::model::{Plan, PlanInput, User};

/// A user to make from a plan.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FromPlan {
    /// Unique name.
    #[schema(pattern = r"^[A-Za-z0-9_.@-]{1,64}$")]
    pub username: String,
    /// A note for operators.
    #[serde(default)]
    #[schema(max_length = 1000)]
    pub note: String,
}

/// The plans, by name.
#[utoipa::path(get, path = "/api/v1/plans", tag = "plans",
    responses((status = 200, body = [Plan]), (status = 401, body = Problem), (status = 403, body = Problem)))]
pub async fn plans(State(s): State<AppState>, _a: Authed) -> Result<Json<Vec<Plan>>, ApiError> {
    Ok(Json(s.store().plans().await?))
}

/// A new plan.
#[utoipa::path(post, path = "/api/v1/plans", tag = "plans", request_body = PlanInput,
    responses((status = 201, body = Plan), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 409, body = Problem), (status = 415, body = Problem), (status = 422, body = Problem)))]
pub async fn create_plan(
    State(s): State<AppState>,
    _a: Authed,
    Body(input): Body<PlanInput>,
) -> Result<(StatusCode, Json<Plan>), ApiError> {
    input.check().map_err(ApiError::field)?;
    Ok((
        StatusCode::CREATED,
        Json(s.store().create_plan(&input, s.now()).await?),
    ))
}

/// One plan.
#[utoipa::path(get, path = "/api/v1/plans/{id}", tag = "plans", params(("id" = i64, Path)),
    responses((status = 200, body = Plan), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn plan(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<Json<Plan>, ApiError> {
    Ok(Json(s.store().plan(id).await?))
}

/// Changes a plan (users made from it keep what they got).
#[utoipa::path(put, path = "/api/v1/plans/{id}", tag = "plans", params(("id" = i64, Path)), request_body = PlanInput,
    responses((status = 200, body = Plan), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 404, body = Problem), (status = 409, body = Problem),
        (status = 415, body = Problem), (status = 422, body = Problem)))]
pub async fn update_plan(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
    Body(input): Body<PlanInput>,
) -> Result<Json<Plan>, ApiError> {
    input.check().map_err(ApiError::field)?;
    Ok(Json(s.store().update_plan(id, &input).await?))
}

/// Deletes a plan (users made from it stay as they are).
#[utoipa::path(delete, path = "/api/v1/plans/{id}", tag = "plans", params(("id" = i64, Path)),
    responses((status = 204), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn delete_plan(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<StatusCode, ApiError> {
    s.store().delete_plan(id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A new user made from the plan: its limit and reset, an expiry its days from now
/// (or from the first connection), its device and address limits and clusters. A
/// reseller's is theirs, within their quota.
#[utoipa::path(post, path = "/api/v1/plans/{id}/users", tag = "plans", params(("id" = i64, Path)), request_body = FromPlan,
    responses((status = 201, body = User), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 404, body = Problem), (status = 409, body = Problem),
        (status = 415, body = Problem), (status = 422, body = Problem)))]
pub async fn user_from_plan(
    State(s): State<AppState>,
    a: Authed,
    Id(id): Id<i64>,
    Body(input): Body<FromPlan>,
) -> Result<(StatusCode, Json<User>), ApiError> {
    let user = s
        .service()
        .create_user_from_plan(id, (&input.username, &input.note), a.reseller(), s.now())
        .await?;
    Ok((StatusCode::CREATED, Json(user)))
}
