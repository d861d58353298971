//! Port hopping, the client's side, as the official Hysteria client does it: QUIC
//! sees one fixed remote address (the server's main port); under it,
//! [`ClientHopSocket`] sends every datagram to the server's IP at the *current*
//! port, and every hop interval picks a new port of the range ([`HopSchedule`]) and
//! a new local port (a new socket). Datagrams from the server at any port of the
//! range are handed to QUIC as from the fixed address; the previous local socket
//! still receives until the next hop, so packets the server sent before it saw the
//! hop are not lost. The server ([`super::hop`]) follows the client to its new
//! address as QUIC migration.
//!
//! Salamander ([`super::SalamanderSocket`]) goes on top of this socket.

use std::fmt;
use std::io::{self, IoSliceMut};
use std::net::{IpAddr, SocketAddr};
use std::ops::RangeInclusive;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use quinn::udp::{RecvMeta, Transmit};
use quinn::{AsyncUdpSocket, Runtime, UdpPoller};

use super::wire::size_buffers;

/// Hysteria's default hop interval (its client's `hopInterval`).
pub const DEFAULT_HOP_INTERVAL: Duration = Duration::from_secs(30);

/// The shortest hop interval taken; a shorter one is this.
const MIN_HOP_INTERVAL: Duration = Duration::from_millis(1);

/// How a client hops: the server's ports and how often.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientHop {
    /// The ports the server also accepts on (the main port is hopped to as well).
    pub ports: RangeInclusive<u16>,
    /// How long the client stays on one port ([`DEFAULT_HOP_INTERVAL`] unless
    /// told; at least 1 ms).
    pub interval: Duration,
}

/// Which port each hop goes to: a pure function of the hop's number, the port
/// before it and a seed. The ports are the range and the main port (when outside
/// it); the first is any of them, each next one any of the *others*, so every hop
/// moves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HopSchedule {
    main: u16,
    ports: RangeInclusive<u16>,
    interval: Duration,
    seed: u64,
}

impl HopSchedule {
    /// Hops across `ports` and `main` every `interval` (at least 1 ms), picking
    /// with `seed`. An empty range is the main port alone.
    pub fn new(main: u16, ports: RangeInclusive<u16>, interval: Duration, seed: u64) -> Self {
        Self {
            main,
            ports,
            interval: interval.max(MIN_HOP_INTERVAL),
            seed,
        }
    }

    /// How long each hop lasts.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// The range's ports.
    fn range_len(&self) -> u32 {
        if self.ports.is_empty() {
            0
        } else {
            u32::from(*self.ports.end()) - u32::from(*self.ports.start()) + 1
        }
    }

    /// How many ports it hops across.
    fn len(&self) -> u32 {
        self.range_len() + u32::from(!self.ports.contains(&self.main))
    }

    /// The `i`th port (`i < len`): the range in order, then the main port.
    fn nth(&self, i: u32) -> u16 {
        if i < self.range_len() {
            // Within the range: start + i <= end, a u16.
            u16::try_from(u32::from(*self.ports.start()) + i).unwrap_or(self.main)
        } else {
            self.main
        }
    }

    /// Where `port` is among them.
    fn index(&self, port: u16) -> Option<u32> {
        if self.ports.contains(&port) {
            Some(u32::from(port - self.ports.start()))
        } else {
            (port == self.main).then(|| self.range_len())
        }
    }

    /// The number of the hop under way `elapsed` after the start (the first is 0).
    pub fn hop_at(&self, elapsed: Duration) -> u64 {
        u64::try_from(elapsed.as_nanos() / self.interval.as_nanos()).unwrap_or(u64::MAX)
    }

    /// The port of hop number `hop`, after `previous` (none for the first).
    pub fn port(&self, hop: u64, previous: Option<u16>) -> u16 {
        let len = self.len();
        let r = mix(self.seed, hop);
        let index = match previous.and_then(|p| self.index(p)) {
            Some(p) if len > 1 => {
                let step = 1 + (r % u64::from(len - 1));
                (u64::from(p) + step) % u64::from(len)
            }
            _ => r % u64::from(len),
        };
        self.nth(u32::try_from(index).unwrap_or(0))
    }

    /// The port `elapsed` after the start, every hop taken in turn.
    pub fn port_at(&self, elapsed: Duration) -> u16 {
        let mut port = self.port(0, None);
        for hop in 1..=self.hop_at(elapsed) {
            port = self.port(hop, Some(port));
        }
        port
    }

