//! The listening side: accepts TCP connections on one profile's port, completes the
//! transport handshake and the hello (all within the deadline) in a task per
//! connection, and hands admitted links to the pool. Pending handshakes are bounded in
//! all ([`MAX_PENDING_HANDSHAKES`]) and per source ([`MAX_PENDING_PER_SOURCE`]). An
//! XHTTP or gRPC profile's connections are served as HTTP (at most
//! [`MAX_HTTP_CONNECTIONS`] at once), each stream a link's handshake counted the same
//! way ([`super::streams`]).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::time::Instant;

use super::handshake::{Gate, HANDSHAKE_DEADLINE, HandshakeError, accept_hello};
use super::transport::{AcceptError, Acceptor, LinkStream};

/// Handshakes in progress at once per listener. Past this, new connections are closed
/// at once: a flood of idle connections must not hold the admitted origins' slots.
pub const MAX_PENDING_HANDSHAKES: usize = 256;
/// Handshakes in progress at once from one source (an IPv4 address, or an IPv6 /64).
/// 32: every link of several origins behind one NAT handshakes at once after a
/// restart, while one source can hold at most an eighth of
/// [`MAX_PENDING_HANDSHAKES`]; each slot is held at most the handshake deadline.
pub const MAX_PENDING_PER_SOURCE: usize = 32;

/// The source a pending handshake is counted under: an IPv4 address (an IPv4-mapped
/// IPv6 one too), or the /64 of an IPv6 address, which one host usually holds whole.
pub fn source_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !((1u128 << 64) - 1))),
        },
    }
}

/// Pending handshakes per source.
#[derive(Debug, Default, Clone)]
struct Sources(Arc<Mutex<HashMap<IpAddr, usize>>>);

/// One pending handshake's place in its source's count.
struct SourceSlot {
    sources: Sources,
    key: IpAddr,
}

impl Sources {
    fn take(&self, ip: IpAddr) -> Option<SourceSlot> {
        let key = source_key(ip);
        let mut m = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let n = m.entry(key).or_default();
        if *n >= MAX_PENDING_PER_SOURCE {
            return None;
        }
        *n += 1;
        Some(SourceSlot {
            sources: self.clone(),
            key,
        })
    }
}

impl Drop for SourceSlot {
    fn drop(&mut self) {
        let mut m = self
            .sources
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = m.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                m.remove(&self.key);
            }
        }
    }
}

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

/// HTTP connections (XHTTP, gRPC) one profile's listener serves at once, each
/// carrying any number of links.
pub const MAX_HTTP_CONNECTIONS: usize = 1024;

/// One HTTP connection of an XHTTP or gRPC profile, and what its streams need to
/// become links.
struct Http {
    listener: Arc<Listener>,
    links: mpsc::Sender<Accepted>,
    pending: Arc<Semaphore>,
    sources: Sources,
    peer: SocketAddr,
}

impl Http {
    /// Reads the connection's first request holding `first` (its pending-handshake
    /// slots), then serves it holding `connection` until it closes, carries no link
    /// for [`HTTP_IDLE`](super::streams::HTTP_IDLE) or the listener stops. Every
    /// stream takes a pending-handshake slot of its own for its TLS and hello.
    async fn serve(
        self,
        tcp: TcpStream,
        first: (OwnedSemaphorePermit, SourceSlot),
        connection: OwnedSemaphorePermit,
    ) {
        let Some(server) = self.listener.acceptor.streams().cloned() else {
            return;
        };
        let peer = self.peer;
        let deadline = Instant::now() + self.listener.deadline;
        let opened = server.open(tcp, deadline).await;
        drop(first);
        let opened = match opened {
            Ok(o) => o,
            Err(why) => {
                tracing::info!(%peer, "tunnel link not admitted: {why}");
                return;
            }
        };
        let closed = self.links.clone();
        let each = move |io: LinkStream| {
            let Some(slot) = self.sources.take(peer.ip()) else {
                tracing::debug!(%peer, "tunnel listener: too many handshakes from this source");
                return;
            };
            let Ok(permit) = self.pending.clone().try_acquire_owned() else {
                tracing::warn!(%peer, "tunnel listener: too many handshakes in progress");
                return;
            };
            let (listener, links) = (self.listener.clone(), self.links.clone());
            tokio::spawn(async move {
                let accepted = listener.admit(io, peer).await;
                drop((permit, slot));
                deliver(accepted, &links).await;
            });
        };
        tokio::select! {
            served = server.serve(opened, deadline, each) => {
                if let Err(e) = served {
                    tracing::debug!(%peer, "tunnel HTTP connection ended: {e}");
                }
            }
            () = closed.closed() => {}
        }
        drop(connection);
    }
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

