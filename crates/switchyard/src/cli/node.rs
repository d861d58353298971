//! `switchyard node --config FILE`: runs the data plane; `switchyard node token
//! --config FILE` prints its control token; `switchyard node join TOKEN` enrolls the
//! node with a panel and runs it; `switchyard node reality-keys` prints new REALITY
//! keys; `switchyard node [--state-dir DIR]` runs an enrolled
//! node from its state directory alone. With `--config`, a node whose state directory
//! holds an enrollment also holds the channel to its panel.

mod install;
mod join;
mod kept;
mod reality_keys;
mod serving;
mod token;
pub(crate) mod upgrade;

pub(crate) use join::JoinRefused;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use clap::Args;
use switchyard_node::node::Start;
use switchyard_node::{ConfigError, Node, NodeConfig};

/// Run a node: the inbounds users connect to, with live config and accounting.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub(crate) struct NodeArgs {
    #[command(subcommand)]
    command: Option<NodeCommand>,
    /// The config file (TOML). Re-read on SIGHUP and when it changes. Without it, the
    /// node runs from its state directory, enrolled with a panel (`node join`).
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// The state directory of an enrolled node run without --config.
    #[arg(long, conflicts_with = "config")]
    state_dir: Option<PathBuf>,
    /// Without --config: the loopback address of the control API (default: the last
    /// good config's, else 127.0.0.1:9090).
    #[arg(long, conflicts_with = "config")]
    control: Option<std::net::SocketAddr>,
    /// The installed binary, given to a process started from a binary the panel
    /// handed over: an upgrade without a binary goes back to it.
    #[arg(long, hide = true)]
    installed_binary: Option<PathBuf>,
}

#[derive(Debug, clap::Subcommand)]
enum NodeCommand {
    /// Print the bearer token of the node's control API (made on first use).
    Token(token::TokenArgs),
    /// Join a panel with a join token, then run the node holding its channel.
    Join(join::JoinArgs),
    /// Print a new REALITY key pair and short id for a VLESS+REALITY inbound.
    RealityKeys(reality_keys::RealityKeysArgs),
    /// Install this server as a node run by systemd, joined with a join token (as
    /// root; the panel's install script ends with it). Again: repairs, keeps the join.
    Install(install::InstallArgs),
    /// Remove the node's service, state directory, system user and binary (as root).
    Uninstall(install::UninstallArgs),
    /// Upgrade the running node to a new binary without dropping a connection.
    Upgrade(upgrade::UpgradeArgs),
}

/// How often the config file is checked for changes.
const WATCH_EVERY: Duration = Duration::from_secs(2);

/// An invalid config file at start with no last good config to fall back to.
/// Its message holds the config's error whole (not as a `source`, which `{:#}` would
/// print a second time).
#[derive(Debug, thiserror::Error)]
#[error("{path}: {problem}")]
pub(crate) struct BadConfig {
    path: PathBuf,
    problem: ConfigError,
}

/// Reads and validates the file; a relative `node.state_dir` is taken relative to the
/// file's directory.
fn read(path: &Path) -> anyhow::Result<Result<NodeConfig, BadConfig>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(NodeConfig::from_toml(&text)
        .map(|mut c| {
            c.node.state_dir = switchyard_node::config::default_state_dir_of(path);
            c
        })
        .map_err(|problem| BadConfig {
            path: path.to_owned(),
            problem,
        }))
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// Runs `f` (file reads) on the blocking pool, off the async workers.
async fn off_workers<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> anyhow::Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .context("reading the config file")
}

impl NodeArgs {
    pub(crate) fn run(self) -> anyhow::Result<()> {
        let config = match (self.command, self.config) {
            (Some(NodeCommand::Token(args)), _) => return args.run(),
            (Some(NodeCommand::Join(args)), _) => return args.run(),
            (Some(NodeCommand::RealityKeys(args)), _) => return args.run(),
            (Some(NodeCommand::Install(args)), _) => return args.run(),
            (Some(NodeCommand::Uninstall(args)), _) => return args.run(),
            (Some(NodeCommand::Upgrade(args)), _) => return args.run(),
            (None, Some(config)) => Some(config),
            (None, None) => None,
        };
        init_logs();
        let installed = kept::installed(self.installed_binary)?;
        let dir = match &config {
            Some(config) => switchyard_node::config::default_state_dir_of(config),
            None => self
                .state_dir
                .unwrap_or_else(|| switchyard_node::config::NodeSettings::default().state_dir),
        };
        // Before anything starts: a binary the panel handed over runs in this one's
        // place when the node was upgraded to it.
        kept::exec_kept(&dir, &installed);
        // Hashed on a thread of its own, for the status the panel reads.
        let _ = switchyard_node::control::binary::this_executable_sha256();
        let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
        match config {
            Some(config) => runtime.block_on(serve(config, installed)),
            None => runtime.block_on(join::serve_enrolled(
                dir,
                None,
                None,
                self.control,
                installed,
            )),
        }
    }
}

/// Starts the logs ([`super::logs`]).
pub(crate) fn init_logs() {
    super::logs::init();
}

