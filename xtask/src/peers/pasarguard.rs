//! PasarGuard 3.1.0 and 5.2.1, Marzban's most used fork, as migration fixtures:
//! their own sources at pinned commits, with the versions 3.1.0's `uv.lock` pins
//! (and 5.2.1's `pydantic-settings`) in one venv ([`super::python_panel`]; `src/` is
//! 3.1.0, `src5/` 5.2.1). The import tests run 3.1.0's own Alembic migrations and
//! its own `crud` functions to make the source database, and its own token code to
//! make the old subscription links; then 5.2.1's own migrations and models for its
//! device tables. 3.1.0 is the newest release that runs on Python 3.12 and 3.13;
//! later ones need 3.14, which none of this machine's sources of Python has, so the
//! tests load 5.2.1's modules through an import hook
//! (`crates/panel/tests/it/import/pasarguard5.py`).

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::python_panel::{PythonPanel, Requirements, Sources};

/// What tells the tests where PasarGuard is (`src/`, `src5/` and `venv/` inside).
pub(crate) const ENV: &str = "SWITCHYARD_PASARGUARD";

/// `target/peers/pasarguard-3.1.0`, with the sources and the venv in place.
pub(crate) fn pasarguard(peers_dir: &Path) -> Result<PathBuf> {
    PythonPanel {
        name: "PasarGuard",
        version: "3.1.0",
        dir: "pasarguard-3.1.0",
        mirror: "/work/.mirror/PasarGuard+panel/repo",
        mirror_env: "SWITCHYARD_PASARGUARD_MIRROR",
        repository: "PasarGuard/panel",
        sources: &[
            Sources {
                dir: "src",
                commit: "3100cd7990e1a6c4a032204c0ac5b8addc2c9f6c",
                paths: &[
                    "app",
                    "config.py",
                    "role.py",
                    "alembic.ini",
                    "pyproject.toml",
                    "uv.lock",
                ],
            },
            Sources {
                dir: "src5",
                commit: "e81877c0df64e5f5235f4355b0490b6bb38e3adc",
                paths: &["app", "config.py", "role.py", "alembic.ini"],
            },
        ],
        pythons: &["3.13", "3.12"],
        // What 5.2.1 needs beyond 3.1.0's pins (as its `uv.lock` pins it).
        requirements: Requirements::UvLock(&["pydantic-settings==2.14.2"]),
    }
    .install(peers_dir)
}
