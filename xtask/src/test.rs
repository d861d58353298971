//! `cargo xtask test`: the one test command, for a developer and for CI alike.
//!
//! Order: formatting, lints, the pinned peers, the workspace's tests, its doctests.
//! The cheap checks come first so a formatting slip fails in seconds, not after a
//! full build. The first failing step stops the run, with a hint on what to do.
//!
//! Installing the peers is mostly waiting on downloads (pip, apt, debootstrap), so on
//! a fresh machine it runs as a second `xtask peers` process while clippy compiles,
//! its output kept in `target/xtask-peers.log`; the `peers` step then only finds what
//! that process put in place (or, had it failed, fails itself with the reason).

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

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
    let build_env = build_env(root)?;
    let [fmt, clippy] = checks(root, &build_env);
    run_step(fmt)?;
    let early = EarlyPeers::start(root)?;
    let linted = run_step(clippy);
    early.finish();
    linted?;
    println!("\n== peers");
    let peers = peers::install(root).context("step `peers` failed: see the message above")?;
    for step in tests(root, &peers, &build_env) {
        run_step(step)?;
    }
    println!("\nxtask test: all steps passed");
    Ok(())
}

/// `xtask peers` running beside clippy, its output going to a log file.
struct EarlyPeers {
    child: Child,
    log: PathBuf,
}

impl EarlyPeers {
    fn start(root: &Path) -> Result<Self> {
        let target = peers::target_dir(root)?;
        fs::create_dir_all(&target)
            .with_context(|| format!("cannot create {}", target.display()))?;
        let log = target.join("xtask-peers.log");
        let out = File::create(&log).with_context(|| format!("cannot create {}", log.display()))?;
        let err = out
            .try_clone()
            .with_context(|| format!("cannot share {}", log.display()))?;
        let exe = std::env::current_exe().context("cannot find the running xtask binary")?;
        let child = Command::new(&exe)
            .arg("peers")
            .current_dir(root)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .with_context(|| format!("cannot start `{} peers`", exe.display()))?;
        println!("(installing the peers meanwhile: {})", log.display());
        Ok(Self { child, log })
    }

    /// Waits for the install. A failure is only reported here: the `peers` step that
    /// follows tries again in the foreground and stops the run with the reason.
    fn finish(mut self) {
        match self.child.wait() {
            Ok(status) if status.success() => {}
            Ok(status) => println!(
                "\n(the install beside clippy failed ({status}); its log: {})",
                self.log.display()
            ),
            Err(err) => println!("\n(cannot wait for the install beside clippy: {err})"),
        }
    }
}

fn run_step(step: Step) -> Result<()> {
    println!("\n== {}", step.name);
    step.cmd
        .run()
        .with_context(|| format!("step `{}` failed: {}", step.name, step.hint))
}

/// What every build of the run is told. A build from nothing (a fresh clone, as CI
/// has) gains nothing from incremental compilation's cache and pays for writing it,
/// so there it is off; a developer's warm target directory keeps it.
fn build_env(root: &Path) -> Result<Vec<&'static str>> {
    // xtask itself is built by now, so the mark of a warm directory is the panel's
    // library having been built or checked before.
    let deps = peers::target_dir(root)?.join("debug").join("deps");
    let fresh = !fs::read_dir(&deps).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("libswitchyard_panel-")
        })
    });
    if fresh {
        println!("(a fresh target directory: building without incremental compilation)");
        Ok(vec!["CARGO_INCREMENTAL=0"])
    } else {
        Ok(Vec::new())
    }
}

fn checks(root: &Path, build_env: &[&str]) -> [Step; 2] {
    [
        Step {
            name: "fmt",
            cmd: Cmd::cargo(root).args(["fmt", "--all", "--", "--check"]),
            hint: "run `cargo fmt --all` and commit the result",
        },
        Step {
            name: "clippy",
            cmd: Cmd::new("env").dir(root).args(build_env).args([
                "cargo",
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

fn tests(root: &Path, peers: &Peers, build_env: &[&str]) -> [Step; 2] {
    // nextest runs each test in its own process and reports better; it does not run
    // doctests, so those get their own step either way (and `cargo test` skips them
    // here so they don't run twice). The tests learn where the peers are from the
    // environment, set through `env` so the printed line shows it and nextest passes
    // it on to every test process.
    let cargo = Cmd::new("env")
        .dir(root)
        .args(build_env)
        .args(peers.env())
        .args(["cargo"]);
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
            cmd: Cmd::new("env").dir(root).args(build_env).args([
                "cargo",
                "test",
                "--workspace",
                "--doc",
            ]),
            hint: "see the failing doctests above",
        },
    ]
}
