//! `cargo xtask bench panel`: the panel's subscription endpoint under HTTP load.
//!
//! The load side is done: [`bench_panel`] builds `loadgen` (testkit's keep-alive
//! HTTP/1.1 load generator, `crates/testkit/src/bin/loadgen.rs`) in release, starts
//! the panel, writes the subscription paths of the seeded users into a URL file, runs
//! every [`SCENARIOS`] entry [`RUNS`] times with loadgen in its own process, and
//! writes the medians as a table between the `bench:panel` markers of
//! `docs/benchmarks.md`.
//!
//! The panel's part is not: [`start_panel`] (marked `TODO(panel)`) must start
//! `switchyard panel` from the release binary with [`USERS`] users seeded and
//! return their subscription tokens. Until it does, the command stops there with a
//! message saying so, and `cargo xtask bench` without NAME leaves the panel out.

use std::fs;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::Value;

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

/// Users seeded before the load: the size of a large self-hosted deployment.
pub(crate) const USERS: usize = 10_000;
/// Repetitions of each scenario; the table shows their medians.
pub(crate) const RUNS: usize = 3;
/// How long the panel may take to listen after it starts (migrations included).
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// One load to measure: a table row.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scenario {
    /// The row's label.
    pub(crate) label: &'static str,
    /// loadgen's `--connections`.
    pub(crate) connections: usize,
    /// loadgen's `--warmup`.
    pub(crate) warmup: &'static str,
    /// loadgen's `--duration`.
    pub(crate) duration: &'static str,
}

/// Every user's subscription fetched in turn: many clients at once, then one alone
/// (the latency without queueing).
pub(crate) const SCENARIOS: [Scenario; 2] = [
    Scenario {
        label: "`GET /sub/{token}`, 64 connections",
        connections: 64,
        warmup: "2s",
        duration: "10s",
    },
    Scenario {
        label: "`GET /sub/{token}`, 1 connection",
        connections: 1,
        warmup: "1s",
        duration: "5s",
    },
];

/// The panel under load, as [`start_panel`] leaves it.
pub(crate) struct Panel {
    /// The running `switchyard panel`, killed on drop.
    pub(crate) process: Background,
    /// Where it serves HTTP (127.0.0.1).
    pub(crate) addr: SocketAddr,
    /// The request paths, one per seeded user (`/sub/{token}`).
    pub(crate) paths: Vec<String>,
    /// How it was started, for the doc (e.g. "`switchyard panel` with SQLite").
    pub(crate) how: String,
}

/// `cargo xtask bench panel`.
pub(crate) fn bench_panel(root: &Path) -> Result<()> {
    let loadgen = build_loadgen(root)?;
    let work = target_dir(root)?.join("panel-bench");
    if work.exists() {
        fs::remove_dir_all(&work).with_context(|| format!("removing {}", work.display()))?;
    }
    fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;

    let mut panel = start_panel(root, &work, USERS)?;
    let urls = work.join("urls.txt");
    write_url_file(&urls, &panel.paths)?;
    let base = format!("http://{}{}", panel.addr, panel.paths[0]);

    let mut rows = Vec::new();
    for scenario in SCENARIOS {
        let mut runs = Vec::new();
        for _ in 0..RUNS {
            let args = loadgen_args(&base, &urls, &scenario);
            runs.push(run_loadgen(&loadgen, &args)?);
            panel
                .process
                .ensure_running()
                .context("the panel died under load")?;
        }
        rows.push((scenario, runs));
    }
    drop(panel.process);

    let table = table(&rows);
    println!("\n{table}");
    let how = format!(
        "`cargo xtask bench panel` ({}, {USERS} users, loadgen in release)",
        panel.how
    );
    let body = format!("{}\n\n{table}", measured_with(&how));
    write_section(
        root,
        &PANEL_SECTION,
        &PANEL_SECTION.wrap("cargo xtask bench panel", &body),
    )
}

/// Starts the panel under measurement: [`USERS`] users seeded, `switchyard panel`
/// from the release binary listening on a free port of 127.0.0.1, waited for.
///
/// TODO(panel): two pieces are the panel author's, marked below: [`seed_users`] and
/// the panel's command line. The rest (build, port, background process with its
/// log in `work`, waiting for the port) is written.
fn start_panel(root: &Path, work: &Path, users: usize) -> Result<Panel> {
    // Seeding comes first so that, until it is written, the bench stops before a
    // release build; move it after the build if it needs the binary.
    let tokens = seed_users(work, users)?;
    let switchyard = build_switchyard(root)?;
    let addr = SocketAddr::from(([127, 0, 0, 1], free_port()?));
    // TODO(panel): the panel's real flags (its database under `work`, the listen
    // address).
    let mut process = Cmd::new(&switchyard)
        .args(["panel", "--listen", &addr.to_string()])
        .spawn(&work.join("panel.log"))?;
    wait_for_port(&mut process, addr, START_TIMEOUT)?;
    Ok(Panel {
        process,
        addr,
        paths: tokens.iter().map(|t| format!("/sub/{t}")).collect(),
        // TODO(panel): say which storage backend and settings it ran with.
        how: "`switchyard panel`".to_owned(),
    })
}

/// TODO(panel): seed `users` users into a fresh database under `work` (the panel's
/// seeding command or its storage API) and return their subscription tokens, one
/// per user.
fn seed_users(work: &Path, users: usize) -> Result<Vec<String>> {
    bail!(
        "cargo xtask bench panel: seeding {users} users into {} is not written yet, \
         because the panel does not exist yet (seed_users in xtask/src/bench/panel.rs is a \
         TODO for the panel's author; loadgen and the rest of the bench are ready)",
        work.display()
    )
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

/// A TCP port on 127.0.0.1 that was free a moment ago (the kernel's choice).
pub(crate) fn free_port() -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("binding 127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
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

fn loadgen_args(url: &str, url_file: &Path, s: &Scenario) -> Vec<String> {
    vec![
        "--url".to_owned(),
        url.to_owned(),
        "--url-file".to_owned(),
        url_file.display().to_string(),
        "--connections".to_owned(),
        s.connections.to_string(),
        "--warmup".to_owned(),
        s.warmup.to_owned(),
        "--duration".to_owned(),
        s.duration.to_owned(),
    ]
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
fn median(values: impl IntoIterator<Item = f64>) -> f64 {
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
/// responses summed over them (any is worth seeing).
fn table(rows: &[(Scenario, Vec<LoadReport>)]) -> String {
    let mut t = String::from(
        "| load | requests/s | p50 | p90 | p99 | max | errors | non-2xx |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for (s, runs) in rows {
        let m = |f: fn(&LoadReport) -> f64| median(runs.iter().map(f));
        t += &format!(
            "| {} | {:.0} | {:.2} ms | {:.2} ms | {:.2} ms | {:.2} ms | {} | {} |\n",
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
        "\nMedians of {RUNS} runs of loadgen (keep-alive HTTP/1.1, its own process) over \
         the {USERS} users' subscription URLs in turn; latency from a request's first \
         byte to its response's last; errors and non-2xx summed over the runs.\n"
    );
    t
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
        let t = table(&[(SCENARIOS[0], runs)]);
        assert!(
            t.contains(
                "| `GET /sub/{token}`, 64 connections | 1000 | 2.00 ms | 4.00 ms | 6.00 ms | 8.00 ms | 2 | 3 |"
            ),
            "{t}"
        );
    }

    #[test]
    fn waiting_for_a_port_sees_the_listener_and_a_dead_process() {
        let dir = tempfile_dir();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
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
