//! Marzban 0.8.4's own code, for the import tests: its sources and a venv with its
//! pinned requirements, which `cargo xtask peers` installs under
//! `target/peers/marzban-0.8.4` and names in [`ENV`]. [`run`] runs one of its
//! programs (Alembic, or Python with a script of the test's) on a Marzban database
//! in a directory of the test's. A missing install is a panic saying what to run;
//! a test never skips because of it.

use std::path::{Path, PathBuf};

/// The variable naming Marzban's install (`src/` and `venv/` inside).
pub const ENV: &str = "SWITCHYARD_MARZBAN";

/// Marzban's install.
pub fn dir() -> PathBuf {
    let dir = std::env::var_os(ENV).unwrap_or_else(|| {
        panic!(
            "{ENV} is not set: run `cargo xtask peers` (it installs Marzban 0.8.4 from \
             its sources into target/peers/marzban-0.8.4) and export what it prints"
        )
    });
    PathBuf::from(dir)
}

/// Runs `program` of Marzban's venv with `args`, from its sources, on the database
/// `db.sqlite3` and the Xray config `xray_config.json` in `data`; its standard
/// output. A failure panics with what Marzban printed.
pub fn run(data: &Path, program: &str, args: &[&str]) -> String {
    let m = dir();
    let out = std::process::Command::new(m.join("venv/bin").join(program))
        .args(args)
        .current_dir(m.join("src"))
        .env("PYTHONPATH", m.join("src"))
        .env(
            "SQLALCHEMY_DATABASE_URL",
            format!("sqlite:///{}", data.join("db.sqlite3").display()),
        )
        .env("XRAY_JSON", data.join("xray_config.json"))
        .env("XRAY_EXECUTABLE_PATH", "/bin/true")
        .env("XRAY_ASSETS_PATH", data)
        .output()
        .unwrap_or_else(|e| panic!("running Marzban's {program}: {e}"));
    assert!(
        out.status.success(),
        "Marzban's {program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap_or_default()
}
