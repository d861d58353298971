//! Port hopping: one QUIC endpoint on several UDP ports. A client that hops sends to
//! a port of the range picked anew every few seconds (from a new local port too);
//! the server takes packets on all of them and QUIC follows the client to its new
//! address. Replies to an address go out from the port that address last wrote to,
//! so a client behind a NAT that filters by port gets them.

use std::collections::HashMap;
use std::fmt;
use std::io::{self, IoSliceMut};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use quinn::udp::{RecvMeta, Transmit};
use quinn::{AsyncUdpSocket, UdpPoller};

/// Client addresses remembered for replies; past this the memory starts over (a
/// client not remembered gets replies from the first port until it writes again).
const MAX_REMEMBERED: usize = 4096;

/// Several UDP sockets as one, for quinn.
pub struct HopSocket {
    sockets: Vec<Arc<dyn AsyncUdpSocket>>,
    /// Where reading starts next, so no port starves the others.
    next: AtomicUsize,
    /// The socket each client address last wrote to.
    last: Mutex<HashMap<SocketAddr, usize>>,
}

impl fmt::Debug for HopSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HopSocket")
            .field("ports", &self.sockets.len())
            .finish_non_exhaustive()
    }
}

impl HopSocket {
    /// One socket of `sockets` (at least one).
    pub fn new(sockets: Vec<Arc<dyn AsyncUdpSocket>>) -> io::Result<Self> {
        if sockets.is_empty() {
            return Err(io::Error::other("port hopping needs at least one socket"));
        }
        Ok(Self {
            sockets,
            next: AtomicUsize::new(0),
            last: Mutex::new(HashMap::new()),
        })
    }

    fn remember(&self, meta: &[RecvMeta], socket: usize) {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        for m in meta {
            if last.len() >= MAX_REMEMBERED && !last.contains_key(&m.addr) {
                last.clear();
            }
            last.insert(m.addr, socket);
        }
    }
}

impl AsyncUdpSocket for HopSocket {
    fn create_io_poller(self: Arc<Self>) -> Pin<Box<dyn UdpPoller>> {
        Box::pin(AnyWritable(
            self.sockets
                .iter()
                .map(|s| s.clone().create_io_poller())
                .collect(),
        ))
    }

    fn try_send(&self, transmit: &Transmit<'_>) -> io::Result<()> {
        let socket = self
            .last
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&transmit.destination)
            .copied()
            .unwrap_or(0);
        self.sockets[socket].try_send(transmit)
    }

    fn poll_recv(
        &self,
        cx: &mut Context<'_>,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        let n = self.sockets.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed) % n;
        for i in 0..n {
            let index = (start + i) % n;
            match self.sockets[index].poll_recv(cx, bufs, meta) {
                Poll::Ready(Ok(got)) => {
                    self.remember(&meta[..got], index);
                    return Poll::Ready(Ok(got));
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => {}
            }
        }
        Poll::Pending
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sockets[0].local_addr()
    }

    fn max_transmit_segments(&self) -> usize {
        self.sockets
            .iter()
            .map(|s| s.max_transmit_segments())
            .min()
            .unwrap_or(1)
    }

    fn max_receive_segments(&self) -> usize {
        self.sockets
            .iter()
            .map(|s| s.max_receive_segments())
            .min()
            .unwrap_or(1)
    }

    fn may_fragment(&self) -> bool {
        self.sockets.iter().any(|s| s.may_fragment())
    }
}

/// Writable when any of the sockets is.
struct AnyWritable(Vec<Pin<Box<dyn UdpPoller>>>);

impl fmt::Debug for AnyWritable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("AnyWritable").field(&self.0.len()).finish()
    }
}

impl UdpPoller for AnyWritable {
    fn poll_writable(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        for poller in self.0.iter_mut() {
            if let Poll::Ready(r) = poller.as_mut().poll_writable(cx) {
                return Poll::Ready(r);
            }
        }
        Poll::Pending
    }
}
