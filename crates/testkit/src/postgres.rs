//! A private PostgreSQL cluster for the length of a test.
//!
//! [`Postgres::start`] runs `initdb` into a fresh temporary directory, starts the
//! `postgres` server on a free port of 127.0.0.1 (its unix socket inside the same
//! directory, so it never meets the machine's own cluster), waits until it accepts
//! connections and creates [`DATABASE`]. [`Postgres::url`] is that database's URL and
//! [`Postgres::fresh_database`] creates another one, so the tests of one binary can
//! share a cluster with a database each. Dropping it stops the server (`pg_ctl stop
//! -m immediate`, then a kill) and removes the directory.
//!
//! Authentication is `trust`: any local connection is let in as [`USER`], the
//! cluster's superuser. That is fine for a cluster that lives in a temporary
//! directory and listens on 127.0.0.1 only; it is never a production setting.
//! Durability is off too (`fsync`, `synchronous_commit`, `full_page_writes`):
//! a test's database does not need to survive a power cut, and it starts faster.
//!
//! [`bin_dir`] finds the server's binaries: [`BIN_ENV`] when set (`cargo xtask test`
//! sets it), else the highest version under `/usr/lib/postgresql/*/bin` (Debian's
//! layout), else the directory of `initdb` on `PATH`. Missing binaries are an error
//! saying to run `cargo xtask peers`, which installs Debian's `postgresql`; a test
//! never skips because of it.
//!
//! `initdb` and `postgres` refuse to run as root. When the tests run as root, both
//! run as the `postgres` system user (which Debian's package creates) through
//! `setpriv`, and the temporary directory is handed to that user.
//!
//! Starting is blocking (a second or so); from an async test, call it directly or in
//! `spawn_blocking`. The server lives as long as the value: a `static` holding one
//! is never dropped and leaves the server running after the tests.

use std::fs::{self, File};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use switchyard_peers::postgres;
use tempfile::TempDir;

use crate::LOCALHOST;

/// The variable naming the directory holding `initdb`, `postgres`, `pg_ctl`,
/// `pg_isready` and `psql`.
pub const BIN_ENV: &str = postgres::BIN_ENV;

/// The cluster's superuser, the user in every URL.
pub const USER: &str = "switchyard";

/// The database [`Postgres::start`] creates and [`Postgres::url`] names.
pub const DATABASE: &str = "switchyard";

/// The server's `max_connections`: room for several connection pools at once (sqlx
/// opens 10 per pool by default), above PostgreSQL's default of 100.
pub const MAX_CONNECTIONS: u32 = 200;

/// How long [`Postgres::start`] waits for the server to accept connections. It is
/// ready within a second; the bound only matters when something is wrong, and 30 s
/// leaves room for a loaded machine.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The system user the server runs as when the tests run as root.
const SYSTEM_USER: &str = "postgres";

/// How many ports are tried when another process takes the free one first.
const PORT_ATTEMPTS: usize = 5;

/// How much of the server log errors include: its last lines.
const LOG_TAIL_LINES: usize = 40;

/// The directory holding the PostgreSQL binaries: [`BIN_ENV`] when set, else the
/// highest version under `/usr/lib/postgresql/*/bin`, else the directory `initdb` on
/// `PATH` resolves to (`switchyard_peers::postgres::find_bin_dir`, the search `cargo
/// xtask peers` makes too). Fails, saying to run `cargo xtask peers`, when none has
/// them.
pub fn bin_dir() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os(BIN_ENV).map(PathBuf::from) {
        ensure!(
            postgres::has_programs(&dir),
            "{BIN_ENV}={} but it does not hold all of {}: run `cargo xtask peers` to \
             install PostgreSQL, or unset {BIN_ENV}",
            dir.display(),
            postgres::PROGRAMS.join(", ")
        );
        return Ok(dir);
    }
    if let Some(dir) = postgres::find_bin_dir() {
        return Ok(dir);
    }
    bail!(
        "PostgreSQL's server binaries ({}) were not found ({BIN_ENV} is unset; looked in \
         /usr/lib/postgresql/*/bin and on PATH): run `cargo xtask peers`, which installs \
         Debian's postgresql (or `cargo xtask test`, which does it first)",
        postgres::PROGRAMS.join(", ")
    )
}

/// A running private PostgreSQL cluster, stopped and deleted when dropped.
///
/// When the test panics while this is alive, the server log's tail is printed to
/// standard error.
#[derive(Debug)]
pub struct Postgres {
    bin: PathBuf,
    port: u16,
    child: Child,
    /// `Some(user)` when the server runs as another user (the tests run as root).
    run_as: Option<&'static str>,
    data: PathBuf,
    log_path: PathBuf,
    // Held for its removal on drop; declared last so the server stops first.
    dir: TempDir,
}

