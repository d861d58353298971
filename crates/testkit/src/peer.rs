//! What the runners of the peers share: finding the pinned binary that `cargo xtask
//! peers` installs (sing-box, mihomo, Xray, schemathesis's `st`), and a process with
//! its log in a temporary directory, waited for until it listens, killed on drop.

use std::fs::{self, File};
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use switchyard_peers::Pin;
use tempfile::TempDir;
use tokio::time::{Instant, sleep};

use crate::sockets;

/// How long a peer gets to listen on its ports: they listen within tens of
/// milliseconds; the bound only matters when something is wrong, and 10 s leaves
/// room for a loaded CI machine.
pub const START_TIMEOUT: Duration = Duration::from_secs(10);

/// How much of a log errors include: its last lines.
const LOG_TAIL_LINES: usize = 40;

/// A pinned peer binary (its release, variable and place come from
/// `switchyard-peers`, which `cargo xtask peers` installs from), for finding it.
pub(crate) struct Pinned(pub(crate) Pin);

impl Pinned {
    /// The binary: the variable's path when set, else the default places under the
    /// target directory; an error saying to run `cargo xtask peers` when missing.
    pub(crate) fn binary(&self) -> Result<PathBuf> {
        self.locate(
            std::env::var_os(self.0.env).map(PathBuf::from),
            &self.defaults(),
        )
    }

    pub(crate) fn locate(
        &self,
        from_env: Option<PathBuf>,
        defaults: &[PathBuf],
    ) -> Result<PathBuf> {
        let (what, env) = (self.0.what(), self.0.env);
        if let Some(path) = from_env {
            if path.is_file() {
                return Ok(path);
            }
            bail!(
                "{env}={} but there is no file there: run `cargo xtask peers` to install \
                 {what}, or unset {env}",
                path.display()
            );
        }
        if let Some(found) = defaults.iter().find(|p| p.is_file()) {
            return Ok(found.clone());
        }
        let looked: Vec<String> = defaults.iter().map(|p| p.display().to_string()).collect();
        bail!(
            "{what} is not installed ({env} is unset; looked at {}): run `cargo xtask \
             peers` (or `cargo xtask test`, which does it first)",
            looked.join(", ")
        )
    }

    /// The target directory is an ancestor of the running test executable
    /// (`<target>/<profile>/deps/<test>`), so a custom `CARGO_TARGET_DIR` is found
    /// too; the workspace's `target/` is the last resort.
    fn defaults(&self) -> Vec<PathBuf> {
        let mut paths = Vec::new();
        if let Some(target) = std::env::current_exe()
            .ok()
            .and_then(|exe| exe.ancestors().nth(3).map(Path::to_path_buf))
        {
            paths.push(target.join(self.0.relative()));
        }
        if let Some(workspace) = Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2) {
            paths.push(workspace.join("target").join(self.0.relative()));
        }
        paths.dedup();
        paths
    }
}

/// A temporary directory that the unprivileged user a peer runs as can read (and
/// not write): `tempfile` makes them 0700.
pub(crate) fn public_dir(prefix: &str) -> Result<TempDir> {
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .context("creating a temporary directory for a peer")?;
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755))
        .with_context(|| format!("opening {} to other users", dir.path().display()))?;
    Ok(dir)
}

/// Writes `text` to `dir/name`, readable by everyone; its path.
pub(crate) fn write_public(dir: &Path, name: &str, text: impl AsRef<[u8]>) -> Result<PathBuf> {
    let path = dir.join(name);
    fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644))
        .with_context(|| format!("opening {} to other users", path.display()))?;
    Ok(path)
}

/// A running peer, killed when dropped; when the test panics meanwhile, its log's
/// tail is printed to standard error.
#[derive(Debug)]
pub(crate) struct Process {
    name: &'static str,
    child: Child,
    log_path: PathBuf,
    // Held for its removal on drop; declared last so the process dies first.
    dir: TempDir,
}

