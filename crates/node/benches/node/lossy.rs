//! The lossy path: what Hysteria 2's congestion control does where packets get lost,
//! next to TLS over TCP on the same path.
//!
//! Servers run in one network namespace, the client (sing-box) and the load in
//! another, joined by the emulated link of `switchyard_testkit::lossy` (this
//! machine's kernel has no `tc netem`): [`SHAPE`], 1 % of frames lost each way, 25 ms
//! each way, 100 Mbit/s. Measured, one connection each: Hysteria 2 with BBR (the
//! client declares no bandwidth), Hysteria 2 with Brutal (the client declares
//! [`BRUTAL_MBPS`] both ways), and VLESS+TLS over TCP; each against our node and
//! sing-box as the server, sing-box the client of both. The namespaces and every
//! process are gone when the run ends.

use std::fmt::Write as _;
use std::fs::{self, File};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::{Child, Stdio};
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::json;
use switchyard_testkit::lossy::{LossyLink, SERVERS_ADDR, Shape};
use switchyard_testkit::netns::NetNs;
use switchyard_testkit::{HttpTarget, LOCALHOST, config, free_port};
use tempfile::TempDir;
use tokio::time::{Instant, sleep};

use crate::Fixture;
use crate::case::{Case, Inner, Peer, Protocol, Side};
use crate::load;
use crate::plan::Plan;
use crate::server::{listens, ours_config};
use crate::target::{End, Target};

/// The path: 1 % loss each way, 25 ms each way (50 ms round trip), 100 Mbit/s, a
/// router buffer of 100 ms.
pub(crate) const SHAPE: Shape = Shape {
    loss_ppm: 10_000,
    delay: Duration::from_millis(25),
    rate_bps: 100_000_000,
    queue: Duration::from_millis(100),
    seed: 0x5eed,
};

/// The bandwidth a Brutal client declares, both ways: the path's.
const BRUTAL_MBPS: u32 = 100;

/// How long a process may take to listen.
const START_TIMEOUT: Duration = Duration::from_secs(15);

/// One row: what runs over the path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    Hysteria2Bbr,
    Hysteria2Brutal,
    VlessTls,
}

impl Variant {
    const ALL: [Self; 3] = [Self::Hysteria2Bbr, Self::Hysteria2Brutal, Self::VlessTls];

    fn label(self) -> &'static str {
        match self {
            Self::Hysteria2Bbr => "Hysteria 2, BBR (no bandwidth declared)",
            Self::Hysteria2Brutal => "Hysteria 2, Brutal (100 Mbit/s declared)",
            Self::VlessTls => "VLESS+TLS over TCP (the kernel's CUBIC)",
        }
    }

    fn case(self) -> Case {
        let protocol = match self {
            Self::Hysteria2Bbr | Self::Hysteria2Brutal => Protocol::Hysteria2,
            Self::VlessTls => Protocol::VlessTls,
        };
        Case::new(protocol, Peer::SingBox, Inner::Http)
    }
}

/// A process in a namespace, killed when dropped.
struct InNs {
    child: Child,
    log: std::path::PathBuf,
    _dir: TempDir,
}

