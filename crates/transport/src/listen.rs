//! The accepting side: a [`Listener`] hands out connections, nothing more.
//!
//! The layers above TCP (TLS, REALITY, a WebSocket upgrade) are *not* run inside
//! [`Listener::accept`]: the caller runs them in the connection's own task, with its
//! own deadline, so a peer that stalls its handshake holds up nobody else.
//!
//! **Cancel-safety.** [`Listener::accept`] is cancel-safe: if its future is dropped
//! before it completes (a `select!` with a shutdown signal, a timeout), no connection
//! is lost; one still queued by the kernel is handed out by the next call. An
//! implementation may await only cancel-safe operations before it returns, and must
//! never hold a connection it has taken from the kernel across an await.

use std::future::Future;
use std::net::SocketAddr;

use tokio::net::{TcpSocket, TcpStream};

use crate::io::Io;

/// Something that hands out incoming connections (see the module's notes on
/// cancel-safety).
pub trait Listener: Send + Sync {
    /// What a connection is.
    type Conn: Io + 'static;
    /// The next connection and its peer's address. Cancel-safe.
    fn accept(&self) -> impl Future<Output = std::io::Result<(Self::Conn, SocketAddr)>> + Send;
    /// The address it listens on.
    fn local_addr(&self) -> std::io::Result<SocketAddr>;
}

/// How a TCP port is bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BindOptions {
    /// `SO_REUSEPORT`: a second listener (a changed inbound, a new process during an
    /// upgrade) may bind the port while the old one still serves.
    pub reuse_port: bool,
    /// The kernel's queue of connections not yet accepted.
    pub backlog: u32,
}

impl Default for BindOptions {
    fn default() -> Self {
        Self {
            reuse_port: false,
            backlog: 1024,
        }
    }
}

/// Why a TCP port could not be bound.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BindError {
    /// The system gave no TCP socket.
    #[error("socket: {0}")]
    Socket(#[source] std::io::Error),
    /// A socket option could not be set.
    #[error("{option}: {source}")]
    Option {
        /// `SO_REUSEADDR` or `SO_REUSEPORT`.
        option: &'static str,
        /// Why.
        source: std::io::Error,
    },
    /// The port can't be bound (another program holds it: `AddrInUse`).
    #[error("port {} on {}: {source}", .addr.port(), .addr.ip())]
    Port {
        /// The address and port.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The bound socket can't listen.
    #[error("listen on {addr}: {source}")]
    Listen {
        /// The address and port.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

impl BindError {
    /// Whether another socket holds the port.
    pub fn in_use(&self) -> bool {
        matches!(self, Self::Port { source, .. } if source.kind() == std::io::ErrorKind::AddrInUse)
    }
}

/// A TCP listener whose connections come with Nagle's algorithm off (every layer
/// above writes whole records or frames, and small ones must not wait).
#[derive(Debug)]
pub struct TcpListener {
    inner: tokio::net::TcpListener,
}

impl TcpListener {
    /// Binds `addr` (`SO_REUSEADDR` always, `SO_REUSEPORT` when asked).
    pub fn bind(addr: SocketAddr, options: BindOptions) -> Result<Self, BindError> {
        let option = |option| move |source| BindError::Option { option, source };
        let socket = if addr.is_ipv4() {
            TcpSocket::new_v4()
        } else {
            TcpSocket::new_v6()
        }
        .map_err(BindError::Socket)?;
        socket.set_reuseaddr(true).map_err(option("SO_REUSEADDR"))?;
        if options.reuse_port {
            socket.set_reuseport(true).map_err(option("SO_REUSEPORT"))?;
        }
        socket
            .bind(addr)
            .map_err(|source| BindError::Port { addr, source })?;
        let inner = socket
            .listen(options.backlog)
            .map_err(|source| BindError::Listen { addr, source })?;
        Ok(Self { inner })
    }

    /// Wraps a listener bound elsewhere.
    pub fn from_tokio(inner: tokio::net::TcpListener) -> Self {
        Self { inner }
    }
}

/// Its descriptor: a node hands its listeners to the process that takes over from it.
impl std::os::fd::AsFd for TcpListener {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.inner.as_fd()
    }
}

impl Listener for TcpListener {
    type Conn = TcpStream;

    // `tokio::net::TcpListener::accept` is cancel-safe, and nothing else is awaited.
    async fn accept(&self) -> std::io::Result<(TcpStream, SocketAddr)> {
        let (tcp, peer) = self.inner.accept().await?;
        let _ = tcp.set_nodelay(true);
        Ok((tcp, peer))
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

/// A tokio listener as it is: bound by someone else (a test, a socket handed over).
impl Listener for tokio::net::TcpListener {
    type Conn = TcpStream;

    // Cancel-safe for the same reason as [`TcpListener`]'s.
    async fn accept(&self) -> std::io::Result<(TcpStream, SocketAddr)> {
        // The inherent `accept` (inherent methods come before the trait's).
        let (tcp, peer) = Self::accept(self).await?;
        let _ = tcp.set_nodelay(true);
        Ok((tcp, peer))
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        Self::local_addr(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_cancelled_accept_loses_no_connection() {
        let listener =
            TcpListener::bind("127.0.0.1:0".parse().unwrap(), BindOptions::default()).unwrap();
        let addr = listener.local_addr().unwrap();
        // Cancel an accept that is waiting, many times over.
        for _ in 0..10 {
            let waited = tokio::time::timeout(Duration::from_millis(5), listener.accept()).await;
            assert!(waited.is_err());
        }
        let client = TcpStream::connect(addr).await.unwrap();
        let local = client.local_addr().unwrap();
        let (tcp, peer) = tokio::time::timeout(Duration::from_secs(5), listener.accept())
            .await
            .expect("the queued connection is handed out")
            .unwrap();
        assert_eq!(peer, local);
        assert!(tcp.nodelay().unwrap(), "Nagle is off");
    }

    /// Through the trait, as the tunnel's listening side takes it.
    async fn accept_one<L: Listener>(l: &L) -> SocketAddr {
        l.accept().await.unwrap().1
    }

    #[tokio::test]
    async fn a_tokio_listener_accepts_through_the_trait() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = Listener::local_addr(&listener).unwrap();
        let client = TcpStream::connect(addr).await.unwrap();
        let peer = tokio::time::timeout(Duration::from_secs(5), accept_one(&listener))
            .await
            .expect("accepted, not a loop calling itself");
        assert_eq!(peer, client.local_addr().unwrap());
    }

    #[tokio::test]
    async fn a_held_port_is_in_use_unless_both_reuse_it() {
        let options = BindOptions {
            reuse_port: true,
            ..BindOptions::default()
        };
        let first = TcpListener::bind("127.0.0.1:0".parse().unwrap(), options).unwrap();
        let addr = first.local_addr().unwrap();
        TcpListener::bind(addr, options).expect("SO_REUSEPORT on both sides");
        let refused = TcpListener::bind(addr, BindOptions::default()).unwrap_err();
        assert!(refused.in_use(), "{refused}");
        assert_eq!(
            refused.to_string(),
            format!(
                "port {} on 127.0.0.1: {}",
                addr.port(),
                match &refused {
                    BindError::Port { source, .. } => source.to_string(),
                    other => panic!("{other:?}"),
                }
            )
        );
    }
}
