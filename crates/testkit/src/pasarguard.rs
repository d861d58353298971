//! PasarGuard 3.1.0's and 5.2.1's own code, for the import tests: their sources
//! (`src/`, `src5/`) and a venv with the versions 3.1.0's lock file pins, which
//! `cargo xtask peers` installs under `target/peers/pasarguard-3.1.0` and names in
//! [`ENV`] ([`crate::python_panel`]).

use std::path::Path;

use crate::python_panel::Panel;

/// The variable naming PasarGuard's install (`src/`, `src5/` and `venv/` inside).
pub const ENV: &str = "SWITCHYARD_PASARGUARD";

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
    run_with(data, release, &[], program, args)
}

/// [`run`] (3.1.0) on the database at `database_url` instead, SQLAlchemy's form
/// (`postgresql+asyncpg://…`, `mysql+asyncmy://…`: the drivers PasarGuard's lock
/// file pins).
pub fn run_on(data: &Path, database_url: &str, program: &str, args: &[&str]) -> String {
    let url = std::ffi::OsStr::new(database_url);
    run_with(
        data,
        Release::V3,
        &[("SQLALCHEMY_DATABASE_URL", url)],
        program,
        args,
    )
}

fn run_with(
    data: &Path,
    release: Release,
    env: &[(&str, &std::ffi::OsStr)],
    program: &str,
    args: &[&str],
) -> String {
    Panel {
        name: "PasarGuard",
        release: "3.1.0",
        env: ENV,
        src: match release {
            Release::V3 => "src",
            Release::V5 => "src5",
        },
        sqlite: "sqlite+aiosqlite",
    }
    .run(data, env, program, args)
}
