//! `switchyard node join <TOKEN>`: enrolls the node with a panel, then runs it holding
//! the channel; `switchyard node` without `--config` runs an enrolled node from its
//! state directory alone ([`serve_enrolled`]).

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use switchyard_channel::{JoinError, JoinToken, TokenError};
use switchyard_node::Node;
use switchyard_node::channel::{EnrolledError, EnrolledOptions, hold, start_enrolled};
use switchyard_node::config::{ControlSettings, NodeSettings};
use switchyard_node::node::Start;

/// Join a panel with a join token (from the panel), then run the node.
#[derive(Debug, Args)]
pub(crate) struct JoinArgs {
    /// The join token: one word starting with `syj1.`.
    token: String,
    /// The node's state directory: the enrollment (`panel.json`), the last good
    /// config, the traffic journal.
    #[arg(long, default_value_os_t = NodeSettings::default().state_dir)]
    state_dir: PathBuf,
    /// The name shown for this node in the panel (default: the host name).
    #[arg(long)]
    hostname: Option<String>,
    /// The loopback address of the node's control API (default: the last good
    /// config's, else 127.0.0.1:9090).
    #[arg(long)]
    control: Option<std::net::SocketAddr>,
}

/// A join token that does not parse, or a panel that refused the node: the
/// operator's input is at fault (exit status 2).
#[derive(Debug, thiserror::Error)]
pub(crate) enum JoinRefused {
    /// The token does not parse.
    #[error(transparent)]
    Token(#[from] TokenError),
    /// The panel refused the enrollment.
    #[error("{0}; ask the panel for a new join token")]
    Refused(JoinError),
    /// The node never joined.
    #[error(transparent)]
    NotEnrolled(EnrolledError),
}

impl JoinArgs {
    pub(crate) fn run(self) -> anyhow::Result<()> {
        let token = JoinToken::parse(&self.token).map_err(JoinRefused::from)?;
        super::init_logs();
        let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
        let installed = super::kept::installed(None)?;
        runtime.block_on(serve_enrolled(
            self.state_dir,
            Some(token),
            self.hostname,
            self.control,
            installed,
        ))
    }
}

/// Runs an enrolled node (joining first with `token`): the config from its state
/// directory, the channel to the panel, the loopback control API; until SIGINT or
/// SIGTERM. `installed` is the installed binary, which an upgrade without a binary
/// starts.
pub(crate) async fn serve_enrolled(
    state_dir: PathBuf,
    token: Option<JoinToken>,
    hostname: Option<String>,
    control: Option<std::net::SocketAddr>,
    installed: PathBuf,
) -> anyhow::Result<()> {
    let mut options = EnrolledOptions::new(&state_dir);
    if let Some(listen) = control {
        if !listen.ip().is_loopback() {
            anyhow::bail!("--control {listen}: the control API listens on loopback only");
        }
        let last = Node::last_good(&state_dir).map(|c| c.control);
        options.control = Some(ControlSettings {
            listen,
            ..last.unwrap_or_default()
        });
    }
    let joining = token.is_some();
    options.token = token;
    if let Some(h) = hostname {
        options.hostname = h;
    }
    let channel_options = options.channel.clone();
    let (takeover, inherited) = super::serving::takeover().await?.unzip();
    let started = match start_enrolled(options, Start { inherited }).await {
        Ok(started) => Ok(started),
        Err(EnrolledError::Join(e @ JoinError::Refused { .. })) => {
            Err(anyhow::Error::from(JoinRefused::Refused(e)))
        }
        Err(e @ EnrolledError::NotEnrolled(_)) => Err(JoinRefused::NotEnrolled(e).into()),
        Err(e) => Err(e.into()),
    };
    let absorbing = match takeover {
        Some(t) => {
            let outcome = started
                .as_ref()
                .map(|(node, _)| node.clone())
                .map_err(|e| format!("{e:#}"));
            Some(t.ready(&outcome).await?)
        }
        None => None,
    };
    let (node, enrollment) = started?;
    if joining {
        println!(
            "joined the panel at {} as server {}; the enrollment is kept in {}",
            enrollment.panel,
            enrollment.server_id,
            state_dir
                .join(switchyard_channel::ENROLLMENT_FILE)
                .display()
        );
    }
    tracing::info!(
        "holding the channel to the panel at {} as server {}",
        enrollment.panel,
        enrollment.server_id
    );
    let enrolled = hold(node.clone(), enrollment, channel_options);
    let control_addr = node.config().await.control.listen;
    let listener = match super::serving::control_listener(&node, control_addr).await {
        Ok(l) => l,
        Err(err) => {
            enrolled.shutdown().await;
            return Err(err);
        }
    };
    tracing::info!(
        "control API on http://{control_addr} (bearer token in {})",
        state_dir.join(switchyard_node::state::TOKEN_FILE).display()
    );
    let mut args: Vec<std::ffi::OsString> = vec![
        "node".into(),
        "--state-dir".into(),
        state_dir.clone().into(),
    ];
    if let Some(control) = control {
        args.extend(["--control".into(), control.to_string().into()]);
    }
    super::serving::serve(
        super::serving::Serving {
            node,
            channel: Some(enrolled),
            listener,
            next: super::kept::next_command(args, &installed)?,
            absorbing,
        },
        std::future::pending(),
    )
    .await
}
