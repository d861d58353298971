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
/// The panel's config file, written by `switchyard panel install`.
pub(crate) const PANEL_CONFIG: &str = "/etc/switchyard/panel.toml";
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
    /// The subcommand and its arguments before `--state-dir`/`--data`: `node`.
    pub(crate) args: &'static str,
    /// The subcommand alone, for messages: `node`.
    pub(crate) command: &'static str,
    /// The flag naming its directory: `--state-dir`.
    pub(crate) dir_flag: &'static str,
}

/// The node's service.
pub(crate) const NODE: Service = Service {
    name: "switchyard-node",
    description: "Switchyard node (the data plane: inbounds, accounting, tunnels)",
    state: "node",
    args: "node",
    command: "node",
    dir_flag: "--state-dir",
};

/// The panel's service.
pub(crate) const PANEL: Service = Service {
    name: "switchyard-panel",
    description: "Switchyard panel (servers, users, subscriptions, node channels)",
    state: "panel",
    args: "panel --config /etc/switchyard/panel.toml",
    command: "panel",
    dir_flag: "--data",
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
            command,
            dir_flag,
        } = self;
        let dir = self.state_dir();
        let bin = bin.display();
        let dir = dir.display();
        format!(
            "# Written by `switchyard {command} install`; `switchyard {command} uninstall` removes it.
[Unit]
Description={description}
After=network-online.target
Wants=network-online.target

[Service]
Type=notify
NotifyAccess=main
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

/// Stops, disables and removes the service's unit (each step said).
pub(crate) fn remove_unit(service: &Service) -> anyhow::Result<()> {
    let name = format!("{}.service", service.name);
    let unit = service.unit_path();
    if has_systemd() && unit.exists() {
        run("systemctl", &["disable", "--now", &name])?;
        say(format_args!("stopped and disabled {name}"));
    }
    if remove_file(&unit)? {
        say(format_args!("removed {}", unit.display()));
        if has_systemd() {
            run("systemctl", &["daemon-reload"])?;
        }
    }
    Ok(())
}

/// Removes the system user, the binary and the empty state root, unless `other`
/// (the panel for the node, the node for the panel) is installed here too.
pub(crate) fn remove_shared(other: &Service) -> anyhow::Result<()> {
    if other.unit_path().exists() {
        say(format_args!(
            "the {} is installed here too: kept the system user and the binary",
            other.command
        ));
        return Ok(());
    }
    let state = Path::new(STATE);
    if state.exists() && std::fs::read_dir(state).is_ok_and(|mut d| d.next().is_none()) {
        std::fs::remove_dir(state).with_context(|| format!("removing {}", state.display()))?;
    }
    if user_exists() {
        run("userdel", &[USER])?;
        say(format_args!("removed the system user {USER}"));
    }
    if remove_file(Path::new(BIN))? {
        say(format_args!("removed {BIN}"));
    }
    Ok(())
}

/// Gives `dir` and everything in it to the system user.
pub(crate) fn chown_to_user(dir: &Path) -> anyhow::Result<()> {
    let path = dir
        .to_str()
        .with_context(|| format!("{} is not UTF-8", dir.display()))?;
    run("chown", &["-R", &format!("{USER}:{USER}"), path])?;
    Ok(())
}

/// Puts this executable at [`BIN`] (renamed over the old one, so a service running
/// it keeps its copy until it restarts), unless it is that file or a package's
/// (`/usr/bin`, which the package manager owns and upgrades).
pub(crate) fn place_binary() -> anyhow::Result<PathBuf> {
    let me = std::env::current_exe().context("finding this executable")?;
    let bin = Path::new(BIN);
    if me == bin {
        say(format_args!("{BIN} is this binary"));
        return Ok(bin.into());
    }
    if me.starts_with("/usr/bin") {
        say(format_args!(
            "the service runs the packaged {}",
            me.display()
        ));
        return Ok(me);
    }
    std::fs::create_dir_all("/usr/local/bin").context("creating /usr/local/bin")?;
    let tmp = bin.with_extension("new");
    std::fs::copy(&me, &tmp)
        .with_context(|| format!("copying {} to {}", me.display(), tmp.display()))?;
    std::fs::rename(&tmp, bin).with_context(|| format!("writing {BIN}"))?;
    say(format_args!("installed {BIN} (from {})", me.display()));
    Ok(bin.into())
}

/// Removes a file if it is there; true when removed.
pub(crate) fn remove_file(path: &Path) -> anyhow::Result<bool> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e).with_context(|| format!("removing {}", path.display())),
    }
}

