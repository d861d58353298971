//! Hysteria 2's messages, without I/O: what a client sends inside its QUIC connection
//! once the HTTP/3 authentication (`POST /auth`, answered `233`) is done, and the
//! Salamander obfuscation of whole QUIC packets.
//!
//! - **TCP** ([`TcpRequest`], [`TcpResponse`]): each proxied TCP connection is one
//!   bidirectional QUIC stream opening with `varint 0x401`, `varint` address length,
//!   the address as `host:port` text, `varint` padding length, padding; the server
//!   answers a status byte (0 ok, 1 error), `varint` message length, message,
//!   `varint` padding length, padding; then the bytes as they are.
//! - **UDP** ([`UdpMessage`], [`Defragger`]): each packet is one QUIC datagram:
//!   `u32` session id, `u16` packet id, `u8` fragment id, `u8` fragment count,
//!   `varint` address length, the address, the payload. A packet larger than a
//!   datagram goes in fragments with one packet id ([`fragment`]); the receiver keeps
//!   one packet in assembly per session and drops it whole when a fragment is lost.
//! - **Salamander** ([`Salamander`]): every QUIC packet becomes an 8-byte random salt
//!   and the packet XORed with BLAKE2b-256(key ‖ salt), repeated.
//! - **Authentication** values ([`Rx`]): the `Hysteria-CC-RX` header, a receive rate
//!   in bytes per second (0: unknown), or the server's `auto`.
//!
//! Varints are QUIC's (RFC 9000 §16). Every length is bounded before anything is
//! taken from the buffer; every parser answers `Ok(None)` when the bytes so far are a
//! valid beginning, so a stream reader can wait for more.

use blake2::digest::consts::U32;
use blake2::{Blake2b, Digest};

use crate::address::Address;

/// The TCP request's frame type.
pub const TCP_REQUEST_ID: u64 = 0x401;

/// The longest `host:port` accepted: a 255-byte name, a colon and a port, or a
/// bracketed IPv6 address.
pub const MAX_ADDRESS_LEN: usize = 262;

/// The most padding accepted in a request or response (clients send 64 to 512 bytes).
pub const MAX_PADDING: u64 = 4096;

/// The longest error message accepted in a TCP response.
pub const MAX_MESSAGE: u64 = 2048;

/// The fixed part of a UDP message before the address: session id, packet id,
/// fragment id and count.
const UDP_FIXED: usize = 4 + 2 + 1 + 1;

/// The largest UDP packet reassembled (an IP datagram's payload can be no larger).
pub const MAX_UDP_PACKET: usize = 65_535;

/// Why bytes are not a Hysteria 2 message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Hysteria2Error {
    /// A stream's first varint is not the TCP request's id.
    #[error("frame type {0:#x} is not a TCP request (0x401)")]
    FrameType(u64),
    /// An address length above [`MAX_ADDRESS_LEN`], or zero.
    #[error("address length {0} is not 1 to {MAX_ADDRESS_LEN}")]
    AddressLength(u64),
    /// The address is not `host:port` with a valid host and port.
    #[error("address {0:?} is not host:port")]
    Address(String),
    /// A padding length above [`MAX_PADDING`].
    #[error("padding length {0} is above {MAX_PADDING}")]
    Padding(u64),
    /// A response's message longer than [`MAX_MESSAGE`].
    #[error("message length {0} is above {MAX_MESSAGE}")]
    Message(u64),
    /// A response's status byte is neither 0 nor 1.
    #[error("status {0} is neither 0 (ok) nor 1 (error)")]
    Status(u8),
    /// A UDP message shorter than its fixed fields and address.
    #[error("a UDP message of {0} bytes is cut short")]
    ShortDatagram(usize),
    /// A fragment id not below the fragment count, or a count of zero.
    #[error("fragment {id} of {count}")]
    Fragment {
        /// The fragment's index.
        id: u8,
        /// The number of fragments.
        count: u8,
    },
    /// A packet too large to send even in 255 fragments, or a datagram size that
    /// leaves no room for payload.
    #[error("a {size}-byte packet does not fit in fragments of {max} bytes")]
    TooLarge {
        /// The packet's payload size.
        size: usize,
        /// The largest datagram.
        max: usize,
    },
    /// A Salamander packet shorter than its salt.
    #[error("a Salamander packet of {0} bytes is shorter than its 8-byte salt")]
    ShortObfuscated(usize),
    /// A `Hysteria-CC-RX` value that is neither a number nor `auto`.
    #[error("Hysteria-CC-RX {0:?} is neither a rate nor \"auto\"")]
    Rx(String),
}

