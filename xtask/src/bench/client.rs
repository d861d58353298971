//! `cargo xtask bench client`: the client's failover benchmark.
//!
//! It installs the pinned peers (sing-box, mihomo), builds our release binary, runs
//! `crates/client/benches/failover/` (one fault timeline through our client, sing-box's
//! `urltest`, mihomo's `url-test` and mihomo's `fallback` at once, then the simulator's
//! models on the same timeline) and writes its report into `docs/benchmarks.md`
//! between the `bench:client` markers. The timeline takes about six minutes, so a
//! `cargo xtask bench` without NAME leaves it out.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};

use super::{DOC, measured_with, panel, target_dir, write_section};
use crate::cmd::Cmd;
use crate::peers;
use crate::section::Section;

/// The NAME that runs it.
pub(crate) const CLIENT: &str = "client";
const SECTION: Section = Section {
    doc: DOC,
    begin: "<!-- bench:client:begin -->",
    end: "<!-- bench:client:end -->",
};
/// The variables the bench reads: our binary, where to put its report, where to keep
/// its logs and scenario files.
const BINARY_ENV: &str = "SWITCHYARD_BIN";
const REPORT_ENV: &str = "SWITCHYARD_CLIENT_BENCH_REPORT";
const DIR_ENV: &str = "SWITCHYARD_CLIENT_BENCH_DIR";

/// Peers, our release binary, the bench, its report into the doc.
pub(crate) fn bench_client(root: &Path) -> Result<()> {
    let peers = peers::install(root)?;
    let build = Cmd::cargo(root).args(["build", "--release", "-p", "switchyard"]);
    let binary = panel::build_switchyard(root)?;
    let target = target_dir(root)?;
    let report = target.join("client-bench.md");
    let work = target.join("client-bench");
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
        "switchyard-client",
        "--bench",
        "failover",
    ];
    Cmd::new("env")
        .dir(root)
        .args(peers.env())
        .args([
            format!("{BINARY_ENV}={}", binary.display()),
            format!("{REPORT_ENV}={}", report.display()),
            format!("{DIR_ENV}={}", work.display()),
        ])
        .args(cargo_bench)
        .run()?;
    let text = fs::read_to_string(&report)
        .with_context(|| format!("reading the client bench's report {}", report.display()))?;
    let how = format!(
        "`cargo xtask bench client` (`{}`, then `{}`; logs and scenario files in \
         `target/client-bench/`)",
        build.line(),
        cargo_bench.join(" ")
    );
    let body = format!("{}\n\n{text}", measured_with(&how));
    write_section(
        root,
        &SECTION,
        &SECTION.wrap("cargo xtask bench client", &body),
    )
}
