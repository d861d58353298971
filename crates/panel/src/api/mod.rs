//! The HTTP side: one function builds the router (tests call it without a socket).
//!
//! - `/api/v1/...`: REST/JSON for the web UI and scripts (session cookie + CSRF, or an
//!   API token); errors are `application/problem+json` naming the field.
//! - `/api/openapi.json`: the OpenAPI document, generated from the handlers' types.
//! - `/sub/{token}`: subscriptions (public; the token is the credential).
//! - `/metrics`: Prometheus. `/healthz`: liveness.
//! - `/` and `/ui/…`: the web UI ([`crate::ui`]), which uses only the API above.

pub mod account;
pub mod actor;
pub mod admins;
pub mod audit;
pub mod auth;
pub mod client;
pub mod dashboard;
pub mod imports;
pub mod install;
pub mod login_limit;
pub mod metrics;
pub mod plans;
pub mod policy;
pub mod problem;
pub mod resources;
pub mod routes;
pub mod routing;
pub mod rule_sets;
pub mod ssh_install;
pub mod subscription;
pub mod templates;
pub mod tunnels;
pub mod upgrade;
pub mod users;
pub mod users_bulk;
pub mod webhooks;

use std::sync::Arc;

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::IntoResponse;
use axum::routing::{get, post, put};
use utoipa::OpenApi;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};

use self::policy::Roles;
use crate::config::PanelConfig;
use crate::metrics::Metrics;
use crate::model::HealthSettings;
use crate::proxies::TrustedProxies;
use crate::service::Service;
use crate::store::{Changes, Store};
use crate::subscription::topology::Topology;

/// Turns a join secret into the token a node is given (the panel's channel address and
/// certificate pin around the secret).
pub type JoinEncoder = Arc<dyn Fn(&str) -> String + Send + Sync>;

struct Inner {
    service: Service,
    config: PanelConfig,
    limiter: login_limit::LoginLimiter,
    password_checks: login_limit::PasswordChecks,
    trusted_proxies: TrustedProxies,
    dummy_hash: String,
    join: JoinEncoder,
    metrics: Arc<Metrics>,
    health: HealthSettings,
    topology: Topology,
    /// The operators' templates, cached.
    templates: crate::subscription::templates::Templates,
    /// The rule sets apps fetch, as served.
    rule_sets: Arc<crate::subscription::rule_cache::RuleCache>,
    /// Subscription fetches per token.
    fetches: crate::subscription::limit::FetchLimiter,
    /// The node channels of this instance, once it holds any (absent in tests of the
    /// API alone: then every node is unreachable from here).
    nodes: std::sync::OnceLock<crate::nodes::Nodes>,
    /// The install script's binary, once attached (absent in tests of the API alone).
    installer: std::sync::OnceLock<Arc<crate::install::Installer>>,
    /// This instance's installs over SSH.
    ssh_jobs: crate::ssh_install::Jobs,
    /// This instance's upgrades of nodes.
    upgrades: Arc<crate::upgrade::Jobs>,
    /// Held while an uploaded import runs: one at a time.
    imports: tokio::sync::Mutex<()>,
}

/// What every handler sees. Cheap to clone.
#[derive(Clone)]
pub struct AppState(Arc<Inner>);

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState").finish_non_exhaustive()
    }
}