/// Reads a QUIC varint at the start of `buf`: its value and length, or `None` when
/// `buf` holds only part of it.
pub fn read_varint(buf: &[u8]) -> Option<(u64, usize)> {
    let first = *buf.first()?;
    let len = 1usize << (first >> 6);
    let bytes = buf.get(..len)?;
    let mut value = u64::from(first & 0x3f);
    for b in &bytes[1..] {
        value = (value << 8) | u64::from(*b);
    }
    Some((value, len))
}

/// Appends `value` as a QUIC varint (the shortest form). Values of 2^62 and above do
/// not exist in QUIC; they are written as 2^62 − 1.
pub fn write_varint(value: u64, out: &mut Vec<u8>) {
    let value = value.min((1 << 62) - 1);
    if value < 1 << 6 {
        out.push(value as u8);
    } else if value < 1 << 14 {
        out.extend_from_slice(&((value as u16) | 0x4000).to_be_bytes());
    } else if value < 1 << 30 {
        out.extend_from_slice(&((value as u32) | 0x8000_0000).to_be_bytes());
    } else {
        out.extend_from_slice(&(value | 0xc000_0000_0000_0000).to_be_bytes());
    }
}

/// The length of `value` as a QUIC varint.
fn varint_len(value: u64) -> usize {
    match value {
        v if v < 1 << 6 => 1,
        v if v < 1 << 14 => 2,
        v if v < 1 << 30 => 4,
        _ => 8,
    }
}

/// A cursor over a message: each read says "need more" (`None`) or fails.
struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Option<u64> {
        let (v, n) = read_varint(&self.buf[self.at..])?;
        self.at += n;
        Some(v)
    }

    fn bytes(&mut self, n: u64) -> Option<&'a [u8]> {
        let n = usize::try_from(n).ok()?;
        let end = self.at.checked_add(n)?;
        let bytes = self.buf.get(self.at..end)?;
        self.at = end;
        Some(bytes)
    }
}

/// Parses `host:port` text (`[v6]:port` for IPv6).
pub fn parse_address(text: &[u8]) -> Result<Address, Hysteria2Error> {
    let bad = || Hysteria2Error::Address(String::from_utf8_lossy(text).into_owned());
    let text = std::str::from_utf8(text).map_err(|_| bad())?;
    let (host, port) = text.rsplit_once(':').ok_or_else(bad)?;
    let port: u16 = port.parse().map_err(|_| bad())?;
    let host = match host.strip_prefix('[') {
        Some(v6) => v6.strip_suffix(']').ok_or_else(bad)?,
        None if host.contains(':') => return Err(bad()),
        None => host,
    };
    Address::domain(host, port).map_err(|_| bad())
}

/// A TCP request: where the client wants its stream to go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpRequest {
    /// The destination.
    pub address: Address,
}

impl TcpRequest {
    /// Parses a request at the start of `buf`: the request and the bytes it took
    /// (what follows is the stream's payload), or `None` while it is incomplete.
    pub fn parse(buf: &[u8]) -> Result<Option<(Self, usize)>, Hysteria2Error> {
        let mut r = Reader { buf, at: 0 };
        let Some(id) = r.varint() else {
            return Ok(None);
        };
        if id != TCP_REQUEST_ID {
            return Err(Hysteria2Error::FrameType(id));
        }
        let Some(len) = r.varint() else {
            return Ok(None);
        };
        if len == 0 || len > MAX_ADDRESS_LEN as u64 {
            return Err(Hysteria2Error::AddressLength(len));
        }
        let Some(text) = r.bytes(len) else {
            return Ok(None);
        };
        let address = parse_address(text)?;
        let Some(padding) = r.varint() else {
            return Ok(None);
        };
        if padding > MAX_PADDING {
            return Err(Hysteria2Error::Padding(padding));
        }
        if r.bytes(padding).is_none() {
            return Ok(None);
        }
        Ok(Some((Self { address }, r.at)))
    }

    /// Appends the request with `padding` bytes of padding (filled with `pad`).
    pub fn encode(&self, padding: &[u8], out: &mut Vec<u8>) {
        write_varint(TCP_REQUEST_ID, out);
        let address = self.address.to_string();
        write_varint(address.len() as u64, out);
        out.extend_from_slice(address.as_bytes());
        write_varint(padding.len() as u64, out);
        out.extend_from_slice(padding);
    }
}

/// The server's answer to a [`TcpRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpResponse {
    /// Whether the destination was reached.
    pub ok: bool,
    /// Why not (empty when ok).
    pub message: String,
}

