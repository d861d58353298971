//! A real mihomo (Clash Meta) process, run from a YAML config for the length of a
//! test.
//!
//! [`binary`] finds the pinned release that `cargo xtask peers` installs: the path in
//! [`ENV`] when set (`cargo xtask test` sets it), else `target/peers/mihomo-<VERSION>/
//! mihomo`. A missing binary is an error telling to run `cargo xtask peers`; a test
//! never skips because of it. mihomo runs with its home directory (`-d`) in a
//! temporary directory, so its cache stays out of the machine's.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Result, bail};
use switchyard_peers::MIHOMO;

use crate::peer::{self, Pinned, Process};

/// The pinned mihomo release (pinned in `switchyard-peers`, which `cargo xtask peers`
/// installs).
pub const VERSION: &str = MIHOMO.version;

/// The variable holding the absolute path of the mihomo binary.
pub const ENV: &str = MIHOMO.env;

pub(crate) const PINNED: Pinned = Pinned(MIHOMO);

/// The mihomo binary: [`ENV`] when set, else the default path under the target
/// directory; fails, saying to run `cargo xtask peers`, when neither is there.
pub fn binary() -> Result<PathBuf> {
    PINNED.binary()
}

/// What mihomo logs once it serves. Its listeners open before its tunnel runs, and
/// the tunnel drops every connection until then (`tunnel.OnRunning` in
/// `hub/executor`), so a listening port is not enough: the health checks of its
/// compatible providers start right after the tunnel runs, and mihomo logs their
/// start at info. So [`Mihomo::start`] needs a config logging at info or debug.
const SERVING: &str = "Start initial Compatible provider";

/// Whether `config` (YAML or the JSON-style YAML our panel writes) logs at info or
/// debug, so that [`SERVING`] reaches the log.
fn logs_info(config: &str) -> bool {
    ["info", "debug"].iter().any(|level| {
        config.contains(&format!("\"log-level\": \"{level}\""))
            || config.contains(&format!("log-level: {level}"))
    })
}

/// A running mihomo, killed when dropped; its log's tail is in every error and is
/// printed when the test panics.
#[derive(Debug)]
pub struct Mihomo {
    process: Process,
    mixed: SocketAddr,
}

impl Mihomo {
    /// Checks `config` with `mihomo -t`, runs it and waits until mihomo listens on
    /// `mixed`, the address of the config's `mixed-port` (127.0.0.1 unless
    /// `allow-lan`), and serves ([`SERVING`]). Errors carry mihomo's own words.
    pub async fn start(config: &str, mixed: SocketAddr) -> Result<Self> {
        if !logs_info(config) {
            bail!(
                "Mihomo::start needs `log-level: info` (or debug) in the config: mihomo's \
                 line {SERVING:?} is the only sign that it serves (it drops connections \
                 on an open port until then)"
            );
        }
        let binary = binary()?;
        let dir = peer::public_dir("switchyard-mihomo-")?;
        let path = peer::write_public(dir.path(), "config.yaml", config)?;
        if let Err(said) = check_file(&binary, dir.path(), &path).await? {
            bail!("`mihomo -t` rejected the config: {said}\nThe config:\n{config}");
        }
        let mut command = Command::new(&binary);
        command.arg("-d").arg(dir.path()).arg("-f").arg(&path);
        let mut process = Process::spawn("mihomo", command, dir, &[(mixed, true)]).await?;
        process.wait_log(SERVING).await?;
        Ok(Self { process, mixed })
    }

    /// The mixed (SOCKS5 + HTTP) proxy's address.
    pub fn proxy_addr(&self) -> SocketAddr {
        self.mixed
    }

    /// The last lines of its log.
    pub fn log_tail(&self) -> String {
        self.process.log_tail()
    }

    /// Fails, with the log's tail, when mihomo has exited.
    pub fn ensure_running(&mut self) -> Result<()> {
        self.process.ensure_running()
    }

    /// The directory it runs in (its `-d`).
    pub fn dir(&self) -> &Path {
        self.process.dir()
    }
}

/// Runs `mihomo -t` on `config` without starting anything; the error carries
/// mihomo's message.
pub async fn check(config: &str) -> Result<()> {
    let binary = binary()?;
    let dir = peer::public_dir("switchyard-mihomo-check-")?;
    let path = peer::write_public(dir.path(), "config.yaml", config)?;
    match check_file(&binary, dir.path(), &path).await? {
        Ok(()) => Ok(()),
        Err(said) => bail!("`mihomo -t` rejected the config: {said}"),
    }
}

async fn check_file(binary: &Path, dir: &Path, path: &Path) -> Result<Result<(), String>> {
    let mut command = tokio::process::Command::new(binary);
    command
        .arg("-t")
        .arg("-d")
        .arg(dir)
        .arg("-f")
        .arg(path)
        .current_dir(dir);
    peer::check(command).await
}