impl Postgres {
    /// Creates a cluster in a fresh temporary directory, starts it on a free port of
    /// 127.0.0.1, waits (at most [`START_TIMEOUT`]) until it accepts connections and
    /// creates [`DATABASE`]. Errors carry the tool's output or the server log's tail.
    pub fn start() -> Result<Self> {
        let bin = bin_dir()?;
        let run_as = if effective_uid()? == 0 {
            Some(SYSTEM_USER)
        } else {
            None
        };
        let dir = tempfile::Builder::new()
            .prefix("switchyard-pg-")
            .tempdir()
            .context("creating a temporary directory for PostgreSQL")?;
        let (data, socket) = (dir.path().join("data"), dir.path().join("socket"));
        fs::create_dir(&socket).with_context(|| format!("creating {}", socket.display()))?;
        if let Some(user) = run_as {
            let (uid, gid) = system_user(user)?;
            for path in [dir.path(), &socket] {
                std::os::unix::fs::chown(path, Some(uid), Some(gid))
                    .with_context(|| format!("handing {} to the {user} user", path.display()))?;
            }
        }
        let initdb = as_user(run_as, &bin.join("initdb"))
            .arg("-D")
            .arg(&data)
            .args([
                "-U",
                USER,
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-locale",
                "-N",
            ])
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("running {}", bin.join("initdb").display()))?;
        if !initdb.status.success() {
            bail!("initdb failed ({}): {}", initdb.status, said(&initdb));
        }
        let log_path = dir.path().join("postgres.log");

        let mut attempt = 1;
        let (port, child) = loop {
            let port = crate::free_port()?;
            let mut child =
                spawn_server(&bin, run_as, &data, &socket, &log_path, port, dir.path())?;
            match wait_ready(&mut child, &bin, port, &log_path) {
                Ok(()) => break (port, child),
                Err(err) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    // Another process took the port between free_port and the bind.
                    if attempt >= PORT_ATTEMPTS || !log_tail(&log_path).contains("already in use") {
                        return Err(err);
                    }
                    attempt += 1;
                }
            }
        };
        let pg = Self {
            bin,
            port,
            child,
            run_as,
            data,
            log_path,
            dir,
        };
        pg.create_database(DATABASE)?;
        Ok(pg)
    }

    /// The URL of [`DATABASE`]: `postgres://switchyard@127.0.0.1:PORT/switchyard`.
    pub fn url(&self) -> String {
        self.database_url(DATABASE)
    }

    /// The URL of the database `name` in this cluster (whether or not it exists).
    pub fn database_url(&self, name: &str) -> String {
        format!("postgres://{USER}@{LOCALHOST}:{}/{name}", self.port)
    }

    /// Creates the database `name` (letters, digits and `_`, at most 63 bytes) and
    /// returns its URL, so each test gets its own database in a shared cluster. Fails
    /// when it exists already.
    pub fn fresh_database(&self, name: &str) -> Result<String> {
        self.create_database(name)?;
        Ok(self.database_url(name))
    }

    /// Runs `sql` with `psql` in `database` (stopping at the first error) and returns
    /// what it printed, unaligned and without headers (`psql -At`), so one row per
    /// line and columns separated by `|`.
    pub fn psql(&self, database: &str, sql: &str) -> Result<String> {
        let out = Command::new(self.bin.join("psql"))
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-w"])
            .args(["-h", &LOCALHOST.to_string(), "-p", &self.port.to_string()])
            .args(["-U", USER, "-d", database, "-c", sql])
            .env_remove("PGPASSWORD")
            .stdin(Stdio::null())
            .output()
            .context("running psql")?;
        if !out.status.success() {
            bail!(
                "psql in database {database} failed ({}) on {sql:?}: {}",
                out.status,
                said(&out)
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// The port it listens on, on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The directory holding the PostgreSQL binaries it runs.
    pub fn bin_dir(&self) -> &Path {
        &self.bin
    }

    /// The cluster's temporary directory (data, socket and log), removed on drop.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The last lines of the server log.
    pub fn log_tail(&self) -> String {
        log_tail(&self.log_path)
    }

    fn create_database(&self, name: &str) -> Result<()> {
        ensure!(
            !name.is_empty()
                && name.len() <= 63
                && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'),
            "database name {name:?}: use letters, digits and _ (at most 63 bytes)"
        );
        self.psql("postgres", &format!("CREATE DATABASE \"{name}\""))
            .with_context(|| format!("creating database {name}"))?;
        Ok(())
    }

    /// Stops the server (immediate shutdown: no checkpoint, the data is thrown away),
    /// then makes sure the process is gone.
    fn stop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let stopped = as_user(self.run_as, &self.bin.join("pg_ctl"))
                .args(["stop", "-m", "immediate", "-w", "-t", "10", "-D"])
                .arg(&self.data)
                .current_dir(self.dir.path())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !stopped {
                let _ = self.child.kill();
            }
        }
        let _ = self.child.wait();
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "--- postgres log ({}), last lines ---\n{}\n--- end of postgres log ---",
                self.log_path.display(),
                self.log_tail()
            );
        }
        self.stop();
    }
}

