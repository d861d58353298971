//! `cargo xtask bench [NAME]`: run the benchmarks, then report them.
//!
//! `cargo xtask bench panel` loads the panel's subscription endpoint with testkit's
//! `loadgen` next to the same panel's `/healthz`, and times a user change until a
//! joined node runs it ([`panel`], [`push`]); it writes its tables between the
//! `bench:panel` markers.
//!
//! `cargo xtask bench tunnel` runs the tunnel's end-to-end benchmark
//! (`crates/tunnel/benches/tunnel/`) against rathole 0.5.0, which it builds first
//! ([`peers::rathole`]), and writes its table between the `bench:tunnel` markers.
//!
//! `cargo xtask bench node` runs the node's end-to-end benchmark
//! (`crates/node/benches/node/`): it installs the pinned peers, builds our release
//! binary, runs the bench (which measures our node against sing-box and against
//! Xray-core, each as a separate server process side by side) and writes the tables
//! it reports into `docs/benchmarks.md` between the `bench:node` markers. With
//! [`NODE_QUICK_ENV`] (a smoke run) or [`NODE_CASES_ENV`] (a subset of the cases) set,
//! the bench reads them too and the report is only printed. `cargo xtask bench criterion` runs every criterion
//! benchmark (Auto's, the panel's render and subscriptions, the balancer's) and writes
//! their table; any other NAME filters them (and only prints); no NAME runs the
//! criterion benchmarks, then the node, tunnel and panel benchmarks.
//!
//! `cargo xtask bench client` runs the client's failover benchmark
//! (`crates/client/benches/failover/`): one fault timeline through our client and the
//! real sing-box and mihomo at once, then the simulator's models on it ([`client`]);
//! it writes its report between the `bench:client` markers. It takes about six
//! minutes, so the run without NAME leaves it out.
//!
//! Criterion leaves each benchmark's estimates in
//! `target/criterion/<group>/<id>/new/{benchmark,estimates}.json`. This reads the
//! median of every benchmark this run measured and, in each group, the ratio of ours
//! against the group's `reference` benchmark (ratio = ours / reference, so 2.00× means
//! ours takes twice the reference's time). The table is printed and written into
//! `docs/benchmarks.md` between the `bench:auto` markers; text outside them is kept.

use std::fs;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use serde_json::Value;

mod client;
mod panel;
mod push;
mod running;
mod users;

use crate::cmd::Cmd;
use crate::peers;
use crate::section::Section;

/// The function id that marks a group's reference benchmark.
const REFERENCE: &str = "reference";
const DOC: &str = "docs/benchmarks.md";
const SECTION: Section = Section {
    doc: DOC,
    begin: "<!-- bench:auto:begin -->",
    end: "<!-- bench:auto:end -->",
};

/// The NAME that runs every criterion benchmark (and writes their table) alone.
const CRITERION: &str = "criterion";

/// The NAME that runs the node's end-to-end benchmark.
const NODE: &str = "node";
const NODE_SECTION: Section = Section {
    doc: DOC,
    begin: "<!-- bench:node:begin -->",
    end: "<!-- bench:node:end -->",
};
/// The variables the node bench reads: where our binary is, where to put its table.
const NODE_BINARY_ENV: &str = "SWITCHYARD_BIN";
const NODE_REPORT_ENV: &str = "SWITCHYARD_NODE_BENCH_REPORT";
/// The node bench's knobs (`crates/node/benches/node/plan.rs`): `1` for a smoke run
/// with every size cut down; comma-separated words naming the cases to run.
const NODE_QUICK_ENV: &str = "SWITCHYARD_NODE_BENCH_QUICK";
const NODE_CASES_ENV: &str = "SWITCHYARD_NODE_BENCH_CASES";

/// The NAME that runs the tunnel's end-to-end benchmark against rathole.
const TUNNEL: &str = "tunnel";
const TUNNEL_SECTION: Section = Section {
    doc: DOC,
    begin: "<!-- bench:tunnel:begin -->",
    end: "<!-- bench:tunnel:end -->",
};
/// The variables the tunnel bench reads: rathole's binary, where to put its table.
const RATHOLE_ENV: &str = "SWITCHYARD_RATHOLE";
const TUNNEL_REPORT_ENV: &str = "SWITCHYARD_TUNNEL_BENCH_REPORT";

