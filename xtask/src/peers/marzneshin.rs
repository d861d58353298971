//! Marzneshin 0.7.4, Marzban's fork with services and keys, as a migration
//! fixture: its own sources at a pinned commit with its pinned requirements, on
//! Python 3.12 as its image has ([`super::python_panel`]). The import tests run
//! Marzneshin's own Alembic migrations and its own `crud` functions to make the
//! source database, and its own key code to say what each user's credentials are.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::python_panel::{PythonPanel, Requirements, Sources};

/// What tells the tests where Marzneshin is (`src/` and `venv/` inside).
pub(crate) const ENV: &str = "SWITCHYARD_MARZNESHIN";

/// `target/peers/marzneshin-0.7.4`, with the sources and the venv in place.
pub(crate) fn marzneshin(peers_dir: &Path) -> Result<PathBuf> {
    PythonPanel {
        name: "Marzneshin",
        version: "0.7.4",
        dir: "marzneshin-0.7.4",
        mirror: "/work/.mirror/marzneshin+marzneshin/repo",
        mirror_env: "SWITCHYARD_MARZNESHIN_MIRROR",
        repository: "marzneshin/marzneshin",
        sources: &[Sources {
            dir: "src",
            commit: "447cae891e0b3fa49b11a791ff4e25c93fb025cf",
            paths: &["app", "alembic.ini", "requirements.txt"],
        }],
        pythons: &["3.12"],
        requirements: Requirements::File,
    }
    .install(peers_dir)
}
