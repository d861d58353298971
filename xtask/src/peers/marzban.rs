//! Marzban 0.8.4, the panel users are most often brought from, as a migration
//! fixture: its own sources (never committed here) at a pinned commit, with its
//! pinned requirements in a venv of their own under `target/peers/marzban-0.8.4`.
//! The import tests run Marzban's own Alembic migrations and its own `crud`
//! functions to make the source database, and its own token code to make the old
//! subscription links.
//!
//! The sources come from a local Git mirror of Marzban's public repository (the
//! tool library's `fetch` puts it at [`DEFAULT_MIRROR`]; `SWITCHYARD_MARZBAN_MIRROR`
//! names another). Its requirements come from PyPI.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::cmd::Cmd;

/// The release and its commit.
const VERSION: &str = "0.8.4";
const COMMIT: &str = "7f396db3e703d71a28060bc9ce4a532ec64cb1f4";

/// Where the mirror of Marzban's repository is by default.
const DEFAULT_MIRROR: &str = "/work/.mirror/Gozargah+Marzban/repo";

/// What names another mirror.
const MIRROR_ENV: &str = "SWITCHYARD_MARZBAN_MIRROR";

/// What tells the tests where Marzban is (`src/` and `venv/` inside).
pub(crate) const ENV: &str = "SWITCHYARD_MARZBAN";

/// `target/peers/marzban-0.8.4`, with the sources and the venv in place.
pub(crate) fn marzban(peers_dir: &Path) -> Result<PathBuf> {
    let dir = peers_dir.join(format!("marzban-{VERSION}"));
    let marker = dir.join("installed");
    if std::fs::read_to_string(&marker).is_ok_and(|m| m.trim() == COMMIT) {
        println!("Marzban {VERSION}: {}", dir.display());
        return Ok(dir);
    }
    let mirror = std::env::var_os(MIRROR_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_MIRROR));
    if !mirror.exists() {
        bail!(
            "Marzban's sources are not at {} (a Git mirror of its public repository, \
             made by the tool library's `fetch github:Gozargah/Marzban`; \
             {MIRROR_ENV} names another place): the import tests need them",
            mirror.display()
        );
    }
    install(&mirror, &dir).with_context(|| {
        format!(
            "installing Marzban {VERSION} into {} failed (it needs git, python3 with venv \
             and access to PyPI); delete it and try again",
            dir.display()
        )
    })?;
    std::fs::write(&marker, COMMIT)?;
    println!("Marzban {VERSION}: {}", dir.display());
    Ok(dir)
}

fn install(mirror: &Path, dir: &Path) -> Result<()> {
    let src = dir.join("src");
    if src.exists() {
        std::fs::remove_dir_all(&src)?;
    }
    std::fs::create_dir_all(&src)?;
    let archive = dir.join("src.tar");
    Cmd::new("git")
        .args([
            OsString::from("--git-dir"),
            mirror.as_os_str().into(),
            "archive".into(),
            "--output".into(),
            archive.as_os_str().into(),
            COMMIT.into(),
        ])
        .run()?;
    Cmd::new("tar")
        .args([
            OsString::from("-xf"),
            archive.as_os_str().into(),
            "-C".into(),
            src.as_os_str().into(),
        ])
        .run()?;
    std::fs::remove_file(&archive)?;
    let venv = dir.join("venv");
    let python = venv.join("bin/python");
    if !python.is_file() {
        Cmd::new("python3")
            .args([OsString::from("-m"), "venv".into(), venv.as_os_str().into()])
            .run()?;
    }
    Cmd::new(&python)
        .args([
            OsString::from("-m"),
            "pip".into(),
            "install".into(),
            "--disable-pip-version-check".into(),
            "--quiet".into(),
            "-r".into(),
            src.join("requirements.txt").into_os_string(),
        ])
        .run()
}