impl InNs {
    fn log_tail(&self) -> String {
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// Waits until it listens on `ip`:`port` (UDP with `udp`).
    async fn wait_listening(
        &mut self,
        what: &str,
        ip: Ipv4Addr,
        port: u16,
        udp: bool,
    ) -> Result<()> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!("{what} exited ({status}):\n{}", self.log_tail());
            }
            if listens(self.child.id(), ip, port, udp)? {
                return Ok(());
            }
            if Instant::now() >= deadline {
                bail!("{what} did not listen on {ip}:{port}:\n{}", self.log_tail());
            }
            sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for InNs {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `program args…` in `ns`, its output to a log in a fresh directory; `write`
/// puts its config there first.
fn spawn_in(
    ns: &NetNs,
    program: &std::path::Path,
    args: &[&str],
    write: impl FnOnce(&std::path::Path) -> Result<std::path::PathBuf>,
) -> Result<InNs> {
    let dir = tempfile::Builder::new()
        .prefix("switchyard-lossy-")
        .tempdir()?;
    let config = write(dir.path())?;
    let log = dir.path().join("out.log");
    let out = File::create(&log)?;
    let child = ns
        .command(program)
        .args(args)
        .arg(&config)
        .current_dir(dir.path())
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .spawn()
        .with_context(|| format!("starting {} in {}", program.display(), ns.name()))?;
    Ok(InNs {
        child,
        log,
        _dir: dir,
    })
}

/// `side` serving `variant` in the servers' namespace.
async fn server(
    link: &LossyLink,
    side: Side,
    variant: Variant,
    fx: &Fixture,
) -> Result<(InNs, u16)> {
    let case = variant.case();
    let port = free_port()?;
    let udp = case.protocol.udp();
    let mut process = match side {
        Side::Ours => spawn_in(
            &link.servers,
            &crate::server::ours_binary()?,
            &["node", "--config"],
            |dir| {
                let path = dir.join("node.toml");
                let text = ours_config(case, IpAddr::V4(SERVERS_ADDR), port, fx, dir)?;
                fs::write(&path, text)?;
                Ok(path)
            },
        )?,
        Side::SingBox => spawn_in(
            &link.servers,
            &switchyard_testkit::sing_box::binary()?,
            &["run", "--disable-color", "-c"],
            |dir| {
                let mut inbound = case.sing_box_inbound(port, &fx.cert);
                inbound["listen"] = json!(SERVERS_ADDR.to_string());
                let path = dir.join("config.json");
                fs::write(&path, serde_json::to_string(&config::server(inbound))?)?;
                Ok(path)
            },
        )?,
        Side::Xray => bail!("no lossy row runs Xray"),
    };
    process
        .wait_listening(side.name(), SERVERS_ADDR, port, udp)
        .await?;
    Ok((process, port))
}

/// sing-box in the client's namespace, its mixed proxy on that namespace's
/// 127.0.0.1, in front of a server at `port`.
async fn client(
    link: &LossyLink,
    variant: Variant,
    port: u16,
    fx: &Fixture,
) -> Result<(InNs, SocketAddr)> {
    let mut outbound = variant.case().sing_box_outbound(port, &fx.cert);
    outbound["server"] = json!(SERVERS_ADDR.to_string());
    if variant == Variant::Hysteria2Brutal {
        outbound["up_mbps"] = json!(BRUTAL_MBPS);
        outbound["down_mbps"] = json!(BRUTAL_MBPS);
    }
    let mixed = free_port()?;
    let mut process = spawn_in(
        &link.client,
        &switchyard_testkit::sing_box::binary()?,
        &["run", "--disable-color", "-c"],
        |dir| {
            let path = dir.join("config.json");
            fs::write(
                &path,
                serde_json::to_string(&config::client(mixed, outbound))?,
            )?;
            Ok(path)
        },
    )?;
    process
        .wait_listening("the sing-box client", LOCALHOST, mixed, false)
        .await?;
    Ok((process, SocketAddr::from((LOCALHOST, mixed))))
}

/// The lossy rows, as Markdown.
pub(crate) async fn run(fx: &Fixture, plan: &Plan) -> Result<String> {
    let link = LossyLink::new(SHAPE).await?;
    // The target lives with the servers, on their namespace's loopback.
    let listener = link
        .servers
        .tcp_listener(SocketAddr::from((LOCALHOST, 0)))?;
    let http = HttpTarget::start_on(listener)?;
    let target = Target::plain(&http, End::Close);
    let load = link.client.runtime_in()?;
    let bytes = if plan.quick { 2 << 20 } else { 16 << 20 };
    let reps = plan.reps.min(3);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nOn a lossy path (an emulated link between two network namespaces: {} % of \
         frames lost each way, {} ms each way, {} Mbit/s, {} ms of buffer), {} MiB over \
         one connection, sing-box the client of both, median of {reps}:\n",
        f64::from(SHAPE.loss_ppm) / 1e4,
        SHAPE.delay.as_millis(),
        SHAPE.rate_bps / 1_000_000,
        SHAPE.queue.as_millis(),
        bytes >> 20,
    );
    out.push_str(
        "| over the lossy path | ours | sing-box | ours / sing-box |\n|---|---:|---:|---:|\n",
    );
    for variant in Variant::ALL {
        println!("\n== lossy path: {}", variant.label());
        let mut medians = Vec::new();
        for side in [Side::Ours, Side::SingBox] {
            let (server, port) = server(&link, side, variant, fx)
                .await
                .with_context(|| format!("{} on the lossy path", side.name()))?;
            let (client, proxy) = client(&link, variant, port, fx).await?;
            let mut runs = Vec::new();
            for rep in 0..reps {
                let target = target.clone();
                let rate = load
                    .run(async move { load::bulk(Some(proxy), &target, bytes, 1).await })
                    .await
                    .with_context(|| {
                        format!(
                            "{} through {}; the server's log:\n{}\nthe client's:\n{}",
                            variant.label(),
                            side.name(),
                            server.log_tail(),
                            client.log_tail()
                        )
                    })?;
                println!("  rep {rep} {:>8}: {rate:6.2} MB/s", side.name());
                runs.push(rate);
            }
            runs.sort_by(f64::total_cmp);
            medians.push(runs[runs.len() / 2]);
            drop(client);
            drop(server);
        }
        let (ours, theirs) = (medians[0], medians[1]);
        let _ = writeln!(
            out,
            "| {} | {ours:.2} MB/s | {theirs:.2} MB/s | {:.2} |",
            variant.label(),
            ours / theirs
        );
    }
    let c = link.counts();
    let _ = writeln!(
        out,
        "\nThe link carried {} frames, lost {} at random and {} to a full buffer.",
        c.carried.load(Ordering::Relaxed),
        c.lost.load(Ordering::Relaxed),
        c.overflowed.load(Ordering::Relaxed)
    );
    drop(load);
    Ok(out)
}
