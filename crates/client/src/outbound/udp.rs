//! UDP through a server: a [`UdpSender`] of datagrams, each to its own destination,
//! and a [`UdpReceiver`] of the answers, each with its source.
//!
//! - **VLESS**: XUDP, a VLESS request with command 3 (Mux.Cool) and one session in
//!   the stream: the first datagram opens it (`New`), every later one is a `Keep`
//!   frame with its destination, and answers are `Keep` frames with their source.
//!   One stream carries every destination, as the node serves it and sing-box sends
//!   it by default (plain VLESS UDP, command 2, would need a stream per destination).
//! - **Trojan**: UDP ASSOCIATE (the request names the first destination), then
//!   `address | length | CRLF | payload` packets both ways.
//! - **Shadowsocks 2022**: one client session (a random id) of UDP packets to the
//!   server's port from a socket of its own; answers are opened and checked by
//!   `switchyard_proto::shadowsocks::udp_client`, and any that fails is dropped.
//!
//! - **Hysteria 2**: a QUIC connection of the association's own, one session in its
//!   datagrams ([`super::hysteria2`]).
//!
//! The sender and the receiver are apart so a slow stream one way never holds the
//! other way up.

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use switchyard_proto::Address;
use switchyard_proto::shadowsocks::keys::ClientKeys;
use switchyard_proto::shadowsocks::tcp::MAX_PADDING;
use switchyard_proto::shadowsocks::udp_client::{UdpOpener, UdpSealer};
use switchyard_proto::xudp::{Frame, Network, Status, Target};
use switchyard_proto::{trojan, vless};
use switchyard_transport::BoxIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt, ReadHalf, WriteHalf};
use tokio::net::UdpSocket;

use super::{Header, Outbound, OutboundError, StepError, VlessResponse, fill_random, unix_now};

/// Stream bytes a receiver holds while a packet is incomplete: one largest packet
/// and its framing. More means the server's framing is broken.
const MAX_PENDING: usize = 70 * 1024;
/// The largest UDP datagram over IPv4.
const MAX_DATAGRAM: usize = 65_507;
/// The XUDP session of the association (one per stream).
const SESSION: u16 = 0;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Framing {
    Xudp,
    Trojan,
}

/// Sends an association's datagrams through the server.
pub struct UdpSender {
    kind: Sending,
}

enum Sending {
    Stream {
        half: WriteHalf<BoxIo>,
        framing: Framing,
        opened: bool,
        out: Vec<u8>,
    },
    Shadowsocks {
        socket: Arc<UdpSocket>,
        sealer: Box<UdpSealer>,
        out: Vec<u8>,
    },
    Hysteria2(Arc<switchyard_transport::hysteria2::Client>),
}

/// Receives an association's answers from the server.
pub struct UdpReceiver {
    kind: Receiving,
}

enum Receiving {
    Stream {
        half: ReadHalf<BoxIo>,
        framing: Framing,
        pending: Vec<u8>,
        /// The source of an answer that names none (an XUDP frame without target).
        first: Address,
    },
    Shadowsocks {
        socket: Arc<UdpSocket>,
        opener: Box<UdpOpener>,
        buf: Vec<u8>,
    },
    Hysteria2(Arc<switchyard_transport::hysteria2::Client>),
}

impl std::fmt::Debug for UdpSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UdpSender").finish_non_exhaustive()
    }
}

impl std::fmt::Debug for UdpReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UdpReceiver").finish_non_exhaustive()
    }
}

/// Opens the association through `outbound`.
pub(super) async fn open(
    outbound: &Outbound,
    first: &Address,
) -> Result<(UdpSender, UdpReceiver), OutboundError> {
    let request = outbound.fail("request");
    let (stream, framing): (BoxIo, Framing) = match &outbound.header {
        Header::Shadowsocks(keys) => return shadowsocks(outbound, keys.clone()).await,
        Header::Hysteria2(hy2) => {
            let client = super::hysteria2::open_udp(hy2)
                .await
                .map_err(outbound.fail("udp"))?;
            return Ok((
                UdpSender {
                    kind: Sending::Hysteria2(client.clone()),
                },
                UdpReceiver {
                    kind: Receiving::Hysteria2(client),
                },
            ));
        }
        Header::Vless(uuid) => {
            let mut stream = outbound.stream().await?;
            let mut head = Vec::with_capacity(20);
            vless::Request {
                uuid: *uuid,
                flow: vless::Flow::None,
                command: vless::Command::Mux,
            }
            .encode(&mut head);
            stream
                .write_all(&head)
                .await
                .map_err(|e| request(e.into()))?;
            (Box::new(VlessResponse::new(stream)), Framing::Xudp)
        }
        Header::Trojan(hash) => {
            let mut stream = outbound.stream().await?;
            let mut head = Vec::with_capacity(80);
            trojan::Request {
                hash: *hash,
                command: trojan::Command::UdpAssociate,
                destination: first.clone(),
            }
            .encode(&mut head);
            stream
                .write_all(&head)
                .await
                .map_err(|e| request(e.into()))?;
            (stream, Framing::Trojan)
        }
    };
    let (read, write) = tokio::io::split(stream);
    Ok((
        UdpSender {
            kind: Sending::Stream {
                half: write,
                framing,
                opened: false,
                out: Vec::with_capacity(2048),
            },
        },
        UdpReceiver {
            kind: Receiving::Stream {
                half: read,
                framing,
                pending: Vec::with_capacity(4096),
                first: first.clone(),
            },
        },
    ))
}

