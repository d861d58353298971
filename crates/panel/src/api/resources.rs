//! Clusters, servers (with their join command), inbounds and routes.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::AppState;
use super::auth::Authed;
use super::problem::{ApiError, Body, Id, Problem, Query};
use crate::model::{Cluster, Inbound, Route, Server, check_name};
use crate::store::{InboundInput, ServerInput};

/// A new or renamed cluster.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClusterInput {
    /// Name shown to operators.
    #[schema(
        min_length = 1,
        max_length = 64,
        pattern = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$"
    )]
    pub name: String,
}

/// Clusters (for a reseller, those their quota lets them put users in).
#[utoipa::path(get, path = "/api/v1/clusters", tag = "clusters",
    responses((status = 200, body = [Cluster]), (status = 401, body = Problem)))]
pub async fn clusters(
    State(s): State<AppState>,
    a: Authed,
) -> Result<Json<Vec<Cluster>>, ApiError> {
    let mut clusters = s.store().clusters().await?;
    if a.admin.role == crate::model::Role::Reseller
        && let Some(allowed) = s.store().quota(a.admin.id).await?.clusters
    {
        clusters.retain(|c| allowed.contains(&c.id));
    }
    Ok(Json(clusters))
}

/// A new cluster.
#[utoipa::path(post, path = "/api/v1/clusters", tag = "clusters", request_body = ClusterInput,
    responses((status = 201, body = Cluster), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 409, body = Problem), (status = 415, body = Problem), (status = 422, body = Problem)))]
pub async fn create_cluster(
    State(s): State<AppState>,
    _a: Authed,
    Body(input): Body<ClusterInput>,
) -> Result<(StatusCode, Json<Cluster>), ApiError> {
    check_name("name", &input.name).map_err(ApiError::field)?;
    Ok((
        StatusCode::CREATED,
        Json(s.store().create_cluster(&input.name, s.now()).await?),
    ))
}

/// One cluster.
#[utoipa::path(get, path = "/api/v1/clusters/{id}", tag = "clusters", params(("id" = i64, Path)),
    responses((status = 200, body = Cluster), (status = 400, body = Problem), (status = 401, body = Problem), (status = 404, body = Problem)))]
pub async fn cluster(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<Json<Cluster>, ApiError> {
    Ok(Json(s.store().cluster(id).await?))
}

/// Renames a cluster.
#[utoipa::path(put, path = "/api/v1/clusters/{id}", tag = "clusters", params(("id" = i64, Path)), request_body = ClusterInput,
    responses((status = 200, body = Cluster), (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 404, body = Problem), (status = 409, body = Problem), (status = 415, body = Problem), (status = 422, body = Problem)))]
pub async fn update_cluster(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
    Body(input): Body<ClusterInput>,
) -> Result<Json<Cluster>, ApiError> {
    check_name("name", &input.name).map_err(ApiError::field)?;
    Ok(Json(s.store().rename_cluster(id, &input.name).await?))
}

/// Deletes an empty cluster.
#[utoipa::path(delete, path = "/api/v1/clusters/{id}", tag = "clusters", params(("id" = i64, Path)),
    responses((status = 204), (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 404, body = Problem), (status = 422, body = Problem)))]
