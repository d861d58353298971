//! The panels users are brought from that are Python programs (Marzban, PasarGuard,
//! Marzneshin), installed as migration fixtures: their own sources (never committed
//! here) at pinned commits, taken from a local Git mirror of each public repository
//! (the tool library's `fetch` makes it), with their pinned requirements from PyPI
//! in a venv of their own under `target/peers/NAME-VERSION`. The import tests run
//! each panel's own migrations and code from there.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::cmd::Cmd;

/// One panel's install.
pub(super) struct PythonPanel {
    /// Its name, for messages.
    pub(super) name: &'static str,
    /// Its pinned release.
    pub(super) version: &'static str,
    /// `target/peers/` + this.
    pub(super) dir: &'static str,
    /// Where the mirror of its repository is by default…
    pub(super) mirror: &'static str,
    /// …what names another…
    pub(super) mirror_env: &'static str,
    /// …and what the tool library's `fetch` takes to make it.
    pub(super) repository: &'static str,
    /// The sources put in place.
    pub(super) sources: &'static [Sources],
    /// The Pythons it runs on, the first preferred (`"3.12"`).
    pub(super) pythons: &'static [&'static str],
    /// How its requirements are pinned.
    pub(super) requirements: Requirements,
}

/// Some of a commit's files, in a directory of the install.
pub(super) struct Sources {
    /// The directory (`src`).
    pub(super) dir: &'static str,
    /// The commit.
    pub(super) commit: &'static str,
    /// The paths taken (none: all).
    pub(super) paths: &'static [&'static str],
}

/// How a panel pins what it needs.
pub(super) enum Requirements {
    /// A `requirements.txt` of pinned versions in the first sources.
    File,
    /// `pyproject.toml`'s dependencies, pinned by `uv.lock`, in the first sources;
    /// and these on top.
    UvLock(&'static [&'static str]),
}

/// Turns `uv.lock` into pins and `pyproject.toml`'s dependencies into requirements
/// (run by the venv's Python, which has `tomllib`).
const PINS: &str = r#"
import sys, tomllib
src, out = sys.argv[1], sys.argv[2]
lock = tomllib.load(open(f"{src}/uv.lock", "rb"))
project = tomllib.load(open(f"{src}/pyproject.toml", "rb"))
name = project["project"]["name"].lower()
pins = sorted((p["name"], p["version"]) for p in lock["package"]
              if "version" in p and p["name"].lower() != name)
open(f"{out}/constraints.txt", "w").write("".join(f"{n}=={v}\n" for n, v in pins))
open(f"{out}/requirements.txt", "w").write("".join(d + "\n" for d in project["project"]["dependencies"]))
"#;

