//! What the pump reads per call each way while a connection is busy, by what carries
//! the user's side: every chunk, message or frame the inbound writes to the user
//! costs a write, a TLS record or a wake-up on both sides, so each protocol reads as
//! much as it frames at once, aligned to its frames.

use switchyard_transport::{grpc, shadowsocks};
use switchyard_tunnel::pump::Buffers;

use crate::config::{InboundConfig, Protocol, Security, Transport};

/// TLS or REALITY straight over TCP, toward the user: four TLS records' worth. rustls
/// seals a write into as many records as it holds and tokio-rustls hands them to the
/// socket in one vectored write, so a read of four records costs one read of the
/// destination and one write to the user instead of four of each. Measured in `cargo
/// xtask bench node`: a VLESS+TLS download's server CPU per GB fell by 29 %, Trojan+TLS's
/// by 27 % (`docs/benchmarks.md`). The upload stays at one record: rustls reads the
/// socket 4 KiB at a time whatever it is asked for.
pub(crate) const TLS_DOWN: usize = 4 * switchyard_tunnel::pump::BUFFER;

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
/// (measured in `cargo xtask bench node`, see `docs/benchmarks.md`). Each busy read is
/// a buffer of its own that becomes the message where it lies (`tcp::relay`: the
/// header goes in room kept in front, h2 keeps the buffer until it is written), not a
/// slice copied into a message.
pub(crate) const GRPC_DOWN: usize = grpc::MAX_WRITE;

/// XHTTP, toward the user: four HTTP/2 DATA frames' worth ([`grpc::FRAME_PAYLOAD`]
/// each: with its 9-byte header one whole TLS record; over HTTP/1.1 the chunk's 8
/// bytes of framing fit the same record). The download hands the response one frame
/// at a time, so a read of four frames costs one read of the destination and one
/// wake-up of the response instead of four.
pub(crate) const XHTTP_DOWN: usize = 4 * grpc::FRAME_PAYLOAD;

/// Hysteria 2, toward the user: up to 256 KiB a read, as for gRPC. Every write to a
/// QUIC stream locks the connection, copies into its send buffer and wakes its
/// driver; 16 KiB reads did that sixteen times as often. Measured in `cargo xtask bench
/// node` (partial runs, the same binary otherwise): server CPU per GB 3162 ms with 16
/// KiB, 2747 with 64 KiB, 2538 with 256 KiB.
pub(crate) const HYSTERIA2: Buffers = Buffers {
    up: switchyard_tunnel::pump::BUFFER,
    down: 16 * switchyard_tunnel::pump::BUFFER,
};

/// The buffers of a connection of `inbound`; 16 KiB each way (a TLS record's worth)
/// unless its protocol or transport frames otherwise, or TLS straight over TCP takes
/// four records at a time toward the user.
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
        (_, Transport::Tcp) if !matches!(inbound.security, Security::None) => Buffers {
            down: TLS_DOWN,
            ..Buffers::default()
        },
        _ => Buffers::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An inbound from its TOML lines after the tag.
    fn inbound(lines: &str) -> InboundConfig {
        toml::from_str(&format!("tag = \"t\"\nport = 1\n{lines}")).unwrap()
    }

    const TLS: &str = "[security]\ntype = \"tls\"\ncert = \"c.pem\"\nkey = \"k.pem\"\n";
    const REALITY: &str = "[security]\ntype = \"reality\"\ndest = \"127.0.0.1:443\"\n\
                           server_names = [\"a.example\"]\nprivate_key = \"k\"\nshort_ids = [\"\"]\n";

    #[test]
    fn tls_and_reality_over_tcp_read_four_records_toward_the_user() {
        for (protocol, security) in [("vless", TLS), ("trojan", TLS), ("vless", REALITY)] {
            let of = of(&inbound(&format!("protocol = \"{protocol}\"\n{security}")));
            assert_eq!(
                of,
                Buffers {
                    up: 16 * 1024,
                    down: 64 * 1024
                },
                "{protocol}"
            );
        }
    }

    #[test]
    fn plain_tcp_and_framed_transports_keep_their_own_sizes() {
        let plain = of(&inbound("protocol = \"vless\"\n"));
        assert_eq!(
            plain,
            Buffers {
                up: 16 * 1024,
                down: 16 * 1024
            }
        );
        let grpc = of(&inbound(&format!(
            "protocol = \"vless\"\n[transport]\ntype = \"grpc\"\nservice_name = \"s\"\n{TLS}"
        )));
        assert_eq!(
            grpc,
            Buffers {
                up: 16 * 1024,
                down: GRPC_DOWN
            }
        );
        let ws = of(&inbound(&format!(
            "protocol = \"vless\"\n[transport]\ntype = \"ws\"\npath = \"/w\"\n{TLS}"
        )));
        assert_eq!(
            ws,
            Buffers {
                up: 16 * 1024,
                down: 16 * 1024
            }
        );
        let ss = of(&inbound(
            "protocol = \"shadowsocks\"\nmethod = \"2022-blake3-aes-128-gcm\"\npassword = \"p\"\n",
        ));
        assert_eq!(ss, SHADOWSOCKS);
    }
}
