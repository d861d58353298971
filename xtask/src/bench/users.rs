//! `cargo xtask bench users`: the users page's requests with 10,000 and with
//! 100,000 users, side by side in one run.
//!
//! For each size, [`bench_users`] seeds a fresh SQLite database with users of every
//! kind (`switchyard panel seed --users N --mixed`: active, disabled, expired,
//! limited to 50 GiB, on hold), starts `switchyard panel` on it, logs in as the admin
//! and runs loadgen with the session's cookie over one connection (one operator at
//! the page) against each [`QUERIES`] entry [`RUNS`] times: the first and last page,
//! a name search, a status filter, two sorts, the dashboard, and the same process's
//! `/healthz` as the reference (HTTP and loadgen without the work). The table puts
//! the two sizes side by side, so the growth from 10,000 to 100,000 users is read
//! in one run on one machine, and is written between the `bench:users` markers of
//! `docs/benchmarks.md`.

use std::fs;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};

use super::panel::{
    LoadReport, build_loadgen, build_switchyard, median, run_loadgen, wait_for_port,
};
use super::push::Session;
use super::running::{RUNS, free_port};
use super::{measured_with, target_dir, write_section};
use crate::cmd::Cmd;
use crate::section::Section;

/// The NAME that runs this benchmark.
pub(crate) const USERS_BENCH: &str = "users";
const SECTION: Section = Section {
    doc: super::DOC,
    begin: "<!-- bench:users:begin -->",
    end: "<!-- bench:users:end -->",
};

/// The sizes measured side by side.
const SIZES: [usize; 2] = [10_000, 100_000];
/// Page size, as the UI asks.
const PAGE: usize = 100;
/// The goal for every request at the larger size: a page a person does not wait for.
const GOAL_P99_MS: f64 = 100.0;

/// One request of the users page: its label and its path for `n` users.
pub(crate) struct Query {
    label: &'static str,
    path: fn(usize) -> String,
}

/// What the users page and the dashboard ask, and the reference.
pub(crate) const QUERIES: [Query; 9] = [
    Query {
        label: "first page (`/api/v1/users?limit=100`)",
        path: |_| format!("/api/v1/users?limit={PAGE}"),
    },
    Query {
        label: "last page (`offset` = users − 100)",
        path: |n| format!("/api/v1/users?limit={PAGE}&offset={}", n - PAGE),
    },
    Query {
        label: "name search (`search=seed-4242`)",
        path: |_| format!("/api/v1/users?limit={PAGE}&search=seed-4242"),
    },
    Query {
        label: "status filter (`status=expired`)",
        path: |_| format!("/api/v1/users?limit={PAGE}&status=expired"),
    },
    Query {
        label: "status filter (`status=on_hold`)",
        path: |_| format!("/api/v1/users?limit={PAGE}&status=on_hold"),
    },
    Query {
        label: "sorted by expiry, descending",
        path: |_| format!("/api/v1/users?limit={PAGE}&sort=expires&desc=true"),
    },
    Query {
        label: "sorted by name",
        path: |_| format!("/api/v1/users?limit={PAGE}&sort=username"),
    },
    Query {
        label: "the dashboard (`/api/v1/dashboard`)",
        path: |_| "/api/v1/dashboard".to_owned(),
    },
    Query {
        label: "`/healthz` (reference)",
        path: |_| "/healthz".to_owned(),
    },
];

