//! The audit log's two ends: a layer over the API that records every change an admin
//! makes (a write answered 2xx, and logins), and `GET /api/v1/audit` to read it. The
//! layer also queues the webhook events of users' changes ([`crate::webhooks`]).
//!
//! The layer never reads a request's body: what is recorded is who ([`Actor`], filled
//! by authentication), the route (the action and the kind of object), the object's
//! id from the path or, for a creation, from the answer, and the object's name from
//! the answer (`username` or `name`). So no password, key or token reaches the log.

use axum::Json;
use axum::extract::{MatchedPath, Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::AppState;
use super::actor::Actor;
use super::auth::Authed;
use super::problem::{ApiError, Problem, Query};
use crate::store::{AuditEntry, AuditQuery};

/// How long entries are kept.
pub const KEEP_DAYS: i64 = 365;

/// The biggest answer read for the object's id and name (a larger one is recorded
/// without them).
const ANSWER_BYTES: u64 = 256 * 1024;

/// The action, the kind of object and the id's place among the path's segments, for
/// a route pattern under `/api/v1` (`/users/{id}/reset-usage`).
fn describe(method: &Method, pattern: &str) -> (String, String, Option<usize>) {
    let segments: Vec<&str> = pattern.trim_start_matches('/').split('/').collect();
    let id_at = segments.iter().position(|s| *s == "{id}");
    let kind = match segments.first().copied().unwrap_or("") {
        "account" => "account".to_owned(),
        "session" => "session".to_owned(),
        k => k.strip_suffix('s').unwrap_or(k).to_owned(),
    };
    let tail: Vec<&str> = segments
        .iter()
        .skip(1)
        .filter(|s| !s.starts_with('{'))
        .copied()
        .collect();
    let action = match (method.as_str(), kind.as_str(), tail.is_empty()) {
        ("POST", "session", _) => "log in".to_owned(),
        ("DELETE", "session", _) => "log out".to_owned(),
        ("POST", _, true) => "create".to_owned(),
        ("PUT", _, true) => "update".to_owned(),
        ("DELETE", _, true) => "delete".to_owned(),
        ("POST", "plan", false) if tail == ["users"] => "make user".to_owned(),
        ("POST", _, false) => tail.join(" "),
        ("PUT", _, false) => format!("set {}", tail.join(" ")),
        (m, _, false) => format!("{} {}", m.to_lowercase(), tail.join(" ")),
        (m, _, true) => m.to_lowercase(),
    };
    (action, kind, id_at)
}

/// The webhook event a change is (`None`: none is sent for it).
fn event_of(kind: &str, action: &str) -> Option<&'static str> {
    match (kind, action) {
        ("user", "create") | ("plan", "make user") => Some("user.created"),
        ("user", "delete") => Some("user.deleted"),
        ("user", "bulk") => Some("users.bulk"),
        ("user", _) => Some("user.changed"),
        _ => None,
    }
}

