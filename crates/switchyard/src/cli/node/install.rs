//! `switchyard node install TOKEN`: makes this server a node that runs as a service
//! (the panel's install script ends by running it); `switchyard node uninstall`
//! undoes it. Both print every step; running `install` again repairs what is missing
//! and keeps the join.

use std::path::Path;

use anyhow::{Context, bail};
use clap::Args;
use switchyard_channel::JoinToken;

use super::join::JoinRefused;
use crate::cli::service::{self, BIN, NODE, USER, say};

/// Install this server as a node: a system user, a state directory, a hardened
/// systemd unit, the join; then start it.
#[derive(Debug, Args)]
pub(crate) struct InstallArgs {
    /// The join token from the panel (`syj2.` or `syj1.`).
    token: String,
    /// The name shown for this node in the panel (default: the host name).
    #[arg(long)]
    hostname: Option<String>,
}

/// Remove the node's service, state, system user and binary.
#[derive(Debug, Args)]
pub(crate) struct UninstallArgs {
    /// Keep the state directory (the join, the last config, the traffic journal).
    #[arg(long)]
    keep_state: bool,
}

fn must_be_root() -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt as _;
    // `/proc/self` belongs to the process's effective user.
    let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
    if !root {
        bail!("run this as root: it creates a system user and a service");
    }
    Ok(())
}

impl InstallArgs {
    pub(crate) fn run(self) -> anyhow::Result<()> {
        let token = JoinToken::parse(&self.token).map_err(JoinRefused::from)?;
        must_be_root()?;
        let systemd = service::has_systemd();
        if service::ensure_user()? {
            say(format_args!("created the system user {USER}"));
        } else {
            say(format_args!("the system user {USER} is there"));
        }
        let dir = NODE.state_dir();
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        join(&token, &dir, self.hostname)?;
        service::run(
            "chown",
            &["-R", &format!("{USER}:{USER}"), &path_str(&dir)?],
        )?;
        let bin = installed_binary()?;
        if !systemd {
            say("this system does not run systemd (no /run/systemd/system): no service was made");
            say(format_args!(
                "start the node by hand (and from your init system at boot):\n    {}",
                NODE.by_hand()
            ));
            return Ok(());
        }
        let unit = NODE.unit_path();
        if service::write_if_changed(&unit, &NODE.unit(&bin))? {
            say(format_args!("wrote {}", unit.display()));
        } else {
            say(format_args!("{} is up to date", unit.display()));
        }
        let name = format!("{}.service", NODE.name);
        service::run("systemctl", &["daemon-reload"])?;
        service::run("systemctl", &["enable", &name])?;
        service::run("systemctl", &["restart", &name])?;
        say(format_args!("enabled and started {name}"));
        wait_active(&name)?;
        say(format_args!(
            "the node runs; its log: journalctl -u {} -f",
            NODE.name
        ));
        Ok(())
    }
}

/// Joins unless this state directory already holds a join to the token's panel.
fn join(token: &JoinToken, dir: &Path, hostname: Option<String>) -> anyhow::Result<()> {
    if let Some(e) = switchyard_channel::load_enrollment(dir)? {
        if e.panel == token.panel && e.pin == token.pin {
            say(format_args!(
                "already joined the panel at {} as server {}: keeping that join",
                e.panel, e.server_id
            ));
            return Ok(());
        }
        bail!(
            "{} holds a join to another panel ({}): run `switchyard node uninstall` first",
            dir.display(),
            e.panel
        );
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

/// Waits up to 10 s for the unit to be active; a failure shows its last log lines.
fn wait_active(name: &str) -> anyhow::Result<()> {
    for _ in 0..50 {
        let state = std::process::Command::new("systemctl")
            .args(["is-active", name])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default();
        match state.as_str() {
            "active" => return Ok(()),
            "failed" => break,
            _ => std::thread::sleep(std::time::Duration::from_millis(200)),
        }
    }
    let log =
        service::run("journalctl", &["-u", name, "-n", "20", "--no-pager"]).unwrap_or_default();
    bail!("{name} did not start; its last log lines:\n{log}")
}

fn path_str(p: &Path) -> anyhow::Result<String> {
    p.to_str()
        .map(str::to_owned)
        .with_context(|| format!("{} is not UTF-8", p.display()))
}

impl UninstallArgs {
    pub(crate) fn run(self) -> anyhow::Result<()> {
        must_be_root()?;
        let name = format!("{}.service", NODE.name);
        let unit = NODE.unit_path();
        if service::has_systemd() && unit.exists() {
            service::run("systemctl", &["disable", "--now", &name])?;
            say(format_args!("stopped and disabled {name}"));
        }
        if remove(&unit)? {
            say(format_args!("removed {}", unit.display()));
            if service::has_systemd() {
                service::run("systemctl", &["daemon-reload"])?;
            }
        }
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
        // The panel's service shares the user and the binary.
        let panel_unit = Path::new(service::UNIT_DIR).join("switchyard-panel.service");
        if panel_unit.exists() {
            say("the panel is installed here too: kept the system user and the binary");
            return Ok(());
        }
        let state = Path::new(service::STATE);
        if state.exists() && std::fs::read_dir(state).is_ok_and(|mut d| d.next().is_none()) {
            std::fs::remove_dir(state).with_context(|| format!("removing {}", state.display()))?;
        }
        if service::user_exists() {
            service::run("userdel", &[USER])?;
            say(format_args!("removed the system user {USER}"));
        }
        if remove(Path::new(BIN))? {
            say(format_args!("removed {BIN}"));
        }
        say("done: nothing of the node is left on this server");
        Ok(())
    }
}

/// Removes a file if it is there; true when removed.
fn remove(path: &Path) -> anyhow::Result<bool> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e).with_context(|| format!("removing {}", path.display())),
    }
}
