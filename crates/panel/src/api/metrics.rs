//! `GET /metrics`: the panel's counters ([`crate::metrics`]) and the login limiter's,
//! in Prometheus' text format.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};

use super::AppState;
use super::auth::Authed;
use super::problem::ApiError;
use crate::metrics::{render, servers_by_state};

/// `GET /metrics`: with an API token or a session, or open with
/// `metrics_without_token`.
pub async fn metrics(
    State(state): State<AppState>,
    authed: Result<Authed, ApiError>,
    _h: HeaderMap,
) -> Result<Response, ApiError> {
    if !state.config().metrics_without_token {
        authed?;
    }
    let servers = state.store().servers(None).await?;
    let (states, online) = servers_by_state(servers, state.now(), state.health());
    let mut text = render(state.metrics(), states, online);
    text.push_str(&super::login_limit::render_metrics(state.password_checks()));
    let mut r = text.into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4"),
    );
    Ok(r)
}