impl AppState {
    /// State over `store`, whose writes are announced on `changes`.
    pub fn new(
        store: Arc<dyn Store>,
        changes: &Changes,
        config: PanelConfig,
        join: JoinEncoder,
        metrics: Arc<Metrics>,
    ) -> Self {
        let topology = Topology::new(store.clone(), changes);
        let templates = crate::subscription::templates::Templates::new(store.clone(), changes);
        let rule_sets = Arc::new(crate::subscription::rule_cache::RuleCache::new(
            config.data_dir.join(rule_sets::DIR),
        ));
        let limiter =
            login_limit::LoginLimiter::new(config.auth.login_burst, config.auth.login_refill_s);
        let password_checks = login_limit::PasswordChecks::new(
            config.auth.max_password_checks,
            std::time::Duration::from_secs(config.auth.password_check_wait_s),
        );
        // Validated with the config; a bad entry here trusts nobody.
        let trusted_proxies =
            TrustedProxies::parse(&config.http.trusted_proxies).unwrap_or_default();
        Self(Arc::new(Inner {
            service: Service::new(store),
            fetches: crate::subscription::limit::FetchLimiter::new(
                config.subscription.fetch_burst,
                config.subscription.fetch_refill_s,
            ),
            limiter,
            password_checks,
            trusted_proxies,
            // Verified against when the name is unknown, so both cost the same.
            dummy_hash: auth::hash_password("no such admin").unwrap_or_default(),
            config,
            join,
            metrics,
            health: HealthSettings::default(),
            topology,
            templates,
            rule_sets,
            nodes: std::sync::OnceLock::new(),
            installer: std::sync::OnceLock::new(),
            ssh_jobs: crate::ssh_install::Jobs::default(),
            upgrades: Arc::default(),
            imports: tokio::sync::Mutex::new(()),
        }))
    }

    /// Lets handlers reach the nodes through this instance's channels (once).
    pub fn attach_nodes(&self, nodes: crate::nodes::Nodes) {
        let _ = self.0.nodes.set(nodes);
    }

    /// Hands out `installer`'s binary and script (once).
    pub fn attach_installer(&self, installer: Arc<crate::install::Installer>) {
        let _ = self.0.installer.set(installer);
    }

    /// The binary and script handed out to new servers, if attached.
    pub fn installer(&self) -> Option<&Arc<crate::install::Installer>> {
        self.0.installer.get()
    }

    /// This instance's installs over SSH.
    pub fn ssh_jobs(&self) -> &crate::ssh_install::Jobs {
        &self.0.ssh_jobs
    }

    /// This instance's upgrades of nodes.
    pub fn upgrades(&self) -> &Arc<crate::upgrade::Jobs> {
        &self.0.upgrades
    }

    /// Held while an uploaded import runs.
    pub fn imports(&self) -> &tokio::sync::Mutex<()> {
        &self.0.imports
    }

    /// This instance's node channels, if attached.
    pub fn nodes(&self) -> Option<&crate::nodes::Nodes> {
        self.0.nodes.get()
    }

    /// Now, Unix ms.
    pub fn now(&self) -> i64 {
        crate::clock::now_ms()
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        self.0.service.store()
    }

    /// The operations.
    pub fn service(&self) -> &Service {
        &self.0.service
    }

    /// The configuration.
    pub fn config(&self) -> &PanelConfig {
        &self.0.config
    }

    /// Failed logins.
    pub fn limiter(&self) -> &login_limit::LoginLimiter {
        &self.0.limiter
    }

    /// Password checks (argon2), bounded in number at once.
    pub fn password_checks(&self) -> &login_limit::PasswordChecks {
        &self.0.password_checks
    }

    /// The reverse proxies whose `X-Forwarded-For` is believed.
    pub fn trusted_proxies(&self) -> &TrustedProxies {
        &self.0.trusted_proxies
    }

    fn dummy_hash(&self) -> &str {
        &self.0.dummy_hash
    }

    /// A join token around `secret`.
    pub fn join_token(&self, secret: &str) -> String {
        (self.0.join)(secret)
    }

    /// Counters.
    pub fn metrics(&self) -> &Metrics {
        &self.0.metrics
    }

    /// Subscription fetches per token.
    pub fn fetches(&self) -> &crate::subscription::limit::FetchLimiter {
        &self.0.fetches
    }

    /// Health timings.
    pub fn health(&self) -> HealthSettings {
        self.0.health
    }

    /// The clusters' routes, servers and inbounds, cached for subscriptions.
    pub fn topology(&self) -> &Topology {
        &self.0.topology
    }

    /// The rule sets apps fetch, as served.
    pub fn rule_sets(&self) -> &Arc<crate::subscription::rule_cache::RuleCache> {
        &self.0.rule_sets
    }