    /// Whether `port` is one it hops to.
    fn has(&self, port: u16) -> bool {
        self.index(port).is_some()
    }
}

/// splitmix64 of the seed and the hop's number: evenly spread, the same for the
/// same two.
fn mix(seed: u64, hop: u64) -> u64 {
    let mut z = seed.wrapping_add(hop.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One local socket and the server port it sends to.
#[derive(Clone)]
struct Leg {
    socket: Arc<dyn AsyncUdpSocket>,
    port: u16,
}

/// The sockets of now: the current one, the one before it (receiving only), and
/// how many hops there were.
struct Legs {
    current: Leg,
    previous: Option<Leg>,
    hops: u64,
}

/// A UDP socket for quinn that hops across a server's ports.
pub struct ClientHopSocket {
    /// What QUIC sends to and receives from: the server's main port.
    fixed: SocketAddr,
    schedule: HopSchedule,
    /// Where new local sockets bind.
    bind: SocketAddr,
    runtime: Arc<dyn Runtime>,
    legs: RwLock<Legs>,
    /// The task receiving, woken on a hop to read the new socket too.
    reader: Mutex<Option<Waker>>,
    /// Which socket reading starts with, alternately.
    flip: AtomicBool,
}

impl fmt::Debug for ClientHopSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (port, hops) = self.current();
        f.debug_struct("ClientHopSocket")
            .field("server", &self.fixed)
            .field("port", &port)
            .field("hops", &hops)
            .finish_non_exhaustive()
    }
}

impl ClientHopSocket {
    /// A socket on `bind` (an unspecified address and port 0, usually) for
    /// `server` (its IP and main port), hopping as `hop` says, its ports picked
    /// from a random seed; its hops are driven by a task of the current tokio
    /// runtime (tokio's time), which ends with the socket.
    pub fn bind(
        bind: SocketAddr,
        server: SocketAddr,
        hop: &ClientHop,
        runtime: Arc<dyn Runtime>,
    ) -> io::Result<Arc<Self>> {
        let mut seed = [0u8; 8];
        let _ = ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut seed);
        let schedule = HopSchedule::new(
            server.port(),
            hop.ports.clone(),
            hop.interval,
            u64::from_le_bytes(seed),
        );
        Self::with_schedule(bind, server, schedule, runtime)
    }

    /// Like [`Self::bind`] with `schedule` (not in a tokio runtime: an error).
    pub fn with_schedule(
        bind: SocketAddr,
        server: SocketAddr,
        schedule: HopSchedule,
        runtime: Arc<dyn Runtime>,
    ) -> io::Result<Arc<Self>> {
        let first = schedule.port(0, None);
        let current = Leg {
            socket: new_socket(bind, runtime.as_ref())?,
            port: first,
        };
        let interval = schedule.interval();
        let socket = Arc::new(Self {
            fixed: server,
            schedule,
            bind,
            runtime,
            legs: RwLock::new(Legs {
                current,
                previous: None,
                hops: 0,
            }),
            reader: Mutex::new(None),
            flip: AtomicBool::new(false),
        });
        tokio::runtime::Handle::try_current()
            .map_err(io::Error::other)?
            .spawn(drive(Arc::downgrade(&socket), interval));
        Ok(socket)
    }

    /// The server port sent to now, and how many hops there were.
    pub fn current(&self) -> (u16, u64) {
        let legs = self.legs.read().unwrap_or_else(PoisonError::into_inner);
        (legs.current.port, legs.hops)
    }

    /// One hop: a new local socket sending to the schedule's next port; the
    /// current one keeps receiving until the next hop. Should no socket bind, the
    /// client stays where it is.
    fn hop(&self) {
        let socket = match new_socket(self.bind, self.runtime.as_ref()) {
            Ok(socket) => socket,
            Err(e) => {
                tracing::debug!(server = %self.fixed, "hysteria2 port hopping: a new socket: {e}");
                return;
            }
        };
        {
            let mut legs = self.legs.write().unwrap_or_else(PoisonError::into_inner);
            let hop = legs.hops + 1;
            let port = self.schedule.port(hop, Some(legs.current.port));
            let current = std::mem::replace(&mut legs.current, Leg { socket, port });
            legs.previous = Some(current);
            legs.hops = hop;
        }
        let reader = self
            .reader
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(waker) = reader {
            waker.wake();
        }
    }

    /// Whether a datagram from `from` is the server's.
    fn is_server(&self, from: SocketAddr) -> bool {
        canonical(from.ip()) == canonical(self.fixed.ip()) && self.schedule.has(from.port())
    }
}

