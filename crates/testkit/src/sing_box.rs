//! A real sing-box process, run from a JSON config for the length of a test.
//!
//! [`binary`] finds the pinned release that `cargo xtask peers` installs: the path in
//! [`ENV`] when set (`cargo xtask test` sets it), else the default place under the
//! target directory. A missing binary is an error telling to run `cargo xtask peers`;
//! a test never skips because of it.

use std::fs;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, anyhow, bail};
use serde_json::Value;
use switchyard_peers::SING_BOX;

use crate::peer::{self, Pinned, Process};
use crate::{LOCALHOST, config};

/// The pinned sing-box release (pinned in `switchyard-peers`, which `cargo xtask peers`
/// installs).
pub const VERSION: &str = SING_BOX.version;

/// The variable holding the absolute path of the sing-box binary.
pub const ENV: &str = SING_BOX.env;

/// How long [`SingBox::start`] waits for the inbound ports to accept connections.
pub use crate::peer::START_TIMEOUT;

pub(crate) const PINNED: Pinned = Pinned(SING_BOX);

/// The sing-box binary: [`ENV`] when set, else the default path under the target
/// directory (`target/peers/sing-box-<VERSION>/...`). Fails, saying to run `cargo
/// xtask peers`, when neither is there.
pub fn binary() -> Result<PathBuf> {
    PINNED.binary()
}

/// A running sing-box, killed when dropped.
///
/// Its config and its log (standard output and error) live in a temporary directory
/// removed on drop. When the test panics while this is alive, the log's tail is
/// printed to standard error, so a failing test shows what sing-box said.
#[derive(Debug)]
pub struct SingBox {
    process: Process,
    config: Value,
}

impl SingBox {
    /// Checks `config` with `sing-box check`, runs `sing-box run` on it and waits (at
    /// most [`START_TIMEOUT`]) until sing-box listens on the `listen_port` of every
    /// inbound named in it. Errors carry sing-box's own message: the
    /// checker's output for a bad config, the log's tail when it exits or never
    /// listens.
    pub async fn start(config: Value) -> Result<Self> {
        let binary = binary()?;
        let dir = tempfile::Builder::new()
            .prefix("switchyard-sing-box-")
            .tempdir()
            .context("creating a temporary directory for sing-box")?;
        let config_path = dir.path().join("config.json");
        let text = serde_json::to_string_pretty(&config)?;
        fs::write(&config_path, &text)
            .with_context(|| format!("writing {}", config_path.display()))?;

        if let Err(said) = check_file(&binary, &config_path).await? {
            bail!("`sing-box check` rejected the config: {said}\nThe config:\n{text}");
        }

        let mut command = Command::new(&binary);
        command
            .args(["run", "--disable-color", "-c"])
            .arg(&config_path);
        let listening: Vec<(SocketAddr, bool)> = inbounds(&config)
            .into_iter()
            .map(|i| (i.addr, i.tcp))
            .collect();
        let process = Process::spawn("sing-box", command, dir, &listening).await?;
        Ok(Self { process, config })
    }

    /// A sing-box client: [`config::client`] with a `mixed` inbound on a free port of
    /// 127.0.0.1 and `outbound` as its one outbound. [`Self::proxy_addr`] is the
    /// SOCKS5/HTTP proxy's address.
    pub async fn client(outbound: Value) -> Result<Self> {
        Self::start(config::client(crate::free_port()?, outbound)).await
    }

    /// The address of the `mixed` inbound of a [`config::client`] config.
    pub fn proxy_addr(&self) -> Result<SocketAddr> {
        self.inbound_addr(config::MIXED_TAG)
    }

    /// The address the inbound tagged `tag` listens on (127.0.0.1 when it listens on
    /// every address).
    pub fn inbound_addr(&self, tag: &str) -> Result<SocketAddr> {
        inbounds(&self.config)
            .into_iter()
            .find(|i| i.tag.as_deref() == Some(tag))
            .map(|i| i.addr)
            .ok_or_else(|| {
                anyhow!("the sing-box config has no inbound tagged {tag:?} with a listen_port")
            })
    }

    /// The config it runs.
    pub fn config(&self) -> &Value {
        &self.config
    }

    /// The file holding its standard output and error.
    pub fn log_path(&self) -> &Path {
        self.process.log_path()
    }

    /// The last lines of its log.
    pub fn log_tail(&self) -> String {
        self.process.log_tail()
    }

    /// Fails, with the log's tail, when sing-box has exited.
    pub fn ensure_running(&mut self) -> Result<()> {
        self.process.ensure_running()
    }
}

/// Runs `sing-box check` on `config` without starting anything; the error carries
/// sing-box's message.
pub async fn check(config: &Value) -> Result<()> {
    let binary = binary()?;
    let dir = tempfile::tempdir().context("creating a temporary directory")?;
    let path = dir.path().join("config.json");
    fs::write(&path, serde_json::to_string_pretty(config)?)?;
    match check_file(&binary, &path).await? {
        Ok(()) => Ok(()),
        Err(said) => bail!("`sing-box check` rejected the config: {said}"),
    }
}

/// Runs `sing-box check`: `Err` holds what it said when it rejects the config.
async fn check_file(binary: &Path, config_path: &Path) -> Result<Result<(), String>> {
    let mut command = tokio::process::Command::new(binary);
    command
        .args(["check", "--disable-color", "-c"])
        .arg(config_path)
        .current_dir(config_path.parent().unwrap_or(Path::new(".")));
    peer::check(command).await
}

/// An inbound of a config, as far as waiting for it goes.
struct Inbound {
    tag: Option<String>,
    addr: SocketAddr,
    /// Whether it accepts TCP (a `"network": "udp"` inbound and the QUIC protocols'
    /// do not).
    tcp: bool,
}

fn inbounds(config: &Value) -> Vec<Inbound> {
    let Some(list) = config["inbounds"].as_array() else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|inbound| {
            let port = u16::try_from(inbound["listen_port"].as_u64()?).ok()?;
            let ip = inbound["listen"]
                .as_str()
                .and_then(|s| s.parse::<IpAddr>().ok())
                .filter(|ip| !ip.is_unspecified())
                .unwrap_or(IpAddr::V4(LOCALHOST));
            Some(Inbound {
                tag: inbound["tag"].as_str().map(str::to_owned),
                addr: SocketAddr::new(ip, port),
                tcp: match (&inbound["type"], &inbound["network"]) {
                    // The QUIC protocols listen on UDP only.
                    (Value::String(t), _)
                        if ["hysteria", "hysteria2", "tuic"].contains(&t.as_str()) =>
                    {
                        false
                    }
                    (_, Value::String(n)) => n == "tcp",
                    (_, Value::Array(ns)) => ns.iter().any(|n| n == "tcp"),
                    _ => true,
                },
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inbounds_are_found_with_their_networks() {
        let config = serde_json::json!({ "inbounds": [
            { "type": "mixed", "tag": "m", "listen": "127.0.0.1", "listen_port": 1080 },
            { "type": "shadowsocks", "tag": "u", "listen": "::", "listen_port": 8388, "network": "udp" },
            { "type": "tun", "tag": "t" },
        ]});
        let found = inbounds(&config);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].addr, crate::local(1080));
        assert!(found[0].tcp);
        assert_eq!(found[1].addr, crate::local(8388));
        assert!(!found[1].tcp);
    }
}