    /// The operators' templates, cached for subscriptions.
    pub fn templates(&self) -> &crate::subscription::templates::Templates {
        &self.0.templates
    }
}

/// The OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    info(title = "Switchyard panel API", description = "Servers, inbounds, routes and users of a Switchyard panel."),
    paths(
        auth::login, auth::session, auth::logout, auth::setup, auth::tokens, auth::create_token,
        auth::delete_token,
        account::change_password, account::sessions, account::revoke_session,
        admins::admins, admins::create_admin, admins::admin, admins::update_admin,
        admins::set_password, admins::delete_admin, audit::audit, dashboard::dashboard,
        resources::clusters, resources::create_cluster, resources::cluster, resources::update_cluster,
        resources::delete_cluster, resources::routes,
        routes::create_route, routes::route, routes::update_route, routes::delete_route,
        routes::move_route, routes::order_routes, routes::attach_inbound,
        resources::servers, resources::create_server, resources::server, resources::update_server,
        resources::delete_server, resources::join, resources::replace_node, resources::server_history,
        ssh_install::ssh_install, ssh_install::ssh_install_job,
        upgrade::upgrade, upgrade::upgrade_job, upgrade::upgrade_all, upgrade::upgrade_all_state,
        resources::inbounds, resources::create_inbound, resources::inbound, resources::update_inbound,
        resources::delete_inbound,
        users::users, users::create_user, users::user, users::update_user, users::delete_user,
        users::reset_usage, users::revoke_subscription, users::devices, users::delete_device,
        users_bulk::bulk, plans::plans, plans::create_plan, plans::plan, plans::update_plan,
        plans::delete_plan, plans::user_from_plan, webhooks::webhooks, webhooks::create_webhook,
        webhooks::webhook, webhooks::update_webhook, webhooks::delete_webhook, webhooks::test_webhook,
        webhooks::deliveries, webhooks::replay, users::subscription_link, users::subscription_qr, rule_sets::singbox, rule_sets::clash, rule_sets::xray,
        routing::cluster_routing, routing::set_cluster_routing, routing::user_routing,
        routing::set_user_routing, templates::template, templates::set_template,
        tunnels::tunnels, tunnels::create_tunnel, tunnels::tunnel, tunnels::update_tunnel,
        tunnels::delete_tunnel, tunnels::duplicate_tunnel, tunnels::reissue_certificate,
        tunnels::rotate_credentials,
        tunnels::status, tunnels::statuses, tunnels::reset, tunnels::usage,
        imports::import,
        subscription::subscription,
        subscription::subscription_as,
        subscription::subscription_by_key,
    ),
    modifiers(&Security, &ProblemJson, &Roles),
    security(("token" = []), ("session" = [])),
)]
pub struct ApiDoc;

struct Security;

impl utoipa::Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "token",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
        components.add_security_scheme(
            "session",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::new(auth::COOKIE))),
        );
    }
}

/// Error answers are `application/problem+json`, not the `application/json` utoipa
/// writes for every body: say so in the document, in one place.
struct ProblemJson;

impl utoipa::Modify for ProblemJson {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::RefOr;
        const JSON: &str = "application/json";
        const PROBLEM: &str = "#/components/schemas/Problem";
        for item in openapi.paths.paths.values_mut() {
            let operations = [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
            ];
            for op in operations.into_iter().flatten() {
                for response in op.responses.responses.values_mut() {
                    let RefOr::T(response) = response else {
                        continue;
                    };
                    let is_problem = response.content.get(JSON).is_some_and(
                        |c| matches!(&c.schema, Some(RefOr::Ref(r)) if r.ref_location == PROBLEM),
                    );
                    if is_problem && let Some(c) = response.content.shift_remove(JSON) {
                        response.content.insert(problem::MEDIA_TYPE.to_owned(), c);
                    }
                }
            }
        }
    }
}

async fn openapi() -> impl IntoResponse {
    let mut r = ApiDoc::openapi()
        .to_pretty_json()
        .unwrap_or_default()
        .into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

async fn healthz() -> &'static str {
    "ok\n"
}

