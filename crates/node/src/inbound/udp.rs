//! Users' UDP carried inside a stream (VLESS, XUDP, Trojan): packets out through one
//! socket per association, answers framed back with their source.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UdpSocket;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use switchyard_proto::xudp::{Frame, Network, Status};
use switchyard_proto::{trojan, vless};

use super::BoxIo;
use crate::accounting::Admission;
use std::sync::Arc;

use switchyard_tunnel::frame::{Network as TunnelNetwork, Open};
use switchyard_tunnel::half::RelayHalf;
use switchyard_tunnel::mux::MuxStream;
use tokio::sync::mpsc;

use crate::accounting::now_ms;
use crate::outbound::{Destination, Dialer, Plan};
use crate::runtime::Runtime;

/// Bytes of undecoded stream data an association may hold: one largest packet and
/// its framing.
const MAX_PENDING: usize = 70 * 1024;
/// Resolved names kept per association.
const MAX_RESOLVED: usize = 256;

/// How packets are framed in the stream.
pub(crate) enum Framing {
    /// VLESS command 2: every packet goes to the header's destination.
    Vless { to: Destination },
    /// VLESS command 3 (Mux.Cool / XUDP), as sing-box and Xray send UDP by default.
    Xudp {
        session: u16,
        to: Option<Destination>,
    },
    /// Trojan UDP ASSOCIATE: every packet names its destination.
    Trojan,
}

