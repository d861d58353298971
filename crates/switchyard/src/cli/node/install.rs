//! `switchyard node install TOKEN`: makes this server a node that runs as a service
//! (the panel's install script ends by running it); `switchyard node uninstall`
//! undoes it. Both print every step; running `install` again repairs what is missing
//! and keeps the join.

use std::path::Path;

use anyhow::{Context, bail};
use clap::Args;
use switchyard_channel::JoinToken;

use super::join::JoinRefused;
use crate::cli::service::{self, BIN, NODE, say};

/// Install this server as a node: a system user, a state directory, a hardened
/// systemd unit, the join; then start it.
#[derive(Debug, Args)]
pub(crate) struct InstallArgs {
    /// The join token from the panel (`syj2.` or `syj1.`).
    token: String,
    /// The name shown for this node in the panel (default: the host name).
    #[arg(long)]
    hostname: Option<String>,
    /// Join with this token even though this server already joined: after **Replace
    /// node** in the panel (the state is kept), or to move to another panel (the
    /// state is started afresh).
    #[arg(long)]
    rejoin: bool,
}

/// Remove the node's service, state, system user and binary.
#[derive(Debug, Args)]
pub(crate) struct UninstallArgs {
    /// Keep the state directory (the join, the last config, the traffic journal).
    #[arg(long)]
    keep_state: bool,
}

impl InstallArgs {
    pub(crate) fn run(self) -> anyhow::Result<()> {
        let token = JoinToken::parse(&self.token).map_err(JoinRefused::from)?;
        service::must_be_root()?;
        let systemd = service::has_systemd();
        service::ensure_user()?;
        let dir = NODE.state_dir();
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        join(&token, &dir, self.hostname, self.rejoin)?;
        // The installed binary is in charge again: a binary the panel handed over is
        // not run at the next start.
        super::kept::forget(&dir)?;
        service::chown_to_user(&dir)?;
        let bin = installed_binary()?;
        if !systemd {
            service::say_no_systemd(&NODE);
            return Ok(());
        }
        service::start_unit(&NODE, &bin)?;
        say(format_args!(
            "the node runs; its log: journalctl -u {} -f",
            NODE.name
        ));
        Ok(())
    }
}

/// Joins unless this state directory already holds a join to the token's panel (with
/// `rejoin`: drops that join first; a join to another panel drops the whole state).
fn join(
    token: &JoinToken,
    dir: &Path,
    hostname: Option<String>,
    rejoin: bool,
) -> anyhow::Result<()> {
    if let Some(e) = switchyard_channel::load_enrollment(dir)? {
        let same = e.panel == token.panel && e.pin == token.pin;
        if rejoin && same {
            let file = dir.join(switchyard_channel::ENROLLMENT_FILE);
            std::fs::remove_file(&file).with_context(|| format!("removing {}", file.display()))?;
            say(format_args!("dropped the join as server {}", e.server_id));
        } else if rejoin {
            std::fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))?;
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            say(format_args!(
                "dropped the join to the panel at {} and its state",
                e.panel
            ));
        } else if same {
            say(format_args!(
                "already joined the panel at {} as server {}: keeping that join",
                e.panel, e.server_id
            ));
            return Ok(());
        } else {
            bail!(
                "{} holds a join to another panel ({}): add --rejoin to move this server \
                 to the new one",
                dir.display(),
                e.panel
            );
        }
    }
    let hostname = hostname.unwrap_or_else(switchyard_node::channel::hostname);
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let e = runtime
        .block_on(switchyard_channel::join(token, dir, &hostname))
        .map_err(|e| match e {
            e @ switchyard_channel::JoinError::Refused { .. } => {
                anyhow::Error::from(JoinRefused::Refused(e))
            }
            e => e.into(),
        })?;
    say(format_args!(
        "joined the panel at {} as server {} (kept in {})",
        e.panel,
        e.server_id,
        dir.display()
    ));
    Ok(())
}

/// The binary the unit runs: [`BIN`] when it is there (the install script puts it
/// there), else this executable.
fn installed_binary() -> anyhow::Result<std::path::PathBuf> {
    if Path::new(BIN).is_file() {
        return Ok(BIN.into());
    }
    let me = std::env::current_exe().context("finding this executable")?;
    say(format_args!(
        "{BIN} is not there: the service runs {}",
        me.display()
    ));
    Ok(me)
}

impl UninstallArgs {
    pub(crate) fn run(self) -> anyhow::Result<()> {
        service::must_be_root()?;
        service::remove_unit(&NODE)?;
        let dir = NODE.state_dir();
        if self.keep_state {
            say(format_args!("kept {}", dir.display()));
        } else if dir.exists() {
            std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
            say(format_args!(
                "removed {} (the join: delete the server in the panel, or replace its node)",
                dir.display()
            ));
        }
        service::remove_shared(&service::PANEL)?;
        say("done: nothing of the node is left on this server");
        Ok(())
    }
}