async fn shadowsocks(
    outbound: &Outbound,
    keys: ClientKeys,
) -> Result<(UdpSender, UdpReceiver), OutboundError> {
    let fail = outbound.fail("udp");
    let entry = &outbound.entry;
    let server = tokio::net::lookup_host((entry.server.as_str(), entry.port))
        .await
        .map_err(|e| fail(e.into()))?
        .next()
        .ok_or_else(|| {
            fail(StepError::NoAddress {
                host: entry.server.clone(),
            })
        })?;
    let local: SocketAddr = match server {
        SocketAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
        SocketAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let socket = UdpSocket::bind(local).await.map_err(|e| fail(e.into()))?;
    socket.connect(server).await.map_err(|source| {
        fail(StepError::Connect {
            address: server,
            source,
        })
    })?;
    let socket = Arc::new(socket);
    let session = super::random_u64();
    let bad = |e: switchyard_proto::shadowsocks::PacketError| fail(e.into());
    let opener = UdpOpener::new(&keys, session).map_err(bad)?;
    let sealer = UdpSealer::new(keys, session).map_err(bad)?;
    Ok((
        UdpSender {
            kind: Sending::Shadowsocks {
                socket: socket.clone(),
                sealer: Box::new(sealer),
                out: Vec::with_capacity(2048),
            },
        },
        UdpReceiver {
            kind: Receiving::Shadowsocks {
                socket,
                opener: Box::new(opener),
                buf: vec![0; 65_536],
            },
        },
    ))
}

fn too_large(n: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("a datagram of {n} bytes is larger than the server's framing carries"),
    )
}

impl UdpSender {
    /// Sends `payload` to `to`. A payload too large for the protocol is an
    /// [`io::ErrorKind::InvalidInput`] error and nothing is sent; any other error
    /// means the association is broken.
    pub async fn send(&mut self, to: &Address, payload: &[u8]) -> io::Result<()> {
        match &mut self.kind {
            Sending::Stream {
                half,
                framing,
                opened,
                out,
            } => {
                out.clear();
                let encoded = match framing {
                    Framing::Trojan => trojan::UdpPacket {
                        address: to.clone(),
                        payload,
                    }
                    .encode(out),
                    Framing::Xudp if !*opened => Frame {
                        session_id: SESSION,
                        status: Status::New,
                        error: false,
                        target: Some(Target {
                            network: Network::Udp,
                            address: to.clone(),
                        }),
                        global_id: None,
                        data: Some(payload),
                    }
                    .encode(out),
                    Framing::Xudp => Frame::udp_packet(SESSION, to.clone(), payload).encode(out),
                };
                encoded.map_err(|e| too_large(e.0))?;
                *opened = true;
                half.write_all(out).await?;
                half.flush().await
            }
            Sending::Shadowsocks {
                socket,
                sealer,
                out,
            } => {
                out.clear();
                let padding = if payload.is_empty() {
                    let mut r = [0u8; 2];
                    fill_random(&mut r);
                    u16::from_be_bytes(r) % (MAX_PADDING + 1)
                } else {
                    0
                };
                let mut nonce = [0u8; 24];
                fill_random(&mut nonce);
                sealer
                    .seal(to, payload, unix_now(), padding, &nonce, out)
                    .map_err(|e| io::Error::other(e.to_string()))?;
                if out.len() > MAX_DATAGRAM {
                    return Err(too_large(payload.len()));
                }
                socket.send(out).await.map(drop)
            }
            Sending::Hysteria2(client) => {
                use switchyard_transport::hysteria2::SendUdpError;
                match client.send_udp(super::hysteria2::SESSION, to, payload) {
                    Ok(()) => Ok(()),
                    Err(SendUdpError::Packet(_)) => Err(too_large(payload.len())),
                    Err(e) => Err(io::Error::other(e.to_string())),
                }
            }
        }
    }
}