/// One benchmark's result from this run.
#[derive(Debug)]
struct Measured {
    group: String,
    function: String,
    /// The parameter of a parameterised benchmark; the reference must share it.
    value: Option<String>,
    full_id: String,
    median_ns: f64,
}

/// `node`, `tunnel`, `panel`, `users` and `client` run those benchmarks; `criterion` runs every
/// criterion benchmark and writes their table; any other `name` runs the criterion benchmarks
/// matching it (and only prints); no `name` runs all of them but `client` (minutes of
/// wall time for one timeline).
pub(crate) fn run(root: &Path, name: Option<&str>) -> Result<()> {
    match name {
        Some(NODE) => node(root),
        Some(TUNNEL) => tunnel(root),
        Some(panel::PANEL) => panel::bench_panel(root),
        Some(users::USERS_BENCH) => users::bench_users(root),
        Some(client::CLIENT) => client::bench_client(root),
        Some(CRITERION) => criterion(root, None),
        Some(filter) => criterion(root, Some(filter)),
        None => {
            criterion(root, None)?;
            node(root)?;
            tunnel(root)?;
            panel::bench_panel(root)
        }
    }
}

/// Runs the criterion benchmarks (only those matching `name`, when given) and prints
/// the table; a full run (no `name`) also writes it into `docs/benchmarks.md`, so the
/// document always shows one whole run.
fn criterion(root: &Path, name: Option<&str>) -> Result<()> {
    let mut bench = Cmd::cargo(root).args([
        "bench",
        "-p",
        "switchyard-auto-sim",
        "--bench",
        "auto",
        "-p",
        "switchyard-panel",
        "--bench",
        "render",
        "--bench",
        "subscriptions",
        "-p",
        "switchyard-balance",
        "--bench",
        "balance",
    ]);
    if let Some(name) = name {
        bench = bench.args(["--", name]);
    }
    let started = SystemTime::now();
    bench.run()?;

    let criterion_dir = target_dir(root)?.join("criterion");
    let mut measured = Vec::new();
    collect(&criterion_dir, started, &mut measured)
        .with_context(|| format!("reading criterion's results in {}", criterion_dir.display()))?;
    if measured.is_empty() {
        bail!(
            "no benchmark results newer than this run in {}: did NAME match any benchmark?",
            criterion_dir.display()
        );
    }
    measured.sort_by(|a, b| {
        (&a.group, &a.value, a.function != REFERENCE, &a.function).cmp(&(
            &b.group,
            &b.value,
            b.function != REFERENCE,
            &b.function,
        ))
    });

    let table = table(&measured);
    println!("\n{table}");
    if name.is_some() {
        println!("(a filtered run: {DOC} is left as it is; run without NAME to rewrite it)");
        return Ok(());
    }
    let body = format!(
        "{}\n\n{table}",
        measured_with(&format!("`{}`", bench.line()))
    );
    write_section(root, &SECTION, &SECTION.wrap("cargo xtask bench", &body))
}

