//! SOCKS5 UDP ASSOCIATE (RFC 1928 §7): a relay socket of its own per association, on
//! the IP address the app reached the proxy at, replied as `BND.ADDR`. The app sends
//! datagrams there with the SOCKS5 UDP header (`RSV RSV FRAG address`); each goes
//! through the current server ([`Outbound::udp`]) and its answers come back with the
//! header naming their source.
//!
//! - Only the app's address is heard: the IP of the control connection (or the one
//!   the request named) and, once known, one port (the request's, or the first
//!   datagram's); anything else is dropped and counted.
//! - Fragments (`FRAG` ≠ 0) are dropped and counted, as are malformed headers.
//! - The association lives as long as its TCP control connection, and ends (the
//!   control connection closed with it) after [`UDP_IDLE_TIMEOUT`] without a datagram
//!   either way, when the server ends it or fails, and at a switch of server that
//!   closes connections.
//! - The way to the server is opened at the first datagram. Datagrams wait in bounded
//!   queues of [`UDP_QUEUE`] each way; when one is full, datagrams are dropped (and
//!   counted), as a congested link would.
//! - The meter counts the datagrams' payloads, as TCP's streams are counted.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use switchyard_proto::Address;
use switchyard_proto::socks5::{ReplyCode, Socks5Error, UdpPacket};
use tokio::io::AsyncReadExt;
use tokio::net::{TcpStream, UdpSocket};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::{Proxy, ServeError, socks_reply_bound};
use crate::meter::Meter;
use crate::outbound::Outbound;

/// How long an association lives without a datagram either way. 60 s: longer than
/// the gaps of apps that keep a UDP flow alive (DNS retries, QUIC's 30 s idle
/// pings), short enough that abandoned associations give their sockets back soon.
pub const UDP_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// Datagrams waiting each way per association (to the server, and back to the app).
/// 256 of up to 64 KiB is a bound of 16 MiB per direction in the worst case and a
/// few hundred KiB for typical 1,400-byte datagrams.
pub const UDP_QUEUE: usize = 256;

/// The largest datagram the relay takes.
const MAX_DATAGRAM: usize = 65_536;

/// What the proxy's UDP associations saw, over the client's whole run.
#[derive(Debug, Default)]
pub struct UdpCounters {
    associations: AtomicU64,
    fragments: AtomicU64,
    malformed: AtomicU64,
    strangers: AtomicU64,
    dropped: AtomicU64,
}

/// A snapshot of [`UdpCounters`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UdpStats {
    /// Associations accepted.
    pub associations: u64,
    /// Datagrams dropped as fragments (`FRAG` ≠ 0).
    pub fragments: u64,
    /// Datagrams dropped for a malformed header.
    pub malformed: u64,
    /// Datagrams dropped because they came from another address than the app's.
    pub strangers: u64,
    /// Datagrams dropped because a queue was full or the server's framing could not
    /// carry them.
    pub dropped: u64,
}

impl UdpCounters {
    /// The counts so far.
    pub fn stats(&self) -> UdpStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        UdpStats {
            associations: get(&self.associations),
            fragments: get(&self.fragments),
            malformed: get(&self.malformed),
            strangers: get(&self.strangers),
            dropped: get(&self.dropped),
        }
    }

    fn count(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// Reads an app's datagram; `None` (counted) when it is a fragment or malformed.
pub(crate) fn read_datagram<'a>(
    datagram: &'a [u8],
    counters: &UdpCounters,
) -> Option<UdpPacket<'a>> {
    match UdpPacket::parse(datagram) {
        Ok(packet) => Some(packet),
        Err(Socks5Error::Fragmented(_)) => {
            UdpCounters::count(&counters.fragments);
            None
        }
        Err(_) => {
            UdpCounters::count(&counters.malformed);
            None
        }
    }
}

/// Who may send on the association: the IP, and the port once known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Peer {
    ip: IpAddr,
    port: Option<u16>,
}

impl Peer {
    /// The app at `control` (the control connection's peer) that named `hint` in its
    /// request (often `0.0.0.0:0`: "I don't know yet").
    pub(crate) fn new(control: SocketAddr, hint: &Address) -> Self {
        match hint {
            Address::Ip(a) => Self {
                ip: if a.ip().is_unspecified() {
                    control.ip()
                } else {
                    a.ip()
                },
                port: (a.port() != 0).then_some(a.port()),
            },
            Address::Domain(_, port) => Self {
                ip: control.ip(),
                port: (*port != 0).then_some(*port),
            },
        }
    }

    /// Whether `from` is the app; the first datagram's port becomes the app's.
    pub(crate) fn admit(&mut self, from: SocketAddr) -> bool {
        if unmapped(from.ip()) != unmapped(self.ip) {
            return false;
        }
        match self.port {
            Some(port) => port == from.port(),
            None => {
                self.port = Some(from.port());
                true
            }
        }
    }
}

fn unmapped(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        IpAddr::V4(_) => ip,
    }
}

/// Aborts the task when dropped, so a way to the server never outlives its
/// association.
struct Task(JoinHandle<Result<(), ServeError>>);

