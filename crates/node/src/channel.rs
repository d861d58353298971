//! A node managed by a panel: enrolled with a join token, started from its state
//! directory alone, holding the control channel it dials to the panel
//! ([`switchyard_channel`]). `switchyard node join`, `switchyard node` without a config
//! file, and the panel's all-in-one `switchyard up` all start here ([`run_enrolled`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use switchyard_channel::{ChannelStatus, Enrollment, JoinError, JoinToken, NodeOptions};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::config::{ControlSettings, NodeConfig, NodeSettings};
use crate::node::{ApplyError, Node};

/// How to start an enrolled node.
#[derive(Debug, Clone)]
pub struct EnrolledOptions {
    /// The node's state directory: `panel.json`, the last good config, the journal.
    pub state_dir: PathBuf,
    /// Join the panel with this token first (replacing an earlier enrollment); `None`
    /// starts from the enrollment already in `state_dir`.
    pub token: Option<JoinToken>,
    /// The host name reported to the panel when joining.
    pub hostname: String,
    /// Node settings for the config the node starts with (`state_dir` is replaced by
    /// the one above); `None` keeps the last good config's, or the defaults. A config
    /// the panel pushes later brings its own (all but `state_dir`).
    pub settings: Option<NodeSettings>,
    /// The loopback control API's settings; `None` keeps the last good config's, or
    /// the defaults. Pushed configs never change them.
    pub control: Option<ControlSettings>,
    /// The channel's back-off and keepalive.
    pub channel: NodeOptions,
}

impl EnrolledOptions {
    /// Defaults for `state_dir`: no token, this machine's host name, no overrides.
    pub fn new(state_dir: impl Into<PathBuf>) -> Self {
        Self {
            state_dir: state_dir.into(),
            token: None,
            hostname: hostname(),
            settings: None,
            control: None,
            channel: NodeOptions::default(),
        }
    }
}

/// This machine's host name (the kernel's, else `/etc/hostname`, else `HOSTNAME`, else
/// `node`).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "node".to_owned())
}

/// Why an enrolled node did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EnrolledError {
    /// The state directory holds no enrollment and no token was given.
    #[error(
        "{0}: this node has not joined a panel (no panel.json); run `switchyard node join <TOKEN>` with a token from the panel, or pass --config FILE"
    )]
    NotEnrolled(PathBuf),
    /// Joining, or reading the enrollment, failed.
    #[error(transparent)]
    Join(#[from] JoinError),
    /// The node could not start.
    #[error(transparent)]
    Start(#[from] ApplyError),
}

/// A running node holding its channel to the panel.
#[derive(Debug)]
pub struct EnrolledNode {
    node: Arc<Node>,
    enrollment: Enrollment,
    status: watch::Receiver<ChannelStatus>,
    stop: CancellationToken,
    channel: tokio::task::JoinHandle<()>,
}

impl EnrolledNode {
    /// The node.
    pub fn node(&self) -> &Arc<Node> {
        &self.node
    }

    /// The enrollment it holds the channel with.
    pub fn enrollment(&self) -> &Enrollment {
        &self.enrollment
    }

    /// The channel's status now, and its changes.
    pub fn status(&self) -> watch::Receiver<ChannelStatus> {
        self.status.clone()
    }

    /// Drops the channel and leaves the node running (an upgrade's new process holds
    /// the channel next).
    pub async fn close_channel(self) -> Arc<Node> {
        self.stop.cancel();
        let _ = self.channel.await;
        self.node
    }

    /// Drops the channel and stops the node (a last journal record first).
    pub async fn shutdown(self) {
        self.stop.cancel();
        let _ = self.channel.await;
        self.node.shutdown().await;
    }
}

/// The config an enrolled node starts with: the last good one in `state_dir`, else an
/// empty one; `settings` and `control` over it; `state_dir` always the given one.
/// Blocks.
pub fn initial_config(
    state_dir: &Path,
    settings: Option<&NodeSettings>,
    control: Option<&ControlSettings>,
) -> NodeConfig {
    let mut config = Node::last_good(state_dir).unwrap_or_default();
    if let Some(s) = settings {
        config.node = s.clone();
    }
    if let Some(c) = control {
        config.control = c.clone();
    }
    config.node.state_dir = state_dir.to_owned();
    config
}

/// Joins the panel when a token is given, starts the node from its state directory
/// and holds the channel, serving the control routes ([`crate::control::routes`]) to
/// the panel. The loopback control API is the caller's (`control::serve`).
pub async fn run_enrolled(options: EnrolledOptions) -> Result<EnrolledNode, EnrolledError> {
    let channel = options.channel.clone();
    let (node, enrollment) = start_enrolled(options, crate::node::Start::default()).await?;
    Ok(hold(node, enrollment, channel))
}

/// [`run_enrolled`] without the channel: joins when a token is given and starts the
/// node (as `start` says: a process taking over from another holds the channel only
/// once its predecessor let it go). [`hold`] then holds it.
pub async fn start_enrolled(
    options: EnrolledOptions,
    start: crate::node::Start,
) -> Result<(Arc<Node>, Enrollment), EnrolledError> {
    let EnrolledOptions {
        state_dir,
        token,
        hostname,
        settings,
        control,
        channel: _,
    } = options;
    let enrollment = match token {
        Some(token) => switchyard_channel::join(&token, &state_dir, &hostname).await?,
        None => {
            let dir = state_dir.clone();
            crate::state::blocking(move || switchyard_channel::load_enrollment(&dir))
                .await
                .map_err(|e| JoinError::State {
                    path: state_dir.clone(),
                    kind: switchyard_channel::StateFailure::Task,
                    reason: e.to_string(),
                })??
                .ok_or_else(|| EnrolledError::NotEnrolled(state_dir.clone()))?
        }
    };
    let dir = state_dir.clone();
    let config =
        crate::state::blocking(move || initial_config(&dir, settings.as_ref(), control.as_ref()))
            .await
            .map_err(|source| crate::state::StateError::Io {
                path: state_dir.clone(),
                source,
            })
            .map_err(ApplyError::from)?;
    let node = Node::start_with(config, start).await?;
    Ok((node, enrollment))
}

/// Holds the channel for a node already running (`switchyard node --config FILE` with
/// an enrollment in its state directory).
pub fn hold(node: Arc<Node>, enrollment: Enrollment, options: NodeOptions) -> EnrolledNode {
    let stop = CancellationToken::new();
    let (tx, status) = watch::channel(ChannelStatus::default());
    node.set_channel_status(status.clone());
    let channel = tokio::spawn(switchyard_channel::run_node_with(
        enrollment.clone(),
        crate::control::routes(node.clone()),
        stop.clone(),
        options,
        tx,
    ));
    EnrolledNode {
        node,
        enrollment,
        status,
        stop,
        channel,
    }
}
