//! Starting a panel: the data directory, the store, the first admin, the panel's
//! identity (CA and channel certificate, made once and kept in the database so every
//! instance shares it), the listeners and the background tasks.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use switchyard_channel::handover::{Handed, Inherited, Kind};
use switchyard_channel::{JoinToken, PanelIdentity};
use thiserror::Error;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::api::{self, AppState, JoinEncoder};
pub use crate::config::PASSWORD_FILE;
use crate::config::PanelConfig;
use crate::metrics::Metrics;
use crate::nodes::{Nodes, StoreEnroller};
use crate::store::{AccountStore, Changes, SqlStore, Store, StoreError};

/// The name of the first admin.
pub const FIRST_ADMIN: &str = "admin";

/// The settings key of the panel's identity.
const IDENTITY_KEY: &str = "panel_identity";

/// How often users whose reset period began get their counters reset.
const RESET_EVERY: Duration = Duration::from_secs(10);

/// Why the panel did not start.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum StartError {
    /// The data directory can't be made or written.
    #[error("data directory {path}: {source}")]
    DataDir {
        /// The directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The database can't be opened or migrated.
    #[error("database: {0}")]
    Store(#[from] StoreError),
    /// A listener can't be bound.
    #[error("{what} on {addr}: {source}")]
    Bind {
        /// Which listener (`listen`, `channel.listen`).
        what: &'static str,
        /// The address.
        addr: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
    /// The panel's identity can't be made or read.
    #[error("the panel's channel identity: {0}")]
    Identity(String),
    /// The panel's own certificate (`tls`) can't be used.
    #[error("tls: {0}")]
    Tls(String),
}

/// The first admin, made on the first start.
#[derive(Clone, PartialEq, Eq)]
pub struct FirstAdmin {
    /// Login name.
    pub username: String,
    /// The generated password (also in [`Self::file`]).
    pub password: String,
    /// The `0600` file holding it.
    pub file: PathBuf,
}

impl std::fmt::Debug for FirstAdmin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FirstAdmin")
            .field("username", &self.username)
            .field("file", &self.file)
            .finish_non_exhaustive()
    }
}

