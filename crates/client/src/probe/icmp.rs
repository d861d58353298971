//! ICMP probes: one echo request to the server's host over an unprivileged ICMP
//! datagram socket (`socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP)`, `IPPROTO_ICMPV6` for
//! IPv6; "ping sockets"), timed to its echo reply.
//!
//! No privilege is needed where the system allows such sockets: on Linux, to the
//! groups in `net.ipv4.ping_group_range` (which covers IPv6 too). Where it does not,
//! opening one fails with [`IcmpError::Unavailable`], whose message says so, names the
//! group and the range, and what to do instead. [`check_available`] tries once, for
//! callers that want to know at start rather than at the first probe.
//!
//! The kernel fills in the parts of a packet a ping socket owns (the identifier,
//! which becomes the socket's own, and the ICMPv6 checksum) and hands the socket only
//! replies carrying its identifier. What we read is checked anyway by a pure function
//! on the bytes, [`parse_echo_reply`]: an echo reply (type 0, or 129 for ICMPv6) with
//! the sequence number and random payload we sent ([`EchoRequest::is_answered_by`]).
//! IPv4 replies are read with or without the IP header in front (Linux strips it,
//! BSD and macOS keep it).

use std::hash::{BuildHasher, RandomState};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::time::Instant;

use rustix::io::{Errno, FdFlags};
use rustix::net::{AddressFamily, SocketType, ipproto};

/// Random bytes in each echo request's payload: a reply must carry them back, so an
/// echo meant for someone else, or a late one from an earlier probe, never counts.
pub const PAYLOAD_LEN: usize = 16;
/// The ICMP header: type, code, checksum, identifier, sequence number.
const HEADER_LEN: usize = 8;
/// Read buffer: replies are as long as our requests; a longer one is not ours.
const RECV_LEN: usize = 512;
const ECHO_REQUEST_V4: u8 = 8;
const ECHO_REPLY_V4: u8 = 0;
const ECHO_REQUEST_V6: u8 = 128;
const ECHO_REPLY_V6: u8 = 129;
/// The IPv4 header's protocol number of ICMP.
const PROTOCOL_ICMP: u8 = 1;
/// Where Linux keeps the groups allowed ping sockets.
const PING_GROUP_RANGE: &str = "/proc/sys/net/ipv4/ping_group_range";

/// IPv4 (ICMP) or IPv6 (ICMPv6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// ICMP over IPv4.
    V4,
    /// ICMPv6.
    V6,
}

impl Family {
    /// The family of an address.
    pub const fn of(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(_) => Self::V4,
            IpAddr::V6(_) => Self::V6,
        }
    }
}

impl std::fmt::Display for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::V4 => "IPv4",
            Self::V6 => "IPv6",
        })
    }
}

/// An echo request as we send it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EchoRequest {
    /// The identifier (a ping socket's kernel replaces it with the socket's own).
    pub identifier: u16,
    /// The sequence number, which the reply must carry.
    pub sequence: u16,
    /// The payload, which the reply must carry back unchanged.
    pub payload: Vec<u8>,
}

impl EchoRequest {
    /// A request with a random identifier, sequence number and payload
    /// ([`PAYLOAD_LEN`] bytes). The randomness is the standard library's randomly
    /// keyed hash, not a cryptographic generator: it only has to make our replies
    /// ours.
    pub fn random() -> Self {
        let [a, b] = [random_u64(), random_u64()];
        let mut payload = Vec::with_capacity(PAYLOAD_LEN);
        payload.extend_from_slice(&a.to_be_bytes());
        payload.extend_from_slice(&b.to_be_bytes());
        let head = random_u64();
        Self {
            identifier: head as u16,
            sequence: (head >> 16) as u16,
            payload,
        }
    }

    /// The request's bytes as a datagram ICMP socket sends them (no IP header). The
    /// IPv4 checksum is filled in; ICMPv6's covers a pseudo-header with the
    /// addresses, so the kernel computes it and it stays zero here.
    pub fn encode(&self, family: Family) -> Vec<u8> {
        let kind = match family {
            Family::V4 => ECHO_REQUEST_V4,
            Family::V6 => ECHO_REQUEST_V6,
        };
        let mut bytes = Vec::with_capacity(HEADER_LEN + self.payload.len());
        bytes.extend_from_slice(&[kind, 0, 0, 0]);
        bytes.extend_from_slice(&self.identifier.to_be_bytes());
        bytes.extend_from_slice(&self.sequence.to_be_bytes());
        bytes.extend_from_slice(&self.payload);
        if family == Family::V4 {
            let sum = checksum(&bytes);
            bytes[2..4].copy_from_slice(&sum.to_be_bytes());
        }
        bytes
    }

