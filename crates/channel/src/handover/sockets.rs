//! Listening sockets as they cross: what the old process hands over ([`Handed`]: a
//! duplicate of each listener's descriptor, kept with the inbound that serves it)
//! and what the new process takes them from ([`Inherited`]), keyed by kind and the
//! address the config names.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::os::fd::{AsFd, OwnedFd};

use serde::{Deserialize, Serialize};

/// What a listening socket carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A TCP listener.
    Tcp,
    /// A bound UDP socket.
    Udp,
}

/// One listening socket to hand over: a duplicate of its descriptor.
#[derive(Debug)]
pub struct Handed {
    /// TCP or UDP.
    pub kind: Kind,
    /// Its address, as the config names it.
    pub addr: SocketAddr,
    /// The descriptor.
    pub fd: OwnedFd,
}

impl Handed {
    /// A duplicate of `socket`'s descriptor (the socket stays open while either is).
    pub fn of(kind: Kind, addr: SocketAddr, socket: &impl AsFd) -> std::io::Result<Self> {
        Ok(Self {
            kind,
            addr,
            fd: socket.as_fd().try_clone_to_owned()?,
        })
    }

    /// Another duplicate of the same socket.
    pub fn try_clone(&self) -> std::io::Result<Self> {
        Self::of(self.kind, self.addr, &self.fd)
    }
}

/// The sockets a new process received, taken as its inbounds (and its control API)
/// bind; the ones left over are closed with it.
#[derive(Debug, Default)]
pub struct Inherited {
    sockets: HashMap<(Kind, SocketAddr), OwnedFd>,
}

/// Sockets handed over within one process (tests, embedders).
impl From<Vec<Handed>> for Inherited {
    fn from(handed: Vec<Handed>) -> Self {
        let mut inherited = Self::default();
        for h in handed {
            inherited.insert(h.kind, h.addr, h.fd);
        }
        inherited
    }
}

impl Inherited {
    /// Adds a received socket. A second one for the same address replaces the first.
    pub fn insert(&mut self, kind: Kind, addr: SocketAddr, fd: OwnedFd) {
        self.sockets.insert((kind, addr), fd);
    }

    /// How many sockets are still to take.
    pub fn len(&self) -> usize {
        self.sockets.len()
    }

    /// Whether none is left.
    pub fn is_empty(&self) -> bool {
        self.sockets.is_empty()
    }

    /// The TCP listener for `addr`, if one was handed over (non-blocking, for tokio).
    pub fn take_tcp(&mut self, addr: SocketAddr) -> Option<std::io::Result<std::net::TcpListener>> {
        let fd = self.sockets.remove(&(Kind::Tcp, addr))?;
        let listener = std::net::TcpListener::from(fd);
        Some(listener.set_nonblocking(true).map(|()| listener))
    }

    /// The UDP socket for `addr`, if one was handed over (non-blocking, for tokio).
    pub fn take_udp(&mut self, addr: SocketAddr) -> Option<std::io::Result<std::net::UdpSocket>> {
        let fd = self.sockets.remove(&(Kind::Udp, addr))?;
        let socket = std::net::UdpSocket::from(fd);
        Some(socket.set_nonblocking(true).map(|()| socket))
    }
}