/// Warns when others may read the config file: it holds every user's credentials.
fn warn_if_readable_by_others(path: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    if let Ok(m) = std::fs::metadata(path)
        && m.permissions().mode() & 0o077 != 0
    {
        tracing::warn!(
            "{} can be read by other users and holds credentials: `chmod 600` it",
            path.display()
        );
    }
}

/// The config to start with: the file, else the last good one kept in its state
/// directory. Blocks (file reads).
fn initial(path: &Path) -> anyhow::Result<NodeConfig> {
    warn_if_readable_by_others(path);
    match read(path)? {
        Ok(c) => Ok(c),
        Err(bad) => {
            // The file is broken: serve the last good config if there is one.
            let dir = switchyard_node::config::default_state_dir_of(path);
            match Node::last_good(&dir) {
                Some(good) => {
                    tracing::error!("{bad}; serving the last good config from {}", dir.display());
                    Ok(good)
                }
                None => Err(bad.into()),
            }
        }
    }
}

async fn serve(path: PathBuf, installed: PathBuf) -> anyhow::Result<()> {
    let file = path.clone();
    // The file's time before it is read: an edit made while the node starts (after
    // this read, before the watcher's first look) is then still a change.
    let (seen, config) = off_workers(move || (modified(&file), initial(&file))).await?;
    let config = config?;
    let control_addr = config.control.listen;
    let token_file = config
        .node
        .state_dir
        .join(switchyard_node::state::TOKEN_FILE);
    let state_dir = config.node.state_dir.clone();
    let (takeover, inherited) = serving::takeover().await?.unzip();
    let started = Node::start_with(config, Start { inherited }).await;
    let absorbing = match takeover {
        Some(t) => {
            let outcome = started.as_ref().map(Arc::clone).map_err(|e| e.to_string());
            Some(t.ready(&outcome).await?)
        }
        None => None,
    };
    let node = started?;
    // An enrolled node holds its channel to the panel too.
    let dir = state_dir.clone();
    let channel = match off_workers(move || switchyard_channel::load_enrollment(&dir)).await? {
        Ok(Some(enrollment)) => {
            tracing::info!(
                "holding the channel to the panel at {} as server {} (enrolled in {})",
                enrollment.panel,
                enrollment.server_id,
                state_dir.display()
            );
            Some(switchyard_node::channel::hold(
                node.clone(),
                enrollment,
                switchyard_channel::NodeOptions::default(),
            ))
        }
        Ok(None) => None,
        Err(e) => {
            tracing::error!("not holding a channel to a panel: {e}");
            None
        }
    };
    let listener = serving::control_listener(&node, control_addr).await?;
    tracing::info!(
        "control API on http://{control_addr} (bearer token in {}; `switchyard node token` prints it)",
        token_file.display()
    );
    let next = kept::next_command(
        vec!["node".into(), "--config".into(), path.clone().into()],
        &installed,
    )?;
    let watcher = watch(&path, seen, &node);
    serving::serve(
        serving::Serving {
            node: node.clone(),
            channel,
            listener,
            next,
            absorbing,
        },
        watcher,
    )
    .await
}

/// Re-applies the config file on SIGHUP and when it changes, for ever.
async fn watch(path: &Path, mut seen: Option<SystemTime>, node: &Arc<Node>) {
    let mut hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok();
    let changed = |p: &Path| {
        let p = p.to_owned();
        off_workers(move || modified(&p))
    };
    let mut tick = tokio::time::interval(WATCH_EVERY);
    loop {
        let why = tokio::select! {
            Some(()) = async { match hup.as_mut() { Some(h) => h.recv().await, None => std::future::pending().await } } => "SIGHUP",
            _ = tick.tick() => {
                let now = changed(path).await.ok().flatten();
                if now == seen { continue }
                seen = now;
                "file changed"
            }
        };
        let file = path.to_owned();
        match off_workers(move || read(&file)).await.and_then(|r| r) {
            Ok(Ok(config)) => match node.apply(config).await {
                Ok(()) => tracing::info!("reloaded {} ({why})", path.display()),
                Err(e) => {
                    tracing::error!("{}: not applied, the old config stays: {e}", path.display())
                }
            },
            Ok(Err(bad)) => tracing::error!("not applied, the old config stays: {bad}"),
            Err(e) => tracing::error!("{e:#}"),
        }
    }
}

/// Resolves at SIGTERM or SIGINT (then says `STOPPING=1` to systemd). The handlers
/// are installed when this is called, not when it is first polled: a signal that
/// comes right after `READY=1` (before the task holding the future runs) must start
/// the graceful stop, not kill the process.
pub(crate) fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let term = signal(SignalKind::terminate()).ok();
    let int = signal(SignalKind::interrupt()).ok();
    async move {
        let wait = |s: Option<tokio::signal::unix::Signal>| async move {
            match s {
                Some(mut s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = wait(term) => {}
            () = wait(int) => {}
        }
        tracing::info!("stopping");
        super::notify::notify("STOPPING=1");
    }
}
