//! The old process's side, whatever the service: [`offer`] starts the new process
//! and hands it the listening sockets until it says it serves (on error the new
//! process is stopped and nothing changed); [`Offered::release`] then tells it the
//! old process let go.

use std::ffi::OsString;
use std::os::fd::AsFd as _;
use std::path::PathBuf;

use tokio::time::Instant;

use super::wire::{Conn, Listener, Message};
use super::{ENV, Handed, HandoverError, PREPARE_TIMEOUT};

/// How the new process is started: the program (the binary at the path this one was
/// started from, which an upgrade has replaced) and its arguments.
#[derive(Clone, Debug)]
pub struct Command {
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
}

/// A new process started and serving on the handed sockets; the old one still serves
/// too.
#[derive(Debug)]
pub struct Offered {
    /// The link to the new process.
    pub conn: Conn,
    /// The new process (never waited for once released: it outlives this one).
    pub child: std::process::Child,
    /// Its version, as it said.
    pub version: String,
    /// Kept until the release: the socket file goes with it.
    _listener: Listener,
}

/// Runs `f` (blocking handover steps) on the blocking pool.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, HandoverError> + Send + 'static,
) -> Result<T, HandoverError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| HandoverError::Protocol {
            peer: "old",
            problem: format!("handover task: {e}"),
        })?
}

/// Listens on `path`, starts `command` (told where with [`ENV`]) and hands it
/// `sockets`, until it says it serves on them. Blocks.
pub fn offer(
    path: PathBuf,
    command: &Command,
    sockets: &[Handed],
) -> Result<Offered, HandoverError> {
    let listener = Listener::bind(&path)?;
    let mut child = std::process::Command::new(&command.program)
        .args(&command.args)
        .env(ENV, &path)
        .stdin(std::process::Stdio::null())
        .spawn()
        .map_err(|source| HandoverError::Spawn {
            program: command.program.clone(),
            source,
        })?;
    tracing::info!(pid = child.id(), program = %command.program.display(), "upgrade: started the new process");
    match hand_sockets(&listener, &mut child, sockets) {
        Ok((conn, version)) => Ok(Offered {
            conn,
            child,
            version,
            _listener: listener,
        }),
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            Err(e)
        }
    }
}

fn hand_sockets(
    listener: &Listener,
    child: &mut std::process::Child,
    sockets: &[Handed],
) -> Result<(Conn, String), HandoverError> {
    let conn = listener.accept(child, Instant::now() + PREPARE_TIMEOUT)?;
    conn.set_timeout(Some(PREPARE_TIMEOUT))?;
    let out_of_order = |what: &str, m: Message| HandoverError::Protocol {
        peer: "new",
        problem: format!("sent {m:?} where {what} was due"),
    };
    let version = match conn.expect("hello")? {
        Message::Hello { version, .. } => version,
        m => return Err(out_of_order("hello", m)),
    };
    for h in sockets {
        let m = Message::Socket {
            kind: h.kind,
            addr: h.addr,
        };
        conn.send(&m, Some(h.fd.as_fd()))?;
    }
    conn.send(
        &Message::Sockets {
            count: sockets.len(),
        },
        None,
    )?;
    match conn.expect("ready")? {
        Message::Ready => Ok((conn, version)),
        Message::Failed { problem } => Err(HandoverError::Protocol {
            peer: "new",
            problem: format!("could not start: {problem}"),
        }),
        m => Err(out_of_order("ready", m)),
    }
}

impl Offered {
    /// Tells the new process this one let go of what it must hold alone (for the
    /// node: its journal, UDP sockets and channel). Blocks.
    pub fn release(self) -> Result<(Conn, std::process::Child, String), HandoverError> {
        self.conn.send(&Message::Released, None)?;
        Ok((self.conn, self.child, self.version))
    }
}
