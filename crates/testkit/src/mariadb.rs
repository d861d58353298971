//! A private MariaDB server for the import tests (Marzban on MySQL): Debian's
//! `mariadb-server` binaries (`cargo xtask peers` installs the package and names
//! `mariadbd` in [`ENV`]), a fresh data directory in a temporary directory, a free
//! port of 127.0.0.1, `root` without a password, and one database made at start
//! with Marzban's own character set (its compose file's `utf8mb4`). Dropping it
//! stops the server and removes everything. A missing install is an error saying
//! what to run; a test never skips because of it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use tempfile::TempDir;

/// The variable naming `mariadbd` (`/usr/sbin/mariadbd` when unset).
pub const ENV: &str = "SWITCHYARD_MARIADB";

/// How long the server may take to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A running private server.
#[derive(Debug)]
pub struct MariaDb {
    port: u16,
    child: Child,
    log: PathBuf,
    // Held for its removal on drop; declared last so the server stops first.
    dir: TempDir,
}

impl MariaDb {
    /// Makes a data directory, starts the server on a free port of 127.0.0.1 with
    /// the database `database` (letters, digits, `_`), and waits until it answers.
    pub fn start(database: &str) -> Result<Self> {
        if database.is_empty()
            || !database
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            bail!("database name {database:?}: use letters, digits and _");
        }
        let server = std::env::var_os(ENV)
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/usr/sbin/mariadbd"));
        if !server.is_file() {
            bail!(
                "{} is not there: run `cargo xtask peers` (it installs Debian's \
                 mariadb-server) or set {ENV} to mariadbd",
                server.display()
            );
        }
        let install = ["/usr/bin/mariadb-install-db", "/usr/bin/mysql_install_db"]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| p.is_file())
            .context("mariadb-install-db is missing: reinstall Debian's mariadb-server")?;
        let root = std::fs::metadata("/proc/self")
            .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
            .unwrap_or(false);
        let dir = tempfile::Builder::new()
            .prefix("switchyard-mariadb-")
            .tempdir()?;
        let data = dir.path().join("data");
        // Its own temporary directory: servers of tests running side by side in the
        // shared /tmp trip over each other's temporary tables.
        let tmp = dir.path().join("tmp");
        std::fs::create_dir(&tmp)?;
        let mut init = Command::new(&install);
        init.arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--tmpdir={}", tmp.display()))
            .env("TMPDIR", &tmp)
            .args(["--auth-root-authentication-method=normal", "--skip-test-db"]);
        if root {
            init.arg("--user=root");
        }
        let out = init
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("running {}", install.display()))?;
        if !out.status.success() {
            bail!(
                "{} failed: {}",
                install.display(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let init_file = dir.path().join("init.sql");
        std::fs::write(
            &init_file,
            format!(
                "CREATE DATABASE `{database}` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;\n"
            ),
        )?;
        let log = dir.path().join("mariadb.log");
        let port = crate::free_port()?;
        let mut server_cmd = Command::new(&server);
        server_cmd
            .arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--tmpdir={}", tmp.display()))
            .arg(format!("--socket={}", dir.path().join("socket").display()))
            .arg(format!("--pid-file={}", dir.path().join("pid").display()))
            .arg(format!("--log-error={}", log.display()))
            .arg(format!("--init-file={}", init_file.display()))
            .arg(format!("--port={port}"))
            .args([
                "--bind-address=127.0.0.1",
                "--skip-name-resolve",
                "--character-set-server=utf8mb4",
                "--collation-server=utf8mb4_unicode_ci",
                "--innodb-buffer-pool-size=32M",
            ]);
        if root {
            server_cmd.arg("--user=root");
        }
        let child = server_cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {}", server.display()))?;
        let mut db = Self {
            port,
            child,
            log,
            dir,
        };
        db.wait_ready()?;
        Ok(db)
    }

    fn wait_ready(&mut self) -> Result<()> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!("mariadbd exited ({status}): {}", self.log_tail());
            }
            if self.log_tail().contains("ready for connections")
                && std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok()
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "mariadbd did not start in {START_TIMEOUT:?}: {}",
                    self.log_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// `mysql://root@127.0.0.1:PORT/DATABASE`.
    pub fn url(&self, database: &str) -> String {
        format!("mysql://root@127.0.0.1:{}/{database}", self.port)
    }

    /// The same for SQLAlchemy with PyMySQL (what Marzban's own code connects with).
    pub fn sqlalchemy_url(&self, database: &str) -> String {
        format!("mysql+pymysql://root@127.0.0.1:{}/{database}", self.port)
    }

    /// The server's directory (data, socket, log), removed on drop.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The last lines of the server's log.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }
}

impl Drop for MariaDb {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("--- mariadb log ---\n{}\n--- end ---", self.log_tail());
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
