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

pub use new::Absorbing;
pub use old::{Draining, Prepared, Upgraded, prepare};
pub use switchyard_channel::handover::{
    Command, DRAIN_DEFAULT_S, DRAIN_MAX_S, ENV, Handed, HandoverError, Inherited, Kind, Message,
    PREPARE_TIMEOUT, SOCKET_FILE, Successor,
};
