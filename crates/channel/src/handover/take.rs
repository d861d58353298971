//! The new process's side, whatever the service: [`Successor::from_env`] takes the
//! sockets before the service starts on them, [`Successor::ready`] says how the start
//! went and waits until the old process let go.

use std::path::{Path, PathBuf};

use super::wire::{Conn, Message};
use super::{ENV, HandoverError, Inherited, PREPARE_TIMEOUT};

/// Sockets handed over at most: a node's inbound has at most 101 (Hysteria 2 with
/// its hopping ports), a node far fewer inbounds, a panel three listeners.
pub const MAX_SOCKETS: usize = 4096;

/// A process started to take over from a running one.
#[derive(Debug)]
pub struct Successor {
    conn: Conn,
}

fn broken(problem: String) -> HandoverError {
    HandoverError::Protocol {
        peer: "old",
        problem,
    }
}

impl Successor {
    /// When this process was started to take over ([`ENV`] is set): connects to the
    /// old process, says hello with `version` and receives the sockets. Blocks.
    pub fn from_env(version: &str) -> Option<Result<(Self, Inherited), HandoverError>> {
        let path = PathBuf::from(std::env::var_os(ENV)?);
        Some(Self::connect(&path, version))
    }

    fn connect(path: &Path, version: &str) -> Result<(Self, Inherited), HandoverError> {
        let conn = Conn::connect(path)?;
        conn.set_timeout(Some(PREPARE_TIMEOUT))?;
        conn.send(
            &Message::Hello {
                version: version.to_owned(),
                pid: std::process::id(),
            },
            None,
        )?;
        let mut inherited = Inherited::default();
        let mut received = 0usize;
        loop {
            let Some((message, fd)) = conn.recv()? else {
                return Err(broken("closed the socket while handing sockets".into()));
            };
            match (message, fd) {
                (Message::Socket { kind, addr }, Some(fd)) => {
                    received += 1;
                    if received > MAX_SOCKETS {
                        return Err(broken(format!("more than {MAX_SOCKETS} sockets")));
                    }
                    inherited.insert(kind, addr, fd);
                }
                (Message::Sockets { count }, None) if count == received => break,
                (m, _) => return Err(broken(format!("sent {m:?} while handing sockets"))),
            }
        }
        tracing::info!(
            sockets = received,
            "upgrade: took the listening sockets from the old process"
        );
        Ok((Self { conn }, inherited))
    }

    /// Tells the old process whether this one serves (`Err`: why not), then, when it
    /// does, waits until the old process let go. The link stays for what the old
    /// process sends while it drains (the node's counts).
    pub async fn ready(self, started: Result<(), String>) -> Result<Conn, HandoverError> {
        let conn = self.conn;
        tokio::task::spawn_blocking(move || {
            let failed = started.is_err();
            let message = match started {
                Ok(()) => Message::Ready,
                Err(problem) => Message::Failed { problem },
            };
            conn.send(&message, None)?;
            if failed {
                return Err(broken("refused: this process could not start".into()));
            }
            match conn.expect("released")? {
                Message::Released => Ok(conn),
                m => Err(broken(format!("sent {m:?} where released was due"))),
            }
        })
        .await
        .map_err(|e| broken(format!("handover task: {e}")))?
    }
}
