//! PasarGuard 3.1.0 and 5.2.1, Marzban's most used fork, as migration fixtures:
//! their own sources (never committed here) at pinned commits, with the versions
//! 3.1.0's `uv.lock` pins (and 5.2.1's `pydantic-settings`) in a venv of their own
//! under `target/peers/pasarguard-3.1.0` (`src/` is 3.1.0, `src5/` 5.2.1). The
//! import tests run 3.1.0's own Alembic migrations and its own `crud` functions to
//! make the source database, and its own token code to make the old subscription
//! links; then 5.2.1's own migrations and models for its device tables. 3.1.0 is the
//! newest release that runs on Python 3.12 and 3.13; later ones need 3.14, which
//! none of this machine's sources of Python has, so the tests load 5.2.1's modules
//! through an import hook (`crates/panel/tests/it/import/pasarguard5.py`).
//!
//! The sources come from a local Git mirror of PasarGuard's public repository (the
//! tool library's `fetch` puts it at [`DEFAULT_MIRROR`]; `SWITCHYARD_PASARGUARD_MIRROR`
//! names another). Its requirements come from PyPI.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::cmd::Cmd;

/// The release and its commit.
const VERSION: &str = "3.1.0";
const COMMIT: &str = "3100cd7990e1a6c4a032204c0ac5b8addc2c9f6c";
/// The newest release, whose schema the device tests upgrade to.
const COMMIT_5: &str = "e81877c0df64e5f5235f4355b0490b6bb38e3adc";
/// What 5.2.1 needs beyond 3.1.0's pins (as its `uv.lock` pins it).
const EXTRA_5: &str = "pydantic-settings==2.14.2";

/// Where the mirror of PasarGuard's repository is by default.
const DEFAULT_MIRROR: &str = "/work/.mirror/PasarGuard+panel/repo";

/// What names another mirror.
const MIRROR_ENV: &str = "SWITCHYARD_PASARGUARD_MIRROR";

/// What tells the tests where PasarGuard is (`src/` and `venv/` inside).
pub(crate) const ENV: &str = "SWITCHYARD_PASARGUARD";

/// Turns `uv.lock` into pins and `pyproject.toml`'s dependencies into requirements
/// (run by the venv's Python, which has `tomllib`).
const PINS: &str = r#"
import sys, tomllib
src, out = sys.argv[1], sys.argv[2]
lock = tomllib.load(open(f"{src}/uv.lock", "rb"))
project = tomllib.load(open(f"{src}/pyproject.toml", "rb"))
pins = sorted((p["name"], p["version"]) for p in lock["package"]
              if "version" in p and p["name"].lower() != "pasarguard")
open(f"{out}/constraints.txt", "w").write("".join(f"{n}=={v}\n" for n, v in pins))
open(f"{out}/requirements.txt", "w").write("".join(d + "\n" for d in project["project"]["dependencies"]))
"#;

/// `target/peers/pasarguard-3.1.0`, with the sources and the venv in place.
pub(crate) fn pasarguard(peers_dir: &Path) -> Result<PathBuf> {
    let dir = peers_dir.join(format!("pasarguard-{VERSION}"));
    let marker = dir.join("installed");
    let installed = format!("{COMMIT} {COMMIT_5}");
    if std::fs::read_to_string(&marker).is_ok_and(|m| m.trim() == installed) {
        println!("PasarGuard {VERSION}: {}", dir.display());
        return Ok(dir);
    }
    let mirror = std::env::var_os(MIRROR_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_MIRROR));
    if !mirror.exists() {
        bail!(
            "PasarGuard's sources are not at {} (a Git mirror of its public repository, \
             made by the tool library's `fetch github:PasarGuard/panel`; \
             {MIRROR_ENV} names another place): the import tests need them",
            mirror.display()
        );
    }
    let python = python().context(
        "PasarGuard 3.1 needs Python 3.12 or 3.13 (python3.13 or python3.12 on the PATH, \
         or under ~/.pyenv/versions)",
    )?;
    install(&mirror, &dir, &python).with_context(|| {
        format!(
            "installing PasarGuard {VERSION} into {} failed (it needs git, {} with venv \
             and access to PyPI); delete it and try again",
            dir.display(),
            python.display()
        )
    })?;
    std::fs::write(&marker, installed)?;
    println!("PasarGuard {VERSION}: {}", dir.display());
    Ok(dir)
}