    /// Whether `packet`, as read from the socket, is the echo reply to this request:
    /// an echo reply of `family` with its sequence number and payload. The
    /// identifier is not compared: on Linux it is the socket's, not ours.
    pub fn is_answered_by(&self, packet: &[u8], family: Family) -> bool {
        parse_echo_reply(packet, family)
            .is_some_and(|r| r.sequence == self.sequence && r.payload == self.payload)
    }
}

/// An echo reply read from the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EchoReply<'a> {
    /// Its identifier.
    pub identifier: u16,
    /// Its sequence number.
    pub sequence: u16,
    /// Its payload: the bytes after the ICMP header.
    pub payload: &'a [u8],
}

/// Reads `packet` as an echo reply of `family` (type 0 or 129, code 0); `None` for
/// anything else or anything short. An IPv4 packet may start with its IP header
/// (whose first byte, `0x4_`, no ICMP type shares), which is skipped; ICMP sockets
/// never deliver IPv6 headers. Checksums are the kernel's to verify.
pub fn parse_echo_reply(packet: &[u8], family: Family) -> Option<EchoReply<'_>> {
    let (icmp, expected) = match family {
        Family::V4 => (without_ipv4_header(packet)?, ECHO_REPLY_V4),
        Family::V6 => (packet, ECHO_REPLY_V6),
    };
    let (header, payload) = icmp.split_at_checked(HEADER_LEN)?;
    if header[0] != expected || header[1] != 0 {
        return None;
    }
    Some(EchoReply {
        identifier: u16::from_be_bytes([header[4], header[5]]),
        sequence: u16::from_be_bytes([header[6], header[7]]),
        payload,
    })
}

/// The ICMP message in an IPv4 packet that may start with its IP header.
fn without_ipv4_header(packet: &[u8]) -> Option<&[u8]> {
    match packet.first() {
        Some(first) if first >> 4 == 4 => {
            let len = usize::from(first & 0x0f) * 4;
            if len < 20 || packet.get(9) != Some(&PROTOCOL_ICMP) {
                return None;
            }
            packet.get(len..)
        }
        _ => Some(packet),
    }
}

