//! The link's frames and its hello.
//!
//! ```text
//! frame  = kind (1) | flags (1) | stream id (4, BE) | length (2, BE) | payload
//! hello  = "SYT1" | tag length (1) | tag | origin length (1) | origin | credential (32)
//! answer = status (1): 0 accepted, 1 refused
//! ```
//! Payloads are at most [`MAX_PAYLOAD`] bytes, so a link never buffers more than one
//! header and one payload to decode a frame. Kinds:
//! - `Open`: network (1 TCP, 2 UDP), user length (1), user, destination (SOCKS form);
//! - `Data`: stream bytes; on a UDP stream, one datagram: address (SOCKS form) + data;
//! - `Window`: a 4-byte increment of the receive window the sender grants;
//! - `Fin`: the sender sends no more on this stream; `Reset`: the stream is gone (1
//!   byte reason);
//! - `Ping`/`Pong`: 8 opaque bytes; `GoAway`: no new streams on this link.

use switchyard_proto::Address;
use switchyard_proto::address::AddressError;

/// Largest payload of one frame. 16 KiB: a TLS record's worth.
pub const MAX_PAYLOAD: usize = 16 * 1024;
/// Bytes of a frame header.
pub const HEADER: usize = 8;
/// The hello's magic.
pub const MAGIC: &[u8; 4] = b"SYT1";

/// A frame's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Opens a stream.
    Open = 1,
    /// Stream data.
    Data = 2,
    /// Grants receive window.
    Window = 3,
    /// Half-close.
    Fin = 4,
    /// Abort.
    Reset = 5,
    /// Liveness probe.
    Ping = 6,
    /// Liveness answer.
    Pong = 7,
    /// No new streams on this link.
    GoAway = 8,
}

impl Kind {
    fn from_byte(b: u8) -> Option<Self> {
        Some(match b {
            1 => Self::Open,
            2 => Self::Data,
            3 => Self::Window,
            4 => Self::Fin,
            5 => Self::Reset,
            6 => Self::Ping,
            7 => Self::Pong,
            8 => Self::GoAway,
            _ => return None,
        })
    }
}

/// Why bytes are not a frame or a hello.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The kind byte is unknown.
    #[error("unknown frame kind {0}")]
    UnknownKind(u8),
    /// The length is over [`MAX_PAYLOAD`].
    #[error("frame payload of {0} bytes is over the limit")]
    TooLong(usize),
    /// The payload does not fit its kind.
    #[error("{0} frame payload is malformed")]
    Malformed(&'static str),
    /// An address in an `Open` or UDP `Data` payload is malformed.
    #[error("address: {0}")]
    Address(#[from] AddressError),
    /// The hello does not start with the magic.
    #[error("not a Switchyard tunnel hello")]
    NotHello,
}

/// One frame, borrowing its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<'a> {
    /// The kind.
    pub kind: Kind,
    /// Reserved flags (0).
    pub flags: u8,
    /// The stream (0 for link-level frames).
    pub stream: u32,
    /// The payload.
    pub payload: &'a [u8],
}

impl<'a> Frame<'a> {
    /// Parses one frame at the start of `buf`.
    pub fn parse(buf: &'a [u8]) -> Result<Option<(Self, usize)>, FrameError> {
        let Some(head) = buf.first_chunk::<HEADER>() else {
            if let Some(&k) = buf.first()
                && Kind::from_byte(k).is_none()
            {
                return Err(FrameError::UnknownKind(k));
            }
            return Ok(None);
        };
        let kind = Kind::from_byte(head[0]).ok_or(FrameError::UnknownKind(head[0]))?;
        let stream = u32::from_be_bytes([head[2], head[3], head[4], head[5]]);
        let len = usize::from(u16::from_be_bytes([head[6], head[7]]));
        if len > MAX_PAYLOAD {
            return Err(FrameError::TooLong(len));
        }
        let Some(payload) = buf.get(HEADER..HEADER + len) else {
            return Ok(None);
        };
        let fixed = match kind {
            Kind::Window => Some(4),
            Kind::Fin | Kind::GoAway => Some(0),
            Kind::Reset => Some(1),
            Kind::Ping | Kind::Pong => Some(8),
            Kind::Open | Kind::Data => None,
        };
        if fixed.is_some_and(|n| n != len) {
            return Err(FrameError::Malformed(kind_name(kind)));
        }
        Ok(Some((
            Self {
                kind,
                flags: head[1],
                stream,
                payload,
            },
            HEADER + len,
        )))
    }

    /// Appends the frame. The payload must be at most [`MAX_PAYLOAD`] bytes.
    pub fn encode(&self, out: &mut Vec<u8>) {
        debug_assert!(self.payload.len() <= MAX_PAYLOAD);
        let len = self.payload.len().min(MAX_PAYLOAD);
        out.push(self.kind as u8);
        out.push(self.flags);
        out.extend_from_slice(&self.stream.to_be_bytes());
        out.extend_from_slice(&(len as u16).to_be_bytes());
        out.extend_from_slice(&self.payload[..len]);
    }

