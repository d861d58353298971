//! Debian packages from apt, for the peers Debian ships (PostgreSQL, Chromium and its
//! driver).

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

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

/// A program from a Debian package: `env`'s path when that variable is set (it must
/// name a file), else `debian` (the package's path), installing `package` with apt
/// when it is not there. `what` names it in messages.
pub(super) fn program(what: &str, env: &str, debian: &str, package: &str) -> Result<PathBuf> {
    if let Some(path) = std::env::var_os(env).map(PathBuf::from) {
        if !path.is_file() {
            bail!(
                "{env}={} but there is no file there: fix or unset it",
                path.display()
            );
        }
        println!("{what}: {} (from {env})", path.display());
        return Ok(path);
    }
    let path = Path::new(debian);
    if !path.is_file() {
        println!("{what}: not found, installing Debian's package with apt-get");
        install(&[package]).with_context(|| {
            format!(
                "installing {package} with apt-get failed: install Debian's {package} by hand \
                 (or set {env} to its binary)"
            )
        })?;
        if !path.is_file() {
            bail!("apt-get installed {package} but there is nothing at {debian}");
        }
    }
    Ok(path.to_path_buf())
}

/// The variable that tells the tests where the rule sets' packages are.
pub(super) const RULE_DEBS_ENV: &str = "SWITCHYARD_RULE_DEBS";

/// The Debian packages the panel's `rules refresh` reads (the countries' networks,
/// the ad lists), downloaded (not installed: `tor-geoipdb` would pull in tor) into
/// `peers/rule-debs`, in the versions this machine's apt offers.
pub(super) fn rule_debs(peers_dir: &Path) -> Result<PathBuf> {
    const PACKAGES: [&str; 2] = ["tor-geoipdb", "webext-ublock-origin-firefox"];
    let dir = peers_dir.join("rule-debs");
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let has = |package: &str| {
        fs::read_dir(&dir).is_ok_and(|entries| {
            entries.filter_map(|e| e.ok()).any(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.starts_with(&format!("{package}_")) && name.ends_with(".deb")
            })
        })
    };
    let missing: Vec<&str> = PACKAGES.into_iter().filter(|p| !has(p)).collect();
    if !missing.is_empty() {
        println!(
            "rule sets' packages: downloading {} with apt-get",
            missing.join(", ")
        );
        let download = Cmd::new("apt-get")
            .args(["download"])
            .args(&missing)
            .dir(&dir);
        if download.run().is_err() {
            println!("(apt-get download failed: updating the package lists and trying again)");
            Cmd::new("apt-get").args(["update"]).run()?;
            Cmd::new("apt-get")
                .args(["download"])
                .args(&missing)
                .dir(&dir)
                .run()
                .context("downloading the rule sets' packages with apt-get")?;
        }
    }
    Ok(dir)
}