impl Process {
    /// Spawns `command` (its output to `dir/<name>.log`) and waits until it holds
    /// every `(address, is_tcp)` of `listening`: a listening TCP socket, or a UDP
    /// socket for a UDP-only one.
    pub(crate) async fn spawn(
        name: &'static str,
        mut command: Command,
        dir: TempDir,
        listening: &[(SocketAddr, bool)],
    ) -> Result<Self> {
        let log_path = dir.path().join(format!("{name}.log"));
        let log =
            File::create(&log_path).with_context(|| format!("creating {}", log_path.display()))?;
        let child = command
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting {name}: {command:?}"))?;
        let mut process = Self {
            name,
            child,
            log_path,
            dir,
        };
        process.wait_listening(listening).await?;
        Ok(process)
    }

    /// Its process id.
    pub(crate) fn id(&self) -> u32 {
        self.child.id()
    }

    /// The file holding its standard output and error.
    pub(crate) fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// The directory it runs in.
    pub(crate) fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The last lines of its log.
    pub(crate) fn log_tail(&self) -> String {
        let text = fs::read_to_string(&self.log_path).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let start = lines.len().saturating_sub(LOG_TAIL_LINES);
        lines[start..].join("\n")
    }

    /// Fails, with the log's tail, when it has exited.
    pub(crate) fn ensure_running(&mut self) -> Result<()> {
        match self.child.try_wait()? {
            None => Ok(()),
            Some(status) => Err(anyhow!(
                "{} exited ({status}); its log ends with:\n{}",
                self.name,
                self.log_tail()
            )),
        }
    }

    /// Waits until its log holds `needle`: the sign, for a peer that listens before
    /// it serves, that it now serves. Fails with the log's tail when it exits first
    /// or the line is not there within the start timeout.
    pub(crate) async fn wait_log(&mut self, needle: &str) -> Result<()> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            self.ensure_running()?;
            if fs::read_to_string(&self.log_path)
                .unwrap_or_default()
                .contains(needle)
            {
                return Ok(());
            }
            if Instant::now() >= deadline {
                bail!(
                    "{} did not log {needle:?} within {START_TIMEOUT:?}; its log ends with:\n{}",
                    self.name,
                    self.log_tail()
                );
            }
            sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until the process itself holds every socket. Asking the kernel who
    /// owns the socket (Linux's `/proc`) rather than connecting means another
    /// process that took a [`free_port`](crate::free_port) first is not mistaken for
    /// the peer, and no probe connection reaches it.
    async fn wait_listening(&mut self, wanted: &[(SocketAddr, bool)]) -> Result<()> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            self.ensure_running()?;
            let owned = sockets::owned_by(self.child.id())?;
            let missing: Vec<String> = wanted
                .iter()
                .filter(|(addr, tcp)| !owned.contains(&(addr.port(), *tcp)))
                .map(|(addr, tcp)| format!("{addr} ({})", if *tcp { "tcp" } else { "udp" }))
                .collect();
            if missing.is_empty() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                bail!(
                    "{} did not listen on {} within {START_TIMEOUT:?}; its log ends with:\n{}",
                    self.name,
                    missing.join(", "),
                    self.log_tail()
                );
            }
            sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "--- {} log ({}), last lines ---\n{}\n--- end of {} log ---",
                self.name,
                self.log_path.display(),
                self.log_tail(),
                self.name
            );
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs a checker command: `Err` holds what it said when it exits non-zero.
pub(crate) async fn check(mut command: tokio::process::Command) -> Result<Result<(), String>> {
    let out = command
        .stdin(Stdio::null())
        .output()
        .await
        .with_context(|| format!("running {command:?}"))?;
    if out.status.success() {
        return Ok(Ok(()));
    }
    let said = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr).trim(),
        String::from_utf8_lossy(&out.stdout).trim()
    );
    Ok(Err(format!("{} ({})", said.trim(), out.status)))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use crate::{mihomo, sing_box, xray};

    #[test]
    fn a_missing_binary_says_to_run_xtask_peers() {
        for pinned in [sing_box::PINNED, mihomo::PINNED, xray::PINNED] {
            let nowhere = PathBuf::from("/nonexistent/peer");
            let err = pinned
                .locate(Some(nowhere.clone()), &[])
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("cargo xtask peers") && err.contains(pinned.0.env),
                "{err}"
            );
            let err = pinned.locate(None, &[nowhere]).unwrap_err().to_string();
            assert!(
                err.contains("cargo xtask peers")
                    && err.contains("/nonexistent/peer")
                    && err.contains(&pinned.0.what()),
                "{err}"
            );
        }
    }
}
