//! Debian packages from apt, for the peers Debian ships (PostgreSQL, Chromium and its
//! driver).

use std::fs;

use anyhow::Result;

use crate::cmd::Cmd;

/// `apt-get install packages`, after `apt-get update` when the package lists are
/// missing or the install fails on stale ones (a list older than the security
/// update the machine already has offers versions that no longer match).
pub(super) fn install(packages: &[&str]) -> Result<()> {
    let install = Cmd::new("apt-get")
        .args(["install", "-y", "--no-install-recommends"])
        .args(packages);
    let update = Cmd::new("apt-get").args(["update"]);
    if !has_package_lists() {
        update.run()?;
        return install.run();
    }
    if install.run().is_ok() {
        return Ok(());
    }
    println!("(apt-get install failed: updating the package lists and trying again)");
    update.run()?;
    install.run()
}

fn has_package_lists() -> bool {
    fs::read_dir("/var/lib/apt/lists").is_ok_and(|entries| {
        entries
            .filter_map(|e| e.ok())
            .any(|e| e.file_name().to_string_lossy().contains("_Packages"))
    })
}
