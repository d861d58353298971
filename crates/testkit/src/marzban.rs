//! Marzban 0.8.4's own code, for the import tests: its sources and a venv with its
//! pinned requirements, which `cargo xtask peers` installs under
//! `target/peers/marzban-0.8.4` and names in [`ENV`] ([`crate::python_panel`]).

use std::ffi::OsStr;
use std::path::Path;

use crate::python_panel::Panel;

/// The variable naming Marzban's install (`src/` and `venv/` inside).
pub const ENV: &str = "SWITCHYARD_MARZBAN";

/// Runs `program` of Marzban's venv with `args`, from its sources, on the database
/// `db.sqlite3` and the Xray config `xray_config.json` in `data`; its standard
/// output. A failure panics with what Marzban printed. Marzban calls Xray only to
/// derive REALITY's public keys (`xray x25519`): the pinned Xray, run as `nobody`
/// ([`crate::xray::unprivileged_command`]).
pub fn run(data: &Path, program: &str, args: &[&str]) -> String {
    run_with(data, None, program, args)
}

/// [`run`] on the MySQL database at `database_url` (SQLAlchemy's form,
/// `mysql+pymysql://…`) instead, the Xray config still in `data`.
pub fn run_on(data: &Path, database_url: &str, program: &str, args: &[&str]) -> String {
    run_with(data, Some(database_url), program, args)
}

fn run_with(data: &Path, database_url: Option<&str>, program: &str, args: &[&str]) -> String {
    let xray_json = data.join("xray_config.json");
    let xray =
        crate::xray::unprivileged_command(data).unwrap_or_else(|e| panic!("Marzban's Xray: {e:#}"));
    let mut env = vec![
        ("XRAY_JSON", xray_json.as_os_str()),
        ("XRAY_EXECUTABLE_PATH", xray.as_os_str()),
        ("XRAY_ASSETS_PATH", data.as_os_str()),
    ];
    if let Some(url) = database_url {
        env.push(("SQLALCHEMY_DATABASE_URL", OsStr::new(url)));
    }
    Panel {
        name: "Marzban",
        release: "0.8.4",
        env: ENV,
        src: "src",
        sqlite: "sqlite",
    }
    .run(data, &env, program, args)
}
