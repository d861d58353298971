//! PostgreSQL for the panel's storage tests: Debian's `postgresql` package, from apt
//! when missing.
//!
//! The tests never use the machine's own cluster: `crates/testkit/src/postgres.rs`
//! runs a private one from these binaries in a temporary directory. So all this
//! needs is the binaries, in the same place testkit looks: the highest version under
//! `/usr/lib/postgresql/*/bin`, or the directory `initdb` on `PATH` resolves to.
//! The package also creates the `postgres` system user that testkit runs the server
//! as when the tests run as root. The version is Debian's (15 on bookworm): the panel
//! needs no newer feature, and a distribution's server is what users run.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::{apt, which};
use crate::cmd::Cmd;

/// The variable that tells the tests where the PostgreSQL binaries are (testkit's
/// `postgres::BIN_ENV`).
pub(crate) const PG_BIN_ENV: &str = "SWITCHYARD_PG_BIN";

/// The programs testkit runs, all from one directory (testkit's `PROGRAMS`).
const PROGRAMS: [&str; 5] = ["initdb", "postgres", "pg_ctl", "pg_isready", "psql"];

/// The directory holding the PostgreSQL binaries, installing Debian's `postgresql`
/// with apt when there is none. [`PG_BIN_ENV`], when set, is taken as it is.
pub(crate) fn postgresql() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os(PG_BIN_ENV).map(PathBuf::from) {
        if !has_programs(&dir) {
            bail!(
                "{PG_BIN_ENV}={} but it does not hold all of {}: fix or unset it",
                dir.display(),
                PROGRAMS.join(", ")
            );
        }
        println!("postgresql: {} (from {PG_BIN_ENV})", dir.display());
        return Ok(dir);
    }
    let dir = match find() {
        Some(dir) => dir,
        None => {
            println!("postgresql: not found, installing Debian's package with apt-get");
            apt::install(&["postgresql"]).context(
                "installing PostgreSQL with apt-get failed: install Debian's postgresql by \
                 hand (or set SWITCHYARD_PG_BIN to a directory holding initdb, postgres, \
                 pg_ctl, pg_isready and psql)",
            )?;
            find().with_context(|| {
                format!(
                    "apt-get installed postgresql but {} are not in /usr/lib/postgresql/*/bin \
                     nor on PATH",
                    PROGRAMS.join(", ")
                )
            })?
        }
    };
    let out = Cmd::new(dir.join("postgres"))
        .args(["--version"])
        .output()?;
    println!(
        "postgresql: {} ({})",
        dir.display(),
        String::from_utf8_lossy(&out).trim()
    );
    Ok(dir)
}

/// Where testkit would find the binaries.
fn find() -> Option<PathBuf> {
    debian_bin_dirs(Path::new("/usr/lib/postgresql"))
        .into_iter()
        .chain(
            which("initdb")
                .and_then(|p| fs::canonicalize(p).ok())
                .and_then(|p| p.parent().map(Path::to_path_buf)),
        )
        .find(|d| has_programs(d))
}

/// `root/<version>/bin` for every version directory, highest version first.
fn debian_bin_dirs(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(root) else {
        return Vec::new();
    };
    let mut versions: Vec<(Vec<u64>, PathBuf)> = entries
        .filter_map(|e| {
            let path = e.ok()?.path();
            let name = path.file_name()?.to_str()?;
            let version = name
                .split('.')
                .map(str::parse)
                .collect::<Result<Vec<u64>, _>>()
                .ok()?;
            Some((version, path.join("bin")))
        })
        .collect();
    versions.sort_by(|a, b| b.0.cmp(&a.0));
    versions.into_iter().map(|(_, dir)| dir).collect()
}

fn has_programs(dir: &Path) -> bool {
    PROGRAMS.iter().all(|p| dir.join(p).is_file())
}
