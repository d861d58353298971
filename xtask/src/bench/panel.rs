//! `cargo xtask bench panel`: the panel's subscription endpoint under HTTP load, and
//! the time a user change takes to reach a node.
//!
//! [`bench_panel`] builds `loadgen` (testkit's keep-alive HTTP/1.1 load generator,
//! `crates/testkit/src/bin/loadgen.rs`) and `switchyard` in release, seeds [`USERS`]
//! users plus one cluster, server and VLESS+TLS inbound into a fresh SQLite database
//! (`switchyard panel seed --with-inbound`), starts `switchyard panel` on it, writes
//! the subscription paths into a URL file, runs every [`SCENARIOS`] entry [`RUNS`]
//! times with loadgen in its own process (the subscription in both formats, and the
//! panel's static `/healthz` as the reference: HTTP and loadgen without the
//! subscription), then measures the node config push ([`super::push`]) against the
//! same panel, and writes the medians between the `bench:panel` markers of
//! `docs/benchmarks.md`.
//!
//! With [`BINARY_ENV`] set, that `switchyard` binary is measured instead of a fresh
//! release build (an older build, for before/after figures).

use std::fs;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use super::push::{self, PushTimes};
pub(crate) use super::running::{Panel, RUNS, USERS, free_port};
use super::{measured_with, target_dir, write_section};
use crate::cmd::{Background, Cmd};
use crate::section::Section;

/// The NAME that runs this benchmark.
pub(crate) const PANEL: &str = "panel";
const PANEL_SECTION: Section = Section {
    doc: super::DOC,
    begin: "<!-- bench:panel:begin -->",
    end: "<!-- bench:panel:end -->",
};

/// The variable naming a `switchyard` binary to measure instead of building one.
const BINARY_ENV: &str = "SWITCHYARD_BIN";
/// How long the panel may take to listen after it starts (migrations included).
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// What a scenario requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Request {
    /// Every seeded user's `/sub/{token}?format=FORMAT` in turn.
    Subscription(&'static str),
    /// `/healthz`: the same panel's static answer, the reference.
    Healthz,
}

/// One load to measure: a table row.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scenario {
    /// The row's label.
    pub(crate) label: &'static str,
    /// What it requests.
    pub(crate) request: Request,
    /// loadgen's `--connections`.
    pub(crate) connections: usize,
    /// loadgen's `--warmup`.
    pub(crate) warmup: &'static str,
    /// loadgen's `--duration`.
    pub(crate) duration: &'static str,
}

/// Every user's subscription fetched in turn, in every format, with `/healthz` of the
/// same process beside each load as the reference: many clients at once, then one
/// alone (the latency without queueing).
pub(crate) const SCENARIOS: [Scenario; 7] = [
    Scenario {
        label: "`GET /sub/{token}?format=links`, 64 connections",
        request: Request::Subscription("links"),
        connections: 64,
        warmup: "2s",
        duration: "10s",
    },
    Scenario {
        label: "`GET /sub/{token}?format=sing-box`, 64 connections",
        request: Request::Subscription("sing-box"),
        connections: 64,
        warmup: "2s",
        duration: "10s",
    },
    Scenario {
        label: "`GET /sub/{token}?format=clash`, 64 connections",
        request: Request::Subscription("clash"),
        connections: 64,
        warmup: "2s",
        duration: "10s",
    },
    Scenario {
        label: "`GET /sub/{token}?format=xray`, 64 connections",
        request: Request::Subscription("xray"),
        connections: 64,
        warmup: "2s",
        duration: "10s",
    },
    Scenario {
        label: "`GET /healthz` (reference), 64 connections",
        request: Request::Healthz,
        connections: 64,
        warmup: "2s",
        duration: "10s",
    },
    Scenario {
        label: "`GET /sub/{token}?format=links`, 1 connection",
        request: Request::Subscription("links"),
        connections: 1,
        warmup: "1s",
        duration: "5s",
    },
    Scenario {
        label: "`GET /healthz` (reference), 1 connection",
        request: Request::Healthz,
        connections: 1,
        warmup: "1s",
        duration: "5s",
    },
];

/// The formats the goal is set for.
const GOAL_FORMATS: [&str; 2] = ["links", "sing-box"];
/// Routes seeded, each of [`POOL`] inbounds over [`POOL`] servers: every
/// subscription has this many entries (plus the seed route's), each chosen by the
/// balancer.
pub(crate) const ROUTES: usize = 20;
/// Inbounds per seeded route.
pub(crate) const POOL: usize = 5;

