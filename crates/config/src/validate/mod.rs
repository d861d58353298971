//! Validation of a whole [`NodeConfig`], a section per file: the node-wide settings
//! here, then `inbounds`, `users`, `tunnels` and `outbounds` (with the
//! routing). Every error names the field.

pub(crate) mod inbounds;
mod outbounds;
mod tunnels;
mod users;

use thiserror::Error;

use crate::NodeConfig;

pub use inbounds::{MAX_CHACHA_USERS, SsKeyError, parse_uuid, ss_key};

/// Why a config was refused. The running config stays in force.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The text is not valid TOML/JSON for this structure.
    #[error("config does not parse: {0}")]
    Parse(String),
    /// A field has a value that can't work.
    #[error("{field}: {problem}")]
    Invalid {
        /// Path of the field, like `inbounds[2].port`.
        field: String,
        /// What is wrong and what would be right.
        problem: String,
    },
}

fn invalid(field: impl Into<String>, problem: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        field: field.into(),
        problem: problem.into(),
    }
}

/// A DNS name: labels of 1-63 letters, digits and `-` (and `_` when `underscore`),
/// not starting or ending with `-`, at most 253 bytes, a trailing dot allowed.
pub(crate) fn dns_name(name: &str, underscore: bool) -> bool {
    let name = name.strip_suffix('.').unwrap_or(name);
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            (1..=63).contains(&label.len())
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || (underscore && b == b'_'))
        })
}

fn tag_ok(tag: &str) -> bool {
    !tag.is_empty()
        && tag.len() <= 64
        && tag
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

impl NodeConfig {
    /// Checks the whole config; the first problem found is returned, naming its field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        // A config read back from the control API and sent (or saved) unfilled: from
        // the API, a file or a reload alike.
        if let Some(field) = self.redacted_field() {
            return Err(invalid(
                field,
                format!(
                    "holds {:?}, what reads show in place of a secret; send the real value",
                    crate::REDACTED
                ),
            ));
        }
        let n = &self.node;
        if !(1..=300).contains(&n.handshake_timeout_s) {
            return Err(invalid(
                "node.handshake_timeout_s",
                "must be 1 to 300 seconds",
            ));
        }
        if !(10..=86_400).contains(&n.idle_timeout_s) {
            return Err(invalid(
                "node.idle_timeout_s",
                "must be 10 to 86400 seconds",
            ));
        }
        if n.max_unauthenticated == 0 {
            return Err(invalid("node.max_unauthenticated", "must be at least 1"));
        }
        if !(1..=n.max_unauthenticated).contains(&n.max_unauthenticated_per_source) {
            return Err(invalid(
                "node.max_unauthenticated_per_source",
                "must be 1 to node.max_unauthenticated",
            ));
        }
        if n.unauthenticated_hold_s > 600 {
            return Err(invalid(
                "node.unauthenticated_hold_s",
                "must be at most 600 seconds",
            ));
        }
        if !self.control.listen.ip().is_loopback() {
            return Err(invalid(
                "control.listen",
                format!(
                    "{} is not a loopback address; the control API listens on loopback only",
                    self.control.listen
                ),
            ));
        }
        self.validate_inbounds()?;
        self.validate_users()?;
        self.validate_tunnels()?;
        self.validate_outbounds()
    }
}
