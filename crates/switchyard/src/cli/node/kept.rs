//! The binary a node keeps across restarts: one its panel handed over
//! (`<state_dir>/bin/switchyard-<sha256>`, [`switchyard_node::control::binary`]) and
//! upgraded to, named by `bin/current`.
//!
//! The service runs the installed binary (`/usr/local/bin/switchyard`); it cannot
//! replace it (`ProtectSystem=strict`). So at start, before anything else,
//! `switchyard node` runs the kept binary in its place ([`exec_kept`]) when
//! `bin/current` names one whose sha256 is its name. Every process of the node
//! knows the installed binary ([`installed`]): an upgrade without a binary (`switchyard
//! node upgrade`, after `apt install` or `--binary`) goes back to it.

use std::ffi::OsString;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};

use anyhow::Context;
use switchyard_node::control::binary;
use switchyard_node::handover::Command;

/// Set in a process started by [`exec_kept`]: it never execs again.
pub(crate) const EXEC_GUARD: &str = "SWITCHYARD_KEPT_BINARY";
/// The hidden option that tells a process started from a kept binary where the
/// installed one is.
pub(crate) const INSTALLED_FLAG: &str = "--installed-binary";

/// The installed binary: `flag` (`--installed-binary`, given to processes started
/// from a kept binary), else this executable.
pub(crate) fn installed(flag: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    match flag {
        Some(p) => Ok(p),
        None => crate::cli::service::this_executable(),
    }
}

/// How to start the next process on an upgrade: the installed binary (a request
/// naming a kept binary starts that one instead) with `args` after the global
/// options, and the installed binary's path.
pub(crate) fn next_command(args: Vec<OsString>, installed: &Path) -> anyhow::Result<Command> {
    let mut next = super::serving::next_command(args)?;
    next.program = installed.to_owned();
    next.args
        .extend([INSTALLED_FLAG.into(), installed.as_os_str().to_owned()]);
    Ok(next)
}

/// Whether `a` and `b` are the same file.
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Before the runtime starts: when `bin/current` of `state_dir` names a kept binary
/// whose sha256 is its name and which is not this executable, runs it in this
/// process's place (same PID, same arguments, plus where `installed` is). Returns
/// when it does not (or cannot), and this binary serves. A process started by an
/// upgrade, or by this function, never does.
pub(crate) fn exec_kept(state_dir: &Path, installed: &Path) {
    if std::env::var_os(switchyard_node::handover::ENV).is_some()
        || std::env::var_os(EXEC_GUARD).is_some()
    {
        return;
    }
    let Some(sha) = binary::current(state_dir) else {
        return;
    };
    // The kept binary was written by the node's own user: root never runs it (a
    // node that could write it must not gain root through it).
    if rustix::process::geteuid().is_root() {
        tracing::warn!(
            "{}/{} names a binary the panel handed over; as root, running {} instead",
            binary::BIN_DIR,
            binary::CURRENT_FILE,
            installed.display()
        );
        return;
    }
    let kept = binary::binary_path(state_dir, &sha);
    if !kept.is_file() {
        tracing::warn!(
            "{}/{} names {}, which is not there: running {}",
            binary::BIN_DIR,
            binary::CURRENT_FILE,
            kept.display(),
            installed.display()
        );
        return;
    }
    if same_file(&kept, Path::new("/proc/self/exe")) {
        return;
    }
    match binary::hash_file(&kept) {
        Ok(h) if h == sha => {}
        Ok(h) => {
            tracing::error!(
                "{} has sha256 {h}, not the one its name says: not running it; running {}",
                kept.display(),
                installed.display()
            );
            return;
        }
        Err(e) => {
            tracing::error!(
                "reading {}: {e}; running {}",
                kept.display(),
                installed.display()
            );
            return;
        }
    }
    let mut args: Vec<OsString> = std::env::args_os().skip(1).collect();
    if !args.iter().any(|a| a == INSTALLED_FLAG) {
        args.extend([INSTALLED_FLAG.into(), installed.as_os_str().to_owned()]);
    }
    tracing::info!(
        "running the binary the panel handed over, {} (bin/current)",
        kept.display()
    );
    let e = std::process::Command::new(&kept)
        .args(args)
        .env(EXEC_GUARD, "1")
        .exec();
    tracing::error!(
        "starting {}: {e}; running {}",
        kept.display(),
        installed.display()
    );
}

/// Removes `bin/current` of `state_dir`: the next start runs the installed binary.
pub(crate) fn forget(state_dir: &Path) -> anyhow::Result<()> {
    let removed = binary::clear_current(state_dir).with_context(|| {
        format!(
            "removing {}",
            binary::bin_dir(state_dir)
                .join(binary::CURRENT_FILE)
                .display()
        )
    })?;
    if removed {
        crate::cli::service::say(format_args!(
            "the node no longer runs the binary the panel handed over at its next start ({} removed)",
            binary::bin_dir(state_dir)
                .join(binary::CURRENT_FILE)
                .display()
        ));
    }
    Ok(())
}