/// The node benchmark: peers, our release binary, the bench, its table into the doc.
fn node(root: &Path) -> Result<()> {
    let peers = peers::install(root)?;
    let build = Cmd::cargo(root).args(["build", "--release", "-p", "switchyard"]);
    let binary = panel::build_switchyard(root)?;
    let target = target_dir(root)?;
    let report = target.join("node-bench.md");
    match fs::remove_file(&report) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(e).with_context(|| format!("removing {}", report.display()));
        }
        _ => {}
    }
    let cargo_bench = ["cargo", "bench", "-p", "switchyard-node", "--bench", "node"];
    Cmd::new("env")
        .dir(root)
        .args(peers.env())
        .args([
            format!("{NODE_BINARY_ENV}={}", binary.display()),
            format!("{NODE_REPORT_ENV}={}", report.display()),
        ])
        .args(cargo_bench)
        .run()?;
    let table = fs::read_to_string(&report)
        .with_context(|| format!("reading the node bench's report {}", report.display()))?;
    // As the bench reads them: a quick run unless unset, empty or 0; a subset unless
    // unset or empty.
    let set =
        |name: &str, off: &[&str]| std::env::var(name).is_ok_and(|v| !off.contains(&v.trim()));
    let partial: Vec<&str> = [
        (NODE_QUICK_ENV, &["", "0"][..]),
        (NODE_CASES_ENV, &[""][..]),
    ]
    .into_iter()
    .filter(|(name, off)| set(name, off))
    .map(|(name, _)| name)
    .collect();
    if !partial.is_empty() {
        println!(
            "(a partial run, {} set: {DOC} is left as it is; unset it to rewrite it)",
            partial.join(" and ")
        );
        return Ok(());
    }
    let how = format!(
        "`cargo xtask bench node` (`{}`, then `{}`)",
        build.line(),
        cargo_bench.join(" ")
    );
    let body = format!("{}\n\n{table}", measured_with(&how));
    write_section(
        root,
        &NODE_SECTION,
        &NODE_SECTION.wrap("cargo xtask bench node", &body),
    )
}

/// The tunnel benchmark: rathole built when missing, the bench, its table into the doc.
fn tunnel(root: &Path) -> Result<()> {
    let rathole = peers::rathole(root)?;
    let report = target_dir(root)?.join("tunnel-bench.md");
    match fs::remove_file(&report) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(e).with_context(|| format!("removing {}", report.display()));
        }
        _ => {}
    }
    let cargo_bench = [
        "cargo",
        "bench",
        "-p",
        "switchyard-tunnel",
        "--bench",
        "tunnel",
    ];
    Cmd::new("env")
        .dir(root)
        .args([
            format!("{RATHOLE_ENV}={}", rathole.display()),
            format!("{TUNNEL_REPORT_ENV}={}", report.display()),
        ])
        .args(cargo_bench)
        .run()?;
    let table = fs::read_to_string(&report)
        .with_context(|| format!("reading the tunnel bench's report {}", report.display()))?;
    let how = format!("`cargo xtask bench tunnel` (`{}`)", cargo_bench.join(" "));
    let body = format!("{}\n\n{table}", measured_with(&how));
    write_section(
        root,
        &TUNNEL_SECTION,
        &TUNNEL_SECTION.wrap("cargo xtask bench tunnel", &body),
    )
}

/// Replaces `at`'s generated section of the doc with `section`.
fn write_section(root: &Path, at: &Section, section: &str) -> Result<()> {
    let doc = root.join(at.doc);
    let old = match fs::read_to_string(&doc) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "# Benchmarks\n".to_owned(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", doc.display())),
    };
    fs::write(&doc, at.replace(&old, section)?)
        .with_context(|| format!("writing {}", doc.display()))?;
    println!("wrote {}", at.doc);
    Ok(())
}

pub(crate) use crate::peers::target_dir;

/// Finds every `new/` directory under `dir` written since `since` and reads it.
fn collect(dir: &Path, since: SystemTime, out: &mut Vec<Measured>) -> Result<()> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Ok(()); // no results at all: reported by the caller
    };
    for entry in entries {
        let path = entry?.path();
        if !path.is_dir() {
            continue;
        }
        let estimates = path.join("estimates.json");
        if path.file_name().is_some_and(|n| n == "new") && estimates.is_file() {
            if fs::metadata(&estimates)?.modified()? >= since {
                out.push(read(&path)?);
            }
        } else {
            collect(&path, since, out)?;
        }
    }
    Ok(())
}