/// Must run as root (it makes users and units).
pub(crate) fn must_be_root() -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt as _;
    // `/proc/self` belongs to the process's effective user.
    let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
    if !root {
        bail!("run this as root: it creates a system user and a service");
    }
    Ok(())
}

/// Writes the unit, reloads systemd, enables and (re)starts the service, and waits
/// until it is active.
pub(crate) fn start_unit(service: &Service, bin: &Path) -> anyhow::Result<()> {
    let unit = service.unit_path();
    if write_if_changed(&unit, &service.unit(bin))? {
        say(format_args!("wrote {}", unit.display()));
    } else {
        say(format_args!("{} is up to date", unit.display()));
    }
    let name = format!("{}.service", service.name);
    run("systemctl", &["daemon-reload"])?;
    run("systemctl", &["enable", &name])?;
    run("systemctl", &["restart", &name])?;
    say(format_args!("enabled and started {name}"));
    wait_active(&name)
}

/// Waits up to 10 s for the unit to be active; a failure shows its last log lines.
fn wait_active(name: &str) -> anyhow::Result<()> {
    for _ in 0..50 {
        let state = Command::new("systemctl")
            .args(["is-active", name])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default();
        match state.as_str() {
            "active" => return Ok(()),
            "failed" => break,
            _ => std::thread::sleep(std::time::Duration::from_millis(200)),
        }
    }
    let log = run("journalctl", &["-u", name, "-n", "20", "--no-pager"]).unwrap_or_default();
    bail!("{name} did not start; its last log lines:\n{log}")
}

/// Whether systemd runs this system (what `sd_booted` checks).
/// This executable's path: the file at the path it was started from. Once an
/// upgrade renamed a new binary over it, `/proc/self/exe` names the old file with
/// " (deleted)" after it; the new one is at the path without it.
pub(crate) fn this_executable() -> anyhow::Result<PathBuf> {
    let me = std::env::current_exe().context("this binary's path")?;
    Ok(
        match me.to_str().and_then(|p| p.strip_suffix(" (deleted)")) {
            Some(p) => PathBuf::from(p),
            None => me,
        },
    )
}

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

/// Makes the system user unless it exists, and says which.
pub(crate) fn ensure_user() -> anyhow::Result<()> {
    if user_exists() {
        say(format_args!("the system user {USER} is there"));
        return Ok(());
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
    say(format_args!("created the system user {USER}"));
    Ok(())
}

/// Says that this system has no systemd and how to start `service` by hand.
pub(crate) fn say_no_systemd(service: &Service) {
    say("this system does not run systemd (no /run/systemd/system): no service was made");
    say(format_args!(
        "start the {} by hand (and from your init system at boot):\n    {}",
        service.command,
        service.by_hand()
    ));
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
            "Type=notify",
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
        let p = PANEL.unit(Path::new(BIN));
        assert!(
            p.lines().any(|l| l
                == "ExecStart=/usr/local/bin/switchyard panel --config /etc/switchyard/panel.toml --data /var/lib/switchyard/panel"),
            "{p}"
        );
        assert!(
            p.starts_with("# Written by `switchyard panel install`"),
            "{p}"
        );
    }

    #[test]
    fn the_units_pass_systemd_analyze_verify() {
        let dir = tempfile::tempdir().unwrap();
        let me = std::env::current_exe().unwrap();
        let node = dir.path().join("switchyard-node.service");
        std::fs::write(&node, NODE.unit(&me)).unwrap();
        let panel = dir.path().join("switchyard-panel.service");
        std::fs::write(&panel, PANEL.unit(&me)).unwrap();
        let out = Command::new("systemd-analyze")
            .args(["verify", "--man=no"])
            .args([&node, &panel])
            .output()
            .expect("systemd-analyze (Debian's systemd package) runs");
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{said}");
        assert!(
            !said.contains("switchyard-"),
            "no complaint about the units: {said}"
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
