//! The bearer token every control route wants.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::config::constant_time_eq;
use crate::node::Node;

/// Lets the request through with the node's token (compared in constant time), or
/// answers `401` with a problem document.
pub(super) async fn require_token(
    State(node): State<Arc<Node>>,
    request: Request,
    next: Next,
) -> Response {
    if request.uri().path() == "/metrics" && node.metrics_without_token() {
        return next.run(request).await;
    }
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().split_once(' '))
        // The scheme is case-insensitive (RFC 9110).
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim());
    match given {
        Some(t) if constant_time_eq(t.as_bytes(), node.control_token().expose().as_bytes()) => {
            next.run(request).await
        }
        Some(_) => unauthorized("the bearer token is not this node's"),
        None => unauthorized(
            "send `Authorization: Bearer <token>`; `switchyard node token --config FILE` prints it",
        ),
    }
}

fn unauthorized(detail: &str) -> Response {
    let body = json!({
        "type": "about:blank",
        "title": "Unauthorized",
        "status": 401,
        "detail": detail,
    });
    let mut r = (StatusCode::UNAUTHORIZED, body.to_string()).into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/problem+json"),
    );
    h.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    r
}
