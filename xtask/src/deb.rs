//! `cargo xtask deb`: the Debian package of a release build. It builds
//! `switchyard` with the `dist` profile (release, without debug information) and has
//! the binary package itself
//! (`switchyard package deb`: the binary without its debug information, the node's
//! and the panel's units, a postinst that makes the system user), into
//! `target/deb/switchyard_<version>_<arch>.deb`.

use std::path::Path;

use anyhow::Result;

use crate::cmd::Cmd;

/// Builds the release binary and its `.deb`.
pub(crate) fn run(root: &Path) -> Result<()> {
    Cmd::cargo(root)
        .args(["build", "--profile", "dist", "-p", "switchyard"])
        .run()?;
    let target = crate::peers::target_dir(root)?;
    let out = target.join("deb");
    Cmd::new(target.join("dist/switchyard"))
        .args([
            "package".into(),
            "deb".into(),
            "--out".into(),
            out.into_os_string(),
        ])
        .run()
}