/// The issue's goal for the subscription with [`USERS`] users on SQLite.
const GOAL_RPS: f64 = 5_000.0;
/// ... at this p99 or less.
const GOAL_P99_MS: f64 = 20.0;

/// `cargo xtask bench panel`.
pub(crate) fn bench_panel(root: &Path) -> Result<()> {
    let loadgen = build_loadgen(root)?;
    let work = target_dir(root)?.join("panel-bench");
    if work.exists() {
        fs::remove_dir_all(&work).with_context(|| format!("removing {}", work.display()))?;
    }
    fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;

    let mut panel = start_panel(root, &work, USERS)?;
    // Every user's first fetch writes their routes' choices; the loads below measure
    // the fetches after it (a choice is written again only when it changes).
    let first = first_fetches(panel.addr, &panel.tokens)?;
    println!(
        "first fetch of {USERS} users, one at a time: {:.1?} ({:.0}/s)",
        first,
        USERS as f64 / first.as_secs_f64()
    );
    let mut rows = Vec::new();
    for scenario in SCENARIOS {
        let (base, url_file) = match scenario.request {
            Request::Subscription(format) => {
                let file = work.join(format!("urls-{format}.txt"));
                let paths: Vec<String> = panel
                    .tokens
                    .iter()
                    .map(|t| format!("/sub/{t}?format={format}"))
                    .collect();
                write_url_file(&file, &paths)?;
                (format!("http://{}{}", panel.addr, paths[0]), Some(file))
            }
            Request::Healthz => (format!("http://{}/healthz", panel.addr), None),
        };
        let mut runs = Vec::new();
        for _ in 0..RUNS {
            let args = loadgen_args(&base, url_file.as_deref(), &scenario);
            runs.push(run_loadgen(&loadgen, &args)?);
            panel
                .process
                .ensure_running()
                .context("the panel died under load")?;
        }
        rows.push((scenario, runs));
    }
    let mut table = table(&rows);
    table += &format!(
        "\nBefore the loads, every user's first fetch (which writes the {ROUTES} + 1 \
         choices of their routes) one at a time over one connection: {:.1} s for {USERS} \
         users, {:.0} fetches/s.\n",
        first.as_secs_f64(),
        USERS as f64 / first.as_secs_f64()
    );
    println!("\n{table}");

    let push = push::measure(&mut panel, &work)?;
    drop(panel.process);
    let push_table = push_table(&push);
    println!("\n{push_table}");

    let how = format!(
        "`cargo xtask bench panel` ({}, {USERS} users, loadgen in release)",
        panel.how
    );
    let body = format!("{}\n\n{table}\n{push_table}", measured_with(&how));
    write_section(
        root,
        &PANEL_SECTION,
        &PANEL_SECTION.wrap("cargo xtask bench panel", &body),
    )
}

/// Starts the panel under measurement: [`USERS`] users, one cluster, server and
/// VLESS+TLS inbound seeded into a fresh SQLite database under `work`, then
/// `switchyard panel` from the release binary listening on free ports of 127.0.0.1,
/// waited for.
fn start_panel(root: &Path, work: &Path, users: usize) -> Result<Panel> {
    let switchyard = match std::env::var_os(BINARY_ENV) {
        Some(path) => {
            println!("measuring {} ({BINARY_ENV})", Path::new(&path).display());
            PathBuf::from(path)
        }
        None => build_switchyard(root)?,
    };
    let data = work.join("data");
    let tokens = seed_users(&switchyard, &data, users)?;
    let addr = SocketAddr::from(([127, 0, 0, 1], free_port()?));
    let channel = SocketAddr::from(([127, 0, 0, 1], free_port()?));
    // The bench fetches every token about once a second, far above the per-token
    // limit apps never reach: it measures rendering, so the limit is off.
    let config = work.join("panel.toml");
    fs::write(&config, "[subscription]\nfetch_burst = 0\n")
        .with_context(|| format!("writing {}", config.display()))?;
    let mut process = Cmd::new(&switchyard)
        .args(["panel", "--config"])
        .args([&config])
        .args(["--data"])
        .args([&data])
        .args(["--listen", &addr.to_string()])
        .args(["--channel-listen", &channel.to_string()])
        .spawn(&work.join("panel.log"))?;
    wait_for_port(&mut process, addr, START_TIMEOUT)?;
    Ok(Panel {
        process,
        addr,
        tokens,
        data: data.clone(),
        switchyard,
        how: format!(
            "`switchyard panel --config FILE --data DIR --listen 127.0.0.1:PORT \
             --channel-listen 127.0.0.1:PORT2` (the per-token fetch limit off: \
             `subscription.fetch_burst = 0`), SQLite (the default), seeded by `switchyard panel seed \
             --users {users} --tokens FILE --with-inbound PORT3 --routes {ROUTES} --pool \
             {POOL} --data DIR`: {ROUTES} routes × {POOL} inbounds plus the seed route, so \
             every subscription has {} entries, each chosen by the balancer",
            ROUTES + 1
        ),
    })
}

