//! `POST /api/v1/users/bulk`: one change to the users a filter or a list of ids
//! names, previewed with the count first, applied in one transaction (the owner's
//! and admins'; the audit log records it with its count).

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::AppState;
use super::auth::Authed;
use super::problem::{ApiError, Body, Problem};
use crate::model::{FieldError, Id, UserStatus};
use crate::store::{BulkAction, UserFilter};

/// The most ids one request may name.
pub const MAX_IDS: usize = 100_000;

/// Which users: those a filter names, or these ids (both: those of the ids the
/// filter names). An empty filter names every user.
#[derive(Clone, Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkFilter {
    /// Name contains.
    #[serde(default)]
    pub search: Option<String>,
    /// Status now.
    #[serde(default)]
    pub status: Option<UserStatus>,
    /// Sees this cluster's routes.
    #[serde(default)]
    pub cluster: Option<Id>,
}

/// A bulk change.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkRequest {
    /// Which users, by filter.
    #[serde(default)]
    pub filter: Option<BulkFilter>,
    /// Which users, by id (at most 100,000).
    #[serde(default)]
    pub ids: Option<Vec<Id>>,
    /// What to do.
    pub action: BulkAction,
    /// Only count them: change nothing.
    #[serde(default)]
    pub preview: bool,
}

/// What a bulk change did (or, previewed, would do).
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct BulkDone {
    /// How many users it is about.
    pub count: u64,
    /// Whether it was applied (false: a preview).
    pub applied: bool,
    /// What was done, in words (`disable: 120 users`).
    pub name: String,
}

/// Changes many users at once: a preview counts them, the change runs in one
/// transaction (a failure on any user changes none).
#[utoipa::path(post, path = "/api/v1/users/bulk", tag = "users", request_body = BulkRequest,
    responses((status = 200, body = BulkDone), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 415, body = Problem), (status = 422, body = Problem)))]
pub async fn bulk(
    State(s): State<AppState>,
    _a: Authed,
    Body(req): Body<BulkRequest>,
) -> Result<Json<BulkDone>, ApiError> {
    req.action.check().map_err(ApiError::field)?;
    if req.filter.is_none() && req.ids.is_none() {
        return Err(ApiError::field(FieldError::new(
            "filter",
            "name the users: a filter ({} for every user) or ids",
        )));
    }
    if req.ids.as_ref().is_some_and(|i| i.len() > MAX_IDS) {
        return Err(ApiError::field(FieldError::new(
            "ids",
            format!("at most {MAX_IDS} ids"),
        )));
    }
    let f = req.filter.clone().unwrap_or_default();
    let filter = UserFilter {
        search: f.search.as_deref(),
        status: f.status,
        cluster: f.cluster,
        admin_id: None,
        ids: req.ids.as_deref(),
    };
    let now = s.now();
    let count = if req.preview {
        s.store().bulk_count(&filter, now).await?
    } else {
        s.store().bulk_apply(&filter, &req.action, now).await?
    };
    Ok(Json(BulkDone {
        count,
        applied: !req.preview,
        name: format!("{}: {count} users", req.action.describe()),
    }))
}
