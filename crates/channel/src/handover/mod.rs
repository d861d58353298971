//! Handing a running service's listening sockets to a new process of it (an
//! upgrade), as the node (`switchyard_node::handover`) and the panel do: a
//! `SOCK_SEQPACKET` Unix socket in the service's state directory (`0600`; the old
//! process checks the peer is the child it started), one JSON [`Message`] per packet,
//! a listening socket riding along with `SCM_RIGHTS` ([`Handed`], taken by the new
//! process from [`Inherited`]).

mod offer;
mod sockets;
mod take;
mod wire;

pub use offer::{Command, Offered, blocking, offer};
pub use sockets::{Handed, Inherited, Kind};
pub use take::{MAX_SOCKETS, Successor};
pub use wire::{Conn, Listener, MAX_MESSAGE, Message, USAGE_BUDGET, USAGE_ENTRY};

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
