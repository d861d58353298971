//! Users' UDP carried inside a stream (VLESS, XUDP, Trojan): packets out through one
//! socket per association, answers framed back with their source.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UdpSocket;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use switchyard_proto::xudp::{Frame, Network, Status};
use switchyard_proto::{trojan, vless};

use super::BoxIo;
use crate::accounting::Admission;
use crate::outbound::{Destination, Dialer};

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

/// What one decoding step found.
enum Step<'a> {
    Packet(Destination, &'a [u8], usize),
    Skip(usize),
    End,
}

impl Framing {
    fn decode<'a>(&mut self, buf: &'a [u8]) -> Result<Option<Step<'a>>, String> {
        match self {
            Self::Vless { to } => {
                Ok(vless::parse_udp_packet(buf).map(|(p, used)| Step::Packet(to.clone(), p, used)))
            }
            Self::Trojan => match trojan::UdpPacket::parse(buf).map_err(|e| e.to_string())? {
                Some((p, used)) => Ok(Some(Step::Packet(p.address, p.payload, used))),
                None => Ok(None),
            },
            Self::Xudp { session, to } => {
                let Some((frame, used)) = Frame::parse(buf).map_err(|e| e.to_string())? else {
                    return Ok(None);
                };
                match frame.status {
                    Status::End => return Ok(Some(Step::End)),
                    Status::KeepAlive => return Ok(Some(Step::Skip(used))),
                    Status::New | Status::Keep => {}
                }
                if let Some(target) = frame.target {
                    if target.network != Network::Udp {
                        return Err("mux TCP sessions are not supported (only XUDP)".into());
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

/// One socket for an association, and the names it resolved.
pub(crate) struct Outlet {
    socket: UdpSocket,
    v6: bool,
    resolved: HashMap<Destination, SocketAddr>,
}

impl Outlet {
    pub(crate) async fn open() -> io::Result<Self> {
        // One dual-stack socket when the host has IPv6, else IPv4 only.
        match UdpSocket::bind((Ipv6Addr::UNSPECIFIED, 0)).await {
            Ok(socket) => Ok(Self {
                socket,
                v6: true,
                resolved: HashMap::new(),
            }),
            Err(_) => Ok(Self {
                socket: UdpSocket::bind(("0.0.0.0", 0)).await?,
                v6: false,
                resolved: HashMap::new(),
            }),
        }
    }

    pub(crate) async fn send(
        &mut self,
        dialer: &Dialer,
        to: &Destination,
        data: &[u8],
    ) -> Result<(), String> {
        let addr = match self.resolved.get(to) {
            Some(a) => *a,
            None => {
                let a = *dialer
                    .resolve(to, crate::route::Network::Udp)
                    .await
                    .map_err(|e| e.to_string())?
                    .first()
                    .ok_or("no address")?;
                if self.resolved.len() >= MAX_RESOLVED {
                    self.resolved.clear();
                }
                self.resolved.insert(to.clone(), a);
                a
            }
        };
        let addr = match (self.v6, addr.ip()) {
            (true, IpAddr::V4(v4)) => SocketAddr::new(IpAddr::V6(v4.to_ipv6_mapped()), addr.port()),
            (false, IpAddr::V6(_)) => return Err(format!("{addr}: no IPv6 on this node")),
            _ => addr,
        };
        self.socket
            .send_to(data, addr)
            .await
            .map(|_| ())
            .map_err(|e| format!("{addr}: {e}"))
    }

    pub(crate) async fn recv(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        let (n, from) = self.socket.recv_from(buf).await?;
        let from = match from.ip() {
            IpAddr::V6(v6) => v6
                .to_ipv4_mapped()
                .map_or(from, |v4| SocketAddr::new(IpAddr::V4(v4), from.port())),
            IpAddr::V4(_) => from,
        };
        Ok((n, from))
    }
}

/// Carries a user's UDP association until the stream ends, the user is idle for
/// `idle`, or `cancel` fires. `first` holds stream bytes already read.
pub(crate) async fn associate(
    mut stream: BoxIo,
    mut framing: Framing,
    first: Vec<u8>,
    dialer: &Dialer,
    admission: &Admission,
    idle: Duration,
    cancel: &CancellationToken,
) -> Result<(), String> {
    let mut outlet = Outlet::open()
        .await
        .map_err(|e| format!("UDP socket: {e}"))?;
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
            return Err("undecodable UDP framing".into());
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
                let (n, from) = r.map_err(|e| format!("UDP receive: {e}"))?;
                if let Framing::Vless { to } = &framing
                    && outlet.resolved.get(to).is_some_and(|a| a.ip() != from.ip() && !a.ip().is_unspecified())
                {
                    continue; // a fixed-destination association only hears its peer
                }
                out.clear();
                framing.encode(from, &datagram[..n], &mut out);
                stream.write_all(&out).await.map_err(|e| e.to_string())?;
                stream.flush().await.map_err(|e| e.to_string())?;
                admission.add(0, n as u64);
                last = Instant::now();
            }
            () = tokio::time::sleep_until(last + idle) => return Ok(()),
            () = cancel.cancelled() => return Ok(()),
        }
    }
}
