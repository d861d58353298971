//! PostgreSQL for the panel's storage tests: Debian's `postgresql` package, from apt
//! when missing.
//!
//! The tests never use the machine's own cluster: `crates/testkit/src/postgres.rs`
//! runs a private one from these binaries in a temporary directory. So all this
//! needs is the binaries, in the same place testkit looks, found by the same function
//! (`switchyard_peers::postgres::find_bin_dir`): the highest version under
//! `/usr/lib/postgresql/*/bin`, or the directory `initdb` on `PATH` resolves to.
//! The package also creates the `postgres` system user that testkit runs the server
//! as when the tests run as root. The version is Debian's (15 on bookworm): the panel
//! needs no newer feature, and a distribution's server is what users run.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use switchyard_peers::postgres::{BIN_ENV as PG_BIN_ENV, PROGRAMS, find_bin_dir, has_programs};

use super::apt;
use crate::cmd::Cmd;

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
    let dir = match find_bin_dir() {
        Some(dir) => dir,
        None => {
            println!("postgresql: not found, installing Debian's package with apt-get");
            apt::install(&["postgresql"]).context(
                "installing PostgreSQL with apt-get failed: install Debian's postgresql by \
                 hand (or set SWITCHYARD_PG_BIN to a directory holding initdb, postgres, \
                 pg_ctl, pg_isready and psql)",
            )?;
            find_bin_dir().with_context(|| {
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
