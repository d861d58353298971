//! Switchyard as a system service: where an installation puts things, the systemd
//! units it writes, and the few system commands it runs (`useradd`, `systemctl`).
//! `switchyard node install` / `uninstall` ([`super::node`]) use it; every step
//! prints one line saying what it changed.
//!
//! The layout: the binary at [`BIN`], a system user [`USER`] without a shell or a
//! home, state under [`STATE`] (`node/`, `panel/`), units in [`UNIT_DIR`]. Each
//! unit runs as that user with only `CAP_NET_BIND_SERVICE` (ports under 1024), no new
//! privileges, a read-only system (`ProtectSystem=strict`) but its state directory,
//! and a high open-file limit (each user connection is a file descriptor or two).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

/// Where the binary is installed.
pub(crate) const BIN: &str = "/usr/local/bin/switchyard";
/// The system user services run as.
pub(crate) const USER: &str = "switchyard";
/// The state root; each service has a directory under it.
pub(crate) const STATE: &str = "/var/lib/switchyard";
/// Where units are written.
pub(crate) const UNIT_DIR: &str = "/etc/systemd/system";
/// Open files per service: 2^20, the kernel's default `nr_open`.
const NOFILE: u32 = 1 << 20;

/// One service: its unit's name, what it says it is, and the command it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Service {
    /// The unit's name without `.service`: `switchyard-node`.
    pub(crate) name: &'static str,
    /// Its `Description=`.
    pub(crate) description: &'static str,
    /// Its directory under [`STATE`]: `node`.
    pub(crate) state: &'static str,
    /// The subcommand and its arguments before `--state-dir`/`--data-dir`: `node`.
    pub(crate) args: &'static str,
    /// The flag naming its directory: `--state-dir`.
    pub(crate) dir_flag: &'static str,
}

/// The node's service.
pub(crate) const NODE: Service = Service {
    name: "switchyard-node",
    description: "Switchyard node (the data plane: inbounds, accounting, tunnels)",
    state: "node",
    args: "node",
    dir_flag: "--state-dir",
};

impl Service {
    /// Its state directory.
    pub(crate) fn state_dir(&self) -> PathBuf {
        Path::new(STATE).join(self.state)
    }

    /// Its unit file.
    pub(crate) fn unit_path(&self) -> PathBuf {
        Path::new(UNIT_DIR).join(format!("{}.service", self.name))
    }

    /// The command that runs it, for a system without systemd.
    pub(crate) fn by_hand(&self) -> String {
        format!(
            "runuser -u {USER} -- {BIN} {} {} {}",
            self.args,
            self.dir_flag,
            self.state_dir().display()
        )
    }

    /// The unit, running `bin`.
    pub(crate) fn unit(&self, bin: &Path) -> String {
        let Self {
            name,
            description,
            state,
            args,
            dir_flag,
        } = self;
        let dir = self.state_dir();
        let bin = bin.display();
        let dir = dir.display();
        format!(
            "# Written by `switchyard {args} install`; `switchyard {args} uninstall` removes it.
[Unit]
Description={description}
After=network-online.target
Wants=network-online.target

[Service]
Type=exec
User={USER}
Group={USER}
ExecStart={bin} {args} {dir_flag} {dir}
Restart=on-failure
RestartSec=2s
TimeoutStopSec=30s
KillMode=mixed
SyslogIdentifier={name}
Environment=NO_COLOR=1
StateDirectory=switchyard/{state}
StateDirectoryMode=0700
UMask=0077
LimitNOFILE={NOFILE}
AmbientCapabilities=CAP_NET_BIND_SERVICE
CapabilityBoundingSet=CAP_NET_BIND_SERVICE
NoNewPrivileges=yes
ProtectSystem=strict
ProtectHome=yes
PrivateTmp=yes
PrivateDevices=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
RestrictNamespaces=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
LockPersonality=yes
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK
SystemCallArchitectures=native

[Install]
WantedBy=multi-user.target
"
        )
    }
}

/// Whether systemd runs this system (what `sd_booted` checks).
pub(crate) fn has_systemd() -> bool {
    Path::new("/run/systemd/system").is_dir()
}

/// Prints one step of an installation.
pub(crate) fn say(line: impl std::fmt::Display) {
    println!("switchyard: {line}");
}

/// Runs a system command; a failure names it and holds what it printed.
pub(crate) fn run(program: &str, args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new(program)
        .args(args)
        .output()
        .with_context(|| format!("running {program}"))?;
    if !out.status.success() {
        bail!(
            "`{program} {}` failed ({}): {}{}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stdout).trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whether the system user exists.
pub(crate) fn user_exists() -> bool {
    Command::new("getent")
        .args(["passwd", USER])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Makes the system user unless it exists; true when made.
pub(crate) fn ensure_user() -> anyhow::Result<bool> {
    if user_exists() {
        return Ok(false);
    }
    run(
        "useradd",
        &[
            "--system",
            "--user-group",
            "--no-create-home",
            "--home-dir",
            STATE,
            "--shell",
            "/usr/sbin/nologin",
            "--comment",
            "Switchyard",
            USER,
        ],
    )?;
    Ok(true)
}

/// Writes `content` to `path` (mode 0644) unless it holds exactly that; true when
/// written. The write goes to a temporary file renamed over the old one.
pub(crate) fn write_if_changed(path: &Path, content: &str) -> anyhow::Result<bool> {
    if std::fs::read_to_string(path).is_ok_and(|old| old == content) {
        return Ok(false);
    }
    let tmp = path.with_extension("tmp");
    let mut f =
        std::fs::File::create(&tmp).with_context(|| format!("writing {}", tmp.display()))?;
    f.write_all(content.as_bytes())
        .and_then(|()| f.sync_all())
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_node_unit_runs_the_node_hardened_as_its_user() {
        let u = NODE.unit(Path::new(BIN));
        for line in [
            "ExecStart=/usr/local/bin/switchyard node --state-dir /var/lib/switchyard/node",
            "User=switchyard",
            "StateDirectory=switchyard/node",
            "AmbientCapabilities=CAP_NET_BIND_SERVICE",
            "CapabilityBoundingSet=CAP_NET_BIND_SERVICE",
            "NoNewPrivileges=yes",
            "ProtectSystem=strict",
            "LimitNOFILE=1048576",
            "WantedBy=multi-user.target",
        ] {
            assert!(u.lines().any(|l| l == line), "{line} missing from\n{u}");
        }
        assert_eq!(
            NODE.unit_path(),
            Path::new("/etc/systemd/system/switchyard-node.service")
        );
        assert_eq!(
            NODE.by_hand(),
            "runuser -u switchyard -- /usr/local/bin/switchyard node --state-dir /var/lib/switchyard/node"
        );
    }

    #[test]
    fn the_node_unit_passes_systemd_analyze_verify() {
        let dir = tempfile::tempdir().unwrap();
        let unit = dir.path().join("switchyard-node.service");
        std::fs::write(&unit, NODE.unit(&std::env::current_exe().unwrap())).unwrap();
        let out = Command::new("systemd-analyze")
            .args(["verify", "--man=no"])
            .arg(&unit)
            .output()
            .expect("systemd-analyze (Debian's systemd package) runs");
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{said}");
        assert!(
            !said.contains("switchyard-node.service"),
            "no complaint about the unit: {said}"
        );
    }

    #[test]
    fn a_file_is_written_only_when_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.service");
        assert!(write_if_changed(&p, "a").unwrap());
        assert!(!write_if_changed(&p, "a").unwrap());
        assert!(write_if_changed(&p, "b").unwrap());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "b");
    }
}
