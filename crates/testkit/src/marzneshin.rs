//! Marzneshin 0.7.4's own code, for the import tests: its sources and a venv with
//! its pinned requirements, which `cargo xtask peers` installs under
//! `target/peers/marzneshin-0.7.4` and names in [`ENV`] ([`crate::python_panel`]).

use std::path::Path;

use crate::python_panel::Panel;

/// The variable naming Marzneshin's install (`src/` and `venv/` inside).
pub const ENV: &str = "SWITCHYARD_MARZNESHIN";

/// Runs `program` of Marzneshin's venv with `args`, from its sources, on the
/// database `db.sqlite3` in `data`; its standard output. A failure panics with what
/// Marzneshin printed.
pub fn run(data: &Path, program: &str, args: &[&str]) -> String {
    run_with(data, &[], program, args)
}

/// [`run`] on the database at `database_url` instead, SQLAlchemy's form
/// (`postgresql+psycopg://…`, `mysql+pymysql://…`: the drivers its requirements pin).
pub fn run_on(data: &Path, database_url: &str, program: &str, args: &[&str]) -> String {
    let url = std::ffi::OsStr::new(database_url);
    run_with(data, &[("SQLALCHEMY_DATABASE_URL", url)], program, args)
}

fn run_with(data: &Path, env: &[(&str, &std::ffi::OsStr)], program: &str, args: &[&str]) -> String {
    Panel {
        name: "Marzneshin",
        release: "0.7.4",
        env: ENV,
        src: "src",
        sqlite: "sqlite",
    }
    .run(data, env, program, args)
}