/// Records the changes the API makes: wraps every route under `/api/v1`.
pub async fn layer(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return next.run(req).await;
    }
    let actor = Actor::default();
    req.extensions_mut().insert(actor.clone());
    let method = req.method().clone();
    let pattern = req
        .extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().trim_start_matches("/api/v1").to_owned());
    let path = req.uri().path().to_owned();
    let response = next.run(req).await;
    let (Some(pattern), true) = (pattern, response.status().is_success()) else {
        return response;
    };
    let Some(admin) = actor.get() else {
        return response;
    };
    let (action, kind, id_at) = describe(&method, &pattern);
    // The nested router's path lacks the prefix, as the pattern here does.
    let mut object_id = id_at.and_then(|i| {
        path.trim_start_matches('/')
            .split('/')
            .nth(i)
            .and_then(|s| s.parse().ok())
    });
    let status = response.status().as_u16();
    let (parts, body) = response.into_parts();
    let small = axum::body::HttpBody::size_hint(&body)
        .upper()
        .is_some_and(|n| n <= ANSWER_BYTES);
    let mut data = serde_json::Value::Null;
    let (body, named) = if small {
        match axum::body::to_bytes(body, usize::try_from(ANSWER_BYTES).unwrap_or(usize::MAX)).await
        {
            Ok(bytes) => {
                let v: Option<serde_json::Value> = serde_json::from_slice(&bytes).ok();
                // A preview (a bulk change only counted) changed nothing.
                if v.as_ref().and_then(|v| v.get("applied"))
                    == Some(&serde_json::Value::Bool(false))
                {
                    return Response::from_parts(parts, axum::body::Body::from(bytes));
                }
                let name = v.as_ref().and_then(|v| {
                    v.get("username")
                        .or_else(|| v.get("name"))
                        .and_then(|n| n.as_str())
                        .map(|n| n.chars().take(200).collect::<String>())
                });
                if object_id.is_none() {
                    object_id = v
                        .as_ref()
                        .and_then(|v| v.get("id"))
                        .and_then(|i| i.as_i64());
                }
                data = v.unwrap_or_default();
                (axum::body::Body::from(bytes), name)
            }
            Err(_) => (axum::body::Body::empty(), None),
        }
    } else {
        (body, None)
    };
    // A login or logout is about the admin themselves.
    let named = match kind.as_str() {
        "session" => {
            object_id = Some(admin.id);
            Some(admin.username.clone())
        }
        _ => named,
    };
    let entry = AuditEntry {
        id: 0,
        at_ms: state.now(),
        admin_id: Some(admin.id),
        admin: admin.username,
        action,
        object: named.unwrap_or_else(|| object_id.map(|i| i.to_string()).unwrap_or_default()),
        kind,
        object_id,
        status,
    };
    let keep_from = entry
        .at_ms
        .saturating_sub(KEEP_DAYS.saturating_mul(86_400_000));
    if let Err(e) = state.store().record(&entry, keep_from).await {
        tracing::warn!(error = %e, action = %entry.action, "the audit log could not record a change");
    }
    if let Some(event) = event_of(&entry.kind, &entry.action) {
        if data.is_null() {
            data = serde_json::json!({"id": entry.object_id});
        }
        crate::webhooks::enqueue(
            state.store().as_ref(),
            event,
            &entry.admin,
            data,
            entry.at_ms,
        )
        .await;
    }
    Response::from_parts(parts, body)
}

/// The audit log, newest first (pages by `before`: the last id seen).
#[utoipa::path(get, path = "/api/v1/audit", tag = "audit", params(AuditQuery),
    responses((status = 200, body = [AuditEntry]), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 403, body = Problem)))]
pub async fn audit(
    State(s): State<AppState>,
    _a: Authed,
    Query(q): Query<AuditQuery>,
) -> Result<impl IntoResponse, ApiError> {
    Ok(Json(s.store().audit(&q).await?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_read_as_actions_on_objects() {
        let d = |m: Method, p: &str| {
            let (a, k, i) = describe(&m, p);
            (a, k, i)
        };
        assert_eq!(
            d(Method::POST, "/users"),
            ("create".into(), "user".into(), None)
        );
        assert_eq!(
            d(Method::PUT, "/users/{id}"),
            ("update".into(), "user".into(), Some(1))
        );
        assert_eq!(
            d(Method::POST, "/users/{id}/reset-usage"),
            ("reset-usage".into(), "user".into(), Some(1))
        );
        assert_eq!(
            d(Method::DELETE, "/users/{id}/devices/{device}"),
            ("delete devices".into(), "user".into(), Some(1))
        );
        assert_eq!(
            d(Method::PUT, "/admins/{id}/password"),
            ("set password".into(), "admin".into(), Some(1))
        );
        assert_eq!(d(Method::POST, "/session").0, "log in");
        assert_eq!(d(Method::DELETE, "/session").0, "log out");
        assert_eq!(
            d(Method::PUT, "/account/password"),
            ("set password".into(), "account".into(), None)
        );
        assert_eq!(
            d(Method::POST, "/imports/{source}"),
            ("create".into(), "import".into(), None)
        );
    }
}
