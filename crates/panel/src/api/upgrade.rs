//! `POST` and `GET /api/v1/servers/{id}/upgrade`: upgrading a server's node to the
//! binary the panel hands out ([`crate::upgrade`]), and the job's live state;
//! `POST` and `GET /api/v1/servers/upgrade`: every server that needs it, one at a
//! time. Also what the server list shows of it ([`mark_upgrades`]).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;

use super::AppState;
use super::auth::Authed;
use super::problem::{ApiError, Id, Problem};
use crate::model::{Server, ServerState};
use crate::upgrade::{Host, HostError, Rollout, StartError, UpgradeJob};

/// How long a refused start is told to wait, in seconds.
const RETRY_AFTER_S: u64 = 10;

/// The panel as a job sees it.
struct PanelHost(AppState);

impl PanelHost {
    fn installer(&self) -> Result<&Arc<crate::install::Installer>, HostError> {
        self.0.installer().ok_or_else(|| {
            HostError("this panel hands out no binary (see [install] in its config)".into())
        })
    }
}

#[async_trait]
impl Host for PanelHost {
    async fn binary(&self) -> Result<(Vec<u8>, [u8; 32]), HostError> {
        self.installer()?
            .read(crate::upgrade::MAX_BINARY)
            .await
            .map_err(|e| HostError(e.to_string()))
    }

    async fn binary_sha256(&self) -> Result<[u8; 32], HostError> {
        self.installer()?
            .sha256()
            .await
            .map_err(|e| HostError(e.to_string()))
    }

    fn connected(&self, server: i64) -> bool {
        self.0.nodes().is_some_and(|n| n.holds(server))
    }

    async fn request(
        &self,
        server: i64,
        method: http::Method,
        path: &str,
        body: Vec<u8>,
        deadline: Duration,
    ) -> Result<(StatusCode, Vec<u8>), HostError> {
        let not_connected = || {
            HostError(format!(
                "server {server} is not connected to this panel instance"
            ))
        };
        let nodes = self.0.nodes().ok_or_else(not_connected)?;
        nodes
            .request_with(server, method, path, body, deadline)
            .await
            .ok_or_else(not_connected)?
            .map_err(|e| HostError(e.to_string()))
    }

    async fn online(&self, server: i64) -> Result<Option<Option<String>>, HostError> {
        let s = self
            .0
            .store()
            .server(server)
            .await
            .map_err(|e| HostError(e.to_string()))?;
        Ok(
            (s.state_at(self.0.now(), self.0.health()) == ServerState::Online)
                .then_some(s.binary_sha256),
        )
    }

    async fn outdated(&self, sha256: &str) -> Result<Vec<(i64, String)>, HostError> {
        let (now, health) = (self.0.now(), self.0.health());
        let servers = self
            .0
            .store()
            .servers(None)
            .await
            .map_err(|e| HostError(e.to_string()))?;
        Ok(servers
            .into_iter()
            .filter(|s| s.state_at(now, health) == ServerState::Online)
            .filter(|s| s.binary_sha256.as_deref().is_some_and(|b| b != sha256))
            .map(|s| (s.id, s.name))
            .collect())
    }
}

/// Sets `upgrade_available` on `servers`: the node runs a known binary other than
/// the one this panel hands out (false when either is unknown).
pub async fn mark_upgrades(s: &AppState, servers: &mut [Server]) {
    let Some(installer) = s.installer() else {
        return;
    };
    let Ok(sha) = installer.sha256().await else {
        return;
    };
    let hex = switchyard_config::hex::encode(&sha);
    for server in servers {
        server.upgrade_available = server.binary_sha256.as_deref().is_some_and(|b| b != hex);
    }
}

fn start_error(e: StartError) -> ApiError {
    match e {
        StartError::Busy(_) => ApiError::new(StatusCode::CONFLICT, e.to_string()),
        _ => {
            ApiError::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string()).retry_after(RETRY_AFTER_S)
        }
    }
}

/// Upgrades the server's node to the binary this panel hands out, without dropping
/// a connection: the binary is uploaded over the node's channel (`uploading`), the
/// node hands over to it (`switching`, its old process drains for up to 600 s),
/// and the server comes back online running it (`online`). Poll
/// `GET /api/v1/servers/{id}/upgrade` for the steps.
#[utoipa::path(post, path = "/api/v1/servers/{id}/upgrade", tag = "servers", params(("id" = i64, Path)),
    responses((status = 202, description = "The job started", body = UpgradeJob), (status = 400, body = Problem),
        (status = 401, body = Problem), (status = 403, body = Problem), (status = 404, body = Problem),
        (status = 409, description = "An upgrade of this server is already running", body = Problem),
        (status = 503, description = "Every upgrade slot is taken; try again after Retry-After", body = Problem)))]
pub async fn upgrade(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<(StatusCode, Json<UpgradeJob>), ApiError> {
    s.store().server(id).await?;
    let host: Arc<dyn Host> = Arc::new(PanelHost(s.clone()));
    let view = s.upgrades().start(host, id, s.now()).map_err(start_error)?;
    Ok((StatusCode::ACCEPTED, Json(view)))
}

/// The server's latest upgrade on this panel instance (jobs live in the memory of
/// the instance that runs them): its state and every step with its state and output.
#[utoipa::path(get, path = "/api/v1/servers/{id}/upgrade", tag = "servers", params(("id" = i64, Path)),
    responses((status = 200, body = UpgradeJob), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 404, body = Problem)))]
pub async fn upgrade_job(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<Json<UpgradeJob>, ApiError> {
    s.store().server(id).await?;
    s.upgrades().view(id).map(Json).ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            format!("no upgrade of server {id} has run on this panel instance"),
        )
    })
}

/// Upgrades every online server whose node runs another binary than the one this
/// panel hands out, one at a time: each is back online with the new binary before
/// the next starts; the first failure stops it. Poll `GET /api/v1/servers/upgrade`.
#[utoipa::path(post, path = "/api/v1/servers/upgrade", tag = "servers",
    responses((status = 202, description = "The upgrade started", body = Rollout),
        (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 409, description = "An upgrade of every server is already running", body = Problem)))]
pub async fn upgrade_all(
    State(s): State<AppState>,
    _a: Authed,
) -> Result<(StatusCode, Json<Rollout>), ApiError> {
    let host: Arc<dyn Host> = Arc::new(PanelHost(s.clone()));
    let view = s.upgrades().start_all(host, s.now()).map_err(start_error)?;
    Ok((StatusCode::ACCEPTED, Json(view)))
}

/// The latest upgrade of every server on this panel instance.
#[utoipa::path(get, path = "/api/v1/servers/upgrade", tag = "servers",
    responses((status = 200, body = Rollout), (status = 401, body = Problem), (status = 404, body = Problem)))]
pub async fn upgrade_all_state(
    State(s): State<AppState>,
    _a: Authed,
) -> Result<Json<Rollout>, ApiError> {
    s.upgrades().rollout().map(Json).ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "no upgrade of every server has run on this panel instance",
        )
    })
}
