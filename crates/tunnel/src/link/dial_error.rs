//! Why a dial did not make a link, or a link did not last: shared by the dialer (which
//! makes these) and its schedule (which keeps the last one for the status).

use std::time::Duration;

use super::handshake::HandshakeError;
use super::transport::ConnectError;

/// Why an attempt did not make a link, or a link did not last.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DialError {
    /// TCP, WebSocket or TLS failed (a pin mismatch among them).
    #[error(transparent)]
    Connect(#[from] ConnectError),
    /// The hello exchange failed or was refused.
    #[error("{target}: {error}")]
    Handshake {
        /// Where to.
        target: String,
        /// What failed.
        error: HandshakeError,
    },
    /// A link came up but ended before it counted as stable.
    #[error("the link dropped after {after:?}; the address may be blocking it")]
    Dropped {
        /// How long it was up.
        after: Duration,
    },
}