/// `cargo xtask bench users`.
pub(crate) fn bench_users(root: &Path) -> Result<()> {
    let loadgen = build_loadgen(root)?;
    let switchyard = build_switchyard(root)?;
    let work = target_dir(root)?.join("users-bench");
    if work.exists() {
        fs::remove_dir_all(&work).with_context(|| format!("removing {}", work.display()))?;
    }
    // Per size, per query: the runs.
    let mut results: Vec<Vec<Vec<LoadReport>>> = Vec::new();
    let mut seeded = Vec::new();
    for n in SIZES {
        let dir = work.join(n.to_string());
        let data = dir.join("data");
        fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let started = Instant::now();
        Cmd::new(&switchyard)
            .args([
                "panel",
                "seed",
                "--mixed",
                "--users",
                &n.to_string(),
                "--tokens",
            ])
            .args([dir.join("tokens.txt")])
            .args(["--data"])
            .args([&data])
            .run()?;
        seeded.push(started.elapsed());
        println!("seeded {n} users in {:.1?}", started.elapsed());
        let addr = SocketAddr::from(([127, 0, 0, 1], free_port()?));
        let channel = SocketAddr::from(([127, 0, 0, 1], free_port()?));
        let mut process = Cmd::new(&switchyard)
            .args(["panel", "--data"])
            .args([&data])
            .args(["--listen", &addr.to_string()])
            .args(["--channel-listen", &channel.to_string()])
            .spawn(&dir.join("panel.log"))?;
        wait_for_port(&mut process, addr, std::time::Duration::from_secs(60))?;
        let session = Session::login(addr, &data)?;
        let cookie = format!("Cookie: {}", session.cookie);
        let mut per_query = Vec::new();
        for q in &QUERIES {
            let url = format!("http://{addr}{}", (q.path)(n));
            let mut runs = Vec::new();
            for _ in 0..RUNS {
                let args: Vec<String> = [
                    "--url",
                    &url,
                    "--connections",
                    "1",
                    "--warmup",
                    "1s",
                    "--duration",
                    "3s",
                    "-H",
                    &cookie,
                ]
                .iter()
                .map(|s| (*s).to_owned())
                .collect();
                let report = run_loadgen(&loadgen, &args)?;
                if report.non_2xx > 0 || report.errors > 0 {
                    anyhow::bail!(
                        "{url}: {} errors, {} not 2xx",
                        report.errors,
                        report.non_2xx
                    );
                }
                runs.push(report);
                process.ensure_running().context("the panel died")?;
            }
            per_query.push(runs);
        }
        drop(process);
        results.push(per_query);
    }
    let table = table(&results, &seeded);
    println!("\n{table}");
    let how = format!(
        "`cargo xtask bench users` (`switchyard panel --data DIR --listen 127.0.0.1:PORT \
         --channel-listen 127.0.0.1:PORT2`, SQLite (the default), seeded by `switchyard \
         panel seed --mixed --users N --tokens FILE --data DIR` for N = {} and {}; \
         loadgen in release, one connection, the admin's session cookie)",
        SIZES[0], SIZES[1]
    );
    let body = format!("{}\n\n{table}", measured_with(&how));
    write_section(
        root,
        &SECTION,
        &SECTION.wrap("cargo xtask bench users", &body),
    )
}

/// The table: per query, the medians at each size, the growth, the goal.
fn table(results: &[Vec<Vec<LoadReport>>], seeded: &[std::time::Duration]) -> String {
    let (small, large) = (SIZES[0], SIZES[1]);
    let mut t = format!(
        "| request | p50, {small} users | p99, {small} | p50, {large} users | p99, {large} | \
         requests/s, {large} | p50 {large} / {small} | goal (p99 ≤ {GOAL_P99_MS:.0} ms at {large}) |\n\
         |---|---:|---:|---:|---:|---:|---:|---|\n"
    );
    for (i, q) in QUERIES.iter().enumerate() {
        let m = |size: usize, f: fn(&LoadReport) -> f64| median(results[size][i].iter().map(f));
        let reference = i == QUERIES.len() - 1;
        let goal = if reference {
            "(reference)".to_owned()
        } else if m(1, |r| r.p99_ms) <= GOAL_P99_MS {
            "met".to_owned()
        } else {
            "**not met**".to_owned()
        };
        t += &format!(
            "| {} | {:.2} ms | {:.2} ms | {:.2} ms | {:.2} ms | {:.0} | {:.2}× | {goal} |\n",
            q.label,
            m(0, |r| r.p50_ms),
            m(0, |r| r.p99_ms),
            m(1, |r| r.p50_ms),
            m(1, |r| r.p99_ms),
            m(1, |r| r.rps),
            m(1, |r| r.p50_ms) / m(0, |r| r.p50_ms),
        );
    }
    t += &format!(
        "\nMedians of {RUNS} runs of loadgen (one keep-alive HTTP/1.1 connection, one \
         request in flight: one operator at the page) per request and size; every \
         answer was 2xx. Seeding took {:.0} s for {small} users and {:.0} s for {large} \
         (one API-equivalent write per user).\n",
        seeded.first().map_or(0.0, |d| d.as_secs_f64()),
        seeded.get(1).map_or(0.0, |d| d.as_secs_f64()),
    );
    t
}
