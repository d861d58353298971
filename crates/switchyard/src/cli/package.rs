//! `switchyard package deb`: a Debian package of this very binary, with the node's
//! and the panel's units, for operators who prefer `apt install ./switchyard.deb`
//! (`cargo xtask deb` builds the release binary and runs this). Debian's own
//! `dpkg-deb` writes the archive; the units come from [`super::service`], so they are
//! the ones `node install` and `panel install` write.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;

use super::service::{NODE, PANEL};

/// Where the package puts the binary (Debian's place for packaged programs).
const PACKAGED_BIN: &str = "/usr/bin/switchyard";

/// Write a Debian package of this binary (with its units) into a directory.
#[derive(Debug, Args)]
pub(crate) struct DebArgs {
    /// The directory to write `switchyard_<version>_<arch>.deb` into.
    #[arg(long, default_value = ".")]
    out: PathBuf,
    /// Keep the debug information (the package is then several times larger).
    #[arg(long)]
    keep_debug: bool,
    /// Compress fast (gzip, level 1) rather than small (xz): for tests.
    #[arg(long)]
    fast: bool,
}

/// `DEBIAN/control`.
fn control(version: &str, arch: &str, glibc: &str, installed_kib: u64) -> String {
    format!(
        "Package: switchyard\n\
         Version: {version}\n\
         Architecture: {arch}\n\
         Maintainer: Switchyard <switchyard@localhost>\n\
         Depends: libc6 (>= {glibc})\n\
         Installed-Size: {installed_kib}\n\
         Section: net\n\
         Priority: optional\n\
         Description: self-hosted VPN platform: panel, node and client in one binary\n \
         Run `switchyard panel install` for the panel, or `switchyard node install TOKEN`\n \
         (the token from the panel) for a node; both write and start a hardened systemd\n \
         unit. The units shipped in /lib/systemd/system are not enabled.\n"
    )
}

/// `DEBIAN/postinst`: the system user the units run as.
const POSTINST: &str = "#!/bin/sh
set -e
if [ \"$1\" = configure ]; then
    getent passwd switchyard >/dev/null || useradd --system --user-group --no-create-home \\
        --home-dir /var/lib/switchyard --shell /usr/sbin/nologin --comment Switchyard switchyard
    if [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
    echo 'switchyard: installed; next: `switchyard panel install`, or `switchyard node install TOKEN` with a token from the panel'
fi
";

/// `DEBIAN/postrm`: a purge removes the state and the user.
const POSTRM: &str = "#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
if [ \"$1\" = purge ]; then
    rm -rf /var/lib/switchyard
    if getent passwd switchyard >/dev/null; then userdel switchyard || true; fi
fi
";

/// A system command's output, trimmed.
fn output(program: &str, args: &[&str]) -> anyhow::Result<String> {
    Ok(super::service::run(program, args)?.trim().to_owned())
}

fn write(path: &Path, text: &str, mode: u32) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    chmod(path, mode)
}

fn chmod(path: &Path, mode: u32) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("chmod {}", path.display()))
}

fn path_str(p: &Path) -> anyhow::Result<&str> {
    p.to_str()
        .with_context(|| format!("{} is not UTF-8", p.display()))
}

impl DebArgs {
    pub(crate) fn run(self) -> anyhow::Result<()> {
        let me = std::env::current_exe().context("finding this executable")?;
        let version = env!("CARGO_PKG_VERSION");
        let arch = output("dpkg", &["--print-architecture"])?;
        // The binary needs the C library it was built against, or a later one.
        let glibc = output("getconf", &["GNU_LIBC_VERSION"])?
            .trim_start_matches("glibc ")
            .to_owned();
        let stage = tempfile::tempdir().context("a staging directory")?;
        let root = stage.path();
        let bin = root.join(PACKAGED_BIN.trim_start_matches('/'));
        std::fs::create_dir_all(bin.parent().unwrap_or(root)).context("staging usr/bin")?;
        std::fs::copy(&me, &bin).with_context(|| format!("copying {}", me.display()))?;
        if !self.keep_debug {
            output("strip", &["--strip-debug", path_str(&bin)?])?;
        }
        chmod(&bin, 0o755)?;
        for service in [NODE, PANEL] {
            let unit = root.join(format!("lib/systemd/system/{}.service", service.name));
            write(&unit, &service.unit(Path::new(PACKAGED_BIN)), 0o644)?;
        }
        let size = std::fs::metadata(&bin).map(|m| m.len()).unwrap_or(0);
        write(
            &root.join("DEBIAN/control"),
            &control(version, &arch, &glibc, size.div_ceil(1024)),
            0o644,
        )?;
        write(&root.join("DEBIAN/postinst"), POSTINST, 0o755)?;
        write(&root.join("DEBIAN/postrm"), POSTRM, 0o755)?;
        std::fs::create_dir_all(&self.out)
            .with_context(|| format!("creating {}", self.out.display()))?;
        let deb = self.out.join(format!("switchyard_{version}_{arch}.deb"));
        let compression: &[&str] = if self.fast {
            &["-Zgzip", "-z1"]
        } else {
            &["-Zxz"]
        };
        let mut args = vec!["--root-owner-group"];
        args.extend_from_slice(compression);
        args.extend(["--build", path_str(root)?, path_str(&deb)?]);
        output("dpkg-deb", &args)?;
        println!("{}", deb.display());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_control_file_names_the_package_and_its_c_library() {
        let c = control("0.1.0", "amd64", "2.36", 51_200);
        assert!(
            c.starts_with("Package: switchyard\nVersion: 0.1.0\nArchitecture: amd64\n"),
            "{c}"
        );
        assert!(c.contains("\nDepends: libc6 (>= 2.36)\n"), "{c}");
        assert!(c.contains("\nInstalled-Size: 51200\n"), "{c}");
        // Continuation lines of the description start with a space.
        let description: Vec<&str> = c
            .lines()
            .skip_while(|l| !l.starts_with("Description:"))
            .collect();
        assert_eq!(description.len(), 4, "{c}");
        assert!(description[1..].iter().all(|l| l.starts_with(' ')), "{c}");
    }
}
