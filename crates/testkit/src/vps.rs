//! A "fresh VPS" for tests: a copy of a Debian root booted with `systemd-nspawn
//! --boot` (a real systemd as PID 1) inside a network namespace the test made.
//!
//! `cargo xtask peers` makes the root once with `debootstrap` (Debian bookworm,
//! minbase with systemd, dbus, curl, ca-certificates, iproute2, openssh-server and
//! nftables; see
//! `switchyard-peers`); [`root_dir`] finds it ([`ENV`], else
//! `<target>/peers/vps-bookworm`). [`Vps::boot`] copies it (`cp -a
//! --reflink=auto`) into `$TMPDIR/sy-vps-<pid>-<n>/root`, so a test may change
//! anything in it, and runs
//!
//! ```text
//! systemd-nspawn --register=no --keep-unit --boot --console=read-only
//!     --capability=CAP_NET_ADMIN -D <copy>
//!     --network-namespace-path=/run/netns/<ns> --machine=sy-vps-<pid>-<n>
//! ```
//!
//! `--console=read-only` because there is no terminal: nspawn gives the container a
//! pseudo-terminal and copies what it prints (systemd's boot messages) to its own
//! output, `nspawn.log` beside the copy ([`Vps::log_tail`]). `--keep-unit` and
//! `--register=no` because the host runs no systemd (nspawn fails with "Failed to
//! open system bus" otherwise). With `--keep-unit`, nspawn splits *its own* cgroup
//! into `supervisor` and `payload` (the container's systemd owns `payload`); two
//! containers started from one cgroup would share `payload`, so each is started from
//! a cgroup of its own, `sy-vps-<pid>-<n>` under the caller's in the `name=systemd`
//! and cgroup2 hierarchies (a `sh` wrapper moves itself there and `exec`s nspawn),
//! removed on drop.
//!
//! The container sees only the namespace's links: with [`crate::netns::pair`]'s
//! `client` it is `10.77.0.2` and reaches a listener in `servers` at `10.77.0.1`.
//! Its `/etc/resolv.conf` names no server, and the namespace has no route anywhere
//! else: nothing leaves the machine. [`Vps::sh`] runs a script inside, as root, in
//! all the container's namespaces (`nsenter` into its PID 1) with a clean
//! environment and a deadline. [`Vps::boot`] returns once `systemctl
//! is-system-running --wait` inside says `running` (or `degraded`).
//!
//! Booting takes 1 to 2.5 s on the 2-core development machine (a VM, ext4): the
//! copy 0.8 to 2.3 s (ext4 has no reflinks, so about 220 MB are copied; how long
//! depends on the page cache), systemd 0.2 s to `running`; two booting at once take
//! about 3.3 s each. Dropping a [`Vps`] halts the container (SIGTERM to nspawn, which
//! powers it off, in well under 2 s; SIGKILL after [`STOP_TIMEOUT`]), removes its
//! cgroups and the copy. Drop it before its namespace: the namespace lives on,
//! nameless, while the container is in it.
//!
//! Before booting, a process removes the `sy-vps-<pid>-*` containers whose process
//! is gone (and, before its first, those with its own pid): the leftovers of killed
//! test runs (their nspawn and everything in their cgroups killed, cgroups and copy
//! removed). Nothing else on the host is touched.
//!
//! This needs root, `systemd-nspawn` (Debian's `systemd-container`) and util-linux's
//! `nsenter`; errors name the command and what it printed.

use std::fs::{self, File};
use std::io::{Read, Seek};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Once;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use switchyard_peers::{PEERS_DIR, VPS_DIR, VPS_ENV, VPS_MARKER, vps_root_is_current};

use crate::netns::NetNs;

/// The variable holding the VPS root's absolute path (`cargo xtask test` sets it).
pub const ENV: &str = VPS_ENV;
/// How long [`Vps::boot`] waits for systemd to be up: it takes well under a second;
/// the bound is for a loaded machine.
pub const BOOT_TIMEOUT: Duration = Duration::from_secs(60);
/// The deadline of [`Vps::sh`] and [`Vps::sh_ok`] ([`Vps::sh_within`] takes one).
pub const SH_TIMEOUT: Duration = Duration::from_secs(120);
/// How long dropping a [`Vps`] waits for its systemd to power off before killing it.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// The `PATH` scripts run with inside.
pub const PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/// How much of nspawn's log errors include: its last lines.
const LOG_TAIL_LINES: usize = 40;
/// The prefix of every container's machine name, directory and cgroup.
const PREFIX: &str = "sy-vps-";