fn read(new_dir: &Path) -> Result<Measured> {
    let load = |file: &str| -> Result<Value> {
        let path = new_dir.join(file);
        let text =
            fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
    };
    let (id, estimates) = (load("benchmark.json")?, load("estimates.json")?);
    let text = |v: &Value| v.as_str().map(str::to_owned);
    let field = |name: &str| {
        text(&id[name])
            .with_context(|| format!("{}: no {name}", new_dir.join("benchmark.json").display()))
    };
    Ok(Measured {
        group: field("group_id")?,
        function: text(&id["function_id"]).unwrap_or_default(),
        value: text(&id["value_str"]),
        full_id: field("full_id")?,
        median_ns: estimates["median"]["point_estimate"]
            .as_f64()
            .with_context(|| format!("{}: no median", new_dir.display()))?,
    })
}

/// The Markdown table: benchmark, median, ratio against its group's reference.
fn table(measured: &[Measured]) -> String {
    let mut t = String::from("| benchmark | median | ours / reference |\n|---|---:|---:|\n");
    for m in measured {
        let reference = measured
            .iter()
            .find(|r| r.group == m.group && r.value == m.value && r.function == REFERENCE);
        let ratio = match reference {
            _ if m.function == REFERENCE => "(reference)".to_owned(),
            Some(r) => format!("{:.2}×", m.median_ns / r.median_ns),
            None => "(reference not run)".to_owned(),
        };
        t += &format!(
            "| `{}` | {} | {ratio} |\n",
            m.full_id,
            duration(m.median_ns)
        );
    }
    t
}

/// "Measured DATE with HOW; nproc N, CPU: MODEL.": how and on what.
fn measured_with(how: &str) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (y, m, d) = civil_date(i64::try_from(now / 86_400).unwrap_or(0));
    let nproc = std::thread::available_parallelism().map_or(0, usize::from);
    format!(
        "Measured {y:04}-{m:02}-{d:02} with {how}; nproc {nproc}, CPU: {cpu}.",
        cpu = cpu_model()
    )
}

fn cpu_model() -> String {
    fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, model)| model.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned())
}

/// A duration in nanoseconds with three significant digits and a fitting unit.
fn duration(ns: f64) -> String {
    let (v, unit) = match ns {
        n if n < 1e3 => (n, "ns"),
        n if n < 1e6 => (n / 1e3, "µs"),
        n if n < 1e9 => (n / 1e6, "ms"),
        n => (n / 1e9, "s"),
    };
    let decimals = match v {
        v if v >= 100.0 => 0,
        v if v >= 10.0 => 1,
        _ => 2,
    };
    format!("{v:.decimals$} {unit}")
}

/// The proleptic Gregorian date `days` after 1970-01-01 (H. Hinnant's
/// `civil_from_days`), so xtask needs no date crate.
fn civil_date(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(group: &str, function: &str, median_ns: f64) -> Measured {
        Measured {
            group: group.to_owned(),
            function: function.to_owned(),
            value: None,
            full_id: format!("{group}/{function}"),
            median_ns,
        }
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil_date(0), (1970, 1, 1));
        assert_eq!(civil_date(-1), (1969, 12, 31));
        assert_eq!(civil_date(11_016), (2000, 2, 29));
        assert_eq!(civil_date(19_000), (2022, 1, 8));
        assert_eq!(civil_date(20_500), (2026, 2, 16));
    }

    #[test]
    fn durations_keep_three_significant_digits() {
        assert_eq!(duration(512.0), "512 ns");
        assert_eq!(duration(1_234.0), "1.23 µs");
        assert_eq!(duration(45_678.0), "45.7 µs");
        assert_eq!(duration(2_500_000.0), "2.50 ms");
        assert_eq!(duration(3e9), "3.00 s");
    }

    #[test]
    fn ratios_are_ours_over_the_reference_of_the_same_group() {
        let t = table(&[
            m("g", "reference", 100.0),
            m("g", "score", 250.0),
            m("h", "alone", 10.0),
        ]);
        assert!(
            t.contains("| `g/reference` | 100 ns | (reference) |"),
            "{t}"
        );
        assert!(t.contains("| `g/score` | 250 ns | 2.50× |"), "{t}");
        assert!(
            t.contains("| `h/alone` | 10.0 ns | (reference not run) |"),
            "{t}"
        );
    }
}