/// The Internet checksum (RFC 1071) of `bytes`.
fn checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = bytes
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w.get(1).copied().unwrap_or(0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn random_u64() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    RandomState::new().hash_one(COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// Why an ICMP probe got no answer, or could not be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IcmpError {
    /// The system refuses this process unprivileged ICMP sockets (`EACCES` or
    /// `EPERM`): on Linux, its group is outside `net.ipv4.ping_group_range`.
    #[error("{}", unavailable(*gid, range.as_deref()))]
    Unavailable {
        /// The process's effective group.
        gid: u32,
        /// `net.ipv4.ping_group_range` as the process sees it ("1 0", the kernel's
        /// default, allows no group); `None` where it cannot be read.
        range: Option<String>,
    },
    /// The system has no ICMP sockets of this family (no IPv6, or a kernel without
    /// ping sockets).
    #[error("ICMP is unavailable for {family} on this system: {reason}")]
    Unsupported {
        /// The family asked for.
        family: Family,
        /// The system's words.
        reason: String,
    },
    /// The server's host name did not resolve.
    #[error("ICMP probe of {host}: resolving it: {reason}")]
    Resolve {
        /// The host as given.
        host: String,
        /// What failed.
        reason: String,
    },
    /// Sending or receiving failed: no route (the network is down), the host
    /// unreachable.
    #[error("ICMP probe of {host} ({addr}): {reason}")]
    Network {
        /// The host as given.
        host: String,
        /// The address probed.
        addr: IpAddr,
        /// The system's words ("Network is unreachable (os error 101)").
        reason: String,
    },
    /// No echo reply (or no resolution) within the probe's timeout.
    #[error("ICMP probe of {host}: no echo reply within {timeout:?}")]
    Timeout {
        /// The host as given.
        host: String,
        /// The timeout.
        timeout: Duration,
    },
}

fn unavailable(gid: u32, range: Option<&str>) -> String {
    match range {
        Some(range) => format!(
            "ICMP is unavailable: this system does not allow unprivileged ICMP sockets for \
             group {gid} (net.ipv4.ping_group_range is \"{range}\"); use --probe url or tcp, \
             or widen the range"
        ),
        None => format!(
            "ICMP is unavailable: this system does not allow unprivileged ICMP sockets for \
             group {gid}; use --probe url or tcp"
        ),
    }
}

/// Whether this process may open an (IPv4) ICMP socket: `Err` is
/// [`IcmpError::Unavailable`] with its message when not.
pub fn check_available() -> Result<(), IcmpError> {
    open_fd(Family::V4).map(drop)
}

/// Sends one echo request to `host` (an IP address, or a name resolved first) and
/// waits for its reply: the round trip, from sending to the reply. Everything,
/// resolution included, is within `timeout`.
pub async fn ping(host: &str, timeout: Duration) -> Result<Duration, IcmpError> {
    tokio::time::timeout(timeout, echo(host))
        .await
        .unwrap_or_else(|_| {
            Err(IcmpError::Timeout {
                host: host.to_owned(),
                timeout,
            })
        })
}

async fn echo(host: &str) -> Result<Duration, IcmpError> {
    let addr = resolve(host).await?;
    let family = Family::of(addr.ip());
    let network = |e: io::Error| IcmpError::Network {
        host: host.to_owned(),
        addr: addr.ip(),
        reason: e.to_string(),
    };
    let socket = std::net::UdpSocket::from(open_fd(family)?);
    socket.set_nonblocking(true).map_err(network)?;
    let socket = tokio::net::UdpSocket::from_std(socket).map_err(network)?;
    // Connected, the socket fails at once without a route, and its receive fails
    // on a "host unreachable" instead of waiting out the timeout.
    socket.connect(addr).await.map_err(network)?;
    let request = EchoRequest::random();
    let sent = Instant::now();
    socket
        .send(&request.encode(family))
        .await
        .map_err(network)?;
    let mut buf = [0u8; RECV_LEN];
    loop {
        let n = socket.recv(&mut buf).await.map_err(network)?;
        if request.is_answered_by(&buf[..n], family) {
            return Ok(sent.elapsed());
        }
    }
}

/// The address to probe: `host` itself when it is one, else its first address.
async fn resolve(host: &str) -> Result<SocketAddr, IcmpError> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, 0));
    }
    let failed = |reason: String| IcmpError::Resolve {
        host: host.to_owned(),
        reason,
    };
    tokio::net::lookup_host((host, 0))
        .await
        .map_err(|e| failed(e.to_string()))?
        .next()
        .ok_or_else(|| failed("no address".into()))
}

/// An ICMP datagram socket of `family`, closed on exec.
fn open_fd(family: Family) -> Result<OwnedFd, IcmpError> {
    let (domain, protocol) = match family {
        Family::V4 => (AddressFamily::INET, ipproto::ICMP),
        Family::V6 => (AddressFamily::INET6, ipproto::ICMPV6),
    };
    let fd = rustix::net::socket(domain, SocketType::DGRAM, Some(protocol))
        .map_err(|e| refused(e, family))?;
    rustix::io::fcntl_setfd(&fd, FdFlags::CLOEXEC).map_err(|e| IcmpError::Unsupported {
        family,
        reason: io::Error::from(e).to_string(),
    })?;
    Ok(fd)
}

