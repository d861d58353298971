//! Users: create, edit (limits, reset strategy, expiry, on hold, note), disable,
//! delete, reset usage, revoke the subscription link.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;

use super::AppState;
use super::auth::Authed;
use super::problem::{ApiError, Body, Id, Problem, Query};
use crate::model::User;
use crate::store::{Device, UserInput, UserQuery};

/// A page of users.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct UserPage {
    /// The users.
    pub users: Vec<User>,
    /// How many the filter names in all.
    pub total: u64,
}

/// Users: filtered by name, status and cluster, sorted, paged; `total` counts what
/// the filter names. A reseller's own alone.
#[utoipa::path(get, path = "/api/v1/users", tag = "users", params(UserQuery),
    responses((status = 200, body = UserPage), (status = 400, body = Problem), (status = 401, body = Problem)))]
pub async fn users(
    State(s): State<AppState>,
    a: Authed,
    Query(q): Query<UserQuery>,
) -> Result<Json<UserPage>, ApiError> {
    let (users, total) = s.store().user_page(&q, a.reseller(), s.now()).await?;
    Ok(Json(UserPage { users, total }))
}

/// A new user, with fresh credentials and subscription link; a reseller's is theirs,
/// within their quota (403 naming the field it exceeds).
#[utoipa::path(post, path = "/api/v1/users", tag = "users", request_body = UserInput,
    responses((status = 201, body = User), (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 409, body = Problem), (status = 415, body = Problem), (status = 422, body = Problem)))]
pub async fn create_user(
    State(s): State<AppState>,
    a: Authed,
    Body(input): Body<UserInput>,
) -> Result<(StatusCode, Json<User>), ApiError> {
    let user = match a.reseller() {
        Some(reseller) => {
            s.service()
                .create_owned_user(reseller, &input, s.now())
                .await?
        }
        None => s.service().create_user(&input, s.now()).await?,
    };
    Ok((StatusCode::CREATED, Json(user)))
}

/// One user.
#[utoipa::path(get, path = "/api/v1/users/{id}", tag = "users", params(("id" = i64, Path)),
    responses((status = 200, body = User), (status = 400, body = Problem), (status = 401, body = Problem), (status = 404, body = Problem)))]
pub async fn user(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<Json<User>, ApiError> {
    Ok(Json(s.store().user(id, s.now()).await?))
}

/// A user's subscription link.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct SubscriptionLink {
    /// The whole URL to give the user's app (the panel's public base and the path).
    pub url: String,
    /// Where its QR code is, as an SVG image (same authentication as this call).
    pub qr_path: String,
}

/// The user's subscription link, for copying or a QR code.
#[utoipa::path(get, path = "/api/v1/users/{id}/subscription", tag = "users", params(("id" = i64, Path)),
    responses((status = 200, body = SubscriptionLink), (status = 400, body = Problem), (status = 401, body = Problem), (status = 404, body = Problem)))]
pub async fn subscription_link(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<Json<SubscriptionLink>, ApiError> {
    let user = s.store().user(id, s.now()).await?;
    Ok(Json(SubscriptionLink {
        url: format!("{}{}", s.config().public_base(), user.subscription_path),
        qr_path: format!("/api/v1/users/{id}/subscription.svg"),
    }))
}

/// The user's subscription link as a QR code (SVG), for an app's scanner.
#[utoipa::path(get, path = "/api/v1/users/{id}/subscription.svg", tag = "users", params(("id" = i64, Path)),
    responses((status = 200, description = "An SVG image", content_type = "image/svg+xml", body = String),
        (status = 400, body = Problem), (status = 401, body = Problem), (status = 404, body = Problem)))]
pub async fn subscription_qr(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<axum::response::Response, ApiError> {
    use axum::response::IntoResponse;
    let user = s.store().user(id, s.now()).await?;
    let url = format!("{}{}", s.config().public_base(), user.subscription_path);
    let svg = crate::subscription::page::qr_svg(&url, "the subscription URL").ok_or_else(|| {
        ApiError::new(
            axum::http::StatusCode::UNPROCESSABLE_ENTITY,
            "the link is too long for a QR code",
        )
    })?;
    Ok((
        [
            (axum::http::header::CONTENT_TYPE, "image/svg+xml"),
            (axum::http::header::CACHE_CONTROL, "no-store"),
        ],
        svg,
    )
        .into_response())
}

/// Replaces a user's settings. A user who becomes limited, expired or disabled is
/// removed from every node within seconds, their connections closed.
#[utoipa::path(put, path = "/api/v1/users/{id}", tag = "users", params(("id" = i64, Path)), request_body = UserInput,
    responses((status = 200, body = User), (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 404, body = Problem), (status = 409, body = Problem), (status = 415, body = Problem), (status = 422, body = Problem)))]
pub async fn update_user(
    State(s): State<AppState>,
    a: Authed,
    Id(id): Id<i64>,
    Body(input): Body<UserInput>,
) -> Result<Json<User>, ApiError> {
    let user = match a.reseller() {
        Some(reseller) => {
            s.service()
                .update_owned_user(reseller, id, &input, s.now())
                .await?
        }
        None => s.service().update_user(id, &input, s.now()).await?,
    };
    Ok(Json(user))
}

/// Deletes a user.
#[utoipa::path(delete, path = "/api/v1/users/{id}", tag = "users", params(("id" = i64, Path)),
    responses((status = 204), (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn delete_user(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<StatusCode, ApiError> {
    s.store().delete_user(id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Starts a new period now: usage back to zero.
#[utoipa::path(post, path = "/api/v1/users/{id}/reset-usage", tag = "users", params(("id" = i64, Path)),
    responses((status = 200, body = User), (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn reset_usage(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<Json<User>, ApiError> {
    Ok(Json(s.store().reset_usage(id, s.now()).await?))
}

/// Gives the user a new subscription link; the old one stops working.
#[utoipa::path(post, path = "/api/v1/users/{id}/revoke-subscription", tag = "users", params(("id" = i64, Path)),
    responses((status = 200, body = User), (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn revoke_subscription(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<Json<User>, ApiError> {
    Ok(Json(s.service().revoke_subscription(id, s.now()).await?))
}

/// The devices that fetched the user's subscription (apps that send `x-hwid`),
/// most recently seen first.
#[utoipa::path(get, path = "/api/v1/users/{id}/devices", tag = "users", params(("id" = i64, Path)),
    responses((status = 200, body = [Device]), (status = 400, body = Problem), (status = 401, body = Problem), (status = 404, body = Problem)))]
pub async fn devices(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<Json<Vec<Device>>, ApiError> {
    s.store().user(id, s.now()).await?;
    Ok(Json(s.store().devices(id).await?))
}

/// Forgets a device: it frees a place under the user's device limit (the app is
/// registered anew at its next fetch, if there is room).
#[utoipa::path(delete, path = "/api/v1/users/{id}/devices/{device}", tag = "users",
    params(("id" = i64, Path), ("device" = i64, Path)),
    responses((status = 204), (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn delete_device(
    State(s): State<AppState>,
    _a: Authed,
    Id((id, device)): Id<(i64, i64)>,
) -> Result<StatusCode, ApiError> {
    s.store().delete_device(id, device).await?;
    Ok(StatusCode::NO_CONTENT)
}