/// A Python 3.12 or 3.13 that runs (a pyenv shim on the PATH may not): on the
/// PATH, else the newest pyenv has.
fn python() -> Option<PathBuf> {
    let mut candidates = Vec::new();
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            candidates.extend(["python3.13", "python3.12"].map(|n| dir.join(n)));
        }
    }
    if let Some(home) = std::env::var_os("HOME") {
        let mut versions: Vec<PathBuf> =
            std::fs::read_dir(PathBuf::from(home).join(".pyenv/versions"))
                .into_iter()
                .flatten()
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("3.13.") || n.starts_with("3.12."))
                })
                .map(|p| p.join("bin/python3"))
                .collect();
        versions.sort();
        candidates.extend(versions.into_iter().rev());
    }
    candidates.into_iter().find(|p| {
        p.is_file()
            && std::process::Command::new(p)
                .args([
                    "-c",
                    "import sys, venv; assert sys.version_info[:2] in ((3, 12), (3, 13))",
                ])
                .output()
                .is_ok_and(|o| o.status.success())
    })
}

/// Puts `paths` of `commit` from `mirror` into `dir/name`.
fn extract(mirror: &Path, dir: &Path, name: &str, commit: &str, paths: &[&str]) -> Result<PathBuf> {
    let src = dir.join(name);
    if src.exists() {
        std::fs::remove_dir_all(&src)?;
    }
    std::fs::create_dir_all(&src)?;
    let archive = dir.join(format!("{name}.tar"));
    let mut args = vec![
        OsString::from("--git-dir"),
        mirror.as_os_str().into(),
        "archive".into(),
        "--output".into(),
        archive.as_os_str().into(),
        commit.into(),
    ];
    args.extend(paths.iter().map(OsString::from));
    Cmd::new("git").args(args).run()?;
    Cmd::new("tar")
        .args([
            OsString::from("-xf"),
            archive.as_os_str().into(),
            "-C".into(),
            src.as_os_str().into(),
        ])
        .run()?;
    std::fs::remove_file(&archive)?;
    Ok(src)
}

fn install(mirror: &Path, dir: &Path, python: &Path) -> Result<()> {
    let sources = [
        "app",
        "config.py",
        "role.py",
        "alembic.ini",
        "pyproject.toml",
        "uv.lock",
    ];
    let src = extract(mirror, dir, "src", COMMIT, &sources)?;
    extract(
        mirror,
        dir,
        "src5",
        COMMIT_5,
        &["app", "config.py", "role.py", "alembic.ini"],
    )?;
    let venv = dir.join("venv");
    let venv_python = venv.join("bin/python");
    if !venv_python.is_file() {
        Cmd::new(python)
            .args([OsString::from("-m"), "venv".into(), venv.as_os_str().into()])
            .run()?;
    }
    Cmd::new(&venv_python)
        .args([
            OsString::from("-c"),
            PINS.into(),
            src.as_os_str().into(),
            dir.as_os_str().into(),
        ])
        .run()?;
    Cmd::new(&venv_python)
        .args([
            OsString::from("-m"),
            "pip".into(),
            "install".into(),
            "--disable-pip-version-check".into(),
            "--quiet".into(),
            "-c".into(),
            dir.join("constraints.txt").into_os_string(),
            "-r".into(),
            dir.join("requirements.txt").into_os_string(),
            EXTRA_5.into(),
        ])
        .run()
}