fn refused(e: Errno, family: Family) -> IcmpError {
    if e == Errno::ACCESS || e == Errno::PERM {
        IcmpError::Unavailable {
            gid: rustix::process::getegid().as_raw(),
            range: std::fs::read_to_string(PING_GROUP_RANGE)
                .ok()
                .map(|r| r.split_whitespace().collect::<Vec<_>>().join(" ")),
        }
    } else {
        IcmpError::Unsupported {
            family,
            reason: io::Error::from(e).to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> EchoRequest {
        EchoRequest {
            identifier: 0x1234,
            sequence: 0x0001,
            payload: b"abcd".to_vec(),
        }
    }

    #[test]
    fn requests_are_encoded_with_their_checksum() {
        // 0x0800 + 0x1234 + 0x0001 + 0x6162 + 0x6364 = 0xdefb; its complement 0x2104.
        assert_eq!(
            request().encode(Family::V4),
            [
                0x08, 0x00, 0x21, 0x04, 0x12, 0x34, 0x00, 0x01, b'a', b'b', b'c', b'd'
            ]
        );
        assert_eq!(
            request().encode(Family::V6),
            [
                0x80, 0x00, 0x00, 0x00, 0x12, 0x34, 0x00, 0x01, b'a', b'b', b'c', b'd'
            ]
        );
        // A packet with its checksum in sums to zero; an odd length pads with zero.
        assert_eq!(checksum(&request().encode(Family::V4)), 0);
        assert_eq!(checksum(&[0x01]), !0x0100);
    }

    #[test]
    fn echo_replies_are_read() {
        // The reply Linux hands a ping socket: the identifier is the socket's.
        let reply = [
            0x00, 0x00, 0x30, 0x03, 0x0b, 0x35, 0x00, 0x01, b'a', b'b', b'c', b'd',
        ];
        assert_eq!(
            parse_echo_reply(&reply, Family::V4),
            Some(EchoReply {
                identifier: 0x0b35,
                sequence: 1,
                payload: b"abcd",
            })
        );
        assert!(request().is_answered_by(&reply, Family::V4));
        assert_eq!(checksum(&reply), 0);
        // The same with its IPv4 header in front (BSD, macOS): 10.77.0.1 → 10.77.0.2.
        let mut with_header = vec![
            0x45, 0x00, 0x00, 0x20, 0x5c, 0x1a, 0x00, 0x00, 0x40, 0x01, 0x0a, 0x6f, 10, 77, 0, 1,
            10, 77, 0, 2,
        ];
        with_header.extend_from_slice(&reply);
        assert!(request().is_answered_by(&with_header, Family::V4));
        // ICMPv6.
        let mut v6 = reply;
        v6[0] = 129;
        assert!(request().is_answered_by(&v6, Family::V6));
        assert!(!request().is_answered_by(&v6, Family::V4));
        assert!(!request().is_answered_by(&reply, Family::V6));
    }

    #[test]
    fn other_messages_are_not_our_reply() {
        let reply = [
            0x00, 0x00, 0x30, 0x03, 0x0b, 0x35, 0x00, 0x01, b'a', b'b', b'c', b'd',
        ];
        let req = request();
        let changed = |i: usize, v: u8| {
            let mut r = reply;
            r[i] = v;
            r
        };
        assert!(
            !req.is_answered_by(&changed(7, 2), Family::V4),
            "another sequence"
        );
        assert!(
            !req.is_answered_by(&changed(11, b'x'), Family::V4),
            "another payload"
        );
        assert!(!req.is_answered_by(&changed(0, 8), Family::V4), "a request");
        assert!(
            !req.is_answered_by(&changed(0, 3), Family::V4),
            "unreachable"
        );
        assert!(
            !req.is_answered_by(&changed(1, 1), Family::V4),
            "another code"
        );
        assert!(
            !req.is_answered_by(&reply[..11], Family::V4),
            "short payload"
        );
        assert_eq!(parse_echo_reply(&reply[..7], Family::V4), None);
        assert_eq!(parse_echo_reply(&[], Family::V6), None);
        // An IPv4 header that is not ICMP's, too short, or longer than the packet.
        let mut udp = vec![0x45, 0, 0, 0, 0, 0, 0, 0, 64, 17];
        udp.resize(20, 0);
        udp.extend_from_slice(&reply);
        assert_eq!(parse_echo_reply(&udp, Family::V4), None);
        assert_eq!(
            parse_echo_reply(&[0x44, 0, 0, 0, 0, 0, 0, 0, 0, 1], Family::V4),
            None
        );
        assert_eq!(
            parse_echo_reply(&[0x4f, 0, 0, 0, 0, 0, 0, 0, 0, 1], Family::V4),
            None
        );
    }

    #[test]
    fn random_requests_differ() {
        let (a, b) = (EchoRequest::random(), EchoRequest::random());
        assert_eq!(a.payload.len(), PAYLOAD_LEN);
        assert_ne!(a.payload, b.payload);
    }

    #[test]
    fn the_unavailable_message_says_what_to_do() {
        let e = IcmpError::Unavailable {
            gid: 1000,
            range: Some("1 0".into()),
        };
        assert_eq!(
            e.to_string(),
            "ICMP is unavailable: this system does not allow unprivileged ICMP sockets for \
             group 1000 (net.ipv4.ping_group_range is \"1 0\"); use --probe url or tcp, or \
             widen the range"
        );
        let e = IcmpError::Unavailable {
            gid: 1000,
            range: None,
        };
        assert!(
            e.to_string()
                .ends_with("group 1000; use --probe url or tcp"),
            "{e}"
        );
    }
}
