//! Webhooks, the owner's: register a URL and the events it gets (its secret shown
//! once), change, delete, send a test event, list a hook's deliveries with their last
//! attempt, and replay one.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::AppState;
use super::auth::Authed;
use super::problem::{ApiError, Body, Id, Problem};
use crate::model::{FieldError, Webhook, WebhookInput};
use crate::service::random_token;
use crate::store::Delivery;

/// A new hook: the fields of [`WebhookInput`] and, optionally, its secret.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewWebhook {
    /// Where deliveries are POSTed (`https://…`; `http://` too).
    #[schema(max_length = 2000)]
    pub url: String,
    /// The events it gets.
    pub events: Vec<String>,
    /// Delivering (default true).
    #[serde(default = "yes")]
    pub enabled: bool,
    /// May deliver to a loopback or private address.
    #[serde(default)]
    pub allow_private: bool,
    /// The signing secret (16 to 128 characters); made here when absent.
    #[serde(default)]
    pub secret: Option<String>,
}

fn yes() -> bool {
    true
}

/// A hook just made, with its secret: shown this once.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct CreatedWebhook {
    /// The hook.
    #[serde(flatten)]
    pub webhook: Webhook,
    /// Verifies each delivery's `X-Switchyard-Signature`.
    pub secret: String,
}

/// What was queued.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct Queued {
    /// Deliveries queued.
    pub queued: u64,
}

/// The hooks (never their secrets).
#[utoipa::path(get, path = "/api/v1/webhooks", tag = "webhooks",
    responses((status = 200, body = [Webhook]), (status = 401, body = Problem), (status = 403, body = Problem)))]
pub async fn webhooks(
    State(s): State<AppState>,
    _a: Authed,
) -> Result<Json<Vec<Webhook>>, ApiError> {
    Ok(Json(s.store().webhooks().await?))
}

/// The most hooks a panel keeps.
pub const MAX_WEBHOOKS: usize = 64;

/// A new hook; its secret is in the answer, once.
#[utoipa::path(post, path = "/api/v1/webhooks", tag = "webhooks", request_body = NewWebhook,
    responses((status = 201, body = CreatedWebhook), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 415, body = Problem), (status = 422, body = Problem)))]
pub async fn create_webhook(
    State(s): State<AppState>,
    _a: Authed,
    Body(new): Body<NewWebhook>,
) -> Result<(StatusCode, Json<CreatedWebhook>), ApiError> {
    let input = WebhookInput {
        url: new.url,
        events: new.events,
        enabled: new.enabled,
        allow_private: new.allow_private,
    };
    input.check().map_err(ApiError::field)?;
    // Every write reads the hooks to queue its event: their number is bounded.
    if s.store().webhooks().await?.len() >= MAX_WEBHOOKS {
        return Err(ApiError::field(FieldError::new(
            "url",
            format!("a panel has at most {MAX_WEBHOOKS} hooks: delete one first"),
        )));
    }
    let secret = match new.secret {
        Some(given) => {
            let n = given.chars().count();
            if !(16..=128).contains(&n) || given.chars().any(char::is_control) {
                return Err(ApiError::field(FieldError::new(
                    "secret",
                    "must be 16 to 128 characters, no control characters",
                )));
            }
            given
        }
        None => random_token(32),
    };
    let webhook = s.store().create_webhook(&input, &secret, s.now()).await?;
    Ok((
        StatusCode::CREATED,
        Json(CreatedWebhook { webhook, secret }),
    ))
}

/// One hook.
#[utoipa::path(get, path = "/api/v1/webhooks/{id}", tag = "webhooks", params(("id" = i64, Path)),
    responses((status = 200, body = Webhook), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn webhook(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<Json<Webhook>, ApiError> {
    Ok(Json(s.store().webhook(id).await?))
}

/// Changes a hook (its secret stays).
#[utoipa::path(put, path = "/api/v1/webhooks/{id}", tag = "webhooks", params(("id" = i64, Path)), request_body = WebhookInput,
    responses((status = 200, body = Webhook), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 404, body = Problem), (status = 415, body = Problem), (status = 422, body = Problem)))]
pub async fn update_webhook(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
    Body(input): Body<WebhookInput>,
) -> Result<Json<Webhook>, ApiError> {
    input.check().map_err(ApiError::field)?;
    Ok(Json(s.store().update_webhook(id, &input).await?))
}

/// Deletes a hook and its deliveries.
#[utoipa::path(delete, path = "/api/v1/webhooks/{id}", tag = "webhooks", params(("id" = i64, Path)),
    responses((status = 204), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn delete_webhook(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<StatusCode, ApiError> {
    s.store().delete_webhook(id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Queues a `webhook.test` event for this hook alone.
#[utoipa::path(post, path = "/api/v1/webhooks/{id}/test", tag = "webhooks", params(("id" = i64, Path)),
    responses((status = 202, body = Queued), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn test_webhook(
    State(s): State<AppState>,
    a: Authed,
    Id(id): Id<i64>,
) -> Result<(StatusCode, Json<Queued>), ApiError> {
    s.store().webhook(id).await?;
    let now = s.now();
    let body = crate::model::webhook::body(
        "webhook.test",
        &a.admin.username,
        &serde_json::json!({"hook": id}),
        now,
    );
    let queued = s
        .store()
        .enqueue("webhook.test", &body, Some(id), now)
        .await?;
    Ok((StatusCode::ACCEPTED, Json(Queued { queued })))
}

/// A hook's deliveries, newest first (the last 100), with their last attempt.
#[utoipa::path(get, path = "/api/v1/webhooks/{id}/deliveries", tag = "webhooks", params(("id" = i64, Path)),
    responses((status = 200, body = [Delivery]), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn deliveries(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<Json<Vec<Delivery>>, ApiError> {
    s.store().webhook(id).await?;
    Ok(Json(s.store().deliveries(id, 100).await?))
}

/// Sends a delivery again, from now, with a fresh count of attempts.
#[utoipa::path(post, path = "/api/v1/webhooks/{id}/deliveries/{delivery}/replay", tag = "webhooks",
    params(("id" = i64, Path), ("delivery" = i64, Path)),
    responses((status = 204), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn replay(
    State(s): State<AppState>,
    _a: Authed,
    Id((id, delivery)): Id<(i64, i64)>,
) -> Result<StatusCode, ApiError> {
    s.store().replay(id, delivery, s.now()).await?;
    Ok(StatusCode::NO_CONTENT)
}