    /// A `Window` frame's increment.
    pub fn window(&self) -> Option<u32> {
        let b: [u8; 4] = self.payload.try_into().ok()?;
        (self.kind == Kind::Window).then(|| u32::from_be_bytes(b))
    }
}

fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Open => "Open",
        Kind::Data => "Data",
        Kind::Window => "Window",
        Kind::Fin => "Fin",
        Kind::Reset => "Reset",
        Kind::Ping => "Ping",
        Kind::Pong => "Pong",
        Kind::GoAway => "GoAway",
    }
}

/// Why a stream was reset: the one byte of a `Reset` frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResetReason {
    /// The stream was abandoned (its handle dropped before it finished).
    Abort,
    /// The `Open` was refused: stream limit, going away, or nobody accepting.
    Refused,
    /// The accepting side could not reach the destination.
    ConnectFailed,
    /// The peer's `Open` or datagram for this stream was malformed (the link carries
    /// on: one stream's bad input never costs the others).
    Malformed,
    /// A reason this version does not know.
    Other(u8),
}

impl ResetReason {
    /// The reason's byte.
    pub fn to_byte(self) -> u8 {
        match self {
            Self::Abort => 0,
            Self::Refused => 1,
            Self::ConnectFailed => 2,
            Self::Malformed => 3,
            Self::Other(b) => b,
        }
    }

    /// The reason a byte stands for.
    pub fn from_byte(b: u8) -> Self {
        match b {
            0 => Self::Abort,
            1 => Self::Refused,
            2 => Self::ConnectFailed,
            3 => Self::Malformed,
            b => Self::Other(b),
        }
    }
}

impl std::fmt::Display for ResetReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Abort => f.write_str("aborted"),
            Self::Refused => f.write_str("refused"),
            Self::ConnectFailed => f.write_str("destination unreachable"),
            Self::Malformed => f.write_str("malformed Open or datagram"),
            Self::Other(b) => write!(f, "reason {b}"),
        }
    }
}

/// The network of a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Network {
    /// A TCP connection.
    Tcp,
    /// UDP datagrams.
    Udp,
}

/// What an `Open` frame asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Open {
    /// TCP or UDP.
    pub network: Network,
    /// The user the connection belongs to (for placement and logs; the origin charges
    /// nobody).
    pub user: String,
    /// Where to.
    pub destination: Address,
}

impl Open {
    /// Parses an `Open` payload.
    pub fn parse(payload: &[u8]) -> Result<Self, FrameError> {
        let bad = FrameError::Malformed("Open");
        let (&net, rest) = payload.split_first().ok_or(bad.clone())?;
        let network = match net {
            1 => Network::Tcp,
            2 => Network::Udp,
            _ => return Err(bad),
        };
        let (&n, rest) = rest.split_first().ok_or(bad.clone())?;
        let user = rest.get(..usize::from(n)).ok_or(bad.clone())?;
        let user = std::str::from_utf8(user)
            .map_err(|_| bad.clone())?
            .to_owned();
        let rest = &rest[usize::from(n)..];
        let (destination, used) = Address::parse_socks(rest)?.ok_or(bad.clone())?;
        if used != rest.len() {
            return Err(bad);
        }
        Ok(Self {
            network,
            user,
            destination,
        })
    }

    /// Appends the payload (a user name is cut to 255 bytes on a character boundary).
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(match self.network {
            Network::Tcp => 1,
            Network::Udp => 2,
        });
        let mut end = self.user.len().min(255);
        while !self.user.is_char_boundary(end) {
            end -= 1;
        }
        out.push(end as u8);
        out.extend_from_slice(&self.user.as_bytes()[..end]);
        self.destination.encode_socks(out);
    }
}

/// Checks that `addr` is what the peer's parser accepts: a domain of 1 to 255
/// hostname characters (an IP is always fine). The encoders never send anything else.
pub fn check_address(addr: &Address) -> Result<(), AddressError> {
    match addr {
        Address::Ip(_) => Ok(()),
        Address::Domain(name, port) => Address::domain(name, *port).map(|_| ()),
    }
}

/// A datagram on a UDP stream: its peer address and data.
pub fn parse_datagram(payload: &[u8]) -> Result<(Address, &[u8]), FrameError> {
    let (addr, used) = Address::parse_socks(payload)?.ok_or(FrameError::Malformed("datagram"))?;
    Ok((addr, &payload[used..]))
}

/// Appends a datagram payload.
pub fn encode_datagram(addr: &Address, data: &[u8], out: &mut Vec<u8>) {
    addr.encode_socks(out);
    out.extend_from_slice(data);
}