/// The number of the next container this process boots.
static NEXT: AtomicU64 = AtomicU64::new(0);
/// The clean-up of this process's own leftovers (a killed run's, whose pid it now
/// has), before its first container.
static SWEEP_OWN: Once = Once::new();

/// The VPS root `cargo xtask peers` made: [`ENV`] when set, else
/// `<target>/peers/vps-bookworm`; it must hold the marker `debootstrap`'s success
/// left, naming today's package list. Fails, saying to run `cargo xtask peers`, when there is none.
pub fn root_dir() -> Result<PathBuf> {
    if let Some(root) = std::env::var_os(ENV).map(PathBuf::from) {
        if vps_root_is_current(&root) {
            return Ok(root);
        }
        if root.join(VPS_MARKER).is_file() {
            bail!(
                "{ENV}={} was made from another package list than today's: run `cargo \
                 xtask peers` to make it again",
                root.display()
            );
        }
        bail!(
            "{ENV}={} but it holds no complete VPS root (no {VPS_MARKER}): run `cargo \
             xtask peers` to make one, or unset {ENV}",
            root.display()
        );
    }
    let mut looked = Vec::new();
    if let Some(target) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.ancestors().nth(3).map(Path::to_path_buf))
    {
        looked.push(target.join(PEERS_DIR).join(VPS_DIR));
    }
    if let Some(workspace) = Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2) {
        looked.push(workspace.join("target").join(PEERS_DIR).join(VPS_DIR));
    }
    looked.dedup();
    if let Some(found) = looked.iter().find(|p| vps_root_is_current(p)) {
        return Ok(found.clone());
    }
    if let Some(stale) = looked.iter().find(|p| p.join(VPS_MARKER).is_file()) {
        bail!(
            "the VPS root {} was made from another package list than today's: run `cargo \
             xtask peers` to make it again",
            stale.display()
        );
    }
    let looked: Vec<String> = looked.iter().map(|p| p.display().to_string()).collect();
    bail!(
        "the VPS root is not made ({ENV} is unset; looked at {}): run `cargo xtask peers` \
         (it needs debootstrap and systemd-container, and installs them)",
        looked.join(", ")
    )
}

/// A booted container in a namespace of the test's: halted and removed on drop.
#[derive(Debug)]
pub struct Vps {
    machine: String,
    /// `$TMPDIR/sy-vps-<pid>-<n>`: the copy (`root`), nspawn's log, the cgroup list.
    dir: PathBuf,
    root: PathBuf,
    log: PathBuf,
    /// The cgroups it was started from, one per hierarchy.
    cgroups: Vec<PathBuf>,
    nspawn: Option<Child>,
    /// The container's PID 1 (systemd), as the host sees it.
    leader: u32,
}

