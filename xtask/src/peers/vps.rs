//! The tests' "fresh VPS": a Debian root made with `debootstrap`, which testkit's
//! `vps` copies and boots with `systemd-nspawn --boot` in a network namespace of the
//! test's.
//!
//! `debootstrap --variant=minbase --include=<VPS_PACKAGES> bookworm` into
//! `<target>/peers/vps-bookworm.tmp`, renamed to `vps-bookworm` when it succeeded,
//! and only then marked complete ([`VPS_MARKER`]): a root without the marker is
//! half-made (an interrupted run) and is made again, as is one whose marker names
//! another package list than [`VPS_PACKAGES`] (the marker holds the command), and a leftover `.tmp` is removed
//! first (after unmounting what an interrupted `debootstrap` left mounted in it). The
//! root gets no DNS (its `/etc/resolv.conf` names no server: the VPS only ever reaches
//! the addresses of its namespace) and no downloaded `.deb`s (smaller, faster to
//! copy). Debian's `debootstrap` and `systemd-container` (`systemd-nspawn`) come from
//! apt when missing. It takes about 35 s and 230 MB, once.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use switchyard_peers::{
    VPS_ENV, VPS_MARKER, VPS_MIRROR, VPS_PACKAGES, VPS_PROGRAMS, VPS_SUITE, vps_marker_text,
    vps_root_in, vps_root_is_current,
};

use super::{apt, which};
use crate::cmd::Cmd;

/// The VPS's root, made when missing or half-made; prints where it is. [`VPS_ENV`],
/// when set, is taken as it is (it must hold the marker).
pub(crate) fn vps(peers_dir: &Path) -> Result<PathBuf> {
    if let Some(root) = std::env::var_os(VPS_ENV).map(PathBuf::from) {
        if !root.join(VPS_MARKER).is_file() {
            bail!(
                "{VPS_ENV}={} but it has no {VPS_MARKER}: it is not a root made by `cargo \
                 xtask peers`; fix or unset it",
                root.display()
            );
        }
        println!("vps root: {} (from {VPS_ENV})", root.display());
        return Ok(root);
    }
    let root = vps_root_in(peers_dir);
    if root.join(VPS_MARKER).is_file() && !vps_root_is_current(&root) {
        println!(
            "vps root: {} was made from another package list; making it again",
            root.display()
        );
    }
    if !vps_root_is_current(&root) {
        tools()?;
        make(&root)?;
    }
    for program in VPS_PROGRAMS {
        if !root.join(program).is_file() {
            bail!(
                "the VPS root {} has no /{program}: delete it and run `cargo xtask peers` \
                 again",
                root.display()
            );
        }
    }
    println!(
        "vps root: {} (Debian {VPS_SUITE}, debootstrap)",
        root.display()
    );
    Ok(root)
}

/// `debootstrap` and `systemd-nspawn`, from apt when either is missing.
fn tools() -> Result<()> {
    let found = |program: &str| {
        which(program).is_some()
            || ["/usr/sbin", "/usr/bin"]
                .iter()
                .any(|dir| Path::new(dir).join(program).is_file())
    };
    if found("debootstrap") && found("systemd-nspawn") {
        return Ok(());
    }
    println!("vps root: debootstrap or systemd-nspawn missing, installing them with apt-get");
    apt::install(&["debootstrap", "systemd-container"]).context(
        "installing debootstrap and systemd-container with apt-get failed: install Debian's \
         debootstrap and systemd-container by hand",
    )?;
    if !found("debootstrap") || !found("systemd-nspawn") {
        bail!("apt-get installed debootstrap and systemd-container but they are not on PATH");
    }
    Ok(())
}

/// Makes the root: `debootstrap` into `<root>.tmp`, tidy, rename, mark.
fn make(root: &Path) -> Result<()> {
    let mut tmp = root.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    for dir in [&tmp, &root.to_path_buf()] {
        if dir.exists() {
            println!("vps root: removing the half-made {}", dir.display());
            unmount_under(dir);
            fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))?;
        }
    }
    if let Some(parent) = root.parent() {
        fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    let include = format!("--include={}", VPS_PACKAGES.join(","));
    let by_hand = format!(
        "debootstrap --variant=minbase {include} {VPS_SUITE} {} {VPS_MIRROR} && touch {}/{VPS_MARKER}",
        root.display(),
        root.display()
    );
    println!("vps root: making Debian {VPS_SUITE} with debootstrap (about 35 s)");
    Cmd::new("debootstrap")
        .args(["--variant=minbase", include.as_str(), VPS_SUITE])
        .args([tmp.clone().into_os_string(), OsString::from(VPS_MIRROR)])
        .run()
        .with_context(|| {
            format!(
                "debootstrap failed: it needs root and access to {VPS_MIRROR}; make the \
                 root by hand with `{by_hand}` (or set {VPS_ENV} to such a root)"
            )
        })?;
    // No DNS inside: the VPS only ever talks to the addresses of its namespace.
    let resolv = tmp.join("etc/resolv.conf");
    let _ = fs::remove_file(&resolv);
    fs::write(
        &resolv,
        "# No name server: the tests' VPS reaches only the addresses of its namespace.\n",
    )
    .with_context(|| format!("writing {}", resolv.display()))?;
    // The packages debootstrap downloaded: dead weight in every copy.
    let archives = tmp.join("var/cache/apt/archives");
    if let Ok(entries) = fs::read_dir(&archives) {
        for entry in entries.flatten() {
            if entry.path().extension().is_some_and(|e| e == "deb") {
                let _ = fs::remove_file(entry.path());
            }
        }
    }
    fs::rename(&tmp, root)
        .with_context(|| format!("renaming {} to {}", tmp.display(), root.display()))?;
    let marker = root.join(VPS_MARKER);
    fs::write(&marker, vps_marker_text()).with_context(|| format!("writing {}", marker.display()))
}

/// Unmounts (lazily, deepest first) whatever is mounted under `dir`: an interrupted
/// `debootstrap` leaves `/proc`, `/sys` or bind-mounted devices in its target, which
/// removing the directory must not reach into.
fn unmount_under(dir: &Path) {
    let Ok(dir) = dir.canonicalize() else {
        return;
    };
    let Ok(mountinfo) = fs::read_to_string("/proc/self/mountinfo") else {
        return;
    };
    let mut points: Vec<PathBuf> = mountinfo
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(|point| PathBuf::from(point.replace("\\040", " ")))
        .filter(|point| point.starts_with(&dir))
        .collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    for point in points {
        let _ = Cmd::new("umount")
            .args([OsString::from("-l"), point.into_os_string()])
            .run();
    }
}
