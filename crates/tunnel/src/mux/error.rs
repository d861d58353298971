//! What can go wrong on a link or one of its streams.

use std::time::Duration;

use switchyard_proto::address::AddressError;

use crate::frame::{FrameError, Kind, Network, ResetReason};

/// Why a link or stream operation failed.
///
/// The link-level variants ([`Closed`](Self::Closed), [`PeerClosed`](Self::PeerClosed),
/// [`Io`](Self::Io), [`Timeout`](Self::Timeout), [`Protocol`](Self::Protocol)) are
/// also what [`MuxHandle::closed`](super::MuxHandle::closed) reports as the reason the
/// link ended; every stream of a closed link fails with that same reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MuxError {
    /// The link was closed on this side ([`MuxHandle::close`](super::MuxHandle::close),
    /// or every handle dropped).
    #[error("link closed on this side")]
    Closed,
    /// The peer closed the transport.
    #[error("link closed by the peer")]
    PeerClosed,
    /// The transport failed.
    #[error("link transport failed ({kind:?}): {message}")]
    Io {
        /// The I/O error's kind.
        kind: std::io::ErrorKind,
        /// The I/O error's text.
        message: String,
    },
    /// Nothing arrived from the peer for the configured idle timeout, pings included.
    #[error("link dead: no frame from the peer for {0:?}")]
    Timeout(Duration),
    /// The peer broke the link protocol; the link was closed.
    #[error("peer broke the link protocol: {0}")]
    Protocol(#[from] ProtocolError),
    /// This link takes no new streams (either side sent `GoAway`); use another link.
    #[error("link is going away; open the stream on another link")]
    GoingAway,
    /// This link already carries its maximum number of streams; use another link.
    #[error("link is at its limit of {0} streams; open the stream on another link")]
    StreamLimit(usize),
    /// The peer reset the stream (or refused to open it).
    #[error("stream {stream} reset by the peer: {reason}")]
    StreamReset {
        /// The stream.
        stream: u32,
        /// The peer's reason.
        reason: ResetReason,
    },
    /// The stream was already shut down for writing (a `Fin` was sent).
    #[error("stream {0} is shut down for writing")]
    StreamFinished(u32),
    /// The peer finished sending datagrams on this UDP stream.
    #[error("stream {0}: the peer sends no more datagrams")]
    EndOfDatagrams(u32),
    /// A byte-stream operation on a UDP stream, or a datagram one on a TCP stream.
    #[error("stream {stream} carries {network:?}; use the matching API")]
    WrongNetwork {
        /// The stream.
        stream: u32,
        /// What it carries.
        network: Network,
    },
    /// A datagram plus its address does not fit one frame. The stream is reset: a
    /// send that fails closes its stream, so a reply task waiting on it ends too.
    #[error("datagram of {0} bytes (with its address) is over the 16 KiB frame limit")]
    DatagramTooLarge(usize),
    /// A destination (of an `Open` or a datagram) is not an address the peer would
    /// accept (domain syntax or length); nothing was sent. On a UDP stream the stream
    /// is reset.
    #[error("destination is not a valid address: {0}")]
    Destination(AddressError),
    /// This side reset the stream: the peer sent it a malformed datagram, or a
    /// datagram could not be sent on it. Its slot on the link is already free.
    #[error("stream {0} was reset on this side (a malformed datagram, or a failed send)")]
    StreamAborted(u32),
}

/// How the peer broke the link protocol.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// Bytes that are not a frame (unknown kind, oversized, malformed).
    #[error("bad frame: {0}")]
    Frame(#[from] FrameError),
    /// An `Open` for a stream id the peer may not use (wrong parity, reused, zero).
    #[error("stream {0}: Open with an id the peer may not use")]
    BadStreamId(u32),
    /// A stream frame for a stream that was never opened.
    #[error("stream {stream}: {kind:?} frame for a stream never opened")]
    UnknownStream {
        /// The stream.
        stream: u32,
        /// The frame's kind.
        kind: Kind,
    },
    /// A link-level frame (`Ping`, `Pong`, `GoAway`) on a stream, or a stream frame on 0.
    #[error("{kind:?} frame on stream {stream}, where it has no meaning")]
    MisplacedFrame {
        /// The stream.
        stream: u32,
        /// The frame's kind.
        kind: Kind,
    },
    /// The peer sent more than the receive window we granted.
    #[error("stream {stream}: {excess} bytes beyond the granted receive window")]
    WindowExceeded {
        /// The stream.
        stream: u32,
        /// How far beyond.
        excess: u32,
    },
    /// The peer granted so much send window that it overflows 2^32.
    #[error("stream {0}: window grant overflows")]
    WindowOverflow(u32),
    /// `Data` after the peer's own `Fin` or `Reset`.
    #[error("stream {0}: Data after the peer finished it")]
    DataAfterFin(u32),
    /// The peer's frames made us queue this many bytes of control frames (a `Reset`
    /// for every refused `Open`, say) while it read none of them.
    #[error("the peer sends but does not read: {0} bytes of control frames queued")]
    NotReading(usize),
    /// A UDP stream's `Data` that is not one datagram (reported by
    /// [`MuxStream::recv_from`](super::MuxStream::recv_from) only; on the link such a
    /// datagram resets its stream, never the link).
    #[error("stream {stream}: bad datagram: {error}")]
    BadDatagram {
        /// The stream.
        stream: u32,
        /// What is wrong with it.
        error: FrameError,
    },
}

impl MuxError {
    pub(crate) fn io(e: &std::io::Error) -> Self {
        Self::Io {
            kind: e.kind(),
            message: e.to_string(),
        }
    }

    /// This error as an `io::Error`, for the byte-stream API.
    pub(crate) fn into_io(self) -> std::io::Error {
        use std::io::ErrorKind as K;
        let kind = match &self {
            Self::StreamReset { .. } => K::ConnectionReset,
            Self::StreamFinished(_) => K::BrokenPipe,
            Self::WrongNetwork { .. } | Self::DatagramTooLarge(_) | Self::Destination(_) => {
                K::InvalidInput
            }
            Self::Timeout(_) => K::TimedOut,
            _ => K::ConnectionAborted,
        };
        std::io::Error::new(kind, self)
    }
}
