//! Failover benchmark: one fault timeline through our client and through the real
//! peers' automatic selection, at the same time, against the same servers.
//!
//! Servers: five real Switchyard nodes in this process (plain VLESS over TCP, which
//! every client speaks), each behind a testkit [`FaultProxy`]: `A`, `B`, `C` in the
//! own subscription and `N1`, `N2` in a neighbour subscription (our client only; the
//! peers' groups hold `A`, `B`, `C`). Each client reaches each server through a
//! [`Tap`] of its own that adds the server's distance (A 10 ms, B 70 ms, C 140 ms,
//! N1 100 ms, N2 120 ms, so every client's first choice is `A` and its second `B`),
//! counts the probes that client sends through it, and can close its port.
//!
//! Clients, each with its own defaults and its own request loop (a 16 KiB download
//! from a local target through its SOCKS5 port every 200 ms, 5 s timeout):
//! - ours: `switchyard client run` (the binary in `SWITCHYARD_BIN`), both
//!   subscriptions, desktop, URL probes, probe timeout 5 s;
//! - sing-box 1.14.4 with a `urltest` outbound (interval 3 min, tolerance 50 ms);
//! - mihomo 1.19.2 with a `url-test` group and another mihomo with a `fallback`
//!   group (interval 300 s, lazy, timeout 5 s, max-failed-times 5).
//!
//! All URL tests go to one local probe target, never the internet.
//!
//! The timeline ([`PHASES`]): steady; `A` (every client's current server) blackholed
//! for 60 s (open connections cut, new ones held); a 90 s network loss (every fault
//! proxy blackholed and cut, the subscription server silent); recovery (everything
//! passes, held connections cut); then the servers the clients are on refuse (their
//! ports closed; one own server always keeps answering).
//!
//! Per phase and client: seconds with a failed request (a request counts in the second
//! it started), switches (our client's `server:` lines, the peers' Clash API `now`
//! polled every second) and probes sent (connections to the probe target seen at the
//! taps, answered or not). The network loss's "recorded penalty" is read from each
//! client's memory before and after. The simulator replays the same timeline with
//! `switchyard auto simulate --policy auto|urltest|fallback` for comparison.
//!
//! The Markdown report goes to `SWITCHYARD_CLIENT_BENCH_REPORT` when set (`cargo xtask
//! bench client` puts it into `docs/benchmarks.md`); the logs, the scenario files and
//! the raw figures to `SWITCHYARD_CLIENT_BENCH_DIR` (default: a directory under the
//! system's temporary one). Everything listens on and connects to 127.0.0.1 only.

#![allow(
    clippy::disallowed_types,
    clippy::disallowed_methods,
    reason = "tests, benchmarks and tools time real processes by the wall clock"
)]

mod clients;
mod net;
mod report;
mod sim;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result, bail};
use switchyard_node::{Node, NodeConfig};
use switchyard_testkit::fault::{Fault, FaultProxy};
use switchyard_testkit::{HttpTarget, free_port};

use crate::clients::{Client, Kind, Servers};
use crate::net::{ProbeTarget, Subscriptions, Tap};

/// The variables the bench reads.
const BINARY_ENV: &str = "SWITCHYARD_BIN";
const REPORT_ENV: &str = "SWITCHYARD_CLIENT_BENCH_REPORT";
const DIR_ENV: &str = "SWITCHYARD_CLIENT_BENCH_DIR";

/// The credential of every server and client.
pub(crate) const UUID: &str = "3b0c7a52-8c1e-4f0a-9d3e-5a6b7c8d9e0f";
/// The peers' group (sing-box outbound tag, mihomo group name).
pub(crate) const GROUP: &str = "auto";

/// The own subscription, in order, with each server's distance in milliseconds.
pub(crate) const OWN: [(&str, u64); 3] = [("A", 10), ("B", 70), ("C", 140)];
/// The neighbour subscription (our client's second).
pub(crate) const NEIGHBOURS: [(&str, u64); 2] = [("N1", 100), ("N2", 120)];

/// One phase of the timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    Steady,
    Blackhole,
    NetworkLoss,
    Recovery,
    Refusing,
}

