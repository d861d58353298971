//! PasarGuard 3.1.0's and 5.2.1's own code, for the import tests: their sources
//! (`src/`, `src5/`) and a venv with the versions 3.1.0's lock file pins, which
//! `cargo xtask peers` installs under `target/peers/pasarguard-3.1.0` and names in
//! [`ENV`]. [`run`] runs one of its
//! programs (Alembic, or Python with a script of the test's) on a PasarGuard
//! database in a directory of the test's. A missing install is a panic saying what
//! to run; a test never skips because of it.

use std::path::{Path, PathBuf};

/// The variable naming PasarGuard's install (`src/` and `venv/` inside).
pub const ENV: &str = "SWITCHYARD_PASARGUARD";

/// PasarGuard's install.
pub fn dir() -> PathBuf {
    let dir = std::env::var_os(ENV).unwrap_or_else(|| {
        panic!(
            "{ENV} is not set: run `cargo xtask peers` (it installs PasarGuard 3.1.0 from \
             its sources into target/peers/pasarguard-3.1.0) and export what it prints"
        )
    });
    PathBuf::from(dir)
}

/// Which release's sources a program runs from.
#[derive(Clone, Copy, Debug)]
pub enum Release {
    /// 3.1.0 (`src/`).
    V3,
    /// 5.2.1 (`src5/`).
    V5,
}

/// Runs `program` of PasarGuard's venv with `args`, from `release`'s sources, on
/// the database `db.sqlite3` in `data`; its standard output. A failure panics with
/// what PasarGuard printed.
pub fn run(data: &Path, release: Release, program: &str, args: &[&str]) -> String {
    let p = dir();
    let src = p.join(match release {
        Release::V3 => "src",
        Release::V5 => "src5",
    });
    let out = std::process::Command::new(p.join("venv/bin").join(program))
        .args(args)
        .current_dir(&src)
        .env("PYTHONPATH", &src)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env(
            "SQLALCHEMY_DATABASE_URL",
            format!("sqlite+aiosqlite:///{}", data.join("db.sqlite3").display()),
        )
        .env("PYTHONWARNINGS", "ignore")
        .output()
        .unwrap_or_else(|e| panic!("running PasarGuard's {program}: {e}"));
    assert!(
        out.status.success(),
        "PasarGuard's {program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap_or_default()
}