impl Vps {
    /// Copies the VPS root ([`root_dir`]) and boots it in `ns`, waiting (at most
    /// [`BOOT_TIMEOUT`]) until its systemd says `running` or `degraded`.
    pub fn boot(ns: &NetNs) -> Result<Self> {
        let source = root_dir()?;
        SWEEP_OWN.call_once(|| sweep_leftovers(true));
        sweep_leftovers(false);
        let machine = format!(
            "{PREFIX}{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let dir = std::env::temp_dir().join(&machine);
        fs::create_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut vps = Self {
            root: dir.join("root"),
            log: dir.join("nspawn.log"),
            machine,
            dir,
            cgroups: Vec::new(),
            nspawn: None,
            leader: 0,
        };
        make_cgroups(&vps.machine, &mut vps.cgroups)?;
        let list: Vec<String> = vps
            .cgroups
            .iter()
            .map(|c| c.display().to_string())
            .collect();
        fs::write(vps.dir.join("cgroups"), list.join("\n"))
            .context("writing the container's cgroup list")?;
        run(Command::new("cp")
            .args(["-a", "--reflink=auto"])
            .arg(&source)
            .arg(&vps.root))?;
        vps.start(ns)?;
        vps.wait_up(Instant::now() + BOOT_TIMEOUT)?;
        Ok(vps)
    }

    /// Host path of the container's root: files written here are seen inside, and
    /// the other way round.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Its machine name for nspawn (and its directory's): `sy-vps-<pid>-<n>`.
    pub fn machine(&self) -> &str {
        &self.machine
    }

    /// The host pid of `systemd-nspawn` (gone once the [`Vps`] is dropped).
    pub fn nspawn_pid(&self) -> Option<u32> {
        self.nspawn.as_ref().map(Child::id)
    }

    /// `sh -c script` inside, as root, with [`PATH`]; its exit status and output.
    /// Killed, and an error, after [`SH_TIMEOUT`].
    pub fn sh(&self, script: &str) -> Result<Output> {
        self.sh_within(script, SH_TIMEOUT)
    }

    /// Like [`Self::sh`], but fails (with the script, its exit status, standard
    /// output and error) unless it exits 0; its standard output.
    pub fn sh_ok(&self, script: &str) -> Result<String> {
        let out = self.sh(script)?;
        if !out.status.success() {
            bail!(
                "`{script}` in {} failed ({}):\nstdout: {}\nstderr: {}",
                self.machine,
                out.status,
                String::from_utf8_lossy(&out.stdout).trim_end(),
                String::from_utf8_lossy(&out.stderr).trim_end()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// `sh -c script` inside with a deadline of `deadline`: in the mount, UTS, IPC,
    /// network, PID and cgroup namespaces of the container's PID 1 and its root
    /// (`nsenter`), with only `PATH`, `HOME`, `USER` and `LOGNAME` set. Its output
    /// goes to files, so a daemon the script leaves behind cannot hold it up.
    pub fn sh_within(&self, script: &str, deadline: Duration) -> Result<Output> {
        let mut command = Command::new("nsenter");
        command
            .env_clear()
            .envs([
                ("PATH", PATH),
                ("HOME", "/root"),
                ("USER", "root"),
                ("LOGNAME", "root"),
            ])
            .arg(format!("--target={}", self.leader))
            .args(["--mount", "--uts", "--ipc", "--net", "--pid", "--cgroup"])
            .args(["--root", "--wd", "sh", "-c", script]);
        let what = format!("`{script}` in {}", self.machine);
        exec(command, &self.dir, deadline, &what)
    }

    /// The last lines of nspawn's output (its own messages and systemd's on the
    /// console), colours removed, for error messages.
    pub fn log_tail(&self) -> String {
        let text = fs::read(&self.log).unwrap_or_default();
        let text = strip_ansi(&String::from_utf8_lossy(&text));
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n")
    }

    /// Spawns nspawn from the container's own cgroups.
    fn start(&mut self, ns: &NetNs) -> Result<()> {
        let log =
            File::create(&self.log).with_context(|| format!("creating {}", self.log.display()))?;
        // `sh -c WRAPPER sh N procs… nspawn-args…`: joins the N cgroups, then execs
        // nspawn (same pid).
        const WRAPPER: &str = "n=$1; shift; while [ \"$n\" -gt 0 ]; do echo $$ > \"$1\" || \
                               exit 125; shift; n=$((n - 1)); done; exec systemd-nspawn \"$@\"";
        let mut command = Command::new("sh");
        command
            .args(["-c", WRAPPER, "sh"])
            .arg(self.cgroups.len().to_string())
            .args(self.cgroups.iter().map(|c| c.join("cgroup.procs")))
            .args([
                "--register=no",
                "--keep-unit",
                "--boot",
                "--console=read-only",
                // Its own namespace's firewall (nftables) is its to set, as on a VPS;
                // nspawn keeps CAP_NET_ADMIN only for a network of its own making.
                "--capability=CAP_NET_ADMIN",
            ])
            .arg("-D")
            .arg(&self.root)
            .arg(format!("--network-namespace-path=/run/netns/{}", ns.name()))
            .arg(format!("--machine={}", self.machine))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        let child = command.spawn().context(
            "running systemd-nspawn (from Debian's systemd-container; `cargo xtask peers` \
             installs it)",
        )?;
        self.nspawn = Some(child);
        Ok(())
    }

    /// Waits for the container's PID 1, then until `systemctl is-system-running
    /// --wait` says `running` or `degraded`.
    fn wait_up(&mut self, deadline: Instant) -> Result<()> {
        let mut last = String::from("(PID 1 not started yet)");
        loop {
            if let Some(status) = self
                .nspawn
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                bail!(
                    "systemd-nspawn for {} exited ({status}) before the system was up; it \
                     printed:\n{}",
                    self.machine,
                    self.log_tail()
                );
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                bail!(
                    "{} was not up {BOOT_TIMEOUT:?} after booting; last: {last}; nspawn \
                     printed:\n{}",
                    self.machine,
                    self.log_tail()
                );
            }
            if self.leader == 0 {
                self.leader = self.find_leader().unwrap_or(0);
            }
            if self.leader != 0 {
                let out = self
                    .sh_within("systemctl is-system-running --wait", left)
                    .with_context(|| {
                        format!(
                            "{} was not up {BOOT_TIMEOUT:?} after booting; nspawn printed:\n{}",
                            self.machine,
                            self.log_tail()
                        )
                    })?;
                let state = String::from_utf8_lossy(&out.stdout).trim().to_owned();
                match state.as_str() {
                    "running" | "degraded" => return Ok(()),
                    "maintenance" | "stopping" => bail!(
                        "{} booted into {state:?}; nspawn printed:\n{}",
                        self.machine,
                        self.log_tail()
                    ),
                    _ => {
                        last = format!(
                            "`systemctl is-system-running --wait` said {state:?} ({}): {}",
                            out.status,
                            String::from_utf8_lossy(&out.stderr).trim()
                        );
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// nspawn's child that is systemd in a PID namespace of its own: the
    /// container's PID 1.
    fn find_leader(&self) -> Option<u32> {
        let nspawn = self.nspawn.as_ref()?.id();
        let own = fs::metadata("/proc/self/ns/pid").ok()?.ino();
        let tasks = fs::read_dir(format!("/proc/{nspawn}/task")).ok()?;
        tasks
            .flatten()
            .filter_map(|task| fs::read_to_string(task.path().join("children")).ok())
            .flat_map(|children| {
                children
                    .split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok())
                    .collect::<Vec<_>>()
            })
            .find(|pid| {
                fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "systemd")
                    && fs::metadata(format!("/proc/{pid}/ns/pid")).is_ok_and(|m| m.ino() != own)
            })
    }
}

impl Drop for Vps {
    fn drop(&mut self) {
        if let Some(mut nspawn) = self.nspawn.take()
            && !stop(&mut nspawn)
        {
            eprintln!(
                "systemd-nspawn for {} did not stop in {STOP_TIMEOUT:?} and was killed; \
                     it printed:\n{}",
                self.machine,
                self.log_tail()
            );
        }
        remove(&self.dir, &self.cgroups);
    }
}

/// Halts the container: SIGTERM to nspawn powers it off; SIGKILL after
/// [`STOP_TIMEOUT`] (its PID 1 dies with it, and with it everything inside).
/// Whether it stopped in time.
fn stop(nspawn: &mut Child) -> bool {
    if matches!(nspawn.try_wait(), Ok(Some(_))) {
        return true;
    }
    let _ = Command::new("kill")
        .args(["-TERM", &nspawn.id().to_string()])
        .stderr(Stdio::null())
        .status();
    let deadline = Instant::now() + STOP_TIMEOUT;
    while Instant::now() < deadline {
        if !matches!(nspawn.try_wait(), Ok(None)) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = nspawn.kill();
    let _ = nspawn.wait();
    false
}

/// Kills what is left in `cgroups`, removes them and the container's directory.
fn remove(dir: &Path, cgroups: &[PathBuf]) {
    for cgroup in cgroups {
        if let Err(e) = remove_cgroup(cgroup) {
            eprintln!("{e:#}");
        }
    }
    if dir.exists()
        && let Err(e) = fs::remove_dir_all(dir)
    {
        eprintln!("removing {}: {e}", dir.display());
    }
}

/// `sy-vps-<name>` under the caller's cgroup in the `name=systemd` and cgroup2
/// hierarchies (those mounted; none is fine: nspawn then uses the caller's own).
fn make_cgroups(name: &str, made: &mut Vec<PathBuf>) -> Result<()> {
    let own = fs::read_to_string("/proc/self/cgroup").context("reading /proc/self/cgroup")?;
    let mountinfo =
        fs::read_to_string("/proc/self/mountinfo").context("reading /proc/self/mountinfo")?;
    for line in mountinfo.lines() {
        // `… mount-point options - fstype source super-options`
        let fields: Vec<&str> = line.split(' ').collect();
        let Some(dash) = fields.iter().position(|f| *f == "-") else {
            continue;
        };
        let (Some(point), Some(fstype), Some(options)) =
            (fields.get(4), fields.get(dash + 1), fields.get(dash + 3))
        else {
            continue;
        };
        let controller = match *fstype {
            "cgroup2" => "",
            "cgroup" if options.split(',').any(|o| o == "name=systemd") => "name=systemd",
            _ => continue,
        };
        let Some(path) = own.lines().find_map(|l| {
            let (_, rest) = l.split_once(':')?;
            let (controllers, path) = rest.split_once(':')?;
            (controllers == controller).then_some(path)
        }) else {
            continue;
        };
        if path.contains("..") {
            continue; // another cgroup namespace's view: leave it alone
        }
        let cgroup = Path::new(point)
            .join(path.trim_start_matches('/'))
            .join(name);
        fs::create_dir(&cgroup).with_context(|| format!("creating cgroup {}", cgroup.display()))?;
        made.push(cgroup);
    }
    Ok(())
}

/// Kills every process in `cgroup` and below, then removes it bottom-up.
fn remove_cgroup(cgroup: &Path) -> Result<()> {
    if !cgroup.exists() {
        return Ok(());
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let pids = cgroup_pids(cgroup);
        if pids.is_empty() {
            break;
        }
        if Instant::now() >= deadline {
            bail!(
                "processes {pids:?} in {} outlived SIGKILL for 5 s",
                cgroup.display()
            );
        }
        let mut kill = Command::new("kill");
        kill.arg("-KILL").args(pids.iter().map(u32::to_string));
        let _ = kill.stderr(Stdio::null()).status();
        std::thread::sleep(Duration::from_millis(20));
    }
    rmdir_tree(cgroup).with_context(|| format!("removing cgroup {}", cgroup.display()))
}

fn cgroup_pids(cgroup: &Path) -> Vec<u32> {
    let mut pids: Vec<u32> = fs::read_to_string(cgroup.join("cgroup.procs"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect();
    for entry in fs::read_dir(cgroup).into_iter().flatten().flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            pids.extend(cgroup_pids(&entry.path()));
        }
    }
    pids
}

/// A cgroup's directories are removed with `rmdir`, children first (their files
/// cannot be unlinked).
fn rmdir_tree(dir: &Path) -> std::io::Result<()> {
    for entry in fs::read_dir(dir)?.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            rmdir_tree(&entry.path())?;
        }
    }
    fs::remove_dir(dir)
}

/// Removes the containers of processes that are gone, and with `own` this
/// process's (its pid was a killed run's before).
fn sweep_leftovers(own: bool) {
    let Ok(entries) = fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    let me = std::process::id();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = leftover_pid(&name) else {
            continue;
        };
        let gone = if pid == me {
            own
        } else {
            !Path::new(&format!("/proc/{pid}")).exists()
        };
        if !gone {
            continue;
        }
        // Its nspawn first (found by its machine name), then whatever is left in its
        // cgroups; then the cgroups and the copy.
        let machine = format!("--machine={name}");
        for proc in fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Ok(cmdline) = fs::read(proc.path().join("cmdline")) else {
                continue;
            };
            if cmdline
                .split(|b| *b == 0)
                .any(|arg| arg == machine.as_bytes())
            {
                let _ = Command::new("kill")
                    .args(["-KILL", &proc.file_name().to_string_lossy()])
                    .stderr(Stdio::null())
                    .status();
            }
        }
        let cgroups: Vec<PathBuf> = fs::read_to_string(entry.path().join("cgroups"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.ends_with(&name))
            .map(PathBuf::from)
            .collect();
        remove(&entry.path(), &cgroups);
    }
}

/// The pid in a name `sy-vps-<pid>-<n>`.
fn leftover_pid(name: &str) -> Option<u32> {
    crate::netns::leftover_pid_after(PREFIX, name)
}

/// Runs `command` (its output to unnamed files in `dir`) until it exits or
/// `deadline` passes; then its process group is killed and it is an error.
fn exec(mut command: Command, dir: &Path, deadline: Duration, what: &str) -> Result<Output> {
    use std::os::unix::process::CommandExt;

    let mut stdout = tempfile::tempfile_in(dir).context("creating a file for stdout")?;
    let mut stderr = tempfile::tempfile_in(dir).context("creating a file for stderr")?;
    command
        .stdin(Stdio::null())
        .stdout(stdout.try_clone()?)
        .stderr(stderr.try_clone()?)
        .process_group(0);
    let mut child = command
        .spawn()
        .with_context(|| format!("running {what} (nsenter is util-linux's)"))?;
    let ends = Instant::now() + deadline;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if Instant::now() >= ends {
            kill_script(&mut child);
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let read = |file: &mut File| -> Result<Vec<u8>> {
        let mut bytes = Vec::new();
        file.rewind()?;
        file.read_to_end(&mut bytes)?;
        Ok(bytes)
    };
    let (stdout, stderr) = (read(&mut stdout)?, read(&mut stderr)?);
    let Some(status) = status else {
        bail!(
            "{what} did not finish within {deadline:?} and was killed:\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&stdout).trim_end(),
            String::from_utf8_lossy(&stderr).trim_end()
        );
    };
    Ok(Output {
        status,
        stdout,
        stderr,
    })
}

/// Kills a script that ran out of time: everything in nsenter's process group but
/// nsenter itself, which then reaps its child and exits. (Killing nsenter first
/// would leave its child, inside the container, to the host's init: a zombie the
/// container's systemd waits for when it powers off.) nsenter too after a second.
fn kill_script(nsenter: &mut Child) {
    let group = nsenter.id();
    let members: Vec<String> = fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|proc| {
            let pid: u32 = proc.file_name().to_str()?.parse().ok()?;
            let stat = fs::read_to_string(proc.path().join("stat")).ok()?;
            // `pid (comm) state ppid pgrp …`; comm may hold anything but `)`.
            let pgrp: u32 = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(2)?
                .parse()
                .ok()?;
            (pgrp == group && pid != group).then(|| pid.to_string())
        })
        .collect();
    if !members.is_empty() {
        let _ = Command::new("kill")
            .arg("-KILL")
            .args(&members)
            .stderr(Stdio::null())
            .status();
    }
    let grace = Instant::now() + Duration::from_secs(1);
    while Instant::now() < grace {
        if !matches!(nsenter.try_wait(), Ok(None)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = nsenter.kill();
    let _ = nsenter.wait();
}

/// Runs a host command to its end; an error with what it printed unless it succeeds.
fn run(command: &mut Command) -> Result<()> {
    let line = format!("{command:?}");
    let out = command
        .output()
        .with_context(|| format!("running {line}"))?;
    if !out.status.success() {
        bail!(
            "{line} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// `text` without ANSI escape sequences (systemd's colours on the console).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'[') {
            chars.next();
            // Parameters and intermediates, up to the final byte `@`..`~`.
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leftover_names_are_read() {
        assert_eq!(leftover_pid("sy-vps-1234-0"), Some(1234));
        assert_eq!(leftover_pid("sy-vps-1234-17"), Some(1234));
        assert_eq!(leftover_pid("sy-1234-0"), None);
        assert_eq!(leftover_pid("sy-vps-x-0"), None);
        assert_eq!(leftover_pid("sy-vps-12"), None);
    }

    #[test]
    fn colours_are_removed() {
        assert_eq!(
            strip_ansi(
                "[\u{1b}[0;32m  OK  \u{1b}[0m] Reached target \u{1b}[0;1;39mbasic\u{1b}[0m."
            ),
            "[  OK  ] Reached target basic."
        );
    }

    #[test]
    fn a_missing_root_says_to_run_xtask_peers() {
        if std::env::var_os(ENV).is_some() {
            return; // the message for a set variable is the other branch
        }
        if let Err(e) = root_dir() {
            let e = e.to_string();
            assert!(e.contains("cargo xtask peers") && e.contains(ENV), "{e}");
        }
    }
}
