//! Telling BitTorrent from a connection's first bytes, for routing rules that block
//! it (a node operator's "no torrents").
//!
//! - TCP: the peer wire protocol's handshake (`19`, `BitTorrent protocol`), and a
//!   tracker's HTTP announce or scrape (`GET …?info_hash=…`, origin or absolute form).
//! - UDP: the DHT's KRPC messages (a bencoded dictionary with the `y` key), the UDP
//!   tracker protocol's connect request (its 64-bit magic), and uTP's connection
//!   request (`ST_SYN`, version 1, no payload).
//!
//! Encrypted peer connections (MSE/PE) look like random bytes and are not told apart;
//! a client that only uses them still needs its tracker, DHT or uTP, which are.
//! Pure functions of bytes; fuzzed (`bittorrent_sniff`).

/// What the first bytes of a TCP connection say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sniff {
    /// BitTorrent.
    BitTorrent,
    /// Something else.
    Other,
    /// Too few bytes to tell yet.
    NeedMore,
}

/// The peer wire handshake's start.
const HANDSHAKE: &[u8; 20] = b"\x13BitTorrent protocol";
/// The UDP tracker protocol's connect magic (BEP 15).
const UDP_TRACKER_MAGIC: [u8; 8] = 0x0417_2710_1980_u64.to_be_bytes();
/// The longest request line looked at for a tracker's query.
const MAX_REQUEST_LINE: usize = 2048;

/// What `first`, a TCP connection's first bytes from the client, is.
pub fn sniff_tcp(first: &[u8]) -> Sniff {
    if first.is_empty() {
        return Sniff::NeedMore;
    }
    if first[0] == HANDSHAKE[0] {
        let n = first.len().min(HANDSHAKE.len());
        return match (first[..n] == HANDSHAKE[..n], n == HANDSHAKE.len()) {
            (false, _) => Sniff::Other,
            (true, true) => Sniff::BitTorrent,
            (true, false) => Sniff::NeedMore,
        };
    }
    // An HTTP request to a tracker: its request line carries info_hash (origin form,
    // or absolute form as a client sends it to an HTTP proxy).
    const GET: &[u8] = b"GET ";
    let n = first.len().min(GET.len());
    if first[..n] != GET[..n] {
        return Sniff::Other;
    }
    if first.len() < GET.len() {
        return Sniff::NeedMore;
    }
    let line = &first[..first.len().min(MAX_REQUEST_LINE)];
    match line.iter().position(|&b| b == b'\n') {
        Some(end) if contains(&line[..end], b"info_hash=") => Sniff::BitTorrent,
        Some(_) => Sniff::Other,
        None if contains(line, b"info_hash=") => Sniff::BitTorrent,
        None if line.len() == MAX_REQUEST_LINE => Sniff::Other,
        None => Sniff::NeedMore,
    }
}

/// Whether a UDP datagram is BitTorrent's (DHT, UDP tracker, uTP connection request).
pub fn is_bittorrent_udp(datagram: &[u8]) -> bool {
    is_krpc(datagram) || is_udp_tracker_connect(datagram) || is_utp_syn(datagram)
}

/// A DHT message: `d1:` then, somewhere, the message type `1:y1:q`, `r` or `e`.
fn is_krpc(d: &[u8]) -> bool {
    d.starts_with(b"d1:")
        && d.ends_with(b"e")
        && (contains(d, b"1:y1:q") || contains(d, b"1:y1:r") || contains(d, b"1:y1:e"))
}

/// A UDP tracker's connect request: the magic, action 0, a transaction id.
fn is_udp_tracker_connect(d: &[u8]) -> bool {
    d.len() == 16 && d[..8] == UDP_TRACKER_MAGIC && d[8..12] == [0, 0, 0, 0]
}

/// uTP's `ST_SYN` (type 4, version 1), with no extension and no payload, as every
/// implementation opens a connection.
fn is_utp_syn(d: &[u8]) -> bool {
    d.len() == 20 && d[0] == 0x41 && d[1] == 0
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peer_handshake_and_a_tracker_announce_are_bittorrent() {
        let mut hs = HANDSHAKE.to_vec();
        hs.extend_from_slice(&[0; 8]);
        assert_eq!(sniff_tcp(&hs), Sniff::BitTorrent);
        assert_eq!(sniff_tcp(&hs[..5]), Sniff::NeedMore);
        assert_eq!(sniff_tcp(b"\x13BitTorrent protocoX"), Sniff::Other);
        assert_eq!(
            sniff_tcp(b"GET /announce?info_hash=%12%34&peer_id=-AR1360-&port=6881 HTTP/1.1\r\nHost: t\r\n\r\n"),
            Sniff::BitTorrent
        );
        assert_eq!(
            sniff_tcp(b"GET /scrape?info_hash=abc HTTP/1.1\r\n"),
            Sniff::BitTorrent
        );
        assert_eq!(sniff_tcp(b"GET /announce?info_h"), Sniff::NeedMore);
        assert_eq!(
            sniff_tcp(b"GET /bytes/100 HTTP/1.1\r\nReferer: x?info_hash=y\r\n\r\n"),
            Sniff::Other,
            "only the request line counts"
        );
        assert_eq!(sniff_tcp(b"\x16\x03\x01\x02\x00"), Sniff::Other, "TLS");
        assert_eq!(sniff_tcp(b"POST /x HTTP/1.1\r\n"), Sniff::Other);
        assert_eq!(sniff_tcp(b"GE"), Sniff::NeedMore);
        assert_eq!(sniff_tcp(b""), Sniff::NeedMore);
        assert_eq!(
            sniff_tcp(b"GET http://tracker.test:6969/announce?info_hash=%aa HTTP/1.1\r\n"),
            Sniff::BitTorrent,
            "absolute form, through an HTTP proxy"
        );
        let long = [b"GET /".as_slice(), &[b'a'; 4000]].concat();
        assert_eq!(sniff_tcp(&long), Sniff::Other, "bounded");
    }

    #[test]
    fn dht_udp_trackers_and_utp_syns_are_bittorrent_and_quic_is_not() {
        assert!(is_bittorrent_udp(
            b"d1:ad2:id20:abcdefghij0123456789e1:q4:ping1:t2:aa1:y1:qe"
        ));
        assert!(is_bittorrent_udp(
            b"d1:rd2:id20:mnopqrstuvwxyz123456e1:t2:aa1:y1:re"
        ));
        let mut connect = UDP_TRACKER_MAGIC.to_vec();
        connect.extend_from_slice(&[0, 0, 0, 0, 1, 2, 3, 4]);
        assert!(is_bittorrent_udp(&connect));
        let mut syn = [0u8; 20];
        syn[0] = 0x41;
        syn[16..18].copy_from_slice(&[0, 1]);
        assert!(is_bittorrent_udp(&syn));
        // QUIC: a long header (Initial) and a short one of another length.
        let mut initial = vec![0xc3u8; 1200];
        initial[1..5].copy_from_slice(&[0, 0, 0, 1]);
        assert!(!is_bittorrent_udp(&initial));
        let mut short = vec![0x41u8; 40];
        short[1] = 0;
        assert!(!is_bittorrent_udp(&short));
        assert!(
            !is_bittorrent_udp(b"d1:ad2:id20:abcdefghij0123456789e"),
            "no type"
        );
        assert!(!is_bittorrent_udp(b""));
        assert!(!is_bittorrent_udp(&[0u8; 16]));
    }
}
