//! `POST` and `GET /api/v1/servers/{id}/ssh-install`: installing a server's node over
//! SSH ([`crate::ssh_install`]), and the job's live state.
//!
//! The request carries a password or a private key: it is checked, used by the job
//! until it is logged in, and dropped; no answer, log line or row ever holds it.

use std::sync::Arc;

use async_trait::async_trait;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use switchyard_config::NodeConfig;

use super::AppState;
use super::auth::Authed;
use super::problem::{ApiError, Body, Id, Problem};
use crate::model::{FieldError, ServerState};
use crate::ssh_install::{
    Binary, Host, HostError, JobView, SshInstallInput, StartError, input::check,
};

/// How long a refused start is told to wait, in seconds.
const RETRY_AFTER_S: u64 = 10;

/// The panel as a job sees it.
struct PanelHost(AppState);

#[async_trait]
impl Host for PanelHost {
    async fn binary(&self) -> Result<Binary, HostError> {
        let installer = self.0.installer().ok_or_else(|| {
            HostError("this panel hands out no binary (see [install] in its config)".into())
        })?;
        let sha256 = installer
            .sha256()
            .await
            .map_err(|e| HostError(e.to_string()))?;
        Ok(Binary {
            path: installer.binary().to_owned(),
            sha256,
            arch: installer.arch().to_owned(),
        })
    }

    async fn join_token(&self, server: i64) -> Result<String, HostError> {
        let s = &self.0;
        if s.store().server(server).await.is_ok_and(|x| x.joined) {
            return Err(HostError(
                "the server's node has already joined: use Replace node in the panel first".into(),
            ));
        }
        let now = s.now();
        let ttl = s.config().channel.join_token_ttl_s as i64 * 1000;
        let secret = s
            .service()
            .new_join_secret(server, ttl, now)
            .await
            .map_err(|e| HostError(e.to_string()))?;
        Ok(super::resources::join_command(s, &secret, now + ttl)
            .await
            .token)
    }

    async fn node_config(&self, server: i64) -> Result<NodeConfig, HostError> {
        let now = self.0.now();
        let snapshot = self
            .0
            .store()
            .server_snapshot(server, now)
            .await
            .map_err(|e| HostError(e.to_string()))?;
        crate::render::render(&snapshot, now).map_err(|e| HostError(e.to_string()))
    }

    async fn joined(&self, server: i64) -> Result<bool, HostError> {
        Ok(self
            .0
            .store()
            .server(server)
            .await
            .map_err(|e| HostError(e.to_string()))?
            .joined)
    }

    async fn online(&self, server: i64) -> Result<Option<String>, HostError> {
        let s = self
            .0
            .store()
            .server(server)
            .await
            .map_err(|e| HostError(e.to_string()))?;
        Ok(
            (s.state_at(self.0.now(), self.0.health()) == ServerState::Online)
                .then(|| s.node_version.unwrap_or_else(|| "version unknown".into())),
        )
    }

    async fn pin_host_key(&self, server: i64, fingerprint: &str) -> Result<(), HostError> {
        self.0
            .store()
            .pin_ssh_host_key(server, fingerprint)
            .await
            .map_err(|e| HostError(e.to_string()))
    }
}

/// Installs the server's node over SSH. Without `host_key` (and no key pinned with
/// the server), the job only connects and reads the server's host key: its state is
/// `confirm_host_key` and `host_key` holds the fingerprint to compare and send back.
/// With the confirmed (or pinned) key, it logs in and runs every step: poll
/// `GET /api/v1/servers/{id}/ssh-install` for their states. The password or key is
/// used for this job only and never stored.
#[utoipa::path(post, path = "/api/v1/servers/{id}/ssh-install", tag = "servers", params(("id" = i64, Path)),
    request_body = SshInstallInput,
    responses((status = 202, description = "The job started", body = JobView), (status = 400, body = Problem),
        (status = 401, body = Problem), (status = 403, body = Problem), (status = 404, body = Problem),
        (status = 409, description = "An install of this server is already running", body = Problem),
        (status = 413, body = Problem), (status = 415, body = Problem), (status = 422, body = Problem),
        (status = 503, description = "Every install slot is taken; try again after Retry-After", body = Problem)))]
pub async fn ssh_install(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
    Body(input): Body<SshInstallInput>,
) -> Result<(StatusCode, Json<JobView>), ApiError> {
    s.store().server(id).await?;
    let pin = s.store().ssh_host_key(id).await?;
    // Decrypting a key is deliberate work (bcrypt): off the async workers.
    let request = tokio::task::spawn_blocking(move || check(&input))
        .await
        .map_err(|e| ApiError::internal(&e))?
        .map_err(|e| ApiError::field(e.to_field_error()))?;
    if let (Some(pinned), Some(given)) = (&pin, &request.host_key)
        && pinned != given
    {
        return Err(ApiError::field(FieldError::new(
            "host_key",
            format!(
                "the server's SSH host key is pinned as {pinned}; it changes only with Replace \
                 node"
            ),
        )));
    }
    let host: Arc<dyn Host> = Arc::new(PanelHost(s.clone()));
    let view = s
        .ssh_jobs()
        .start(host, id, request, pin, s.now())
        .map_err(|e| match e {
            StartError::Busy => ApiError::new(StatusCode::CONFLICT, e.to_string()),
            _ => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string())
                .retry_after(RETRY_AFTER_S),
        })?;
    Ok((StatusCode::ACCEPTED, Json(view)))
}

/// The server's latest install over SSH on this panel instance (jobs live in the
/// memory of the instance that runs them): its state, the host key and every step
/// with its state and output.
#[utoipa::path(get, path = "/api/v1/servers/{id}/ssh-install", tag = "servers", params(("id" = i64, Path)),
    responses((status = 200, body = JobView), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 404, body = Problem)))]
pub async fn ssh_install_job(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<Json<JobView>, ApiError> {
    s.store().server(id).await?;
    s.ssh_jobs().view(id).map(Json).ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            format!("no install over SSH of server {id} has run on this panel instance"),
        )
    })
}
