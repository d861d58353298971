//! schemathesis, the property-based tester of the panel's OpenAPI document, pinned
//! from PyPI into its own virtual environment under `target/peers`.
//!
//! A venv rather than `pip install --target`: schemathesis has a few dozen
//! dependencies and a console script (`st`), and a venv gives that script its own
//! interpreter with exactly those packages, whatever else the machine's Python has.
//! The tests run `target/peers/schemathesis/bin/st` (its path is
//! `SWITCHYARD_SCHEMATHESIS`); `bin/schemathesis` is the same program. The release,
//! the venv's place and the variable are pinned in `switchyard-peers`
//! ([`SCHEMATHESIS`]), which testkit reads too.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use switchyard_peers::SCHEMATHESIS;

use crate::cmd::Cmd;

/// The pinned schemathesis release.
const SCHEMATHESIS_VERSION: &str = SCHEMATHESIS.version;

/// `st` of schemathesis [`SCHEMATHESIS_VERSION`] in `peers_dir/schemathesis`,
/// creating the venv and installing into it when missing or another version.
pub(crate) fn schemathesis(peers_dir: &Path) -> Result<PathBuf> {
    let venv = SCHEMATHESIS.dir_in(peers_dir);
    let st = SCHEMATHESIS.binary_in(peers_dir);
    if !is_pinned(&st) {
        install(&venv).with_context(|| {
            format!(
                "installing schemathesis {SCHEMATHESIS_VERSION} failed: it needs python3 with \
                 the venv module (Debian's python3-venv) and access to PyPI; delete {} and \
                 try again",
                venv.display()
            )
        })?;
        if !is_pinned(&st) {
            bail!(
                "pip installed schemathesis=={SCHEMATHESIS_VERSION} into {} but `{} \
                 --version` does not say {SCHEMATHESIS_VERSION}: delete {} and run `cargo \
                 xtask peers` again",
                venv.display(),
                st.display(),
                venv.display()
            );
        }
    }
    println!("schemathesis {SCHEMATHESIS_VERSION}: {}", st.display());
    Ok(st)
}

fn install(venv: &Path) -> Result<()> {
    let python = venv.join("bin/python");
    if !python.is_file() {
        Cmd::new("python3")
            .args([OsString::from("-m"), "venv".into(), venv.as_os_str().into()])
            .run()?;
    }
    Cmd::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--quiet",
            &format!("schemathesis=={SCHEMATHESIS_VERSION}"),
        ])
        .run()
}

/// Whether `st --version` says `st, version <SCHEMATHESIS_VERSION>`.
fn is_pinned(st: &Path) -> bool {
    st.is_file()
        && Cmd::new(st).args(["--version"]).output().is_ok_and(|out| {
            String::from_utf8_lossy(&out)
                .trim()
                .ends_with(&format!("version {SCHEMATHESIS_VERSION}"))
        })
}
