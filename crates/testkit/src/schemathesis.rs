//! schemathesis, the property-based tester the panel's API tests run against its
//! OpenAPI document.
//!
//! `cargo xtask peers` installs the pinned release into a venv at
//! `target/peers/schemathesis`; [`binary`] finds its `st` command: the path in [`ENV`]
//! when set (`cargo xtask test` sets it), else the venv under the target directory.
//! A missing command is an error telling to run `cargo xtask peers`; a test never
//! skips because of it. A test runs it like any program, e.g.
//! `st run http://127.0.0.1:PORT/openapi.json --checks all` (schemathesis 4's command
//! line).

use std::path::PathBuf;

use anyhow::Result;
use switchyard_peers::SCHEMATHESIS;

use crate::peer::Pinned;

/// The pinned schemathesis release (pinned in `switchyard-peers`, which `cargo xtask
/// peers` installs).
pub const VERSION: &str = SCHEMATHESIS.version;

/// The variable holding the absolute path of schemathesis's `st` command.
pub const ENV: &str = SCHEMATHESIS.env;

pub(crate) const PINNED: Pinned = Pinned(SCHEMATHESIS);

/// The `st` command: [`ENV`] when set, else `<target>/peers/schemathesis/bin/st`.
/// Fails, saying to run `cargo xtask peers`, when neither is there.
pub fn binary() -> Result<PathBuf> {
    PINNED.binary()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_command_says_to_run_xtask_peers() {
        let nowhere = PathBuf::from("/nonexistent/st");
        let err = PINNED
            .locate(Some(nowhere.clone()), &[])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("cargo xtask peers") && err.contains(ENV),
            "{err}"
        );
        let err = PINNED.locate(None, &[nowhere]).unwrap_err().to_string();
        assert!(
            err.contains("cargo xtask peers") && err.contains("/nonexistent/st"),
            "{err}"
        );
    }
}