impl TcpResponse {
    /// Parses a response at the start of `buf`, as [`TcpRequest::parse`].
    pub fn parse(buf: &[u8]) -> Result<Option<(Self, usize)>, Hysteria2Error> {
        let Some((&status, _)) = buf.split_first() else {
            return Ok(None);
        };
        let ok = match status {
            0 => true,
            1 => false,
            other => return Err(Hysteria2Error::Status(other)),
        };
        let mut r = Reader { buf, at: 1 };
        let Some(len) = r.varint() else {
            return Ok(None);
        };
        if len > MAX_MESSAGE {
            return Err(Hysteria2Error::Message(len));
        }
        let Some(message) = r.bytes(len) else {
            return Ok(None);
        };
        let message = String::from_utf8_lossy(message).into_owned();
        let Some(padding) = r.varint() else {
            return Ok(None);
        };
        if padding > MAX_PADDING {
            return Err(Hysteria2Error::Padding(padding));
        }
        if r.bytes(padding).is_none() {
            return Ok(None);
        }
        Ok(Some((Self { ok, message }, r.at)))
    }

    /// Appends the response with `padding`.
    pub fn encode(&self, padding: &[u8], out: &mut Vec<u8>) {
        out.push(if self.ok { 0 } else { 1 });
        let message = &self.message.as_bytes()[..self.message.len().min(MAX_MESSAGE as usize)];
        write_varint(message.len() as u64, out);
        out.extend_from_slice(message);
        write_varint(padding.len() as u64, out);
        out.extend_from_slice(padding);
    }
}

/// One UDP datagram of a session: a whole packet or one fragment of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UdpMessage<'a> {
    /// The client's session.
    pub session_id: u32,
    /// The packet (the same in all its fragments).
    pub packet_id: u16,
    /// This fragment's index.
    pub fragment_id: u8,
    /// How many fragments the packet has (1: not fragmented).
    pub fragment_count: u8,
    /// The destination (client to server) or source (server to client).
    pub address: Address,
    /// The payload, or this fragment of it.
    pub payload: &'a [u8],
}

impl<'a> UdpMessage<'a> {
    /// Parses one datagram (whole: a datagram is never split).
    pub fn parse(datagram: &'a [u8]) -> Result<Self, Hysteria2Error> {
        let short = || Hysteria2Error::ShortDatagram(datagram.len());
        let fixed = datagram.get(..UDP_FIXED).ok_or_else(short)?;
        let session_id = u32::from_be_bytes([fixed[0], fixed[1], fixed[2], fixed[3]]);
        let packet_id = u16::from_be_bytes([fixed[4], fixed[5]]);
        let (fragment_id, fragment_count) = (fixed[6], fixed[7]);
        if fragment_count == 0 || fragment_id >= fragment_count {
            return Err(Hysteria2Error::Fragment {
                id: fragment_id,
                count: fragment_count,
            });
        }
        let mut r = Reader {
            buf: datagram,
            at: UDP_FIXED,
        };
        let len = r.varint().ok_or_else(short)?;
        if len == 0 || len > MAX_ADDRESS_LEN as u64 {
            return Err(Hysteria2Error::AddressLength(len));
        }
        let address = parse_address(r.bytes(len).ok_or_else(short)?)?;
        Ok(Self {
            session_id,
            packet_id,
            fragment_id,
            fragment_count,
            address,
            payload: &datagram[r.at..],
        })
    }

    /// Appends the datagram.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.session_id.to_be_bytes());
        out.extend_from_slice(&self.packet_id.to_be_bytes());
        out.push(self.fragment_id);
        out.push(self.fragment_count);
        let address = self.address.to_string();
        write_varint(address.len() as u64, out);
        out.extend_from_slice(address.as_bytes());
        out.extend_from_slice(self.payload);
    }
}

/// The datagrams carrying `payload` to or from `address` in session `session_id` as
/// packet `packet_id`: one when it fits in `max_datagram` bytes, else fragments of
/// at most that size (at most 255).
pub fn fragment(
    session_id: u32,
    packet_id: u16,
    address: &Address,
    payload: &[u8],
    max_datagram: usize,
) -> Result<Vec<Vec<u8>>, Hysteria2Error> {
    let text_len = address.to_string().len();
    let header = UDP_FIXED + varint_len(text_len as u64) + text_len;
    let too_large = Hysteria2Error::TooLarge {
        size: payload.len(),
        max: max_datagram,
    };
    let room = max_datagram
        .checked_sub(header)
        .filter(|r| *r > 0)
        .ok_or(too_large.clone())?;
    let count = payload.len().div_ceil(room).max(1);
    let count = u8::try_from(count).map_err(|_| too_large)?;
    let mut out = Vec::with_capacity(usize::from(count));
    let mut chunks: Vec<&[u8]> = payload.chunks(room).collect();
    if chunks.is_empty() {
        chunks.push(&[]);
    }
    for (i, chunk) in chunks.into_iter().enumerate() {
        let mut datagram = Vec::with_capacity(header + chunk.len());
        UdpMessage {
            session_id,
            packet_id,
            fragment_id: i as u8,
            fragment_count: count,
            address: address.clone(),
            payload: chunk,
        }
        .encode(&mut datagram);
        out.push(datagram);
    }
    Ok(out)
}