async fn not_found() -> problem::ApiError {
    problem::ApiError::new(axum::http::StatusCode::NOT_FOUND, "no such endpoint")
}

/// The imported panels' subscription paths (`subscription.old_paths`), answered
/// as `/sub/…` is.
fn old_paths(mut router: Router<AppState>, state: &AppState) -> Router<AppState> {
    for p in &state.config().subscription.old_paths {
        router = router
            .route(&format!("/{p}/{{token}}"), get(subscription::subscription))
            .route(
                &format!("/{p}/{{token}}/{{client}}"),
                get(subscription::subscription_as),
            )
            .route(
                &format!("/{p}/{{name}}/{{key}}/{{client}}"),
                get(subscription::subscription_by_key),
            );
    }
    router
}

/// Subscriptions alone, for a second listener.
pub fn subscription_router(state: AppState) -> Router {
    old_paths(Router::new(), &state)
        .route("/sub/{token}", get(subscription::subscription))
        .route("/sub/{token}/{client}", get(subscription::subscription_as))
        .route(
            "/sub/{name}/{key}/{client}",
            get(subscription::subscription_by_key),
        )
        .route("/rules/sing-box/{file}", get(rule_sets::singbox))
        .route("/rules/clash/{file}", get(rule_sets::clash))
        .route("/rules/xray/{file}", get(rule_sets::xray))
        .route("/healthz", get(healthz))
        .fallback(not_found)
        .with_state(state)
}

