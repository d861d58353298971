//! `cargo xtask`: the one entry point for tests and benchmarks.
//!
//! - `cargo xtask test`: formatting, lints, the workspace's tests and doctests, in that
//!   order, stopping at the first failure ([`test`]).
//! - `cargo xtask bench [NAME]`: the criterion benchmarks and the node's end-to-end
//!   benchmark against sing-box and Xray (`cargo xtask bench node` for that one alone) and the
//!   tunnel's against rathole (`cargo xtask bench tunnel`), or the panel under HTTP
//!   load (`cargo xtask bench panel`, with the time a user change takes to reach a node), the
//!   users page with 10,000 and 100,000 users (`cargo xtask bench users`), then
//!   their medians and ratios against the references into `docs/benchmarks.md`
//!   ([`bench`]).
//! - `cargo xtask docs`: regenerates the command-made sections of the docs ([`docs`]).
//! - `cargo xtask peers`: installs the pinned real peers the tests drive, such as the
//!   sing-box client, schemathesis, PostgreSQL and Chromium, when missing ([`peers`]); `test`
//!   does this before the tests.
//! - `cargo xtask fuzz [SECONDS]`: runs every fuzz target for SECONDS each ([`fuzz`]).
//! - `cargo xtask deb`: the release build's Debian package in `target/deb` ([`deb`]).
//!
//! Every command run is printed first; a failing command's exit code becomes xtask's.

#![allow(
    clippy::disallowed_types,
    clippy::disallowed_methods,
    reason = "tests, benchmarks and tools time real processes by the wall clock"
)]

mod bench;
mod cmd;
mod deb;
mod docs;
mod fuzz;
mod peers;
mod section;
mod test;
mod toolchain;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

use crate::cmd::Failed;

/// Switchyard's development tasks.
#[derive(Parser)]
#[command(name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Check formatting and lints, then run every test of the workspace.
    Test,
    /// Run the benchmarks and write docs/benchmarks.md.
    Bench {
        /// `node`: only the node benchmark against sing-box and Xray; `tunnel`: only the tunnel
        /// benchmark against rathole; `panel`: the panel under HTTP load; anything else:
        /// only the
        /// criterion benchmarks whose name contains NAME (criterion's filter).
        name: Option<String>,
    },
    /// Regenerate the command-made sections of the docs (docs/auto.md's comparison).
    Docs,
    /// Install the peers the tests drive when missing (sing-box and schemathesis into
    /// target/peers, Debian's postgresql, chromium and chromium-driver with apt).
    Peers,
    /// Build the release binary and its Debian package into target/deb.
    Deb,
    /// Run every cargo-fuzz target in fuzz/ for SECONDS each; fail on a crash.
    Fuzz {
        /// Seconds per target.
        #[arg(default_value_t = fuzz::DEFAULT_SECONDS)]
        seconds: u64,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let done = repo_root().and_then(|root| match cli.task {
        Task::Test => test::run(&root),
        Task::Bench { name } => bench::run(&root, name.as_deref()),
        Task::Docs => docs::run(&root),
        Task::Peers => peers::run(&root),
        Task::Fuzz { seconds } => fuzz::run(&root, seconds),
        Task::Deb => deb::run(&root),
    });
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("\nxtask: {err:#}");
            let code = err
                .downcast_ref::<Failed>()
                .and_then(|f| f.code)
                .and_then(|c| u8::try_from(c).ok())
                .filter(|&c| c != 0)
                .unwrap_or(1);
            ExitCode::from(code)
        }
    }
}

/// The workspace root: xtask's own manifest directory is one level below it.
fn repo_root() -> Result<PathBuf> {
    let manifest_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let root = manifest_dir
        .parent()
        .context("xtask's manifest directory has no parent")?;
    Ok(root.to_path_buf())
}
