//! The new process's side: [`Successor::from_env`] takes the sockets before the
//! node starts on them, [`Successor::ready`] says so and waits for the old process
//! to release, [`Absorbing::run`] adds the old process's counts to this one's until
//! it has drained.

use std::path::PathBuf;
use std::sync::Arc;

use super::wire::{Conn, Message};
use super::{ENV, HandoverError, Inherited, PREPARE_TIMEOUT};
use crate::node::Node;

/// Sockets handed over at most: an inbound has at most 101 (Hysteria 2 with its
/// hopping ports), a node far fewer inbounds.
pub(super) const MAX_SOCKETS: usize = 4096;

/// A process started to take over from a running node.
#[derive(Debug)]
pub struct Successor {
    conn: Conn,
}

/// The new process after the old one released: it adds the old one's counts.
#[derive(Debug)]
pub struct Absorbing {
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
    /// old process, says hello and receives the sockets. Blocks.
    pub fn from_env() -> Option<Result<(Self, Inherited), HandoverError>> {
        let path = PathBuf::from(std::env::var_os(ENV)?);
        Some(Self::connect(&path))
    }

    fn connect(path: &std::path::Path) -> Result<(Self, Inherited), HandoverError> {
        let conn = Conn::connect(path)?;
        conn.set_timeout(Some(PREPARE_TIMEOUT))?;
        conn.send(
            &Message::Hello {
                version: env!("CARGO_PKG_VERSION").to_owned(),
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

    /// Tells the old process whether the node serves (`Err`: why not), then, when it
    /// does, waits until the old process has released the journal, the UDP sockets
    /// and the channel. Then the caller calls [`Node::take_over`].
    pub async fn ready(self, started: Result<(), String>) -> Result<Absorbing, HandoverError> {
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
                Message::Released => Ok(Absorbing { conn }),
                m => Err(broken(format!("sent {m:?} where released was due"))),
            }
        })
        .await
        .map_err(|e| broken(format!("handover task: {e}")))?
    }
}

impl Absorbing {
    /// Adds the old process's counts to `node`'s until it has drained (or is gone).
    pub async fn run(self, node: Arc<Node>) {
        let conn = self.conn;
        if let Err(e) = conn.set_timeout(None) {
            return tracing::error!("upgrade: {e}");
        }
        let conn = Arc::new(conn);
        loop {
            let c = conn.clone();
            let got = tokio::task::spawn_blocking(move || c.recv()).await;
            match got {
                Ok(Ok(Some((Message::Usage { users }, None)))) => node.absorb(&users),
                Ok(Ok(Some((Message::Drained { closed }, None)))) => {
                    return tracing::info!(closed, "upgrade: the old process drained and ends");
                }
                Ok(Ok(None)) => {
                    return tracing::warn!("upgrade: the old process ended without saying so");
                }
                Ok(Ok(Some((m, _)))) => {
                    return tracing::error!("upgrade: the old process sent {m:?} while draining");
                }
                Ok(Err(e)) => return tracing::error!("upgrade: {e}"),
                Err(e) => return tracing::error!("upgrade: {e}"),
            }
        }
    }
}