    /// Turns one accepted connection into an admitted link, all of it (WebSocket
    /// upgrade, TLS, hello, answer) within the deadline.
    pub async fn handshake(
        &self,
        tcp: TcpStream,
        peer: SocketAddr,
    ) -> Result<Accepted, ListenError> {
        self.hello_after(self.acceptor.handshake(tcp, peer, self.deadline), peer)
            .await
    }

    /// Turns a stream an XHTTP or gRPC connection handed over into an admitted link:
    /// its TLS and hello within the deadline.
    async fn admit(&self, io: LinkStream, peer: SocketAddr) -> Result<Accepted, ListenError> {
        self.hello_after(self.acceptor.tls_over(io, peer), peer)
            .await
    }

    /// The hello after `transport` (the steps that give the link's TLS stream), all
    /// within the deadline.
    #[allow(
        clippy::disallowed_methods,
        reason = "a hello's time is checked against the wall clock, by design"
    )]
    async fn hello_after(
        &self,
        transport: impl Future<Output = Result<LinkStream, AcceptError>>,
        peer: SocketAddr,
    ) -> Result<Accepted, ListenError> {
        let steps = async {
            let mut stream = transport.await?;
            let origin = accept_hello(&mut stream, &self.gate, self.deadline, SystemTime::now)
                .await
                .map_err(|error| ListenError::Hello { peer, error })?;
            Ok(Accepted {
                origin,
                peer,
                stream,
            })
        };
        tokio::time::timeout(self.deadline, steps)
            .await
            .unwrap_or(Err(ListenError::Transport(AcceptError::Timeout {
                peer,
                after: self.deadline,
            })))
    }

    /// Accepts on `listener` until `links` is closed, handing admitted links to it.
    /// Failed handshakes are logged and counted (refusals in the gate). Closing
    /// `links` cancels a waiting accept, which loses no queued connection (the
    /// transport layer's listeners are cancel-safe).
    pub async fn serve<L>(self, listener: L, links: mpsc::Sender<Accepted>)
    where
        L: switchyard_transport::listen::Listener<Conn = TcpStream>,
    {
        let this = Arc::new(self);
        let pending = Arc::new(Semaphore::new(MAX_PENDING_HANDSHAKES));
        let connections = Arc::new(Semaphore::new(MAX_HTTP_CONNECTIONS));
        let sources = Sources::default();
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
            // One source's idle sockets take its own slots, never everyone's.
            let Some(slot) = sources.take(peer.ip()) else {
                tracing::debug!(%peer, "tunnel listener: too many handshakes from this source");
                continue;
            };
            let Ok(permit) = pending.clone().try_acquire_owned() else {
                tracing::warn!(%peer, "tunnel listener: too many handshakes in progress");
                continue;
            };
            if this.acceptor.streams().is_some() {
                let Ok(connection) = connections.clone().try_acquire_owned() else {
                    tracing::warn!(%peer, "tunnel listener: too many HTTP connections");
                    continue;
                };
                let http = Http {
                    listener: this.clone(),
                    links: links.clone(),
                    pending: pending.clone(),
                    sources: sources.clone(),
                    peer,
                };
                tokio::spawn(http.serve(tcp, (permit, slot), connection));
                continue;
            }
            let (this, links) = (this.clone(), links.clone());
            tokio::spawn(async move {
                let accepted = this.handshake(tcp, peer).await;
                drop((permit, slot));
                deliver(accepted, &links).await;
            });
        }
    }
}

/// Hands an admitted link to the pool, or logs why a connection did not become one.
async fn deliver(accepted: Result<Accepted, ListenError>, links: &mpsc::Sender<Accepted>) {
    match accepted {
        Ok(link) => {
            tracing::debug!(origin = %link.origin, peer = %link.peer, "link admitted");
            let _ = links.send(link).await;
        }
        Err(e) => tracing::info!(error = %e, "tunnel link not admitted"),
    }
}
