//! `switchyard node upgrade [--binary FILE]`: puts a new binary in place (as root)
//! and asks the running node to hand over to it (`POST /v1/upgrade` on its loopback
//! control API): the new process takes the listening sockets, the journal and the
//! channel; the old one serves its open connections to their end (or the drain
//! deadline) and exits. Nobody is dropped (docs/install.md, "Upgrades"). A binary
//! the panel handed over is left behind: the node runs the installed one again, and
//! restarts too (`bin/current` is removed).

use std::io::{Read as _, Write as _};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use switchyard_node::Node;
use switchyard_node::config::default_state_dir_of;
use switchyard_node::handover::{DRAIN_DEFAULT_S, DRAIN_MAX_S, PREPARE_TIMEOUT};
use switchyard_node::state;

use crate::cli::service::{BIN, NODE, say};

/// Upgrade the running node to a new binary without dropping a connection.
#[derive(Debug, Args)]
pub(crate) struct UpgradeArgs {
    /// The new binary: checked, then installed at /usr/local/bin/switchyard (as
    /// root). Without it, the binary already at the path the node runs from starts.
    #[arg(long)]
    binary: Option<PathBuf>,
    /// The node's config file, for a node run with --config.
    #[arg(long, short, conflicts_with = "state_dir")]
    config: Option<PathBuf>,
    /// The node's state directory (default: the installed service's).
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// The control API's address (default: the node's last good config's).
    #[arg(long)]
    control: Option<SocketAddr>,
    /// How long the old process serves its open connections at most, in seconds.
    #[arg(long, default_value_t = DRAIN_DEFAULT_S, value_parser = clap::value_parser!(u64).range(0..=DRAIN_MAX_S))]
    drain: u64,
}

impl UpgradeArgs {
    pub(crate) fn run(self) -> anyhow::Result<()> {
        let dir = match (&self.config, &self.state_dir) {
            (Some(config), _) => default_state_dir_of(config),
            (None, Some(dir)) => dir.clone(),
            (None, None) => NODE.state_dir(),
        };
        if let Some(binary) = &self.binary {
            let version = check_binary(binary)?;
            install_binary(binary, Path::new(BIN))?;
            say(format_args!("installed {BIN} ({version})"));
            // The installed binary is in charge again, restarts included.
            super::kept::forget(&dir)?;
        }
        let control = match self.control {
            Some(c) => c,
            None => Node::last_good(&dir)
                .map(|c| c.control.listen)
                .unwrap_or_else(|| switchyard_node::config::ControlSettings::default().listen),
        };
        let token = state::load_or_create_token(&dir)
            .with_context(|| format!("the control token in {}", dir.display()))?;
        say(format_args!(
            "asking the node at {control} to hand over to the new process"
        ));
        let body = format!("{{\"drain_s\":{}}}", self.drain);
        let (status, answer) = post(control, "/v1/upgrade", token.expose(), &body)?;
        if status != 200 {
            bail!("the node refused the upgrade ({status}): {answer}; it serves on as before");
        }
        let answer: serde_json::Value =
            serde_json::from_str(&answer).context("the node's answer")?;
        say(format_args!(
            "process {} (version {}) serves now; process {} drains its open connections for at most {} s, then exits",
            answer["new_pid"],
            answer["version"].as_str().unwrap_or("?"),
            answer["old_pid"],
            self.drain
        ));
        Ok(())
    }
}

/// Runs `binary --version`: it must be a switchyard binary that runs here.
pub(crate) fn check_binary(binary: &Path) -> anyhow::Result<String> {
    let out = std::process::Command::new(binary)
        .arg("--version")
        .output()
        .with_context(|| format!("running {} --version", binary.display()))?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if !out.status.success() || !text.starts_with("switchyard ") {
        bail!(
            "{} is not a switchyard binary that runs here (--version said {text:?})",
            binary.display()
        );
    }
    Ok(text)
}

/// Copies `binary` next to `to`, then renames it over: the running process keeps
/// the old file, the next start gets the new one, and a half-copied file is never
/// at `to`.
pub(crate) fn install_binary(binary: &Path, to: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let tmp = to.with_extension("new");
    std::fs::copy(binary, &tmp)
        .with_context(|| format!("copying {} to {}", binary.display(), tmp.display()))?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("making {} executable", tmp.display()))?;
    std::fs::File::open(&tmp)
        .and_then(|f| f.sync_all())
        .with_context(|| format!("syncing {}", tmp.display()))?;
    std::fs::rename(&tmp, to).with_context(|| format!("writing {}", to.display()))
}

/// POSTs `body` to the node's loopback control API; the status and the body.
fn post(addr: SocketAddr, path: &str, token: &str, body: &str) -> anyhow::Result<(u16, String)> {
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .with_context(|| format!("the node's control API at {addr} (is the node running?)"))?;
    // The answer comes once the new process serves.
    let wait = PREPARE_TIMEOUT * 2;
    s.set_read_timeout(Some(wait))?;
    s.set_write_timeout(Some(wait))?;
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    let mut raw = Vec::new();
    s.take(1 << 20)
        .read_to_end(&mut raw)
        .context("reading the node's answer")?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .context("the node's answer has no end of headers")?;
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .context("the node's answer has no status")?;
    Ok((status, body.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_is_not_switchyard_is_refused() {
        let e = check_binary(Path::new("/bin/true"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not a switchyard binary"), "{e}");
        let e = check_binary(Path::new("/nonexistent"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("running /nonexistent --version"), "{e}");
    }

    #[test]
    fn the_binary_is_renamed_into_place_executable() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let (from, to) = (dir.path().join("new"), dir.path().join("switchyard"));
        std::fs::write(&from, b"new").unwrap();
        std::fs::write(&to, b"old").unwrap();
        install_binary(&from, &to).unwrap();
        assert_eq!(std::fs::read(&to).unwrap(), b"new");
        let mode = std::fs::metadata(&to).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755);
        assert!(!to.with_extension("new").exists());
    }
}