/// Polls `pg_isready` until the server `child` accepts connections on `port`.
fn wait_ready(child: &mut Child, bin: &Path, port: u16, log_path: &Path) -> Result<()> {
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if let Some(status) = child.try_wait()? {
            bail!(
                "postgres exited ({status}) before accepting connections; its log ends \
                 with:\n{}",
                log_tail(log_path)
            );
        }
        let ready = Command::new(bin.join("pg_isready"))
            .args(["-q", "-h", &LOCALHOST.to_string(), "-p", &port.to_string()])
            .args(["-U", USER, "-d", "postgres"])
            .stdin(Stdio::null())
            .status()
            .context("running pg_isready")?;
        if ready.success() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!(
                "postgres did not accept connections on {LOCALHOST}:{port} within \
                 {START_TIMEOUT:?}; its log ends with:\n{}",
                log_tail(log_path)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn log_tail(log_path: &Path) -> String {
    let text = fs::read_to_string(log_path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(LOG_TAIL_LINES);
    lines[start..].join("\n")
}

fn spawn_server(
    bin: &Path,
    run_as: Option<&'static str>,
    data: &Path,
    socket: &Path,
    log_path: &Path,
    port: u16,
    cwd: &Path,
) -> Result<Child> {
    let log = File::options()
        .create(true)
        .append(true)
        .open(log_path)
        .with_context(|| format!("opening {}", log_path.display()))?;
    let settings = [
        format!("listen_addresses={LOCALHOST}"),
        format!("port={port}"),
        format!("unix_socket_directories={}", socket.display()),
        format!("max_connections={MAX_CONNECTIONS}"),
        "fsync=off".to_owned(),
        "synchronous_commit=off".to_owned(),
        "full_page_writes=off".to_owned(),
    ];
    let mut server = as_user(run_as, &bin.join("postgres"));
    server.arg("-D").arg(data);
    for setting in &settings {
        server.args(["-c", setting]);
    }
    server
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .with_context(|| format!("starting {}", bin.join("postgres").display()))
}

/// `program`, run as `user` when given. `setpriv` execs the program itself, so the
/// child's pid is the program's and killing it reaches the server.
fn as_user(user: Option<&str>, program: &Path) -> Command {
    match user {
        None => Command::new(program),
        Some(user) => {
            let mut c = Command::new("setpriv");
            c.args(["--reuid", user, "--regid", user, "--init-groups", "--"])
                .arg(program);
            c
        }
    }
}

/// The effective user id: the owner of `/proc/self`.
fn effective_uid() -> Result<u32> {
    Ok(fs::metadata("/proc/self")
        .context("reading /proc/self for the effective user id")?
        .uid())
}

/// `user`'s uid and gid from `/etc/passwd`.
fn system_user(user: &str) -> Result<(u32, u32)> {
    let passwd = fs::read_to_string("/etc/passwd").context("reading /etc/passwd")?;
    passwd_entry(&passwd, user).with_context(|| {
        format!(
            "the tests run as root, so PostgreSQL must run as the {user} user, and there is \
             none: run `cargo xtask peers`, which installs Debian's postgresql (it creates \
             the user)"
        )
    })
}

fn passwd_entry(passwd: &str, user: &str) -> Option<(u32, u32)> {
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        (fields.next()? == user).then_some(())?;
        let _password = fields.next()?;
        Some((fields.next()?.parse().ok()?, fields.next()?.parse().ok()?))
    })
}

/// A tool's standard error and output, trimmed.
fn said(out: &Output) -> String {
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr).trim(),
        String::from_utf8_lossy(&out.stdout).trim()
    );
    text.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwd_lines_are_read() {
        let passwd = "root:x:0:0:root:/root:/bin/bash\n\
                      postgres:x:101:104:PostgreSQL administrator:/var/lib/postgresql:/bin/bash\n";
        assert_eq!(passwd_entry(passwd, "postgres"), Some((101, 104)));
        assert_eq!(passwd_entry(passwd, "nobody"), None);
    }
}
