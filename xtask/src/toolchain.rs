//! The Rust toolchain's optional parts the checks need.

use std::path::Path;

use anyhow::{Context, Result};

use crate::cmd::Cmd;

/// Adds `rustfmt` and `clippy` with rustup when `cargo fmt` or `cargo clippy` is
/// missing (a minimal rustup profile ships without them).
pub(crate) fn ensure_components(root: &Path) -> Result<()> {
    let missing: Vec<&str> = [("fmt", "rustfmt"), ("clippy", "clippy")]
        .into_iter()
        .filter(|(sub, _)| !Cmd::cargo(root).args([sub, "--version"]).succeeds_quietly())
        .map(|(_, component)| component)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Cmd::new("rustup")
        .dir(root)
        .args(["component", "add"])
        .args(&missing)
        .run()
        .with_context(|| {
            format!(
                "`cargo fmt` and `cargo clippy` need the {} component(s); install them with rustup",
                missing.join(" and ")
            )
        })
}

/// Whether cargo-nextest is installed.
pub(crate) fn has_nextest(root: &Path) -> bool {
    Cmd::cargo(root)
        .args(["nextest", "--version"])
        .succeeds_quietly()
}
