//! The servers under test, each its own process: our release binary, sing-box, and
//! Xray (run by testkit, as `nobody`).

use std::collections::HashSet;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use tempfile::TempDir;
use tokio::time::{Instant, sleep};

use std::net::{IpAddr, Ipv4Addr};

use switchyard_testkit::{LOCALHOST, Xray, config, free_port};

use crate::Fixture;
use crate::case::{Case, Side};

/// The variable naming our binary; by default the release build beside this bench.
pub(crate) const BINARY_ENV: &str = "SWITCHYARD_BIN";

/// How long a server may take to listen.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// `switchyard`, built with `cargo build --release -p switchyard`: [`BINARY_ENV`] when
/// set, else `<target>/release/switchyard` (this bench runs from
/// `<target>/release/deps/`).
pub(crate) fn ours_binary() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os(BINARY_ENV) {
        return Ok(PathBuf::from(path));
    }
    let exe = std::env::current_exe()?;
    let path = exe
        .ancestors()
        .nth(2)
        .context("the bench's own path is too short")?
        .join("switchyard");
    if !path.is_file() {
        bail!(
            "{} is missing: run `cargo build --release -p switchyard` first (`cargo xtask \
             bench node` does), or set {BINARY_ENV}",
            path.display()
        );
    }
    Ok(path)
}

/// A server process listening on 127.0.0.1, killed when dropped.
pub(crate) struct Server {
    side: Side,
    port: u16,
    /// Whether it listens on UDP (QUIC).
    udp: bool,
    process: Process,
}

/// The process itself: one started here, or testkit's Xray (which runs it as
/// `nobody` and waits until it listens).
enum Process {
    Child {
        child: Child,
        log: PathBuf,
        // Config, state and log; removed after the process is gone.
        _dir: TempDir,
    },
    Xray(Xray),
}

impl Server {
    /// Starts `side` serving `case` and waits until it listens.
    pub(crate) async fn start(side: Side, case: Case, fx: &Fixture) -> Result<Self> {
        let port = free_port()?;
        if side == Side::Xray {
            let xray = Xray::start(case.xray_server(port, fx))
                .await
                .context("starting the Xray server")?;
            if let Some(cores) = fx.cores {
                cores.pin_server(xray.id())?;
            }
            return Ok(Self {
                side,
                port,
                udp: false,
                process: Process::Xray(xray),
            });
        }
        let dir = tempfile::Builder::new()
            .prefix("switchyard-nbench-")
            .tempdir()?;
        let mut command = match side {
            Side::Ours => {
                let path = dir.path().join("node.toml");
                let listen = IpAddr::V4(LOCALHOST);
                fs::write(&path, ours_config(case, listen, port, fx, dir.path())?)?;
                let mut c = Command::new(ours_binary()?);
                c.arg("node").arg("--config").arg(&path);
                // The same level as sing-box's configs (warn): no per-connection logs.
                c.env("RUST_LOG", "warn");
                c
            }
            Side::SingBox => {
                let path = dir.path().join("config.json");
                let value = config::server(case.sing_box_inbound(port, &fx.cert));
                fs::write(&path, serde_json::to_string_pretty(&value)?)?;
                let mut c = Command::new(switchyard_testkit::sing_box::binary()?);
                c.args(["run", "--disable-color", "-c"]).arg(&path);
                c
            }
            Side::Xray => unreachable!("started above"),
        };
        let log = dir.path().join("server.log");
        let out = File::create(&log)?;
        let child = command
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()
            .with_context(|| format!("starting {}", side.name()))?;
        if let Some(cores) = fx.cores {
            cores.pin_server(child.id())?;
        }
        let mut server = Self {
            side,
            port,
            udp: case.protocol.udp(),
            process: Process::Child {
                child,
                log,
                _dir: dir,
            },
        };
        server.wait_listening().await?;
        Ok(server)
    }

    /// The port it serves on, on 127.0.0.1.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// Its resident memory (`VmRSS`), in bytes.
    pub(crate) fn rss(&mut self) -> Result<u64> {
        self.ensure_running()?;
        let path = format!("/proc/{}/status", self.pid());
        let status = fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
        let kib: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .with_context(|| format!("{path} has no VmRSS"))?;
        Ok(kib * 1024)
    }

