//! Upgrades that drop nobody: a running node hands its listening sockets, its
//! journal and its channel to a new process (usually a new binary) and drains its
//! open connections, counting them, until they end or a deadline passes.
//!
//! The two processes talk over a `SOCK_SEQPACKET` Unix socket in the state directory
//! ([`SOCKET_FILE`], `0600` in the `0700` directory; the old process checks the peer's
//! PID is the child it started). The new process finds it through
//! [`ENV`]. In order:
//!
//! 1. **Prepare** (the old process still serves; it can still say no): the old
//!    process starts the new one ([`Command`]); the new one says `hello` with its
//!    version; the old one sends every listening socket (its inbounds' TCP and UDP
//!    sockets, the control API's) with `SCM_RIGHTS`, one per message. The new process
//!    starts its node on them, its TCP inbounds accepting from the same kernel queues
//!    as the old one's (nothing is refused, nothing waits for a bind), and says
//!    `ready`. It does not read the UDP sockets yet, nor open the journal, the channel
//!    or the control API. If anything fails here the old process stops the new one and
//!    goes on as before.
//! 2. **Commit**: the old process stops accepting (its TCP listeners, Shadowsocks'
//!    UDP receive loop; Hysteria 2's QUIC endpoint closes, its clients reconnect to
//!    the new process), stops its channel and background tasks, takes a last journal
//!    record and lets the journal go, then says `released`. The new process opens the
//!    journal, reads the UDP sockets, holds the channel and serves the control API.
//! 3. **Drain**: the old process keeps its open connections and counts them; each
//!    second it sends what its users moved since the last message (`usage`), which the
//!    new process adds to its own counters, so the journal (the new process's now)
//!    gets every byte once. When the last connection ends, or at the drain deadline
//!    (its remaining connections are closed then), it sends the last `usage` and
//!    `drained`, and exits.
//!
//! The journal belongs to exactly one process at a time, so nothing is counted twice;
//! the old process's counts after its last record travel as `usage` (a crash of the
//! old process while draining loses at most the last second, as a `kill -9` would).

mod new;
mod old;
mod sockets;
mod wire;

pub use new::{Absorbing, Successor};
pub use old::{Command, Draining, Prepared, Upgraded, prepare};
pub use sockets::{Handed, Inherited, Kind};
pub use wire::Message;

use std::path::PathBuf;

/// The environment variable that tells a new process where its predecessor waits.
pub const ENV: &str = "SWITCHYARD_HANDOVER";

/// The handover socket's file in the state directory.
pub const SOCKET_FILE: &str = "handover.sock";

/// How long the old process waits for the new one to say `hello`, then `ready`.
pub const PREPARE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// How long an old process drains when the request names no deadline: 10 minutes.
pub const DRAIN_DEFAULT_S: u64 = 600;

/// The longest drain a request may ask for: a day.
pub const DRAIN_MAX_S: u64 = 86_400;

/// Why a handover failed. Before the commit the old process goes on serving.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HandoverError {
    /// The handover socket could not be made or used.
    #[error("handover socket {path}: {source}")]
    Socket {
        /// The socket's path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The new process could not be started.
    #[error("starting {program}: {source}")]
    Spawn {
        /// The program.
        program: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The new process ended before it was ready.
    #[error("the new process ended before it was ready ({status})")]
    Exited {
        /// Its exit status.
        status: std::process::ExitStatus,
    },
    /// The other process did not answer in time.
    #[error("the {peer} process did not {what} within {secs} s")]
    Timeout {
        /// `old` or `new`.
        peer: &'static str,
        /// What it did not do.
        what: &'static str,
        /// The deadline.
        secs: u64,
    },
    /// The other process sent something out of order or malformed.
    #[error("the {peer} process broke the handover: {problem}")]
    Protocol {
        /// `old` or `new`.
        peer: &'static str,
        /// What was wrong.
        problem: String,
    },
    /// The upgrade failed; this process goes on serving.
    #[error("{0}")]
    Failed(String),
    /// An upgrade is already under way.
    #[error("an upgrade is already under way")]
    Busy,
    /// The node was started without a way to start its successor.
    #[error("this node cannot upgrade itself: it was not started by `switchyard node`")]
    Unsupported,
}
