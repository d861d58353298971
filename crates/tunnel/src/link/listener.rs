//! The listening side: accepts TCP connections on one profile's port, completes the
//! transport handshake and the hello (each within the deadline) in a task per
//! connection, and hands admitted links to the pool.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, mpsc};

use super::handshake::{Gate, HANDSHAKE_DEADLINE, HandshakeError, accept_hello};
use super::transport::{AcceptError, Acceptor, LinkStream};

/// Handshakes in progress at once per listener. Past this, new connections are closed
/// at once: a flood of idle connections must not hold the admitted origins' slots.
pub const MAX_PENDING_HANDSHAKES: usize = 256;

/// An admitted link.
pub struct Accepted {
    /// The origin it belongs to.
    pub origin: String,
    /// Who connected.
    pub peer: SocketAddr,
    /// The link's byte stream, after the hello.
    pub stream: LinkStream,
}

impl core::fmt::Debug for Accepted {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Accepted")
            .field("origin", &self.origin)
            .field("peer", &self.peer)
            .finish_non_exhaustive()
    }
}

/// Why an incoming connection did not become a link.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ListenError {
    /// The transport (WebSocket upgrade, TLS) failed.
    #[error(transparent)]
    Transport(#[from] AcceptError),
    /// The hello failed or was refused.
    #[error("from {peer}: {error}")]
    Hello {
        /// Who connected.
        peer: SocketAddr,
        /// What failed.
        error: HandshakeError,
    },
}

/// One profile's listening side.
#[derive(Clone)]
pub struct Listener {
    acceptor: Acceptor,
    gate: Gate,
    deadline: Duration,
}

impl Listener {
    /// A listener making links with `acceptor` and admitting them through `gate`.
    pub fn new(acceptor: Acceptor, gate: Gate) -> Self {
        Self {
            acceptor,
            gate,
            deadline: HANDSHAKE_DEADLINE,
        }
    }

    /// Changes the deadline of each handshake step.
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// The gate (for its refusals and admitted table).
    pub fn gate(&self) -> &Gate {
        &self.gate
    }

    /// Turns one accepted connection into an admitted link.
    pub async fn handshake(
        &self,
        tcp: TcpStream,
        peer: SocketAddr,
    ) -> Result<Accepted, ListenError> {
        let mut stream = self.acceptor.handshake(tcp, peer, self.deadline).await?;
        let origin = accept_hello(&mut stream, &self.gate, self.deadline, SystemTime::now)
            .await
            .map_err(|error| ListenError::Hello { peer, error })?;
        Ok(Accepted {
            origin,
            peer,
            stream,
        })
    }

    /// Accepts on `listener` until `links` is closed, handing admitted links to it.
    /// Failed handshakes are logged and counted (refusals in the gate).
    pub async fn serve(self, listener: TcpListener, links: mpsc::Sender<Accepted>) {
        let this = Arc::new(self);
        let pending = Arc::new(Semaphore::new(MAX_PENDING_HANDSHAKES));
        loop {
            let (tcp, peer) = tokio::select! {
                r = listener.accept() => match r {
                    Ok(c) => c,
                    Err(e) => {
                        // Out of descriptors and the like: pause instead of spinning.
                        tracing::warn!(error = %e, "tunnel listener: accept failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                },
                () = links.closed() => return,
            };
            let Ok(permit) = pending.clone().try_acquire_owned() else {
                tracing::warn!(%peer, "tunnel listener: too many handshakes in progress");
                continue;
            };
            let (this, links) = (this.clone(), links.clone());
            tokio::spawn(async move {
                let accepted = this.handshake(tcp, peer).await;
                drop(permit);
                match accepted {
                    Ok(link) => {
                        tracing::debug!(origin = %link.origin, %peer, "link admitted");
                        let _ = links.send(link).await;
                    }
                    Err(e) => tracing::info!(error = %e, "tunnel link not admitted"),
                }
            });
        }
    }
}
