//! The panel process a benchmark measures, and what its measurements share: how
//! many users it holds, how many runs each figure is the median of, the ports it
//! listens on. Both the load benchmark (`panel`) and the push benchmark (`push`)
//! use it.

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::cmd::Background;

/// Users seeded before the load: the size of a large self-hosted deployment.
pub(crate) const USERS: usize = 10_000;
/// Repetitions of each scenario; the table shows their medians.
pub(crate) const RUNS: usize = 3;
/// The panel under load, as `panel::start_panel` leaves it.
pub(crate) struct Panel {
    /// The running `switchyard panel`, killed on drop.
    pub(crate) process: Background,
    /// Where it serves HTTP (127.0.0.1).
    pub(crate) addr: SocketAddr,
    /// The seeded users' subscription tokens.
    pub(crate) tokens: Vec<String>,
    /// The data directory (the SQLite database, the first admin's password).
    pub(crate) data: PathBuf,
    /// The release `switchyard` binary.
    pub(crate) switchyard: PathBuf,
    /// How it was started, for the doc (e.g. "`switchyard panel` with SQLite").
    pub(crate) how: String,
}

/// A TCP port on 127.0.0.1 that was free a moment ago (the kernel's choice).
pub(crate) fn free_port() -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("binding 127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}