pub async fn delete_cluster(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<StatusCode, ApiError> {
    s.store().delete_cluster(id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The routes of a cluster, and the warning about inbounds outside every route.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ClusterRoutes {
    /// Routes in order (the order of entries in subscriptions).
    pub routes: Vec<Route>,
    /// Inbounds in no route: clients cannot see them.
    pub unattached_inbound_ids: Vec<i64>,
    /// "N inbound(s) are not in any route — clients can't see them yet", when N > 0.
    pub warning: Option<String>,
}

/// Routes of a cluster.
#[utoipa::path(get, path = "/api/v1/clusters/{id}/routes", tag = "routes", params(("id" = i64, Path)),
    responses((status = 200, body = ClusterRoutes), (status = 400, body = Problem), (status = 401, body = Problem), (status = 404, body = Problem)))]
pub async fn routes(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<Json<ClusterRoutes>, ApiError> {
    s.store().cluster(id).await?;
    let routes = s.store().routes(id).await?;
    Ok(Json(cluster_routes(&s, id, routes).await?))
}

/// `routes` of `cluster` with the inbounds outside every route and the warning.
pub(super) async fn cluster_routes(
    s: &AppState,
    cluster: i64,
    routes: Vec<Route>,
) -> Result<ClusterRoutes, ApiError> {
    let unattached: Vec<i64> = s
        .store()
        .inbounds(None, Some(cluster))
        .await?
        .into_iter()
        .filter(|i| i.route_id.is_none())
        .map(|i| i.id)
        .collect();
    Ok(ClusterRoutes {
        warning: unattached_warning(unattached.len()),
        routes,
        unattached_inbound_ids: unattached,
    })
}

/// The spec's words for `n` inbounds outside every route, when there are any.
pub fn unattached_warning(n: usize) -> Option<String> {
    (n > 0).then(|| format!("{n} inbound(s) are not in any route — clients can't see them yet"))
}

/// Which servers to list.
#[derive(Clone, Debug, Default, Deserialize, ToSchema, utoipa::IntoParams)]
pub struct ServerQuery {
    /// Only this cluster's.
    pub cluster_id: Option<i64>,
}

/// Servers.
#[utoipa::path(get, path = "/api/v1/servers", tag = "servers", params(ServerQuery),
    responses((status = 200, body = [Server]), (status = 400, body = Problem), (status = 401, body = Problem)))]
pub async fn servers(
    State(s): State<AppState>,
    _a: Authed,
    Query(q): Query<ServerQuery>,
) -> Result<Json<Vec<Server>>, ApiError> {
    let now = s.now();
    let settings = s.health();
    let list = s.store().servers(q.cluster_id).await?;
    let mut list: Vec<Server> = list.into_iter().map(|x| x.at(now, settings)).collect();
    super::upgrade::mark_upgrades(&s, &mut list).await;
    Ok(Json(list))
}

/// A new server: pending until its node joins with the command from
/// `POST /api/v1/servers/{id}/join`.
#[utoipa::path(post, path = "/api/v1/servers", tag = "servers", request_body = ServerInput,
    responses((status = 201, body = Server), (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 409, body = Problem), (status = 415, body = Problem), (status = 422, body = Problem)))]
pub async fn create_server(
    State(s): State<AppState>,
    _a: Authed,
    Body(input): Body<ServerInput>,
) -> Result<(StatusCode, Json<Server>), ApiError> {
    Ok((
        StatusCode::CREATED,
        Json(s.service().create_server(&input, s.now()).await?),
    ))
}

/// One server.
#[utoipa::path(get, path = "/api/v1/servers/{id}", tag = "servers", params(("id" = i64, Path)),
    responses((status = 200, body = Server), (status = 400, body = Problem), (status = 401, body = Problem), (status = 404, body = Problem)))]
pub async fn server(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<Json<Server>, ApiError> {
    let mut one = [s.store().server(id).await?.at(s.now(), s.health())];
    super::upgrade::mark_upgrades(&s, &mut one).await;
    let [server] = one;
    Ok(Json(server))
}

/// Changes a server.
#[utoipa::path(put, path = "/api/v1/servers/{id}", tag = "servers", params(("id" = i64, Path)), request_body = ServerInput,
    responses((status = 200, body = Server), (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 404, body = Problem), (status = 409, body = Problem), (status = 415, body = Problem), (status = 422, body = Problem)))]
pub async fn update_server(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
    Body(input): Body<ServerInput>,
) -> Result<Json<Server>, ApiError> {
    Ok(Json(s.service().update_server(id, &input).await?))
}

