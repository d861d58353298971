//! UDP in QUIC datagrams, the same on both sides: packets fragmented to the path's
//! datagram size on the way out, reassembled per session on the way in, with the
//! sessions in reassembly bounded.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Mutex, PoisonError};

use bytes::Bytes;
use switchyard_proto::address::Address;
use switchyard_proto::hysteria2::{Defragger, Hysteria2Error, UdpMessage, fragment};

/// A whole UDP packet of a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UdpPacket {
    /// The session.
    pub session_id: u32,
    /// Where it goes (from a client) or where it came from (from a server).
    pub address: Address,
    /// The payload.
    pub payload: Vec<u8>,
}

/// Why a UDP packet could not be sent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SendUdpError {
    /// The peer takes no datagrams.
    #[error("the peer takes no QUIC datagrams")]
    NoDatagrams,
    /// The packet does not fit.
    #[error(transparent)]
    Packet(#[from] Hysteria2Error),
    /// QUIC refused the datagram.
    #[error("sending a datagram: {0}")]
    Send(#[from] quinn::SendDatagramError),
}

/// One connection's UDP state.
#[derive(Debug)]
pub(super) struct Udp {
    sessions: Mutex<HashMap<u32, Defragger>>,
    max_sessions: usize,
    packet_id: AtomicU16,
}

impl Udp {
    pub(super) fn new(max_sessions: usize) -> Self {
        Self {
            sessions: Mutex::new(HashMap::new()),
            max_sessions,
            packet_id: AtomicU16::new(0),
        }
    }

    /// The next whole packet on `conn`. Datagrams that do not parse, or of sessions
    /// past the limit, are dropped.
    pub(super) async fn recv(
        &self,
        conn: &quinn::Connection,
    ) -> Result<UdpPacket, quinn::ConnectionError> {
        loop {
            let datagram = conn.read_datagram().await?;
            let Ok(message) = UdpMessage::parse(&datagram) else {
                continue;
            };
            let whole = {
                let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
                if !sessions.contains_key(&message.session_id)
                    && sessions.len() >= self.max_sessions
                {
                    continue;
                }
                sessions
                    .entry(message.session_id)
                    .or_default()
                    .feed(&message)
            };
            if let Some(payload) = whole {
                return Ok(UdpPacket {
                    session_id: message.session_id,
                    address: message.address,
                    payload,
                });
            }
        }
    }

    /// Sends `payload` with `address` in session `session_id` on `conn`, in fragments
    /// when it is larger than a datagram on this path.
    pub(super) fn send(
        &self,
        conn: &quinn::Connection,
        session_id: u32,
        address: &Address,
        payload: &[u8],
    ) -> Result<(), SendUdpError> {
        let max = conn.max_datagram_size().ok_or(SendUdpError::NoDatagrams)?;
        let packet_id = self.packet_id.fetch_add(1, Ordering::Relaxed);
        for datagram in fragment(session_id, packet_id, address, payload, max)? {
            conn.send_datagram(Bytes::from(datagram))?;
        }
        Ok(())
    }

    /// Forgets `session_id`'s reassembly.
    pub(super) fn end(&self, session_id: u32) {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&session_id);
    }
}
