//! The node's configuration: the contract's types, defaults and validation, shared
//! with the panel ([`switchyard_config`], re-exported here whole), and what only the
//! node does with them: read the file.

use std::path::{Path, PathBuf};

pub use switchyard_config::*;

/// The state directory a config file names, read leniently (for finding the last good
/// config when the file itself does not parse): `node.state_dir` if it can be read,
/// else the default, relative to the file's directory either way.
pub fn default_state_dir_of(path: &Path) -> PathBuf {
    let dir = std::fs::read_to_string(path)
        .ok()
        .and_then(|t| NodeConfig::state_dir_in(&t))
        .unwrap_or_else(|| NodeSettings::default().state_dir);
    path.parent().unwrap_or(Path::new(".")).join(dir)
}