/// Seeds `users` users, and the cluster, server and VLESS+TLS inbound their
/// subscriptions show, into a fresh database in `data`; returns their subscription
/// tokens, one per user.
fn seed_users(switchyard: &Path, data: &Path, users: usize) -> Result<Vec<String>> {
    let file = data.with_file_name("tokens.txt");
    let started = Instant::now();
    Cmd::new(switchyard)
        .args(["panel", "seed", "--users", &users.to_string(), "--tokens"])
        .args([&file])
        .args(["--with-inbound", &free_port()?.to_string()])
        .args(["--routes", &ROUTES.to_string(), "--pool", &POOL.to_string()])
        .args(["--data"])
        .args([data])
        .run()?;
    println!("seeded {users} users in {:.1?}", started.elapsed());
    let text = fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    let tokens: Vec<String> = text.lines().map(str::to_owned).collect();
    if tokens.len() != users {
        bail!(
            "{} holds {} tokens, not the {users} seeded",
            file.display(),
            tokens.len()
        );
    }
    Ok(tokens)
}

/// Builds our release binary and returns its path.
pub(crate) fn build_switchyard(root: &Path) -> Result<PathBuf> {
    Cmd::cargo(root)
        .args(["build", "--release", "-p", "switchyard"])
        .run()?;
    Ok(target_dir(root)?.join("release/switchyard"))
}

/// Builds `loadgen` in release and returns its path.
pub(crate) fn build_loadgen(root: &Path) -> Result<PathBuf> {
    Cmd::cargo(root)
        .args([
            "build",
            "--release",
            "-p",
            "switchyard-testkit",
            "--bin",
            "loadgen",
        ])
        .run()?;
    Ok(target_dir(root)?.join("release/loadgen"))
}

