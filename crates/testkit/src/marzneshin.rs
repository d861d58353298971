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
    Panel {
        name: "Marzneshin",
        release: "0.7.4",
        env: ENV,
        src: "src",
        sqlite: "sqlite",
    }
    .run(data, &[], program, args)
}