/// The timeline: each phase and its length in seconds.
pub(crate) const PHASES: [(Phase, u64); 5] = [
    (Phase::Steady, 40),
    (Phase::Blackhole, 60),
    (Phase::NetworkLoss, 90),
    (Phase::Recovery, 60),
    (Phase::Refusing, 60),
];

impl Phase {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Steady => "steady",
            Self::Blackhole => "A blackholed",
            Self::NetworkLoss => "network loss",
            Self::Recovery => "recovery",
            Self::Refusing => "current refusing",
        }
    }

    /// Its window in seconds from the start of the timeline.
    pub(crate) fn window(self) -> (f64, f64) {
        let mut from = 0;
        for (p, secs) in PHASES {
            if p == self {
                return (from as f64, (from + secs) as f64);
            }
            from += secs;
        }
        unreachable!("every phase is in PHASES")
    }
}

/// The end of the timeline, seconds.
pub(crate) fn timeline_end() -> f64 {
    PHASES.iter().map(|(_, s)| *s as f64).sum()
}

/// How often each loop starts a request, how much it fetches, how long it waits.
const REQUEST_EVERY: Duration = Duration::from_millis(200);
const REQUEST_BYTES: u64 = 16 * 1024;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// How long after the network comes back the clients' memory is read: every test
/// started during the loss has ended by then (sing-box's timeout is 15 s).
const AFTER_LOSS: Duration = Duration::from_secs(16);
/// How long before a phase's edge the clients are asked what the edge needs (their
/// memory before the loss, their current server before the refusal).
const LOOK_AHEAD: Duration = Duration::from_secs(1);
/// How long each client has to settle on `A` before the timeline starts.
const SETTLE: Duration = Duration::from_secs(45);

/// One server: a node and the fault proxy in front of it.
struct Server {
    name: &'static str,
    delay: Duration,
    fault: FaultProxy,
    _node: Arc<Node>,
    _dir: tempfile::TempDir,
}

/// A node with one plain VLESS inbound on a free port of 127.0.0.1.
async fn node(dir: &Path) -> Result<(Arc<Node>, u16)> {
    let port = free_port()?;
    let text = format!(
        r#"
version = 1
[node]
state_dir = "{dir}"
allow_private_destinations = true
[control]
listen = "127.0.0.1:{control}"

[[inbounds]]
tag = "main"
name = "main"
listen = "127.0.0.1"
port = {port}
protocol = "vless"

[[users]]
name = "bench"
vless = "{UUID}"
"#,
        dir = dir.display(),
        control = free_port()?,
    );
    let config = NodeConfig::from_toml(&text).map_err(|e| anyhow::anyhow!("{e}\n{text}"))?;
    let node = Node::start(config)
        .await
        .map_err(|e| anyhow::anyhow!("starting a node: {e}"))?;
    Ok((node, port))
}

async fn server(name: &'static str, delay_ms: u64) -> Result<Server> {
    let dir = tempfile::tempdir()?;
    let (node, port) = node(dir.path()).await?;
    let fault = FaultProxy::start(SocketAddr::from(([127, 0, 0, 1], port))).await?;
    Ok(Server {
        name,
        delay: Duration::from_millis(delay_ms),
        fault,
        _node: node,
        _dir: dir,
    })
}

/// A request loop's results: when each request started, whether it passed.
pub(crate) type Requests = Arc<Mutex<Vec<(Instant, bool)>>>;

/// Starts a request every [`REQUEST_EVERY`] through `proxy` to `target`.
fn request_loop(
    proxy: SocketAddr,
    target: SocketAddr,
    t0: Instant,
) -> (Requests, tokio::task::JoinHandle<()>) {
    let results: Requests = Arc::default();
    let out = results.clone();
    let task = tokio::spawn(async move {
        // Half a period off the phases' edges, where the faults change: a request
        // never starts in the moment a fault is being put in place.
        let first = (t0 + REQUEST_EVERY / 2).into();
        let mut tick = tokio::time::interval_at(first, REQUEST_EVERY);
        // A late tick is skipped, not moved: the grid stays off the edges.
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tick.tick().await;
            let out = out.clone();
            tokio::spawn(async move {
                let started = Instant::now();
                let once = async {
                    let s = switchyard_testkit::socks5::connect(proxy, target).await?;
                    switchyard_testkit::http::get_bytes(s, REQUEST_BYTES).await
                };
                let ok = matches!(
                    tokio::time::timeout(REQUEST_TIMEOUT, once).await,
                    Ok(Ok(n)) if n == REQUEST_BYTES
                );
                out.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push((started, ok));
            });
        }
    });
    (results, task)
}