/// Waits until something accepts TCP connections on `addr`, failing with the log's
/// tail when `process` exits first or `timeout` passes.
pub(crate) fn wait_for_port(
    process: &mut Background,
    addr: SocketAddr,
    timeout: Duration,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        process.ensure_running()?;
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!(
                "pid {} did not accept connections on {addr} within {timeout:?}; its log \
                 ends with:\n{}",
                process.pid(),
                process.log_tail()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Writes one path per line for loadgen's `--url-file`.
pub(crate) fn write_url_file(path: &Path, paths: &[String]) -> Result<()> {
    if paths.is_empty() {
        bail!(
            "no request paths for {}: were any users seeded?",
            path.display()
        );
    }
    let mut text = paths.join("\n");
    text.push('\n');
    fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

fn loadgen_args(url: &str, url_file: Option<&Path>, s: &Scenario) -> Vec<String> {
    let mut args = vec!["--url".to_owned(), url.to_owned()];
    if let Some(file) = url_file {
        args.push("--url-file".to_owned());
        args.push(file.display().to_string());
    }
    args.extend([
        "--connections".to_owned(),
        s.connections.to_string(),
        "--warmup".to_owned(),
        s.warmup.to_owned(),
        "--duration".to_owned(),
        s.duration.to_owned(),
    ]);
    args
}

/// One loadgen run's JSON line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LoadReport {
    pub(crate) requests: u64,
    pub(crate) rps: f64,
    pub(crate) p50_ms: f64,
    pub(crate) p90_ms: f64,
    pub(crate) p99_ms: f64,
    pub(crate) max_ms: f64,
    pub(crate) errors: u64,
    pub(crate) non_2xx: u64,
}

impl LoadReport {
    fn parse(line: &str) -> Result<Self> {
        let v: Value = serde_json::from_str(line.trim())
            .with_context(|| format!("loadgen printed {line:?}, not its JSON line"))?;
        let f = |k: &str| {
            v[k].as_f64()
                .with_context(|| format!("loadgen's report has no number {k}: {line}"))
        };
        let n = |k: &str| {
            v[k].as_u64()
                .with_context(|| format!("loadgen's report has no count {k}: {line}"))
        };
        Ok(Self {
            requests: n("requests")?,
            rps: f("rps")?,
            p50_ms: f("p50_ms")?,
            p90_ms: f("p90_ms")?,
            p99_ms: f("p99_ms")?,
            max_ms: f("max_ms")?,
            errors: n("errors")?,
            non_2xx: n("non_2xx")?,
        })
    }
}

/// Runs loadgen with `args` (printed first) and parses its report.
pub(crate) fn run_loadgen(loadgen: &Path, args: &[String]) -> Result<LoadReport> {
    let cmd = Cmd::new(loadgen).args(args);
    println!("$ {}", cmd.line());
    let out = cmd.output()?;
    let text = String::from_utf8_lossy(&out);
    println!("{}", text.trim());
    LoadReport::parse(&text)
}

/// The median of `values` (the mean of the middle two for an even count).
pub(crate) fn median(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.into_iter().collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len().is_multiple_of(2) {
        (v[mid - 1] + v[mid]) / 2.0
    } else {
        v[mid]
    }
}

/// The Markdown table: per scenario, the medians over its runs; errors and non-2xx
/// responses summed over them (any is worth seeing); per request, the time against
/// `/healthz` at the same connections (its requests/s over this row's: 3.00× means
/// a subscription costs three static answers, HTTP and loadgen included); and the
/// issue's goal for the 64-connection subscription rows.
fn table(rows: &[(Scenario, Vec<LoadReport>)]) -> String {
    let mut t = String::from(
        "| load | requests/s | p50 | p90 | p99 | max | errors | non-2xx | time / `/healthz` | goal |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
    );
    let rps = |runs: &[LoadReport]| median(runs.iter().map(|r| r.rps));
    for (s, runs) in rows {
        let m = |f: fn(&LoadReport) -> f64| median(runs.iter().map(f));
        let reference = rows
            .iter()
            .find(|(r, _)| r.request == Request::Healthz && r.connections == s.connections);
        let ratio = match reference {
            _ if s.request == Request::Healthz => "(reference)".to_owned(),
            Some((_, r)) => format!("{:.2}×", rps(r) / rps(runs)),
            None => "(reference not run)".to_owned(),
        };
        let goal = match s.request {
            Request::Subscription(f) if s.connections == 64 && GOAL_FORMATS.contains(&f) => {
                let met = m(|r| r.rps) >= GOAL_RPS && m(|r| r.p99_ms) <= GOAL_P99_MS;
                format!(
                    "≥ {GOAL_RPS:.0}/s at p99 ≤ {GOAL_P99_MS:.0} ms: {}",
                    if met { "met" } else { "**not met**" }
                )
            }
            _ => "—".to_owned(),
        };
        t += &format!(
            "| {} | {:.0} | {:.2} ms | {:.2} ms | {:.2} ms | {:.2} ms | {} | {} | {ratio} | {goal} |\n",
            s.label,
            m(|r| r.rps),
            m(|r| r.p50_ms),
            m(|r| r.p90_ms),
            m(|r| r.p99_ms),
            m(|r| r.max_ms),
            runs.iter().map(|r| r.errors).sum::<u64>(),
            runs.iter().map(|r| r.non_2xx).sum::<u64>(),
        );
    }
    t += &format!(
        "\nMedians of {RUNS} runs of loadgen (keep-alive HTTP/1.1, its own process, sharing \
         the {cores} cores with the panel) over the {USERS} users' subscription URLs in \
         turn; latency from a request's first byte to its response's last; errors and \
         non-2xx summed over the runs.\n",
        cores = std::thread::available_parallelism().map_or(0, usize::from),
    );
    t
}

/// The push times' Markdown table.
fn push_table(p: &PushTimes) -> String {
    let ms = |d: &Duration| format!("{:.0} ms", d.as_secs_f64() * 1e3);
    let runs: Vec<String> = p.runs.iter().map(ms).collect();
    format!(
        "| change | median | runs |\n|---|---:|---|\n\
         | one user disabled or enabled (`PUT /api/v1/users/1`) until the node runs the new config of {} users | {} | {} |\n\n\
         From the API call's start to `GET /api/v1/servers/{{id}}` showing the new \
         `config_version` (polled every {} ms), with `switchyard node join` on the same \
         machine; the panel renders, validates and pushes the whole config, the node \
         applies it and the panel records the version the node runs.\n",
        p.users,
        ms(&p.median()),
        runs.join(", "),
        push::POLL.as_millis(),
    )
}

/// Fetches every token's subscription once (links), one request at a time on
/// one keep-alive connection; the time it took.
fn first_fetches(addr: SocketAddr, tokens: &[String]) -> Result<Duration> {
    use std::io::{BufRead, BufReader, Read, Write};
    let started = Instant::now();
    let stream = TcpStream::connect(addr).with_context(|| format!("connecting to {addr}"))?;
    // One write per request and no Nagle: else each request waits for a delayed ACK.
    stream.set_nodelay(true)?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    for t in tokens {
        let request = format!("GET /sub/{t}?format=links HTTP/1.1\r\nHost: bench\r\n\r\n");
        writer.write_all(request.as_bytes())?;
        let mut status = String::new();
        reader.read_line(&mut status)?;
        if !status.starts_with("HTTP/1.1 200") {
            bail!("first fetch of /sub/{t}: {}", status.trim());
        }
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line)?;
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse().context("a Content-Length")?;
            }
        }
        let mut body = vec![0u8; length];
        reader.read_exact(&mut body)?;
    }
    Ok(started.elapsed())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(rps: f64, p50_ms: f64, errors: u64) -> LoadReport {
        LoadReport {
            requests: 10,
            rps,
            p50_ms,
            p90_ms: p50_ms * 2.0,
            p99_ms: p50_ms * 3.0,
            max_ms: p50_ms * 4.0,
            errors,
            non_2xx: 1,
        }
    }

    #[test]
    fn loadgen_reports_are_parsed() {
        let line = r#"{"requests":120,"seconds":1.000,"rps":120.000,"p50_ms":0.500,"p90_ms":0.900,"p99_ms":1.200,"max_ms":3.000,"errors":0,"non_2xx":4}"#;
        let r = LoadReport::parse(line).unwrap();
        assert_eq!((r.requests, r.errors, r.non_2xx), (120, 0, 4));
        assert!((r.p99_ms - 1.2).abs() < 1e-9);
        assert!(LoadReport::parse("loadgen: error").is_err());
        assert!(LoadReport::parse(r#"{"requests":1}"#).is_err());
    }

    #[test]
    fn medians() {
        assert_eq!(median([3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median([4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median([]).is_nan());
    }

    #[test]
    fn the_table_shows_medians_and_sums() {
        let runs = vec![
            report(900.0, 1.0, 0),
            report(1100.0, 3.0, 2),
            report(1000.0, 2.0, 0),
        ];
        let reference = vec![report(4000.0, 0.5, 0); 3];
        let healthz = SCENARIOS
            .into_iter()
            .find(|s| s.request == Request::Healthz && s.connections == 64)
            .unwrap();
        let t = table(&[(SCENARIOS[0], runs), (healthz, reference)]);
        assert!(
            t.contains(
                "| `GET /sub/{token}?format=links`, 64 connections | 1000 | 2.00 ms | 4.00 ms | 6.00 ms | 8.00 ms | 2 | 3 | 4.00× | ≥ 5000/s at p99 ≤ 20 ms: **not met** |"
            ),
            "{t}"
        );
        assert!(
            t.contains("| `GET /healthz` (reference), 64 connections | 4000 | 0.50 ms |"),
            "{t}"
        );
    }

    #[test]
    fn waiting_for_a_port_sees_the_listener_and_a_dead_process() {
        let dir = tempfile_dir();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let mut sleeper = Cmd::new("sleep")
            .args(["30"])
            .spawn(&dir.join("sleep.log"))
            .unwrap();
        wait_for_port(&mut sleeper, addr, Duration::from_secs(5)).unwrap();
        drop(listener);
        let mut gone = Cmd::new("sh")
            .args(["-c", "echo bye; exit 3"])
            .spawn(&dir.join("sh.log"))
            .unwrap();
        let err = wait_for_port(&mut gone, addr, Duration::from_secs(5))
            .unwrap_err()
            .to_string();
        assert!(err.contains("exited") && err.contains("bye"), "{err}");
        fs::remove_dir_all(dir).unwrap();
    }

    /// A fresh directory under the system's temporary one (xtask has no tempfile).
    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-panel-test-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        dir
    }
}
