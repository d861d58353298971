//! schemathesis, the property-based tester the panel's API tests run against its
//! OpenAPI document.
//!
//! `cargo xtask peers` installs the pinned release into a venv at
//! `target/peers/schemathesis`; [`binary`] finds its `st` command: the path in [`ENV`]
//! when set (`cargo xtask test` sets it), else the venv under the target directory.
//! A missing command is an error telling to run `cargo xtask peers`; a test never
//! skips because of it. A test runs it like any program, e.g.
//! `st run http://127.0.0.1:PORT/openapi.json --checks all` (schemathesis 4's command
//! line).

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

/// The pinned schemathesis release (`xtask/src/peers/schemathesis.rs` installs the
/// same one).
pub const VERSION: &str = "4.32.5";

/// The variable holding the absolute path of schemathesis's `st` command.
pub const ENV: &str = "SWITCHYARD_SCHEMATHESIS";

/// The `st` command: [`ENV`] when set, else `<target>/peers/schemathesis/bin/st`.
/// Fails, saying to run `cargo xtask peers`, when neither is there.
pub fn binary() -> Result<PathBuf> {
    locate(std::env::var_os(ENV).map(PathBuf::from), &default_paths())
}

fn locate(from_env: Option<PathBuf>, defaults: &[PathBuf]) -> Result<PathBuf> {
    if let Some(path) = from_env {
        if path.is_file() {
            return Ok(path);
        }
        bail!(
            "{ENV}={} but there is no file there: run `cargo xtask peers` to install \
             schemathesis {VERSION}, or unset {ENV}",
            path.display()
        );
    }
    if let Some(found) = defaults.iter().find(|p| p.is_file()) {
        return Ok(found.clone());
    }
    let looked: Vec<String> = defaults.iter().map(|p| p.display().to_string()).collect();
    bail!(
        "schemathesis {VERSION} is not installed ({ENV} is unset; looked at {}): run \
         `cargo xtask peers` (or `cargo xtask test`, which does it first)",
        looked.join(", ")
    )
}

/// The venv's `st` under the target directory, an ancestor of the running test
/// executable (`<target>/debug/deps/...`), and under the workspace's `target/`.
fn default_paths() -> Vec<PathBuf> {
    let relative = Path::new("peers/schemathesis/bin/st");
    let mut paths = Vec::new();
    if let Ok(exe) = std::env::current_exe()
        && let Some(target) = exe.ancestors().nth(3)
    {
        paths.push(target.join(relative));
    }
    if let Some(workspace) = Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2) {
        paths.push(workspace.join("target").join(relative));
    }
    paths.dedup();
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_command_says_to_run_xtask_peers() {
        let nowhere = PathBuf::from("/nonexistent/st");
        let err = locate(Some(nowhere.clone()), &[]).unwrap_err().to_string();
        assert!(
            err.contains("cargo xtask peers") && err.contains(ENV),
            "{err}"
        );
        let err = locate(None, &[nowhere]).unwrap_err().to_string();
        assert!(
            err.contains("cargo xtask peers") && err.contains("/nonexistent/st"),
            "{err}"
        );
    }
}