/// Deletes a server and its inbounds.
#[utoipa::path(delete, path = "/api/v1/servers/{id}", tag = "servers", params(("id" = i64, Path)),
    responses((status = 204), (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn delete_server(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<StatusCode, ApiError> {
    s.store().delete_server(id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A server's load over time, for its charts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct ServerHistory {
    /// The step.
    pub step: crate::model::tunnel::UsageStep,
    /// The step's length, ms.
    pub step_ms: i64,
    /// One point per step in which a heartbeat found the server online, oldest first.
    pub points: Vec<crate::store::ServerPoint>,
}

/// A server's throughput and users online over time, from the heartbeats that found
/// it online: per minute for the last 48 hours, or per hour for the last 90 days.
#[utoipa::path(get, path = "/api/v1/servers/{id}/history", tag = "servers",
    params(("id" = i64, Path), super::tunnels::UsageQuery),
    responses((status = 200, body = ServerHistory), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 404, body = Problem), (status = 422, body = Problem)))]
pub async fn server_history(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
    Query(q): Query<super::tunnels::UsageQuery>,
) -> Result<Json<ServerHistory>, ApiError> {
    let (step, since) = q.window(s.now())?;
    s.store().server(id).await?;
    Ok(Json(ServerHistory {
        step,
        step_ms: step.ms(),
        points: s.store().server_history(id, step, since).await?,
    }))
}

/// A join token for a server's node, and the commands that use it.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct JoinCommand {
    /// The token (single use). It pins the panel's binary when the panel hands one
    /// out (`syj2.`), else only the panel (`syj1.`).
    pub token: String,
    /// The one line to paste as root on a fresh server: it downloads the panel's
    /// binary, checks it against the token, installs the node as a service and joins
    /// (`docs/install.md`). `join_command` when the panel hands out no binary.
    pub command: String,
    /// For a server that already has `switchyard`: join and run in the foreground.
    pub join_command: String,
    /// When the token expires (Unix ms).
    pub expires_ms: i64,
}

/// A fresh join command for the server's node (single use, expiring). The server's
/// older unused join commands stop working. A server whose node has joined answers
/// 409: replacing its node is `POST /api/v1/servers/{id}/replace`.
#[utoipa::path(post, path = "/api/v1/servers/{id}/join", tag = "servers", params(("id" = i64, Path)),
    responses((status = 201, body = JoinCommand), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 404, body = Problem), (status = 409, body = Problem)))]
