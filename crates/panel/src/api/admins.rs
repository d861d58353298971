//! The admins, for the owner: list, add with a role and a quota, change, set a
//! password, delete ([`super::policy`] keeps the others out). The last owner can be
//! neither demoted nor deleted.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use utoipa::ToSchema;

use super::AppState;
use super::account::check_password;
use super::auth::{Authed, hash_password};
use super::problem::{ApiError, Body, Id, Problem};
use crate::model::{Quota, Role};
use crate::store::{AdminFields, AdminView};

/// A new admin.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewAdmin {
    /// Login name (no spaces).
    #[schema(min_length = 1, max_length = 64)]
    pub username: String,
    /// Their first password: 12 to 256 characters.
    #[schema(min_length = 12, max_length = 256)]
    pub password: String,
    /// What they may do.
    pub role: Role,
    /// A reseller's quota (only a reseller has one).
    #[serde(default)]
    pub quota: Quota,
}

/// An admin's name, role and quota.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AdminInput {
    /// Login name (no spaces).
    #[schema(min_length = 1, max_length = 64)]
    pub username: String,
    /// What they may do.
    pub role: Role,
    /// A reseller's quota (only a reseller has one).
    #[serde(default)]
    pub quota: Quota,
}

/// A password the owner sets for an admin.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewPassword {
    /// 12 to 256 characters.
    #[schema(min_length = 12, max_length = 256)]
    pub password: String,
}

async fn hashed(s: &AppState, field: &str, password: String) -> Result<String, ApiError> {
    check_password(field, &password).map_err(ApiError::field)?;
    s.password_checks()
        .run(move || hash_password(&password))
        .await?
        .and_then(Result::ok)
        .ok_or_else(|| ApiError::internal(&"hashing the password failed"))
}

/// The admins, with their roles, quotas and what the quotas are used by.
#[utoipa::path(get, path = "/api/v1/admins", tag = "admins",
    responses((status = 200, body = [AdminView]), (status = 401, body = Problem), (status = 403, body = Problem)))]
pub async fn admins(
    State(s): State<AppState>,
    _a: Authed,
) -> Result<Json<Vec<AdminView>>, ApiError> {
    Ok(Json(s.store().admins().await?))
}

/// A new admin.
#[utoipa::path(post, path = "/api/v1/admins", tag = "admins", request_body = NewAdmin,
    responses((status = 201, body = AdminView), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 409, body = Problem), (status = 415, body = Problem), (status = 422, body = Problem),
        (status = 503, body = Problem)))]
pub async fn create_admin(
    State(s): State<AppState>,
    a: Authed,
    Body(input): Body<NewAdmin>,
) -> Result<(StatusCode, Json<AdminView>), ApiError> {
    crate::service::check_admin(&input.username, input.role, &input.quota)
        .map_err(ApiError::field)?;
    let hash = hashed(&s, "password", input.password).await?;
    let fields = AdminFields {
        username: &input.username,
        role: input.role,
        quota: &input.quota,
    };
    let made = s.service().create_admin(&fields, &hash, s.now()).await?;
    tracing::info!(by = %a.admin.username, admin = %made.username, role = made.role.as_str(), "admin added");
    Ok((
        StatusCode::CREATED,
        Json(s.store().admin_view(made.id).await?),
    ))
}

/// One admin.
#[utoipa::path(get, path = "/api/v1/admins/{id}", tag = "admins", params(("id" = i64, Path)),
    responses((status = 200, body = AdminView), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn admin(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<Json<AdminView>, ApiError> {
    Ok(Json(s.store().admin_view(id).await?))
}

/// Changes an admin's name, role and quota (takes effect on their next request).
#[utoipa::path(put, path = "/api/v1/admins/{id}", tag = "admins", params(("id" = i64, Path)), request_body = AdminInput,
    responses((status = 200, body = AdminView), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 404, body = Problem), (status = 409, body = Problem),
        (status = 415, body = Problem), (status = 422, body = Problem)))]
pub async fn update_admin(
    State(s): State<AppState>,
    a: Authed,
    Id(id): Id<i64>,
    Body(input): Body<AdminInput>,
) -> Result<Json<AdminView>, ApiError> {
    let fields = AdminFields {
        username: &input.username,
        role: input.role,
        quota: &input.quota,
    };
    let changed = s.service().update_admin(id, &fields).await?;
    tracing::info!(by = %a.admin.username, admin = %changed.username, role = changed.role.as_str(), "admin changed");
    Ok(Json(s.store().admin_view(id).await?))
}

/// Sets an admin's password; their sessions end (their API tokens stay).
#[utoipa::path(put, path = "/api/v1/admins/{id}/password", tag = "admins", params(("id" = i64, Path)), request_body = NewPassword,
    responses((status = 204), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 404, body = Problem), (status = 415, body = Problem),
        (status = 422, body = Problem), (status = 503, body = Problem)))]
pub async fn set_password(
    State(s): State<AppState>,
    a: Authed,
    Id(id): Id<i64>,
    Body(input): Body<NewPassword>,
) -> Result<StatusCode, ApiError> {
    let hash = hashed(&s, "password", input.password).await?;
    s.store().reset_admin_password(id, &hash).await?;
    tracing::info!(by = %a.admin.username, admin = id, "admin's password set");
    Ok(StatusCode::NO_CONTENT)
}

/// Deletes an admin: their sessions and tokens end, their users stay (owned by
/// nobody in particular).
#[utoipa::path(delete, path = "/api/v1/admins/{id}", tag = "admins", params(("id" = i64, Path)),
    responses((status = 204), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 404, body = Problem), (status = 422, body = Problem)))]
pub async fn delete_admin(
    State(s): State<AppState>,
    a: Authed,
    Id(id): Id<i64>,
) -> Result<StatusCode, ApiError> {
    s.store().delete_admin(id).await?;
    tracing::info!(by = %a.admin.username, admin = id, "admin deleted");
    Ok(StatusCode::NO_CONTENT)
}