impl PythonPanel {
    /// Its directory under `peers_dir`, with the sources and the venv in place.
    pub(super) fn install(&self, peers_dir: &Path) -> Result<PathBuf> {
        let dir = peers_dir.join(self.dir);
        let marker = dir.join("installed");
        let installed: Vec<&str> = self.sources.iter().map(|s| s.commit).collect();
        let installed = installed.join(" ");
        let name = self.name;
        let version = self.version;
        if std::fs::read_to_string(&marker).is_ok_and(|m| m.trim() == installed) {
            println!("{name} {version}: {}", dir.display());
            return Ok(dir);
        }
        let mirror = std::env::var_os(self.mirror_env)
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(self.mirror));
        if !mirror.exists() {
            bail!(
                "{name}'s sources are not at {} (a Git mirror of its public repository, \
                 made by the tool library's `fetch github:{}`; {} names another place): \
                 the import tests need them",
                mirror.display(),
                self.repository,
                self.mirror_env
            );
        }
        let python = python(self.pythons).with_context(|| {
            format!(
                "{name} {version} needs Python {} (on the PATH, or under ~/.pyenv/versions)",
                self.pythons.join(" or ")
            )
        })?;
        self.put(&mirror, &dir, &python).with_context(|| {
            format!(
                "installing {name} {version} into {} failed (it needs git, {} with venv \
                 and access to PyPI); delete it and try again",
                dir.display(),
                python.display()
            )
        })?;
        std::fs::write(&marker, installed)?;
        println!("{name} {version}: {}", dir.display());
        Ok(dir)
    }

    fn put(&self, mirror: &Path, dir: &Path, python: &Path) -> Result<()> {
        let mut first = None;
        for s in self.sources {
            let src = extract(mirror, dir, s)?;
            first.get_or_insert(src);
        }
        let src = first.context("no sources")?;
        let venv = dir.join("venv");
        let venv_python = venv.join("bin/python");
        if !venv_python.is_file() {
            Cmd::new(python)
                .args([OsString::from("-m"), "venv".into(), venv.as_os_str().into()])
                .run()?;
        }
        let mut pip: Vec<OsString> = ["-m", "pip", "install", "--disable-pip-version-check"]
            .into_iter()
            .chain(["--quiet"])
            .map(OsString::from)
            .collect();
        match self.requirements {
            Requirements::File => {
                pip.extend(["-r".into(), src.join("requirements.txt").into_os_string()]);
            }
            Requirements::UvLock(extra) => {
                Cmd::new(&venv_python)
                    .args([
                        OsString::from("-c"),
                        PINS.into(),
                        src.as_os_str().into(),
                        dir.as_os_str().into(),
                    ])
                    .run()?;
                pip.extend([
                    "-c".into(),
                    dir.join("constraints.txt").into_os_string(),
                    "-r".into(),
                    dir.join("requirements.txt").into_os_string(),
                ]);
                pip.extend(extra.iter().map(OsString::from));
            }
        }
        Cmd::new(&venv_python).args(pip).run()
    }
}

/// Puts the sources `s` from `mirror` into their directory of `dir`.
fn extract(mirror: &Path, dir: &Path, s: &Sources) -> Result<PathBuf> {
    let src = dir.join(s.dir);
    if src.exists() {
        std::fs::remove_dir_all(&src)?;
    }
    std::fs::create_dir_all(&src)?;
    let archive = dir.join(format!("{}.tar", s.dir));
    let mut args = vec![
        OsString::from("--git-dir"),
        mirror.as_os_str().into(),
        "archive".into(),
        "--output".into(),
        archive.as_os_str().into(),
        s.commit.into(),
    ];
    args.extend(s.paths.iter().map(OsString::from));
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

/// A Python of one of `versions` (`"3.12"`, …, the first preferred) that runs (a
/// pyenv shim on the PATH may not): on the PATH, else the newest pyenv has.
fn python(versions: &[&str]) -> Option<PathBuf> {
    let mut candidates = Vec::new();
    for version in versions {
        if let Some(path) = std::env::var_os("PATH") {
            for dir in std::env::split_paths(&path) {
                candidates.push(dir.join(format!("python{version}")));
            }
        }
        if let Some(home) = std::env::var_os("HOME") {
            let mut found: Vec<PathBuf> =
                std::fs::read_dir(PathBuf::from(home).join(".pyenv/versions"))
                    .into_iter()
                    .flatten()
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| {
                        p.file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| n.starts_with(&format!("{version}.")))
                    })
                    .map(|p| p.join("bin/python3"))
                    .collect();
            found.sort();
            candidates.extend(found.into_iter().rev());
        }
    }
    let wanted: Vec<String> = versions.iter().map(|v| format!("'{v}'")).collect();
    let check = format!(
        "import sys, venv; assert '%d.%d' % sys.version_info[:2] in ({},)",
        wanted.join(", ")
    );
    candidates.into_iter().find(|p| {
        p.is_file()
            && std::process::Command::new(p)
                .args(["-c", &check])
                .output()
                .is_ok_and(|o| o.status.success())
    })
}