pub async fn join(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<(StatusCode, Json<JoinCommand>), ApiError> {
    let now = s.now();
    let ttl = s.config().channel.join_token_ttl_s as i64 * 1000;
    let secret = s.service().new_join_secret(id, ttl, now).await?;
    Ok((
        StatusCode::CREATED,
        Json(join_command(&s, &secret, now + ttl).await),
    ))
}

/// The join command around `secret` (see [`JoinCommand`]).
pub async fn join_command(s: &AppState, secret: &str, expires_ms: i64) -> JoinCommand {
    let token = s.join_token(secret);
    let binary = match s.installer() {
        Some(i) => match i.sha256().await {
            Ok(hash) => Some(hash),
            Err(e) => {
                tracing::warn!("{e}: join commands carry no install line");
                None
            }
        },
        None => None,
    };
    let pinned = binary.and_then(|hash| {
        switchyard_channel::JoinToken::parse(&token)
            .ok()
            .map(|t| t.pinning_binary(hash).encode())
    });
    let token = pinned.unwrap_or(token);
    let join_command = format!("switchyard node join {token}");
    let command = if token.starts_with(switchyard_channel::token::PREFIX_PINNED) {
        crate::install::command(&s.config().public_base(), &token)
    } else {
        join_command.clone()
    };
    JoinCommand {
        command,
        join_command,
        token,
        expires_ms,
    }
}

/// Replaces the server's node: the panel forgets the joined node's certificate (its
/// channel is closed and refused from now on), revokes the server's unused join
/// commands, and answers a fresh one for the node that takes its place. Its inbounds,
/// users and routes stay; the new node gets them when it joins.
#[utoipa::path(post, path = "/api/v1/servers/{id}/replace", tag = "servers", params(("id" = i64, Path)),
    responses((status = 201, body = JoinCommand), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn replace_node(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<(StatusCode, Json<JoinCommand>), ApiError> {
    let now = s.now();
    let ttl = s.config().channel.join_token_ttl_s as i64 * 1000;
    let secret = s.service().replace_node(id, ttl, now).await?;
    // Other instances close it when they hear the change; this one at once.
    if let Some(nodes) = s.nodes() {
        nodes.disconnect(id);
    }
    tracing::info!(server = id, "the server's node is being replaced");
    Ok((
        StatusCode::CREATED,
        Json(join_command(&s, &secret, now + ttl).await),
    ))
}

/// Which inbounds to list.
#[derive(Clone, Debug, Default, Deserialize, ToSchema, utoipa::IntoParams)]
pub struct InboundQuery {
    /// Only this server's.
    pub server_id: Option<i64>,
    /// Only this cluster's.
    pub cluster_id: Option<i64>,
}

/// Inbounds.
#[utoipa::path(get, path = "/api/v1/inbounds", tag = "inbounds", params(InboundQuery),
    responses((status = 200, body = [Inbound]), (status = 400, body = Problem), (status = 401, body = Problem)))]
pub async fn inbounds(
    State(s): State<AppState>,
    _a: Authed,
    Query(q): Query<InboundQuery>,
) -> Result<Json<Vec<Inbound>>, ApiError> {
    Ok(Json(s.store().inbounds(q.server_id, q.cluster_id).await?))
}

/// A new inbound. Keys and a self-signed certificate are generated when it needs
/// them; the cluster's first inbound lands in the default route.
#[utoipa::path(post, path = "/api/v1/inbounds", tag = "inbounds", request_body = InboundInput,
    responses((status = 201, body = Inbound), (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 409, body = Problem), (status = 415, body = Problem), (status = 422, body = Problem)))]
pub async fn create_inbound(
    State(s): State<AppState>,
    _a: Authed,
    Body(input): Body<InboundInput>,
) -> Result<(StatusCode, Json<Inbound>), ApiError> {
    Ok((
        StatusCode::CREATED,
        Json(s.service().create_inbound(&input, s.now()).await?),
    ))
}

/// One inbound.
#[utoipa::path(get, path = "/api/v1/inbounds/{id}", tag = "inbounds", params(("id" = i64, Path)),
    responses((status = 200, body = Inbound), (status = 400, body = Problem), (status = 401, body = Problem), (status = 404, body = Problem)))]
pub async fn inbound(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<Json<Inbound>, ApiError> {
    Ok(Json(s.store().inbound(id).await?))
}

/// Changes an inbound.
#[utoipa::path(put, path = "/api/v1/inbounds/{id}", tag = "inbounds", params(("id" = i64, Path)), request_body = InboundInput,
    responses((status = 200, body = Inbound), (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 404, body = Problem), (status = 409, body = Problem), (status = 415, body = Problem), (status = 422, body = Problem)))]
pub async fn update_inbound(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
    Body(input): Body<InboundInput>,
) -> Result<Json<Inbound>, ApiError> {
    Ok(Json(s.service().update_inbound(id, &input).await?))
}

/// Deletes an inbound.
#[utoipa::path(delete, path = "/api/v1/inbounds/{id}", tag = "inbounds", params(("id" = i64, Path)),
    responses((status = 204), (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem), (status = 404, body = Problem)))]
pub async fn delete_inbound(
    State(s): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<StatusCode, ApiError> {
    s.store().delete_inbound(id).await?;
    Ok(StatusCode::NO_CONTENT)
}