    /// Its CPU time now (all threads, to the nanosecond).
    pub(crate) fn cpu(&self) -> Result<switchyard_testkit::pin::CpuTime> {
        switchyard_testkit::pin::CpuTime::of(self.pid())
    }

    fn pid(&self) -> u32 {
        match &self.process {
            Process::Child { child, .. } => child.id(),
            Process::Xray(xray) => xray.id(),
        }
    }

    /// The last `lines` lines of its log.
    pub(crate) fn log_tail(&self, lines: usize) -> String {
        let text = match &self.process {
            Process::Child { log, .. } => fs::read_to_string(log).unwrap_or_default(),
            Process::Xray(xray) => xray.log_tail(),
        };
        let tail: Vec<&str> = text.lines().rev().take(lines).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        tail.join("\n")
    }

    /// Fails, with the log's tail, when the process has exited.
    pub(crate) fn ensure_running(&mut self) -> Result<()> {
        let status = match &mut self.process {
            Process::Child { child, .. } => child.try_wait()?,
            Process::Xray(xray) => return xray.ensure_running(),
        };
        if let Some(status) = status {
            bail!(
                "{} exited ({status}); its log ends with:\n{}",
                self.side.name(),
                self.log_tail(20)
            );
        }
        Ok(())
    }

    /// Waits until the process itself holds a listening socket on the port.
    async fn wait_listening(&mut self) -> Result<()> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            self.ensure_running()?;
            if listens(self.pid(), LOCALHOST, self.port, self.udp)? {
                return Ok(());
            }
            if Instant::now() >= deadline {
                bail!(
                    "{} did not listen on 127.0.0.1:{} within {START_TIMEOUT:?}",
                    self.side.name(),
                    self.port
                );
            }
            sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Xray's runner kills it on its own drop.
        if let Process::Child { child, .. } = &mut self.process {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Our node's config: `case`'s inbound on `listen`:`port`, its state under `dir`.
pub(crate) fn ours_config(
    case: Case,
    listen: IpAddr,
    port: u16,
    fx: &Fixture,
    dir: &Path,
) -> Result<String> {
    Ok(format!(
        r#"version = 1
[node]
state_dir = "{state}"
allow_private_destinations = true
[control]
listen = "127.0.0.1:{control}"

[[inbounds]]
tag = "bench"
name = "Benchmark"
listen = "{listen}"
port = {port}
{inbound}

{user}"#,
        state = dir.join("state").display(),
        control = free_port()?,
        inbound = case.ours_inbound(fx),
        user = case.ours_user(),
    ))
}

/// Whether process `pid` holds a TCP socket listening on `ip`:`port` (a UDP socket
/// bound to it, with `udp`): its socket inodes (`/proc/<pid>/fd`) against the sockets of
/// `/proc/<pid>/net/tcp` in state `LISTEN` (`/proc/<pid>/net/udp`, state `CLOSE`,
/// how an unconnected UDP socket shows).
pub(crate) fn listens(pid: u32, ip: Ipv4Addr, port: u16, udp: bool) -> Result<bool> {
    let mut inodes = HashSet::new();
    let fd_dir = format!("/proc/{pid}/fd");
    for entry in fs::read_dir(&fd_dir).with_context(|| format!("reading {fd_dir}"))? {
        let Ok(target) = fs::read_link(entry?.path()) else {
            continue;
        };
        let target = target.to_string_lossy().into_owned();
        if let Some(inode) = target
            .strip_prefix("socket:[")
            .and_then(|t| t.strip_suffix(']'))
        {
            inodes.insert(inode.to_owned());
        }
    }
    let (file, state) = if udp { ("udp", "07") } else { ("tcp", "0A") };
    let table = fs::read_to_string(format!("/proc/{pid}/net/{file}"))?;
    // The address as the kernel prints it: the u32 in host (little-endian) order.
    let local = format!("{:08X}:{port:04X}", u32::from_le_bytes(ip.octets()));
    Ok(table.lines().skip(1).any(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        f.len() > 9 && f[1] == local && f[3] == state && inodes.contains(f[9])
    }))
}