impl UdpReceiver {
    /// The next answer: its source and payload; `None` when the server ended the
    /// association (the stream closed, or XUDP's `End`). Shadowsocks answers that do
    /// not open are dropped, and the next one is waited for.
    pub async fn recv(&mut self) -> io::Result<Option<(Address, Vec<u8>)>> {
        match &mut self.kind {
            Receiving::Stream {
                half,
                framing,
                pending,
                first,
            } => loop {
                if let Some(step) = decode(*framing, pending, first)? {
                    return Ok(step);
                }
                if pending.len() > MAX_PENDING {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "the server's UDP framing is broken (a packet longer than any)",
                    ));
                }
                let mut chunk = [0u8; 8192];
                let n = half.read(&mut chunk).await?;
                if n == 0 {
                    return Ok(None);
                }
                pending.extend_from_slice(&chunk[..n]);
            },
            Receiving::Shadowsocks {
                socket,
                opener,
                buf,
            } => loop {
                let n = socket.recv(buf).await?;
                match opener.open(&mut buf[..n], unix_now()) {
                    Ok(packet) => return Ok(Some((packet.source, packet.payload.to_vec()))),
                    Err(e) => tracing::debug!("shadowsocks: dropped an answer: {e}"),
                }
            },
            // The connection's end is the association's (Hysteria 2 has no end of
            // its own): an error naming why it closed.
            Receiving::Hysteria2(client) => match client.recv_udp().await {
                Ok(packet) => Ok(Some((packet.address, packet.payload))),
                Err(e) => Err(io::Error::new(
                    io::ErrorKind::ConnectionAborted,
                    format!("Hysteria 2: {e}"),
                )),
            },
        }
    }
}

/// Takes complete packets off `pending`: `Some(Some(datagram))`, `Some(None)` for the
/// association's end, `None` when more bytes are needed.
#[allow(clippy::type_complexity)]
fn decode(
    framing: Framing,
    pending: &mut Vec<u8>,
    first: &Address,
) -> io::Result<Option<Option<(Address, Vec<u8>)>>> {
    let invalid = |e: String| io::Error::new(io::ErrorKind::InvalidData, e);
    loop {
        match framing {
            Framing::Trojan => {
                let Some((packet, used)) =
                    trojan::UdpPacket::parse(pending).map_err(|e| invalid(e.to_string()))?
                else {
                    return Ok(None);
                };
                let datagram = (packet.address, packet.payload.to_vec());
                pending.drain(..used);
                return Ok(Some(Some(datagram)));
            }
            Framing::Xudp => {
                let Some((frame, used)) =
                    Frame::parse(pending).map_err(|e| invalid(e.to_string()))?
                else {
                    return Ok(None);
                };
                let datagram = match (frame.status, frame.data) {
                    (Status::End, _) => {
                        pending.drain(..used);
                        return Ok(Some(None));
                    }
                    (Status::New | Status::Keep, Some(data)) => {
                        let source = frame.target.map_or_else(|| first.clone(), |t| t.address);
                        Some((source, data.to_vec()))
                    }
                    _ => None,
                };
                pending.drain(..used);
                if let Some(datagram) = datagram {
                    return Ok(Some(Some(datagram)));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> Address {
        Address::Ip(s.parse().unwrap())
    }

    #[test]
    fn xudp_answers_are_taken_whole_skipping_what_carries_nothing() {
        let first = addr("192.0.2.1:53");
        let mut wire = Vec::new();
        Frame::udp_packet(SESSION, addr("192.0.2.2:53"), b"one")
            .encode(&mut wire)
            .unwrap();
        Frame {
            session_id: SESSION,
            status: Status::KeepAlive,
            error: false,
            target: None,
            global_id: None,
            data: None,
        }
        .encode(&mut wire)
        .unwrap();
        Frame {
            session_id: SESSION,
            status: Status::Keep,
            error: false,
            target: None,
            global_id: None,
            data: Some(b"two"),
        }
        .encode(&mut wire)
        .unwrap();
        Frame::end(SESSION, false).encode(&mut wire).unwrap();
        for split in 1..wire.len() {
            let mut pending = Vec::new();
            let mut got = Vec::new();
            for piece in wire.chunks(split) {
                pending.extend_from_slice(piece);
                while let Some(step) = decode(Framing::Xudp, &mut pending, &first).unwrap() {
                    got.push(step);
                }
            }
            assert_eq!(
                got,
                vec![
                    Some((addr("192.0.2.2:53"), b"one".to_vec())),
                    Some((first.clone(), b"two".to_vec())),
                    None,
                ],
                "split {split}"
            );
        }
    }

    #[test]
    fn trojan_answers_are_taken_whole_and_junk_is_an_error() {
        let first = addr("192.0.2.1:53");
        let mut wire = Vec::new();
        trojan::UdpPacket {
            address: addr("192.0.2.9:99"),
            payload: &[5; 1400],
        }
        .encode(&mut wire)
        .unwrap();
        let mut pending = wire[..wire.len() - 1].to_vec();
        assert!(
            decode(Framing::Trojan, &mut pending, &first)
                .unwrap()
                .is_none()
        );
        pending.push(5);
        assert_eq!(
            decode(Framing::Trojan, &mut pending, &first).unwrap(),
            Some(Some((addr("192.0.2.9:99"), vec![5; 1400])))
        );
        assert!(pending.is_empty());
        let mut junk = vec![9u8, 0, 0];
        let e = decode(Framing::Trojan, &mut junk, &first).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        let mut junk = vec![0u8, 0, 9, 9];
        let e = decode(Framing::Xudp, &mut junk, &first).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
    }
}