impl Drop for Task {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Serves one UDP ASSOCIATE on `control` until it ends; `hint` is the request's
/// address, `idle` the idle timeout.
pub(crate) async fn associate(
    proxy: &Proxy,
    mut control: TcpStream,
    hint: Address,
    idle: Duration,
) -> Result<(), ServeError> {
    let local = control.local_addr()?;
    let mut peer = Peer::new(control.peer_addr()?, &hint);
    let Some(server) = proxy.server() else {
        socks_reply_bound(&mut control, ReplyCode::GeneralFailure, None).await;
        return Err(ServeError::NoServer);
    };
    let relay = match UdpSocket::bind((local.ip(), 0)).await {
        Ok(s) => s,
        Err(e) => {
            socks_reply_bound(&mut control, ReplyCode::GeneralFailure, None).await;
            return Err(ServeError::RelaySocket {
                ip: local.ip(),
                source: e,
            });
        }
    };
    let bound = relay.local_addr()?;
    if !socks_reply_bound(&mut control, ReplyCode::Succeeded, Some(bound)).await {
        return Err(ServeError::ClosedBeforeReply);
    }
    UdpCounters::count(&proxy.udp.associations);
    let mut closed = proxy.generation.subscribe();
    let counters = proxy.udp.clone();
    let (answers_tx, mut answers) = mpsc::channel::<(Address, Vec<u8>)>(UDP_QUEUE);
    let mut to_server: Option<mpsc::Sender<(Address, Vec<u8>)>> = None;
    let mut task: Option<Task> = None;
    let mut app: Option<SocketAddr> = None;
    let mut buf = vec![0u8; MAX_DATAGRAM];
    let mut out = Vec::with_capacity(2048);
    let mut scratch = [0u8; 64];
    let mut last = Instant::now();
    loop {
        tokio::select! {
            r = control.read(&mut scratch) => match r {
                // Nothing is expected on the control connection; its end is the
                // association's.
                Ok(0) | Err(_) => return Ok(()),
                Ok(_) => {}
            },
            r = relay.recv_from(&mut buf) => {
                let (n, from) = r.map_err(ServeError::Relay)?;
                if !peer.admit(from) {
                    UdpCounters::count(&counters.strangers);
                    continue;
                }
                app = Some(from);
                let Some(packet) = read_datagram(&buf[..n], &counters) else {
                    continue;
                };
                last = Instant::now();
                let queue = to_server.get_or_insert_with(|| {
                    let (tx, rx) = mpsc::channel(UDP_QUEUE);
                    task = Some(Task(tokio::spawn(carry(
                        server.clone(),
                        packet.address.clone(),
                        packet.payload.len(),
                        rx,
                        answers_tx.clone(),
                        Carry {
                            meter: proxy.meter.clone(),
                            counters: counters.clone(),
                            gate: proxy.gate.clone(),
                        },
                    ))));
                    tx
                });
                if queue.try_send((packet.address, packet.payload.to_vec())).is_err() {
                    UdpCounters::count(&counters.dropped);
                }
            }
            Some((source, payload)) = answers.recv() => {
                let Some(to) = app else { continue };
                out.clear();
                UdpPacket { address: source, payload: &payload }.encode(&mut out);
                last = Instant::now();
                if let Err(e) = relay.send_to(&out, to).await {
                    tracing::debug!(%to, "UDP relay: {e}");
                }
            }
            r = async { (&mut task.as_mut()?.0).await.ok() }, if task.is_some() => {
                return match r {
                    Some(Err(e)) => Err(e),
                    _ => Ok(()),
                };
            }
            () = tokio::time::sleep_until(last + idle) => {
                return Err(ServeError::Idle(idle));
            }
            _ = closed.changed() => return Err(ServeError::Switched),
        }
    }
}

/// What a way to the server reports to.
struct Carry {
    meter: Arc<Meter>,
    counters: Arc<UdpCounters>,
    /// Where a way that cannot be opened is reported (not held: see `super::hold`).
    gate: Arc<super::hold::Gate>,
}

/// Opens the way through `server` and carries datagrams both ways until either
/// fails or the server ends it.
async fn carry(
    server: Arc<Outbound>,
    first: Address,
    first_len: usize,
    mut queue: mpsc::Receiver<(Address, Vec<u8>)>,
    answers: mpsc::Sender<(Address, Vec<u8>)>,
    report: Carry,
) -> Result<(), ServeError> {
    let (mut sender, mut receiver) = match server.udp(&first).await {
        Ok(pair) => pair,
        Err(e) => {
            let _ = report.gate.report(server.identity());
            // The app tried to go out and nothing came back (see TCP's refusals).
            report
                .meter
                .add_unsent(u64::try_from(first_len).unwrap_or(u64::MAX).max(1));
            return Err(e.into());
        }
    };
    let udp_error = |source| ServeError::Udp {
        server: server.entry().name.clone(),
        source,
    };
    let out = async {
        while let Some((to, payload)) = queue.recv().await {
            match sender.send(&to, &payload).await {
                Ok(()) => report.meter.add_sent(payload.len() as u64),
                Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
                    UdpCounters::count(&report.counters.dropped);
                }
                Err(e) => return Err(udp_error(e)),
            }
        }
        Ok(())
    };
    let back = async {
        loop {
            match receiver.recv().await {
                Ok(Some((source, payload))) => {
                    report.meter.add_received(payload.len() as u64);
                    match answers.try_send((source, payload)) {
                        Ok(()) => {}
                        Err(mpsc::error::TrySendError::Full(_)) => {
                            UdpCounters::count(&report.counters.dropped);
                        }
                        Err(mpsc::error::TrySendError::Closed(_)) => return Ok(()),
                    }
                }
                Ok(None) => return Ok(()),
                Err(e) => return Err(udp_error(e)),
            }
        }
    };
    tokio::select! {
        r = out => r,
        r = back => r,
    }
}

#[cfg(test)]
#[path = "udp_tests.rs"]
mod tests;