/// Why a UDP association ended in error, or one datagram could not go out (logged).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum UdpError {
    /// A Trojan UDP packet is malformed.
    #[error(transparent)]
    Trojan(#[from] trojan::TrojanError),
    /// An XUDP frame is malformed.
    #[error(transparent)]
    Xudp(#[from] switchyard_proto::xudp::XudpError),
    /// A Mux.Cool session for TCP.
    #[error("mux TCP sessions are not supported (only XUDP)")]
    MuxTcp,
    /// More than [`MAX_PENDING`] bytes that decode to no packet.
    #[error("undecodable UDP framing")]
    Undecodable,
    /// The association's socket could not be opened.
    #[error("UDP socket: {0}")]
    Socket(#[source] io::Error),
    /// Receiving an answer failed.
    #[error("UDP receive: {0}")]
    Receive(#[source] io::Error),
    /// Writing to the user's stream failed.
    #[error(transparent)]
    Stream(io::Error),
    /// The datagram's route could not be decided.
    #[error(transparent)]
    Route(#[from] crate::outbound::DialError),
    /// The route's tunnel is not running.
    #[error("tunnel {0} is not running")]
    TunnelDown(String),
    /// No stream could be opened in the tunnel.
    #[error("tunnel {tag}: {source}")]
    TunnelOpen {
        /// The tunnel's tag.
        tag: String,
        /// Why.
        source: switchyard_tunnel::pool::PoolError,
    },
    /// The datagram could not be sent into the tunnel.
    #[error("tunnel {tag}: {source}")]
    TunnelSend {
        /// The tunnel's tag.
        tag: String,
        /// Why.
        source: switchyard_tunnel::mux::MuxError,
    },
    /// The destination resolves to no address.
    #[error("no address")]
    NoAddress,
    /// An IPv6 destination on a node without IPv6.
    #[error("{0}: no IPv6 on this node")]
    NoIpv6(SocketAddr),
    /// Sending an answer back to the client failed (Shadowsocks).
    #[error("to {client}: {source}")]
    Reply {
        /// The client's address.
        client: SocketAddr,
        /// Why.
        source: io::Error,
    },
    /// Sending the datagram failed.
    #[error("{addr}: {source}")]
    Send {
        /// Where to.
        addr: SocketAddr,
        /// Why.
        source: io::Error,
    },
}

/// What one decoding step found.
enum Step<'a> {
    Packet(Destination, &'a [u8], usize),
    Skip(usize),
    End,
}

impl Framing {
    fn decode<'a>(&mut self, buf: &'a [u8]) -> Result<Option<Step<'a>>, UdpError> {
        match self {
            Self::Vless { to } => {
                Ok(vless::parse_udp_packet(buf).map(|(p, used)| Step::Packet(to.clone(), p, used)))
            }
            Self::Trojan => match trojan::UdpPacket::parse(buf)? {
                Some((p, used)) => Ok(Some(Step::Packet(p.address, p.payload, used))),
                None => Ok(None),
            },
            Self::Xudp { session, to } => {
                let Some((frame, used)) = Frame::parse(buf)? else {
                    return Ok(None);
                };
                match frame.status {
                    Status::End => return Ok(Some(Step::End)),
                    Status::KeepAlive => return Ok(Some(Step::Skip(used))),
                    Status::New | Status::Keep => {}
                }
                if let Some(target) = frame.target {
                    if target.network != Network::Udp {
                        return Err(UdpError::MuxTcp);
                    }
                    if frame.status == Status::New || to.is_none() {
                        *session = frame.session_id;
                        *to = Some(target.address.clone());
                    }
                    if let Some(data) = frame.data {
                        return Ok(Some(Step::Packet(target.address, data, used)));
                    }
                } else if let (Some(data), Some(dest)) = (frame.data, to.as_ref()) {
                    return Ok(Some(Step::Packet(dest.clone(), data, used)));
                }
                Ok(Some(Step::Skip(used)))
            }
        }
    }

    fn encode(&self, from: SocketAddr, payload: &[u8], out: &mut Vec<u8>) {
        let _ = match self {
            Self::Vless { .. } => vless::encode_udp_packet(payload, out),
            Self::Trojan => trojan::UdpPacket {
                address: Destination::Ip(from),
                payload,
            }
            .encode(out),
            Self::Xudp { session, .. } => {
                Frame::udp_packet(*session, Destination::Ip(from), payload).encode(out)
            }
        };
    }
}

/// A datagram and where it came from.
type Datagram = (SocketAddr, Vec<u8>);

/// Datagrams from tunnels waiting for the association, at most this many.
const TUNNEL_QUEUE: usize = 256;

/// The inbound an association came in by: its tag, which rules may name, and its
/// state, where the datagrams a rule blocks are counted.
#[derive(Clone)]
pub(crate) struct InboundRef {
    pub(crate) tag: String,
    pub(crate) state: Arc<super::state::InboundState>,
}

impl InboundRef {
    pub(crate) fn new(tag: &str, state: &Arc<super::state::InboundState>) -> Self {
        Self {
            tag: tag.to_owned(),
            state: state.clone(),
        }
    }
}

/// One socket for an association, the names it resolved, and the UDP streams of the
/// tunnels its route sends datagrams into.
pub(crate) struct Outlet {
    socket: UdpSocket,
    v6: bool,
    resolved: HashMap<Destination, SocketAddr>,
    user: String,
    /// The inbound the user came in by (none: a tunnel's origin half).
    inbound: Option<InboundRef>,
    relays: HashMap<String, Arc<RelayHalf>>,
    tunnels: HashMap<String, Arc<MuxStream>>,
    from_tunnels: (mpsc::Sender<Datagram>, mpsc::Receiver<Datagram>),
}

impl Outlet {
    /// An outlet for `user`'s association, come in by `inbound`; `relays` are the
    /// node's tunnels.
    pub(crate) async fn open(
        user: &str,
        inbound: Option<InboundRef>,
        relays: &HashMap<String, Arc<RelayHalf>>,
    ) -> io::Result<Self> {
        // One dual-stack socket when the host has IPv6, else IPv4 only.
        let (socket, v6) = match UdpSocket::bind((Ipv6Addr::UNSPECIFIED, 0)).await {
            Ok(socket) => (socket, true),
            Err(_) => (UdpSocket::bind(("0.0.0.0", 0)).await?, false),
        };
        Ok(Self {
            socket,
            v6,
            resolved: HashMap::new(),
            user: user.to_owned(),
            inbound,
            relays: relays.clone(),
            tunnels: HashMap::new(),
            from_tunnels: mpsc::channel(TUNNEL_QUEUE),
        })
    }

    /// Sends a datagram into the tunnel `tag`, over one UDP stream per association.
    fn send_tunnel(&mut self, tag: &str, to: &Destination, data: &[u8]) -> Result<(), UdpError> {
        if !self.tunnels.contains_key(tag) {
            let relay = self
                .relays
                .get(tag)
                .ok_or_else(|| UdpError::TunnelDown(tag.to_owned()))?;
            let open = Open {
                network: TunnelNetwork::Udp,
                user: self.user.clone(),
                destination: to.clone(),
            };
            let stream = relay
                .open(open, now_ms())
                .map_err(|source| UdpError::TunnelOpen {
                    tag: tag.to_owned(),
                    source,
                })?;
            self.tunnels.insert(tag.to_owned(), Arc::new(stream));
        }
        let stream = &self.tunnels[tag];
        match stream.send_to(to, data) {
            Ok(_) => Ok(()),
            Err(source) => {
                self.tunnels.remove(tag);
                Err(UdpError::TunnelSend {
                    tag: tag.to_owned(),
                    source,
                })
            }
        }
    }

    /// Counts a datagram a rule blocked on the inbound it came in by.
    fn count_blocked(&self, e: &crate::outbound::DialError) {
        if let (crate::outbound::DialError::Blocked(_), Some(i)) = (e, &self.inbound) {
            i.state
                .blocked
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Takes one datagram from any tunnel stream that has one ready.
    fn poll_tunnels(&mut self) -> Option<(SocketAddr, Vec<u8>)> {
        self.from_tunnels.1.try_recv().ok()
    }

    pub(crate) async fn send(
        &mut self,
        dialer: &Dialer,
        to: &Destination,
        data: &[u8],
    ) -> Result<(), UdpError> {
        // A datagram that shows a protocol some rule looks at is routed on its own
        // (never by the addresses kept for its destination).
        let protocol = (dialer.sniffs() && switchyard_proto::bittorrent::is_bittorrent_udp(data))
            .then_some(crate::route::Sniffed::Bittorrent);
        let seen = crate::route::Seen {
            inbound: self.inbound.as_ref().map(|i| i.tag.as_str()),
            protocol,
        };
        let cached = self.resolved.get(to).filter(|_| protocol.is_none());
        let addr = match cached {
            Some(a) => *a,
            None => match dialer
                .plan(to, crate::route::Network::Udp, seen)
                .await
                .inspect_err(|e| self.count_blocked(e))?
            {
                Plan::Tunnel(tag) => {
                    let fresh = !self.tunnels.contains_key(&tag);
                    self.send_tunnel(&tag, to, data)?;
                    if fresh {
                        self.forward_replies(&tag);
                    }
                    return Ok(());
                }
                Plan::Direct(addrs) => {
                    let a = *addrs.first().ok_or(UdpError::NoAddress)?;
                    if self.resolved.len() >= MAX_RESOLVED {
                        self.resolved.clear();
                    }
                    self.resolved.insert(to.clone(), a);
                    a
                }
            },
        };
        let addr = match (self.v6, addr.ip()) {
            (true, IpAddr::V4(v4)) => SocketAddr::new(IpAddr::V6(v4.to_ipv6_mapped()), addr.port()),
            (false, IpAddr::V6(_)) => return Err(UdpError::NoIpv6(addr)),
            _ => addr,
        };
        self.socket
            .send_to(data, addr)
            .await
            .map(|_| ())
            .map_err(|source| UdpError::Send { addr, source })
    }

    /// Copies a tunnel stream's datagrams into the association's queue (dropping when
    /// it is full, as a socket buffer would).
    fn forward_replies(&self, tag: &str) {
        let Some(stream) = self.tunnels.get(tag) else {
            return;
        };
        let stream = stream.clone();
        let tx = self.from_tunnels.0.clone();
        tokio::spawn(async move {
            while let Ok((from, data)) = stream.recv_from().await {
                let Destination::Ip(from) = from else {
                    continue;
                };
                if tx.is_closed() {
                    return;
                }
                let _ = tx.try_send((from, data));
            }
        });
    }

    /// The next datagram from a destination, directly or through a tunnel.
    pub(crate) async fn recv(&mut self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        if let Some((from, data)) = self.poll_tunnels() {
            let n = data.len().min(buf.len());
            buf[..n].copy_from_slice(&data[..n]);
            return Ok((n, from));
        }
        let (n, from) = tokio::select! {
            r = self.socket.recv_from(buf) => r?,
            Some((from, data)) = self.from_tunnels.1.recv() => {
                let n = data.len().min(buf.len());
                buf[..n].copy_from_slice(&data[..n]);
                (n, from)
            }
        };
        let from = match from.ip() {
            IpAddr::V6(v6) => v6
                .to_ipv4_mapped()
                .map_or(from, |v4| SocketAddr::new(IpAddr::V4(v4), from.port())),
            IpAddr::V4(_) => from,
        };
        Ok((n, from))
    }
}

/// An authenticated user's UDP association carried in `stream` (VLESS, XUDP,
/// Trojan): checks the address limit, registers the session, writes the protocol's
/// answer, then carries datagrams until the stream ends.
pub(crate) async fn serve(
    ctx: &super::Ctx,
    rt: &Runtime,
    user: &crate::users::User,
    peer: SocketAddr,
    mut stream: BoxIo,
    framing: Framing,
    super::tcp::Preamble { response, first }: super::tcp::Preamble<'_>,
) {
    use tokio::io::AsyncWriteExt;
    let Ok(admission) = ctx
        .shared
        .accounting
        .admit(&user.name, &ctx.config.tag, peer.ip(), user.address_limit)
        .inspect_err(|e| tracing::info!(inbound = %ctx.config.tag, "{e}"))
    else {
        return;
    };
    let Some(_slot) = ctx.shared.inbound_states.udp_slot(&user.name) else {
        return;
    };
    let session = ctx
        .shared
        .sessions
        .register(&user.name, &ctx.config.tag, &ctx.cancel);
    if !response.is_empty()
        && (stream.write_all(response).await.is_err() || stream.flush().await.is_err())
    {
        return;
    }
    let result = associate(
        stream,
        framing,
        first.to_vec(),
        rt,
        (&user.name, InboundRef::new(&ctx.config.tag, &ctx.state)),
        &admission,
        &session.cancel,
    )
    .await;
    if let Err(e) = result {
        tracing::debug!(user = %user.name, inbound = %ctx.config.tag, "UDP: {e}");
    }
}

/// Carries a user's UDP association (the user and the inbound they came in by) until
/// the stream ends, the user is idle for `idle`, or `cancel` fires. `first` holds
/// stream bytes already read.
pub(crate) async fn associate(
    mut stream: BoxIo,
    mut framing: Framing,
    first: Vec<u8>,
    rt: &Runtime,
    (user, inbound): (&str, InboundRef),
    admission: &Admission,
    cancel: &CancellationToken,
) -> Result<(), UdpError> {
    let (dialer, idle) = (&rt.dialer, rt.idle_timeout);
    let mut outlet = Outlet::open(user, Some(inbound), &rt.relays)
        .await
        .map_err(UdpError::Socket)?;
    let mut pending = first;
    let mut chunk = vec![0u8; 16 * 1024];
    let mut datagram = vec![0u8; 65_536];
    let mut out = Vec::with_capacity(2048);
    let mut last = Instant::now();
    loop {
        // Send every complete packet already here.
        let mut at = 0;
        while let Some(step) = framing.decode(&pending[at..])? {
            match step {
                Step::Packet(to, data, used) => {
                    if let Err(e) = outlet.send(dialer, &to, data).await {
                        tracing::debug!("UDP to {to}: {e}");
                    } else {
                        admission.add(data.len() as u64, 0);
                    }
                    at += used;
                }
                Step::Skip(used) => at += used,
                Step::End => return Ok(()),
            }
        }
        pending.drain(..at);
        if pending.len() > MAX_PENDING {
            return Err(UdpError::Undecodable);
        }
        tokio::select! {
            r = stream.read(&mut chunk) => match r {
                Ok(0) | Err(_) => return Ok(()),
                Ok(n) => {
                    pending.extend_from_slice(&chunk[..n]);
                    last = Instant::now();
                }
            },
            r = outlet.recv(&mut datagram) => {
                let (n, from) = r.map_err(UdpError::Receive)?;
                if let Framing::Vless { to } = &framing
                    && outlet.resolved.get(to).is_some_and(|a| a.ip() != from.ip() && !a.ip().is_unspecified())
                {
                    continue; // a fixed-destination association only hears its peer
                }
                out.clear();
                framing.encode(from, &datagram[..n], &mut out);
                stream.write_all(&out).await.map_err(UdpError::Stream)?;
                stream.flush().await.map_err(UdpError::Stream)?;
                admission.add(0, n as u64);
                last = Instant::now();
            }
            () = tokio::time::sleep_until(last + idle) => return Ok(()),
            () = cancel.cancelled() => return Ok(()),
        }
    }
}
