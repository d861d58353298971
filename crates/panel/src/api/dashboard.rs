//! `GET /api/v1/dashboard`: how the service is doing, for the UI's first page.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;

use super::AppState;
use super::auth::Authed;
use super::problem::{ApiError, Problem};
use crate::nodes::tunnel_status::tunnel_states;
use crate::store::Numbers;

/// The dashboard.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct Dashboard {
    /// Users, servers and traffic.
    #[serde(flatten)]
    pub numbers: Numbers,
    /// Tunnels by state now (each relay asked): `connected`, `no_connections`,
    /// `unreachable`.
    pub tunnels: BTreeMap<String, u64>,
}

/// How the service is doing: users by status, online now, expiring or nearly out of
/// traffic, servers and tunnels by state, traffic per day for 30 days.
#[utoipa::path(get, path = "/api/v1/dashboard", tag = "dashboard",
    responses((status = 200, body = Dashboard), (status = 401, body = Problem), (status = 403, body = Problem)))]
pub async fn dashboard(State(s): State<AppState>, _a: Authed) -> Result<Json<Dashboard>, ApiError> {
    let numbers = s.store().numbers(s.now()).await?;
    let tunnels = s.store().tunnels().await?;
    let mut by_state = BTreeMap::new();
    for t in tunnel_states(s.nodes(), &tunnels).await {
        let state = crate::model::webhook::tunnel_state(t.links, t.error.is_some());
        *by_state.entry(state.to_owned()).or_insert(0) += 1;
    }
    Ok(Json(Dashboard {
        numbers,
        tunnels: by_state,
    }))
}
