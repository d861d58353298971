//! Marzban 0.8.4, the panel users are most often brought from, as a migration
//! fixture: its own sources at a pinned commit with its pinned requirements
//! ([`super::python_panel`]). The import tests run Marzban's own Alembic migrations
//! and its own `crud` functions to make the source database, and its own token code
//! to make the old subscription links.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::python_panel::{PythonPanel, Requirements, Sources};

/// What tells the tests where Marzban is (`src/` and `venv/` inside).
pub(crate) const ENV: &str = "SWITCHYARD_MARZBAN";

/// `target/peers/marzban-0.8.4`, with the sources and the venv in place.
pub(crate) fn marzban(peers_dir: &Path) -> Result<PathBuf> {
    PythonPanel {
        name: "Marzban",
        version: "0.8.4",
        dir: "marzban-0.8.4",
        mirror: "/work/.mirror/Gozargah+Marzban/repo",
        mirror_env: "SWITCHYARD_MARZBAN_MIRROR",
        repository: "Gozargah/Marzban",
        sources: &[Sources {
            dir: "src",
            commit: "7f396db3e703d71a28060bc9ce4a532ec64cb1f4",
            paths: &[],
        }],
        // The system's Python 3 on these machines.
        pythons: &["3.11", "3.12"],
        requirements: Requirements::File,
    }
    .install(peers_dir)
}