/// Reassembles one session's fragmented packets, one packet at a time: a fragment of
/// a new packet drops the one in assembly (its missing fragments are taken as lost),
/// so memory per session is one packet at most ([`MAX_UDP_PACKET`]).
#[derive(Debug, Default)]
pub struct Defragger {
    packet_id: Option<u16>,
    parts: Vec<Option<Vec<u8>>>,
    have: usize,
    size: usize,
}

impl Defragger {
    /// Takes one message; gives the whole payload once every fragment of its packet
    /// is in. An unfragmented message's payload comes back at once.
    pub fn feed(&mut self, message: &UdpMessage<'_>) -> Option<Vec<u8>> {
        if message.fragment_count == 1 {
            return Some(message.payload.to_vec());
        }
        let count = usize::from(message.fragment_count);
        if self.packet_id != Some(message.packet_id) || self.parts.len() != count {
            self.packet_id = Some(message.packet_id);
            self.parts = vec![None; count];
            self.have = 0;
            self.size = 0;
        }
        let slot = self.parts.get_mut(usize::from(message.fragment_id))?;
        if slot.is_some() {
            return None;
        }
        if self.size + message.payload.len() > MAX_UDP_PACKET {
            // Larger than any UDP packet: drop it whole.
            self.packet_id = None;
            self.parts.clear();
            return None;
        }
        *slot = Some(message.payload.to_vec());
        self.have += 1;
        self.size += message.payload.len();
        if self.have < count {
            return None;
        }
        let mut whole = Vec::with_capacity(self.size);
        for part in self.parts.drain(..).flatten() {
            whole.extend_from_slice(&part);
        }
        self.packet_id = None;
        Some(whole)
    }
}

/// Salamander: every QUIC packet sent as an 8-byte salt and the packet XORed with
/// BLAKE2b-256(key ‖ salt), repeated every 32 bytes.
#[derive(Clone)]
pub struct Salamander {
    key: Vec<u8>,
}

impl std::fmt::Debug for Salamander {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Salamander(<key>)")
    }
}

/// The salt's length.
pub const SALT_LEN: usize = 8;

impl Salamander {
    /// Salamander with the pre-shared key `key` (the obfs password).
    pub fn new(key: &[u8]) -> Self {
        Self { key: key.to_vec() }
    }

    fn mask(&self, salt: &[u8]) -> [u8; 32] {
        let mut hash = Blake2b::<U32>::new();
        hash.update(&self.key);
        hash.update(salt);
        hash.finalize().into()
    }

    /// Appends `packet` obfuscated with `salt` (8 random bytes, new for each packet).
    pub fn obfuscate(&self, salt: [u8; SALT_LEN], packet: &[u8], out: &mut Vec<u8>) {
        let mask = self.mask(&salt);
        out.reserve(SALT_LEN + packet.len());
        out.extend_from_slice(&salt);
        out.extend(packet.iter().zip(mask.iter().cycle()).map(|(b, m)| b ^ m));
    }

    /// Turns an obfuscated packet back into the QUIC packet, in place: the result is
    /// `obfuscated[SALT_LEN..]` on success.
    pub fn deobfuscate_in_place(&self, obfuscated: &mut [u8]) -> Result<(), Hysteria2Error> {
        if obfuscated.len() <= SALT_LEN {
            return Err(Hysteria2Error::ShortObfuscated(obfuscated.len()));
        }
        let (salt, payload) = obfuscated.split_at_mut(SALT_LEN);
        let mask = self.mask(salt);
        for (b, m) in payload.iter_mut().zip(mask.iter().cycle()) {
            *b ^= m;
        }
        Ok(())
    }
}

/// A `Hysteria-CC-RX` value: a receive rate in bytes per second (0: unknown from a
/// client, unlimited from a server), or a server's `auto` (use congestion control).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rx {
    /// Bytes per second.
    Rate(u64),
    /// The server names no rate.
    Auto,
}

impl Rx {
    /// Parses the header's value.
    pub fn parse(value: &str) -> Result<Self, Hysteria2Error> {
        let value = value.trim();
        if value.eq_ignore_ascii_case("auto") {
            return Ok(Self::Auto);
        }
        value
            .parse()
            .map(Self::Rate)
            .map_err(|_| Hysteria2Error::Rx(value.chars().take(32).collect()))
    }
}

impl std::fmt::Display for Rx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Rate(r) => write!(f, "{r}"),
            Self::Auto => f.write_str("auto"),
        }
    }
}

#[cfg(test)]
#[path = "hysteria2_tests.rs"]
mod tests;