/// One request through `proxy`, within the request timeout.
async fn one_request(proxy: SocketAddr, target: SocketAddr) -> bool {
    let once = async {
        let s = switchyard_testkit::socks5::connect(proxy, target).await?;
        switchyard_testkit::http::get_bytes(s, REQUEST_BYTES).await
    };
    matches!(tokio::time::timeout(REQUEST_TIMEOUT, once).await, Ok(Ok(n)) if n == REQUEST_BYTES)
}

/// What the timeline did, in seconds from its start.
#[derive(Debug, Default)]
pub(crate) struct Applied {
    /// `(t, what)` in order.
    pub(crate) log: Vec<(f64, String)>,
    pub(crate) blackhole_at: f64,
    pub(crate) loss: (f64, f64),
    pub(crate) refusing_at: f64,
    /// The servers refused from `refusing_at` on.
    pub(crate) refused: Vec<String>,
    /// Where each client was when the refusal began.
    pub(crate) on_at_refusal: Vec<(Kind, Option<String>)>,
    /// When each phase's faults were in place: where it begins.
    pub(crate) starts: Vec<(Phase, f64)>,
}

/// Every client's memory before and after the loss.
pub(crate) struct Memories {
    pub(crate) before: Vec<(Kind, serde_json::Value)>,
    pub(crate) after: Vec<(Kind, serde_json::Value)>,
}

/// Everything the report needs.
pub(crate) struct Run {
    pub(crate) t0: Instant,
    pub(crate) t0_wall: SystemTime,
    pub(crate) clients: Vec<Client>,
    pub(crate) requests: Vec<(Kind, Requests)>,
    pub(crate) applied: Applied,
    pub(crate) memories: Memories,
    pub(crate) probe_url: String,
    pub(crate) probes_answered: u64,
}

impl Run {
    pub(crate) fn at(&self, secs: f64) -> Instant {
        self.t0 + Duration::from_secs_f64(secs)
    }

    /// The window `phase` had in this run: from when its faults were in place to when
    /// the next phase's were (the timeline's end for the last).
    pub(crate) fn window(&self, phase: Phase) -> (f64, f64) {
        let starts = &self.applied.starts;
        let Some(i) = starts.iter().position(|(p, _)| *p == phase) else {
            return phase.window();
        };
        let end = starts.get(i + 1).map_or(timeline_end(), |(_, t)| *t);
        (starts[i].1, end)
    }
}

/// One client's figures in one phase.
#[derive(Clone, Debug, Default)]
pub(crate) struct Figures {
    pub(crate) failed_seconds: usize,
    pub(crate) requests_ok: usize,
    pub(crate) requests: usize,
    pub(crate) switches: Vec<(f64, String)>,
    pub(crate) probes: usize,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<()> {
    let binary = PathBuf::from(std::env::var_os(BINARY_ENV).with_context(|| {
        format!("{BINARY_ENV} must name our release binary (`cargo xtask bench client` sets it)")
    })?);
    if !binary.is_file() {
        bail!("{BINARY_ENV}={}: no such file", binary.display());
    }
    let work = match std::env::var_os(DIR_ENV) {
        Some(dir) => PathBuf::from(dir),
        None => {
            std::env::temp_dir().join(format!("switchyard-client-bench-{}", std::process::id()))
        }
    };
    if work.exists() {
        std::fs::remove_dir_all(&work).with_context(|| format!("clearing {}", work.display()))?;
    }
    std::fs::create_dir_all(&work)?;
    println!(
        "client failover benchmark: ours = {}, sing-box = {}, mihomo = {}; work directory {}",
        binary.display(),
        switchyard_testkit::sing_box::binary()?.display(),
        switchyard_testkit::mihomo::binary()?.display(),
        work.display()
    );

    let run = run(&binary, &work).await?;
    for (when, list) in [
        ("before", &run.memories.before),
        ("after", &run.memories.after),
    ] {
        for (kind, memory) in list {
            let file = work.join(format!("memory-{when}-loss-{}.json", kind.slug()));
            std::fs::write(&file, serde_json::to_string_pretty(memory)?)?;
        }
    }
    let report = report::render(&run, &binary, &work)?;
    for (kind, requests) in &run.requests {
        let lines: String = requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(at, ok)| {
                let t = at.saturating_duration_since(run.t0).as_secs_f64();
                format!("{t:.3} {}\n", if *ok { "ok" } else { "failed" })
            })
            .collect();
        std::fs::write(work.join(format!("requests-{}.txt", kind.slug())), lines)?;
    }
    for c in &run.clients {
        if let Some(log) = c.log() {
            let file = work.join(format!("{}.log", c.kind.slug()));
            std::fs::write(&file, log)?;
        }
    }
    std::fs::write(work.join("report.md"), &report)?;
    println!("\n{report}");
    if let Some(path) = std::env::var_os(REPORT_ENV) {
        let path = PathBuf::from(path);
        std::fs::write(&path, &report).with_context(|| format!("writing {}", path.display()))?;
        println!("report written to {}", path.display());
    }
    Ok(())
}

