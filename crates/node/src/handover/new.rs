//! The new process's side, past the generic part
//! ([`switchyard_channel::handover::Successor`]: the sockets, then ready): once the
//! old process let go, [`Absorbing::run`] adds its counts to this one's until it has
//! drained.

use std::sync::Arc;

use crate::node::Node;
use switchyard_channel::handover::{Conn, Message};

/// The new process after the old one released: it adds the old one's counts.
#[derive(Debug)]
pub struct Absorbing {
    conn: Conn,
}

impl Absorbing {
    /// The link to the old process, once it let go (`Successor::ready`).
    pub fn new(conn: Conn) -> Self {
        Self { conn }
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