/// A running panel.
#[derive(Debug)]
pub struct Panel {
    /// The API listener's address.
    pub api: SocketAddr,
    /// The node channel listener's address.
    pub channel: SocketAddr,
    /// The subscription-only listener's address, if configured.
    pub subscriptions: Option<SocketAddr>,
    /// Set on the first start.
    pub first_admin: Option<FirstAdmin>,
    /// The handlers' state (store, operations, join tokens).
    pub state: AppState,
    /// The store.
    pub store: SqlStore,
    /// The node channels this instance holds.
    pub nodes: Nodes,
    /// The HTTP listeners' counters (connections refused past `http.max_connections`).
    pub listener_stats: Arc<crate::serve::ListenerStats>,
    /// Duplicates of its listeners, for an upgrade's new process.
    handed: Vec<Handed>,
    stop: CancellationToken,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

/// The listener for `addr`: the one a panel this one takes over from handed over,
/// else a new one; a duplicate of it is kept for the next handover. Sockets are
/// handed over by their configured address, so one configured with port 0 (any free
/// port) is neither handed over nor taken: an upgrade binds another free port, as a
/// restart does.
async fn bind(
    what: &'static str,
    addr: SocketAddr,
    inherited: &mut Inherited,
    handed: &mut Vec<Handed>,
) -> Result<TcpListener, StartError> {
    let error = |source| StartError::Bind { what, addr, source };
    let taken = if addr.port() == 0 {
        None
    } else {
        inherited.take_tcp(addr)
    };
    let listener = match taken {
        Some(l) => TcpListener::from_std(l.map_err(error)?).map_err(error)?,
        None => TcpListener::bind(addr).await.map_err(error)?,
    };
    if addr.port() != 0 {
        match Handed::of(Kind::Tcp, addr, &listener) {
            Ok(h) => handed.push(h),
            Err(e) => tracing::warn!("{what}: keeping the socket for an upgrade: {e}"),
        }
    }
    Ok(listener)
}

fn write_secret_file(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()
}

async fn first_admin(
    store: &SqlStore,
    config: &PanelConfig,
) -> Result<Option<FirstAdmin>, StartError> {
    if store.admin_count().await? > 0 {
        return Ok(None);
    }
    let password = crate::service::random_token(18);
    let p = password.clone();
    let hash = tokio::task::spawn_blocking(move || api::auth::hash_password(&p))
        .await
        .map_err(|e| StartError::Identity(e.to_string()))?
        .map_err(|e| StartError::Identity(e.to_string()))?;
    match store
        .create_admin(FIRST_ADMIN, &hash, crate::clock::now_ms())
        .await
    {
        Ok(_) => {}
        // Another instance made it first.
        Err(StoreError::Conflict(_)) => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    let file = config.data_dir.join(PASSWORD_FILE);
    write_secret_file(
        &file,
        &format!("username: {FIRST_ADMIN}\npassword: {password}\n"),
    )
    .map_err(|source| StartError::DataDir {
        path: file.clone(),
        source,
    })?;
    Ok(Some(FirstAdmin {
        username: FIRST_ADMIN.into(),
        password,
        file,
    }))
}

impl Panel {
    /// Starts a panel with `config`.
    pub async fn start(config: PanelConfig) -> Result<Self, StartError> {
        Self::start_with(config, Inherited::default()).await
    }

    /// Starts a panel with `config` on the listeners in `inherited` (those a panel
    /// being upgraded handed over: `switchyard panel upgrade`), binding the others.
    pub async fn start_with(
        config: PanelConfig,
        mut inherited: Inherited,
    ) -> Result<Self, StartError> {
        let dir = config.data_dir.clone();
        std::fs::create_dir_all(&dir).map_err(|source| StartError::DataDir {
            path: dir.clone(),
            source,
        })?;
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
        }
        let changes = Changes::default();
        let store = SqlStore::open(&config.database(), changes.clone()).await?;
        let first_admin = first_admin(&store, &config).await?;
        let fresh =
            PanelIdentity::generate(&[]).map_err(|e| StartError::Identity(e.to_string()))?;
        let text =
            serde_json::to_string(&fresh).map_err(|e| StartError::Identity(e.to_string()))?;
        let stored = store.setting_or_init(IDENTITY_KEY, text).await?;
        let identity: PanelIdentity =
            serde_json::from_str(&stored).map_err(|e| StartError::Identity(e.to_string()))?;
        let pin = identity
            .pin()
            .map_err(|e| StartError::Identity(e.to_string()))?;
        let identity = Arc::new(identity);

        let mut handed = Vec::new();
        let (inherited, keep) = (&mut inherited, &mut handed);
        let api_listener = bind("listen", config.listen, inherited, keep).await?;
        let channel_listener =
            bind("channel.listen", config.channel.listen, inherited, keep).await?;
        let sub_listener = match config.subscription_listen {
            Some(a) => Some(bind("subscription_listen", a, inherited, keep).await?),
            None => None,
        };
        let api_addr = api_listener
            .local_addr()
            .map_err(|source| StartError::Bind {
                what: "listen",
                addr: config.listen,
                source,
            })?;
        let channel_addr = channel_listener
            .local_addr()
            .map_err(|source| StartError::Bind {
                what: "channel.listen",
                addr: config.channel.listen,
                source,
            })?;
        let sub_addr = sub_listener.as_ref().and_then(|l| l.local_addr().ok());

        let stop_for_tls = CancellationToken::new();
        let mut config = config;
        if config.public_url.is_none() {
            let scheme = if config.tls.is_some() || config.acme.is_some() {
                "https"
            } else {
                "http"
            };
            config.public_url = Some(format!("{scheme}://{api_addr}"));
        }
        let tls = match (&config.tls, &config.acme) {
            (Some(files), _) => Some(
                crate::https::start(files.clone(), stop_for_tls.clone())
                    .await
                    .map_err(StartError::Tls)?,
            ),
            (None, Some(acme)) => Some(
                crate::acme::start(
                    acme.clone(),
                    crate::config::acme_identifiers(acme, &config.public_base()),
                    config.data_dir.join("acme"),
                    stop_for_tls.clone(),
                )
                .map_err(StartError::Tls)?,
            ),
            (None, None) => None,
        };
        let dial = config.channel_address(channel_addr);
        let join: JoinEncoder = Arc::new(move |secret: &str| {
            JoinToken {
                panel: dial.clone(),
                pin,
                secret: secret.to_owned(),
                binary: None,
            }
            .encode()
        });
        let metrics = Arc::new(Metrics::default());
        let shared: Arc<dyn Store> = Arc::new(store.clone());
        let binary = match &config.install.binary {
            Some(b) => Some(b.clone()),
            None => std::env::current_exe()
                .inspect_err(|e| tracing::warn!("not handing out nodes: own executable: {e}"))
                .ok(),
        };
        let max_downloads = config.install.max_downloads;
        let state = AppState::new(shared.clone(), &changes, config, join, metrics.clone());
        if let Some(binary) = binary {
            state.attach_installer(Arc::new(crate::install::Installer::new(
                binary,
                max_downloads,
            )));
        }
        let nodes = Nodes::new(shared.clone(), changes, metrics);
        state.attach_nodes(nodes.clone());

        let stop = stop_for_tls;
        let database = state.config().database();
        if database.starts_with("postgres") {
            // Several instances may share the database: requests for a node held by
            // another instance go through it.
            nodes
                .forward_through(&database, stop.clone())
                .map_err(|e| StartError::Store(StoreError::Database(e)))?;
        }
        let mut tasks = Vec::new();
        let (tx, rx) = tokio::sync::mpsc::channel(64);
        let enroller = Arc::new(StoreEnroller::new(shared.clone()));
        let s = stop.clone();
        tasks.push(tokio::spawn(async move {
            let stopped = async move { s.cancelled().await };
            if let Err(e) =
                switchyard_channel::serve_panel(channel_listener, identity, enroller, tx, stopped)
                    .await
            {
                tracing::error!("node channel listener: {e}");
            }
        }));
        tasks.push(tokio::spawn(nodes.clone().run(rx, stop.clone())));
        let router = api::router(state.clone());
        let s = stop.clone();
        let http = state.config().http.clone();
        let api_tls = tls.clone();
        let listener_stats = Arc::new(crate::serve::ListenerStats::default());
        let stats = listener_stats.clone();
        tasks.push(tokio::spawn(async move {
            crate::serve::serve(
                api_listener,
                router,
                &http,
                stats,
                api_tls,
                s.cancelled_owned(),
            )
            .await;
        }));
        if let Some(l) = sub_listener {
            let router = api::subscription_router(state.clone());
            let s = stop.clone();
            let http = state.config().http.clone();
            let stats = listener_stats.clone();
            tasks.push(tokio::spawn(async move {
                crate::serve::serve(l, router, &http, stats, tls, s.cancelled_owned()).await;
            }));
        }
        // The panel's own loops: a loop that panics is logged and started again
        // (the queue and the records are in the database, so nothing is lost).
        let (hooks, hook_nodes, thresholds, s) = (
            shared.clone(),
            nodes.clone(),
            state.config().webhooks,
            stop.clone(),
        );
        switchyard_tunnel::supervise::supervise(
            "panel: the webhook worker".into(),
            stop.clone(),
            Arc::default(),
            move || {
                crate::webhooks::run(
                    hooks.clone(),
                    Some(hook_nodes.clone()),
                    thresholds,
                    s.clone(),
                )
            },
        );
        let (resets, s) = (shared.clone(), stop.clone());
        switchyard_tunnel::supervise::supervise(
            "panel: traffic periods".into(),
            stop.clone(),
            Arc::default(),
            move || reset_periods(resets.clone(), s.clone()),
        );
        tracing::info!(api = %api_addr, channel = %channel_addr, "panel started");
        Ok(Self {
            api: api_addr,
            channel: channel_addr,
            subscriptions: sub_addr,
            first_admin,
            state,
            store,
            nodes,
            listener_stats,
            handed,
            stop,
            tasks,
        })
    }

    /// A join token for `server_id`'s node (single use, expiring after
    /// `channel.join_token_ttl_s`); the server's older tokens stop working. A server
    /// whose node has joined is refused: see [`Self::replace_token`].
    pub async fn join_token(&self, server_id: i64) -> Result<String, crate::service::ServiceError> {
        let (secret, _) = self.new_join_secret(server_id).await?;
        Ok(self.state.join_token(&secret))
    }

    /// A new join secret for `server_id` and when it expires (Unix ms).
    async fn new_join_secret(
        &self,
        server_id: i64,
    ) -> Result<(String, i64), crate::service::ServiceError> {
        let now = crate::clock::now_ms();
        let ttl = self.state.config().channel.join_token_ttl_s as i64 * 1000;
        let secret = self
            .state
            .service()
            .new_join_secret(server_id, ttl, now)
            .await?;
        Ok((secret, now + ttl))
    }

    /// The join command for `server_id`'s node, as `POST /api/v1/servers/{id}/join`
    /// answers it: a new token, pinning the panel's binary when it hands one out, in
    /// the one-line install and in `switchyard node join`.
    pub async fn join_command(
        &self,
        server_id: i64,
    ) -> Result<crate::api::resources::JoinCommand, crate::service::ServiceError> {
        let (secret, expires_ms) = self.new_join_secret(server_id).await?;
        Ok(crate::api::resources::join_command(&self.state, &secret, expires_ms).await)
    }

    /// A join token for a node that takes the place of `server_id`'s joined node: the
    /// panel forgets the old node's certificate (see `POST /api/v1/servers/{id}/replace`).
    pub async fn replace_token(
        &self,
        server_id: i64,
    ) -> Result<String, crate::service::ServiceError> {
        let now = crate::clock::now_ms();
        let ttl = self.state.config().channel.join_token_ttl_s as i64 * 1000;
        let secret = self
            .state
            .service()
            .replace_node(server_id, ttl, now)
            .await?;
        self.nodes.disconnect(server_id);
        Ok(self.state.join_token(&secret))
    }

    /// Duplicates of its listeners (API, node channel, subscriptions), to hand to the
    /// process an upgrade starts.
    pub fn handed_sockets(&self) -> std::io::Result<Vec<Handed>> {
        self.handed.iter().map(Handed::try_clone).collect()
    }

    /// Stops listeners and tasks: the listeners stop accepting, requests under way
    /// finish, node channels close.
    pub async fn shutdown(self) {
        self.stop.cancel();
        for t in self.tasks {
            let _ = tokio::time::timeout(Duration::from_secs(5), t).await;
        }
    }
}

/// Every [`RESET_EVERY`], starts the new traffic period of the users whose period
/// ended, until `stop`.
async fn reset_periods(store: Arc<dyn Store>, stop: CancellationToken) {
    let mut every = tokio::time::interval(RESET_EVERY);
    loop {
        tokio::select! {
            _ = every.tick() => {}
            () = stop.cancelled() => return,
        }
        match store.reset_due(crate::clock::now_ms()).await {
            Ok(0) => {}
            Ok(n) => tracing::info!("{n} user(s) started a new traffic period"),
            Err(e) => tracing::warn!("resetting traffic periods: {e}"),
        }
    }
}