/// The first message on a link: who is dialing and its proof.
#[derive(Clone, PartialEq, Eq)]
pub struct Hello {
    /// The tunnel's tag.
    pub tag: String,
    /// The origin this link belongs to.
    pub origin: String,
    /// The origin's credential.
    pub credential: [u8; 32],
}

impl std::fmt::Debug for Hello {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hello")
            .field("tag", &self.tag)
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

impl Hello {
    /// Parses a hello at the start of `buf`.
    pub fn parse(buf: &[u8]) -> Result<Option<(Self, usize)>, FrameError> {
        let m = buf.len().min(4);
        if buf[..m] != MAGIC[..m] {
            return Err(FrameError::NotHello);
        }
        let mut at = 4;
        let mut text = |buf: &[u8]| -> Result<Option<String>, FrameError> {
            let Some(&n) = buf.get(at) else {
                return Ok(None);
            };
            let Some(s) = buf.get(at + 1..at + 1 + usize::from(n)) else {
                return Ok(None);
            };
            at += 1 + usize::from(n);
            std::str::from_utf8(s)
                .map(|s| Some(s.to_owned()))
                .map_err(|_| FrameError::Malformed("hello"))
        };
        let Some(tag) = text(buf)? else {
            return Ok(None);
        };
        let Some(origin) = text(buf)? else {
            return Ok(None);
        };
        let Some(credential) = buf.get(at..at + 32) else {
            return Ok(None);
        };
        let credential: [u8; 32] = credential
            .try_into()
            .map_err(|_| FrameError::Malformed("hello"))?;
        Ok(Some((
            Self {
                tag,
                origin,
                credential,
            },
            at + 32,
        )))
    }

    /// Appends the hello (names are cut to 255 bytes).
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(MAGIC);
        for s in [&self.tag, &self.origin] {
            let n = s.len().min(255);
            out.push(n as u8);
            out.extend_from_slice(&s.as_bytes()[..n]);
        }
        out.extend_from_slice(&self.credential);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn frames_round_trip_with_exact_bytes() {
        let mut out = Vec::new();
        Frame {
            kind: Kind::Data,
            flags: 0,
            stream: 7,
            payload: b"hi",
        }
        .encode(&mut out);
        assert_eq!(out, [2, 0, 0, 0, 0, 7, 0, 2, b'h', b'i']);
        let (f, used) = Frame::parse(&out).unwrap().unwrap();
        assert_eq!(
            (f.kind, f.stream, f.payload, used),
            (Kind::Data, 7, &b"hi"[..], 10)
        );
        let mut w = Vec::new();
        Frame {
            kind: Kind::Window,
            flags: 0,
            stream: 1,
            payload: &65536u32.to_be_bytes(),
        }
        .encode(&mut w);
        assert_eq!(Frame::parse(&w).unwrap().unwrap().0.window(), Some(65536));
    }

    #[test]
    fn bad_frames_get_typed_errors() {
        assert_eq!(Frame::parse(&[9]), Err(FrameError::UnknownKind(9)));
        assert_eq!(
            Frame::parse(&[2, 0, 0, 0, 0, 1, 0xff, 0xff]),
            Err(FrameError::TooLong(65535))
        );
        assert_eq!(
            Frame::parse(&[3, 0, 0, 0, 0, 1, 0, 3, 1, 2, 3]),
            Err(FrameError::Malformed("Window"))
        );
        assert_eq!(Frame::parse(&[2, 0, 0, 0]), Ok(None));
    }

    #[test]
    fn open_and_hello_round_trip() {
        let open = Open {
            network: Network::Udp,
            user: "alice".into(),
            destination: Address::Domain("example.org".into(), 53),
        };
        let mut p = Vec::new();
        open.encode(&mut p);
        assert_eq!(Open::parse(&p), Ok(open));
        assert!(Open::parse(&p[..p.len() - 1]).is_err());
        let hello = Hello {
            tag: "tunnel-1".into(),
            origin: "fi".into(),
            credential: [3; 32],
        };
        let mut h = Vec::new();
        hello.encode(&mut h);
        assert_eq!(Hello::parse(&h), Ok(Some((hello, h.len()))));
        for cut in 0..h.len() {
            assert_eq!(Hello::parse(&h[..cut]), Ok(None), "prefix {cut}");
        }
        assert_eq!(Hello::parse(b"GET / HTTP/1.1"), Err(FrameError::NotHello));
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..300)) {
            if let Ok(Some((f, used))) = Frame::parse(&data) {
                prop_assert!(used <= data.len());
                let mut again = Vec::new();
                f.encode(&mut again);
                prop_assert_eq!(&again[..], &data[..used]);
                let _ = Open::parse(f.payload);
                let _ = parse_datagram(f.payload);
            }
            let _ = Hello::parse(&data);
        }
    }
}
