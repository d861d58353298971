//! `cargo xtask fuzz [SECONDS]`: runs every cargo-fuzz target in `fuzz/` for SECONDS
//! each (20 by default) and fails when any of them finds a crash.
//!
//! cargo-fuzz needs nightly compiler flags (`-Zsanitizer=address`, coverage passes);
//! this machine has only stable Rust, so the runs set `RUSTC_BOOTSTRAP=1`, which lets
//! the stable compiler accept them. cargo-fuzz itself is installed with `cargo install
//! --locked` into `target/tools` the first time, not into the user's `~/.cargo`.
//!
//! Builds use cargo-fuzz's default profile (optimized, with debug assertions and
//! overflow checks) and AddressSanitizer. `-malloc_limit_mb=64` makes one allocation
//! over 64 MiB a crash: the parsers promise that no untrusted length drives a large
//! allocation. The corpus grows in `fuzz/corpus/` (ignored by git) from run to run; a
//! crash leaves its input in `fuzz/artifacts/TARGET/`.
//!
//! `cargo xtask test` does not run this (it would cost CI minutes); the proptests in
//! `crates/proto` cover the same properties on every `cargo test`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::cmd::{Cmd, Failed};

/// Seconds each target runs when no duration is given.
pub(crate) const DEFAULT_SECONDS: u64 = 20;

/// Installs cargo-fuzz when missing, then runs every target for `seconds`.
pub(crate) fn run(root: &Path, seconds: u64) -> Result<()> {
    let cargo_fuzz = ensure_cargo_fuzz(root)?;
    let fuzz_dir = root.join("fuzz");
    let listed = fuzz_command(&cargo_fuzz, &fuzz_dir, &["list"])
        .output()
        .context("could not run `cargo fuzz list`")?;
    if !listed.status.success() {
        bail!(
            "`cargo fuzz list` failed: {}",
            String::from_utf8_lossy(&listed.stderr)
        );
    }
    let targets: Vec<String> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect();
    if targets.is_empty() {
        bail!(
            "`cargo fuzz list` found no fuzz target in {}",
            fuzz_dir.display()
        );
    }
    let max_time = format!("-max_total_time={seconds}");
    let mut crashed = Vec::new();
    for target in &targets {
        println!("\n== fuzz {target} ({seconds} s)");
        let args = [
            "run",
            target.as_str(),
            "--",
            &max_time,
            "-malloc_limit_mb=64",
        ];
        if let Err(err) = run_printed(fuzz_command(&cargo_fuzz, &fuzz_dir, &args)) {
            eprintln!("xtask: {err:#}");
            crashed.push(target.clone());
        }
    }
    if !crashed.is_empty() {
        bail!(
            "fuzz targets failed: {}; the inputs are in fuzz/artifacts/TARGET/, replay one \
             with `RUSTC_BOOTSTRAP=1 cargo fuzz run TARGET fuzz/artifacts/TARGET/FILE` in fuzz/",
            crashed.join(", ")
        );
    }
    println!(
        "\nxtask fuzz: {} targets ran {seconds} s each, no crash",
        targets.len()
    );
    Ok(())
}

/// The cargo-fuzz binary in `target/tools`, installed there when missing.
fn ensure_cargo_fuzz(root: &Path) -> Result<PathBuf> {
    let tools = root.join("target").join("tools");
    let binary = tools.join("bin").join("cargo-fuzz");
    let works = |b: &Path| {
        Cmd::new(b.as_os_str())
            .args(["fuzz", "--version"])
            .succeeds_quietly()
    };
    if works(&binary) {
        return Ok(binary);
    }
    Cmd::cargo(root)
        .args(["install", "cargo-fuzz", "--locked", "--root"])
        .args([tools.as_os_str()])
        .run()
        .context("installing cargo-fuzz failed (it needs crates.io)")?;
    if !works(&binary) {
        bail!(
            "cargo-fuzz was installed but {} does not run",
            binary.display()
        );
    }
    Ok(binary)
}

/// `cargo-fuzz fuzz ARGS` in `fuzz/`, with the nightly flags allowed on stable.
fn fuzz_command(cargo_fuzz: &Path, fuzz_dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(cargo_fuzz);
    command
        .arg("fuzz")
        .args(args)
        .current_dir(fuzz_dir)
        .env("RUSTC_BOOTSTRAP", "1");
    command
}

/// Prints the command line, runs it, and fails with [`Failed`] unless it exits 0.
fn run_printed(mut command: Command) -> Result<()> {
    let line = format!(
        "RUSTC_BOOTSTRAP=1 cargo fuzz {}",
        command
            .get_args()
            .skip(1)
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!("$ (cd fuzz && {line})");
    let status = command
        .status()
        .with_context(|| format!("could not start `{line}`"))?;
    if status.success() {
        Ok(())
    } else {
        Err(Failed {
            line,
            code: status.code(),
        }
        .into())
    }
}