/// `ip` with an IPv4-mapped IPv6 address as the IPv4 one.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        IpAddr::V4(_) => ip,
    }
}

/// A new UDP socket on `bind` for quinn.
fn new_socket(bind: SocketAddr, runtime: &dyn Runtime) -> io::Result<Arc<dyn AsyncUdpSocket>> {
    let socket = std::net::UdpSocket::bind(bind)?;
    size_buffers(&socket);
    runtime.wrap_udp_socket(socket)
}

/// Hops every `interval` while the socket lives.
async fn drive(socket: Weak<ClientHopSocket>, interval: Duration) {
    let start = tokio::time::Instant::now() + interval;
    let mut ticks = tokio::time::interval_at(start, interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        match socket.upgrade() {
            Some(socket) => socket.hop(),
            None => return,
        }
    }
}

impl AsyncUdpSocket for ClientHopSocket {
    fn create_io_poller(self: Arc<Self>) -> Pin<Box<dyn UdpPoller>> {
        let (leg, hops) = {
            let legs = self.legs.read().unwrap_or_else(PoisonError::into_inner);
            (legs.current.socket.clone(), legs.hops)
        };
        Box::pin(HopPoller {
            inner: leg.create_io_poller(),
            hops,
            socket: self,
        })
    }

    fn try_send(&self, transmit: &Transmit<'_>) -> io::Result<()> {
        let leg = self
            .legs
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .current
            .clone();
        if transmit.destination != self.fixed {
            return leg.socket.try_send(transmit);
        }
        leg.socket.try_send(&Transmit {
            destination: SocketAddr::new(self.fixed.ip(), leg.port),
            ecn: transmit.ecn,
            contents: transmit.contents,
            segment_size: transmit.segment_size,
            src_ip: transmit.src_ip,
        })
    }

    fn poll_recv(
        &self,
        cx: &mut Context<'_>,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        // Registered before the sockets are read: a hop after this wakes the task.
        {
            let mut reader = self.reader.lock().unwrap_or_else(PoisonError::into_inner);
            if !reader.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                *reader = Some(cx.waker().clone());
            }
        }
        let (current, previous) = {
            let legs = self.legs.read().unwrap_or_else(PoisonError::into_inner);
            (legs.current.socket.clone(), legs.previous.clone())
        };
        let mut order = [Some(current), previous.map(|l| l.socket)];
        if self.flip.fetch_xor(true, Ordering::Relaxed) {
            order.swap(0, 1);
        }
        for socket in order.iter().flatten() {
            match socket.poll_recv(cx, bufs, meta) {
                Poll::Ready(Ok(got)) => {
                    for m in &mut meta[..got] {
                        if self.is_server(m.addr) {
                            m.addr = self.fixed;
                        } else {
                            // Not the server's: nothing for QUIC (quinn skips it).
                            m.len = 0;
                        }
                    }
                    return Poll::Ready(Ok(got));
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => {}
            }
        }
        Poll::Pending
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.legs
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .current
            .socket
            .local_addr()
    }

    fn max_transmit_segments(&self) -> usize {
        self.legs
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .current
            .socket
            .max_transmit_segments()
    }

    fn max_receive_segments(&self) -> usize {
        self.legs
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .current
            .socket
            .max_receive_segments()
    }

    fn may_fragment(&self) -> bool {
        self.legs
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .current
            .socket
            .may_fragment()
    }
}

/// Writable when the current socket is; made anew for each hop's socket.
struct HopPoller {
    socket: Arc<ClientHopSocket>,
    /// The hop `inner` is for.
    hops: u64,
    inner: Pin<Box<dyn UdpPoller>>,
}

impl fmt::Debug for HopPoller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HopPoller")
            .field("hops", &self.hops)
            .finish_non_exhaustive()
    }
}

impl UdpPoller for HopPoller {
    fn poll_writable(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let (leg, hops) = {
            let legs = self
                .socket
                .legs
                .read()
                .unwrap_or_else(PoisonError::into_inner);
            (legs.current.socket.clone(), legs.hops)
        };
        if hops != self.hops {
            self.inner = leg.create_io_poller();
            self.hops = hops;
        }
        self.inner.as_mut().poll_writable(cx)
    }
}

#[cfg(test)]
#[path = "client_hop_tests.rs"]
mod tests;
