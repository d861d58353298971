//! `cargo xtask test`: the one test command, for a developer and for CI alike.
//!
//! Order: formatting, lints, the pinned peers, the workspace's tests, its doctests.
//! The cheap checks come first so a formatting slip fails in seconds, not after a
//! full build. The first failing step stops the run, with a hint on what to do.

use std::path::Path;

use anyhow::{Context, Result};

use crate::cmd::Cmd;
use crate::peers::{self, Peers};
use crate::toolchain;

/// One step of the run: a command and what to do when it fails.
struct Step {
    name: &'static str,
    cmd: Cmd,
    hint: &'static str,
}

/// Runs every step in order, stopping at the first failure.
pub(crate) fn run(root: &Path) -> Result<()> {
    toolchain::ensure_components(root)?;
    let [fmt, clippy] = checks(root);
    run_step(fmt)?;
    run_step(clippy)?;
    println!("\n== peers");
    let peers = peers::install(root).context("step `peers` failed: see the message above")?;
    for step in tests(root, &peers) {
        run_step(step)?;
    }
    println!("\nxtask test: all steps passed");
    Ok(())
}

fn run_step(step: Step) -> Result<()> {
    println!("\n== {}", step.name);
    step.cmd
        .run()
        .with_context(|| format!("step `{}` failed: {}", step.name, step.hint))
}

fn checks(root: &Path) -> [Step; 2] {
    [
        Step {
            name: "fmt",
            cmd: Cmd::cargo(root).args(["fmt", "--all", "--", "--check"]),
            hint: "run `cargo fmt --all` and commit the result",
        },
        Step {
            name: "clippy",
            cmd: Cmd::cargo(root).args([
                "clippy",
                "--workspace",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ]),
            hint: "fix the lints printed above",
        },
    ]
}

fn tests(root: &Path, peers: &Peers) -> [Step; 2] {
    // nextest runs each test in its own process and reports better; it does not run
    // doctests, so those get their own step either way (and `cargo test` skips them
    // here so they don't run twice). The tests learn where the peers are from the
    // environment, set through `env` so the printed line shows it and nextest passes
    // it on to every test process.
    let cargo = Cmd::new("env").dir(root).args(peers.env()).args(["cargo"]);
    let tests = if toolchain::has_nextest(root) {
        cargo.args(["nextest", "run", "--workspace"])
    } else {
        println!("\n(cargo-nextest not found: using cargo test)");
        cargo.args(["test", "--workspace", "--lib", "--bins", "--tests"])
    };
    [
        Step {
            name: "tests",
            cmd: tests,
            hint: "see the failing tests above",
        },
        Step {
            name: "doctests",
            cmd: Cmd::cargo(root).args(["test", "--workspace", "--doc"]),
            hint: "see the failing doctests above",
        },
    ]
}