async fn run(binary: &Path, work: &Path) -> Result<Run> {
    let load = HttpTarget::start().await?;
    let probe = ProbeTarget::start().await?;
    let probe_port = probe.addr().port();
    let mut own = Vec::new();
    for (name, ms) in OWN {
        own.push(server(name, ms).await?);
    }
    let mut neighbours = Vec::new();
    for (name, ms) in NEIGHBOURS {
        neighbours.push(server(name, ms).await?);
    }
    // Each client's taps to the servers it knows.
    let taps = |servers: &[Server]| {
        let list: Vec<(&'static str, SocketAddr, Duration)> = servers
            .iter()
            .map(|s| (s.name, s.fault.addr(), s.delay))
            .collect();
        async move {
            let mut out = Vec::new();
            for (name, upstream, delay) in list {
                out.push((
                    name.to_owned(),
                    Arc::new(Tap::start(upstream, delay, probe_port).await?),
                ));
            }
            anyhow::Ok(out)
        }
    };

    let (ours_own, ours_neighbours) = (taps(&own).await?, taps(&neighbours).await?);
    let subscriptions = Subscriptions::start(vec![
        ("/sub/own".to_owned(), clients::links(&ours_own)),
        (
            "/sub/neighbour".to_owned(),
            clients::links(&ours_neighbours),
        ),
    ])
    .await?;
    let mut clients = vec![
        Client::ours(
            binary,
            [
                subscriptions.url("/sub/own"),
                subscriptions.url("/sub/neighbour"),
            ],
            &probe.url(),
            work,
            Servers {
                own: &ours_own,
                neighbours: &ours_neighbours,
            },
        )
        .await?,
    ];
    clients.push(Client::sing_box(&taps(&own).await?, &probe.url()).await?);
    for kind in [Kind::MihomoUrlTest, Kind::MihomoFallback] {
        clients.push(Client::mihomo(kind, &taps(&own).await?, &probe.url()).await?);
    }

    // Every client carries a request and settles on A, the nearest and first.
    let settle_until = Instant::now() + SETTLE;
    for c in &mut clients {
        loop {
            let sent = Instant::now();
            let passed = one_request(c.proxy, load.addr()).await;
            c.first_request.get_or_insert(sent);
            let on = c.current().await.ok().flatten();
            if passed && on.as_deref() == Some(OWN[0].0) {
                println!("{} carries requests, on {}", c.kind.name(), OWN[0].0);
                break;
            }
            if Instant::now() > settle_until {
                println!(
                    "warning: {} did not settle on {} (request passed: {passed}, on {on:?}); \
                     going on",
                    c.kind.name(),
                    OWN[0].0
                );
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    let t0 = Instant::now();
    let t0_wall = SystemTime::now();
    let mut tasks = Vec::new();
    let mut requests = Vec::new();
    for c in &clients {
        let (results, task) = request_loop(c.proxy, load.addr(), t0);
        requests.push((c.kind, results));
        tasks.push(task);
        tasks.extend(c.watch());
    }
    println!(
        "timeline started; it lasts {} s (the clients started before it: {})",
        timeline_end(),
        clients
            .iter()
            .map(|c| format!("{} {:.1} s", c.kind.name(), (t0 - c.started).as_secs_f64()))
            .collect::<Vec<_>>()
            .join(", ")
    );

    let mut applied = Applied::default();
    let mut before = Vec::new();
    let mut after = Vec::new();
    let since = |t: Instant| (t - t0).as_secs_f64();
    let all: Vec<&Server> = own.iter().chain(neighbours.iter()).collect();
    let mut on = Vec::new();
    for (phase, _) in PHASES {
        let (from, _) = phase.window();
        let edge = t0 + Duration::from_secs_f64(from);
        // What needs asking is asked a second before the edge, so the faults go in
        // on it (nothing happens in the clients in that second on this timeline).
        tokio::time::sleep_until((edge - LOOK_AHEAD).into()).await;
        for c in &mut clients {
            c.ensure_running()?;
        }
        match phase {
            Phase::NetworkLoss => {
                for c in &clients {
                    before.push((c.kind, c.memory().await?));
                }
            }
            Phase::Refusing => {
                for c in &clients {
                    on.push((c.kind, c.current().await.ok().flatten()));
                }
            }
            _ => {}
        }
        tokio::time::sleep_until(edge.into()).await;
        match phase {
            Phase::Steady => applied
                .log
                .push((since(Instant::now()), "all servers pass".into())),
            Phase::Blackhole => {
                own[0].fault.set(Fault::Blackhole);
                own[0].fault.cut();
                applied.blackhole_at = since(Instant::now());
                applied
                    .log
                    .push((applied.blackhole_at, format!("{} blackholed", own[0].name)));
            }
            Phase::NetworkLoss => {
                for s in &all {
                    s.fault.set(Fault::Blackhole);
                    s.fault.cut();
                }
                subscriptions.set_silent(true);
                applied.loss.0 = since(Instant::now());
                applied.log.push((
                    applied.loss.0,
                    "network loss: every server and the subscriptions silent".into(),
                ));
            }
            Phase::Recovery => {
                for s in &all {
                    s.fault.set(Fault::Pass);
                    s.fault.cut();
                }
                subscriptions.set_silent(false);
                applied.loss.1 = since(Instant::now());
                applied
                    .log
                    .push((applied.loss.1, "network back: every server passes".into()));
            }
            Phase::Refusing => {
                let mut refused: Vec<String> = Vec::new();
                for s in &all {
                    if on.iter().any(|(_, cur)| cur.as_deref() == Some(s.name)) {
                        refused.push(s.name.to_owned());
                    }
                }
                // One own server keeps answering, or there is nothing to switch to.
                if OWN.iter().all(|(n, _)| refused.iter().any(|r| r == n)) {
                    let keep = OWN[OWN.len() - 1].0;
                    refused.retain(|r| r != keep);
                }
                for c in &clients {
                    for (name, tap) in &c.taps {
                        if refused.contains(name) {
                            tap.refuse();
                        }
                    }
                }
                for s in &all {
                    if refused.iter().any(|r| r == s.name) {
                        s.fault.cut();
                    }
                }
                applied.refusing_at = since(Instant::now());
                applied.log.push((
                    applied.refusing_at,
                    format!("{} refuse (ports closed)", refused.join(", ")),
                ));
                applied.refused = refused;
                applied.on_at_refusal = std::mem::take(&mut on);
            }
        }
        // The phase begins once its faults are in place: a request started a moment
        // before belongs to the phase before.
        let (at, what) = applied.log.last().cloned().unwrap_or_default();
        applied.starts.push((phase, at));
        println!("t = {at:6.1} s: {what}");
        if phase == Phase::Recovery {
            tokio::time::sleep(AFTER_LOSS).await;
            for c in &clients {
                after.push((c.kind, c.memory().await?));
            }
        }
    }
    tokio::time::sleep_until((t0 + Duration::from_secs_f64(timeline_end())).into()).await;
    for task in &tasks {
        task.abort();
    }
    // The last requests end within their timeout.
    tokio::time::sleep(REQUEST_TIMEOUT + Duration::from_secs(1)).await;
    for c in &mut clients {
        c.ensure_running()?;
    }
    Ok(Run {
        t0,
        t0_wall,
        clients,
        requests,
        applied,
        memories: Memories { before, after },
        probe_url: probe.url(),
        probes_answered: probe.answered(),
    })
}