/// The whole router: API, OpenAPI document, subscriptions, metrics.
pub fn router(state: AppState) -> Router {
    use resources as r;
    let api = Router::new()
        .route(
            "/session",
            post(auth::login).get(auth::session).delete(auth::logout),
        )
        .route("/setup", get(auth::setup))
        .route("/tokens", get(auth::tokens).post(auth::create_token))
        .route("/tokens/{id}", axum::routing::delete(auth::delete_token))
        .route("/account/password", put(account::change_password))
        .route("/admins", get(admins::admins).post(admins::create_admin))
        .route(
            "/admins/{id}",
            get(admins::admin)
                .put(admins::update_admin)
                .delete(admins::delete_admin),
        )
        .route("/admins/{id}/password", put(admins::set_password))
        .route("/audit", get(audit::audit))
        .route("/dashboard", get(dashboard::dashboard))
        .route("/sessions", get(account::sessions))
        .route(
            "/sessions/{id}",
            axum::routing::delete(account::revoke_session),
        )
        .route("/clusters", get(r::clusters).post(r::create_cluster))
        .route(
            "/clusters/{id}",
            get(r::cluster)
                .put(r::update_cluster)
                .delete(r::delete_cluster),
        )
        .route(
            "/clusters/{id}/routing",
            get(routing::cluster_routing).put(routing::set_cluster_routing),
        )
        .route(
            "/users/{id}/routing",
            get(routing::user_routing).put(routing::set_user_routing),
        )
        .route(
            "/templates/{format}",
            get(templates::template).put(templates::set_template),
        )
        .route(
            "/clusters/{id}/routes",
            get(r::routes).post(routes::create_route),
        )
        .route("/clusters/{id}/routes/order", put(routes::order_routes))
        .route(
            "/routes/{id}",
            get(routes::route)
                .put(routes::update_route)
                .delete(routes::delete_route),
        )
        .route("/routes/{id}/move", post(routes::move_route))
        .route("/inbounds/{id}/route", put(routes::attach_inbound))
        .route(
            "/tunnels",
            get(tunnels::tunnels).post(tunnels::create_tunnel),
        )
        .route(
            "/tunnels/{id}",
            get(tunnels::tunnel)
                .put(tunnels::update_tunnel)
                .delete(tunnels::delete_tunnel),
        )
        .route("/tunnels/{id}/duplicate", post(tunnels::duplicate_tunnel))
        .route(
            "/tunnels/{id}/certificate",
            post(tunnels::reissue_certificate),
        )
        .route(
            "/tunnels/{id}/rotate-credentials",
            post(tunnels::rotate_credentials),
        )
        .route("/tunnels/status", get(tunnels::statuses))
        .route("/tunnels/{id}/status", get(tunnels::status))
        .route("/tunnels/{id}/reset", post(tunnels::reset))
        .route("/tunnels/{id}/usage", get(tunnels::usage))
        .route("/servers", get(r::servers).post(r::create_server))
        .route(
            "/servers/upgrade",
            get(upgrade::upgrade_all_state).post(upgrade::upgrade_all),
        )
        .route(
            "/servers/{id}",
            get(r::server)
                .put(r::update_server)
                .delete(r::delete_server),
        )
        .route("/servers/{id}/join", post(r::join))
        .route("/servers/{id}/replace", post(r::replace_node))
        .route("/servers/{id}/history", get(r::server_history))
        .route(
            "/servers/{id}/upgrade",
            get(upgrade::upgrade_job).post(upgrade::upgrade),
        )
        .route(
            "/servers/{id}/ssh-install",
            get(ssh_install::ssh_install_job).post(ssh_install::ssh_install),
        )
        .route("/inbounds", get(r::inbounds).post(r::create_inbound))
        .route(
            "/inbounds/{id}",
            get(r::inbound)
                .put(r::update_inbound)
                .delete(r::delete_inbound),
        )
        .route("/users", get(users::users).post(users::create_user))
        .route("/users/bulk", post(users_bulk::bulk))
        .route("/plans", get(plans::plans).post(plans::create_plan))
        .route(
            "/plans/{id}",
            get(plans::plan)
                .put(plans::update_plan)
                .delete(plans::delete_plan),
        )
        .route("/plans/{id}/users", post(plans::user_from_plan))
        .route(
            "/webhooks",
            get(webhooks::webhooks).post(webhooks::create_webhook),
        )
        .route(
            "/webhooks/{id}",
            get(webhooks::webhook)
                .put(webhooks::update_webhook)
                .delete(webhooks::delete_webhook),
        )
        .route("/webhooks/{id}/test", post(webhooks::test_webhook))
        .route("/webhooks/{id}/deliveries", get(webhooks::deliveries))
        .route(
            "/webhooks/{id}/deliveries/{delivery}/replay",
            post(webhooks::replay),
        )
        .route("/imports/{source}", post(imports::import))
        .route(
            "/users/{id}",
            get(users::user)
                .put(users::update_user)
                .delete(users::delete_user),
        )
        .route("/users/{id}/reset-usage", post(users::reset_usage))
        .route("/users/{id}/subscription", get(users::subscription_link))
        .route("/users/{id}/subscription.svg", get(users::subscription_qr))
        .route("/users/{id}/devices", get(users::devices))
        .route(
            "/users/{id}/devices/{device}",
            axum::routing::delete(users::delete_device),
        )
        .route(
            "/users/{id}/revoke-subscription",
            post(users::revoke_subscription),
        )
        .fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            audit::layer,
        ));
    old_paths(Router::new(), &state)
        .nest("/api/v1", api)
        .route("/", get(crate::ui::index))
        .route("/ui/{*path}", get(crate::ui::file))
        .route("/favicon.ico", get(crate::ui::favicon))
        .route("/api/openapi.json", get(openapi))
        .route("/sub/{token}", get(subscription::subscription))
        .route("/sub/{token}/{client}", get(subscription::subscription_as))
        .route(
            "/sub/{name}/{key}/{client}",
            get(subscription::subscription_by_key),
        )
        .route("/rules/sing-box/{file}", get(rule_sets::singbox))
        .route("/rules/clash/{file}", get(rule_sets::clash))
        .route("/rules/xray/{file}", get(rule_sets::xray))
        .route("/metrics", get(metrics::metrics))
        .route("/healthz", get(healthz))
        .route("/install.sh", get(install::script))
        .route("/install/{file}", get(install::binary))
        .fallback(not_found)
        .layer(axum::extract::DefaultBodyLimit::max(1 << 20))
        .with_state(state)
}
