//! What the pump reads per call each way while a connection is busy, by what carries
//! the user's side: every chunk, message or frame the inbound writes to the user
//! costs a write, a TLS record or a wake-up on both sides, so each protocol reads as
//! much as it frames at once, aligned to its frames.

use switchyard_transport::{grpc, shadowsocks};
use switchyard_tunnel::pump::Buffers;

use crate::config::{InboundConfig, Protocol, Transport};

/// Shadowsocks 2022: [`shadowsocks::MAX_WRITE`] each way, four whole chunks. A bulk
/// download then costs one read of the destination and one write to the user per four
/// chunks (sing-box reads eight chunks' worth a call), and the user's own reads count
/// per chunk, so full chunks save theirs too; an upload is handed on as many chunks at
/// a time as are in.
pub(crate) const SHADOWSOCKS: Buffers = Buffers {
    up: shadowsocks::MAX_WRITE,
    down: shadowsocks::MAX_WRITE,
};

/// gRPC, toward the user: one message of [`grpc::MAX_WRITE`] (about 256 KiB), in one
/// HTTP/2 frame for a client that takes large frames (Go's: sing-box, mihomo), in
/// sixteen frames of one TLS record each for one that does not (grpc-go's: Xray).
/// 16 KiB reads made a second frame and two more records of a few bytes each, and
/// 64 KiB ones four times the frames, window updates and flushes to Go's client
/// (measured in `cargo xtask bench node`, see `docs/benchmarks.md`).
pub(crate) const GRPC_DOWN: usize = grpc::MAX_WRITE;

/// XHTTP, toward the user: four HTTP/2 DATA frames' worth ([`grpc::FRAME_PAYLOAD`]
/// each: with its 9-byte header one whole TLS record; over HTTP/1.1 the chunk's 8
/// bytes of framing fit the same record). The download hands the response one frame
/// at a time, so a read of four frames costs one read of the destination and one
/// wake-up of the response instead of four.
pub(crate) const XHTTP_DOWN: usize = 4 * grpc::FRAME_PAYLOAD;

/// The buffers of a connection of `inbound`; 16 KiB each way (a TLS record's worth)
/// unless its protocol or transport frames otherwise.
pub(crate) fn of(inbound: &InboundConfig) -> Buffers {
    match (inbound.protocol, &inbound.transport) {
        (Protocol::Shadowsocks, _) => SHADOWSOCKS,
        (_, Transport::Grpc { .. }) => Buffers {
            down: GRPC_DOWN,
            ..Buffers::default()
        },
        (_, Transport::Xhttp(_)) => Buffers {
            down: XHTTP_DOWN,
            ..Buffers::default()
        },
        _ => Buffers::default(),
    }
}
