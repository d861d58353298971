//! What the Python panels the import tests bring users from (Marzban, PasarGuard,
//! Marzneshin) share: their installs, which `cargo xtask peers` makes under
//! `target/peers/` and names in a variable each, and running one of their programs
//! (Alembic, or Python with a script of the test's) on a database in a directory
//! of the test's. A missing install is a panic saying what to run; a test never
//! skips because of it.

use std::path::{Path, PathBuf};

/// One panel's install.
pub(crate) struct Panel<'a> {
    /// Its name, for messages.
    pub(crate) name: &'a str,
    /// Its release, for messages.
    pub(crate) release: &'a str,
    /// The variable naming its install.
    pub(crate) env: &'a str,
    /// The sources' directory in the install (`src`).
    pub(crate) src: &'a str,
    /// Its SQLAlchemy URL's scheme for SQLite (`sqlite`, `sqlite+aiosqlite`).
    pub(crate) sqlite: &'a str,
}

impl Panel<'_> {
    /// The install.
    pub(crate) fn dir(&self) -> PathBuf {
        let dir = std::env::var_os(self.env).unwrap_or_else(|| {
            panic!(
                "{} is not set: run `cargo xtask peers` (it installs {} {} from its sources \
                 into target/peers) and export what it prints",
                self.env, self.name, self.release
            )
        });
        PathBuf::from(dir)
    }

    /// Runs `program` of the venv with `args`, from the sources, on the database
    /// `db.sqlite3` in `data`, with `env` besides; its standard output. A failure
    /// panics with what the panel printed.
    pub(crate) fn run(
        &self,
        data: &Path,
        env: &[(&str, &std::ffi::OsStr)],
        program: &str,
        args: &[&str],
    ) -> String {
        let p = self.dir();
        let src = p.join(self.src);
        let out = std::process::Command::new(p.join("venv/bin").join(program))
            .args(args)
            .current_dir(&src)
            .env("PYTHONPATH", &src)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("PYTHONWARNINGS", "ignore")
            .env(
                "SQLALCHEMY_DATABASE_URL",
                format!("{}:///{}", self.sqlite, data.join("db.sqlite3").display()),
            )
            .envs(env.iter().copied())
            .output()
            .unwrap_or_else(|e| panic!("running {}'s {program}: {e}", self.name));
        assert!(
            out.status.success(),
            "{}'s {program} {args:?}: {}",
            self.name,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap_or_default()
    }
}
