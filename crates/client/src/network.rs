//! Watching the device's network on Linux, for Auto: whether there is any network at
//! all, and when it changes (a link, an address or a route comes or goes: Wi-Fi to
//! mobile data, a cable, a VPN of the system), so that a network-loss pause ends the
//! moment the network is back instead of after its back-off.
//!
//! [`watch`] subscribes to the kernel's rtnetlink multicast groups (links, IPv4 and
//! IPv6 addresses and routes) on a `NETLINK_ROUTE` socket. A burst of messages is
//! settled for [`SETTLE`], then one [`NetworkEvent`] says whether the network is
//! available: some route leads out through an interface other than loopback
//! (`/proc/net/route`, `/proc/net/ipv6_route`; the kernel drops an interface's routes
//! when it goes down). Every look is made on the watch's own thread, started from the
//! caller's, so it is the caller's namespace that is watched. Where netlink cannot be had, the watch polls every [`POLL`]
//! instead, and says so once. The socket and `/proc` belong to the process's network
//! namespace, so a client run in a namespace watches that namespace's network.
//!
//! The messages are read by [`rtnetlink_changes`], a pure function over the bytes the
//! kernel sends (fuzzed: `fuzz/fuzz_targets/netlink_messages.rs`).

use std::os::fd::OwnedFd;
use std::time::Duration;
use tokio::time::Instant;

use rustix::io::Errno;
use rustix::net::sockopt::{self, Timeout};
use rustix::net::{AddressFamily, RecvFlags, SocketFlags, SocketType, netlink};
use tokio::sync::mpsc;

/// How long a burst of netlink messages settles before the network is looked at.
pub const SETTLE: Duration = Duration::from_millis(300);

/// How often the network is looked at when netlink is not available.
pub const POLL: Duration = Duration::from_secs(5);

/// How long the watch thread waits for a message before it looks whether anyone
/// still listens.
const IDLE_READ: Duration = Duration::from_secs(1);

/// What the watch saw after a change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NetworkEvent {
    /// Some route leads out through an interface other than loopback.
    pub available: bool,
}

/// A netlink message header is 16 bytes: length, type, flags, sequence, port.
const HEADER: usize = 16;

/// rtnetlink message types that mean the network changed: new and deleted links
/// (16, 17), addresses (20, 21) and routes (24, 25).
const CHANGES: [u16; 6] = [16, 17, 20, 21, 24, 25];

/// Multicast groups: links, IPv4 addresses, IPv4 routes, IPv6 addresses, IPv6 routes.
const GROUPS: u32 = 0x1 | 0x10 | 0x40 | 0x100 | 0x400;

/// Bytes from the kernel that are not a sequence of netlink messages.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NetlinkError {
    /// Fewer bytes than a header at `offset`.
    #[error("netlink: {left} bytes at offset {offset}, less than a message header")]
    Truncated {
        /// Where the message starts.
        offset: usize,
        /// The bytes left.
        left: usize,
    },
    /// A message whose length is shorter than its header or runs past the datagram.
    #[error("netlink: the message at offset {offset} says {len} bytes, {left} are left")]
    BadLength {
        /// Where the message starts.
        offset: usize,
        /// The length it gives.
        len: usize,
        /// The bytes left.
        left: usize,
    },
}

/// How many messages of one netlink datagram announce a change of links, addresses
/// or routes.
pub fn rtnetlink_changes(datagram: &[u8]) -> Result<usize, NetlinkError> {
    let mut offset = 0;
    let mut changes = 0;
    while offset < datagram.len() {
        let left = datagram.len() - offset;
        let Some(head) = datagram.get(offset..offset + HEADER) else {
            return Err(NetlinkError::Truncated { offset, left });
        };
        let len = u32::from_ne_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let kind = u16::from_ne_bytes([head[4], head[5]]);
        if len < HEADER || len > left {
            return Err(NetlinkError::BadLength { offset, len, left });
        }
        if CHANGES.contains(&kind) {
            changes += 1;
        }
        // Messages are aligned to 4 bytes; the last one may end the datagram unpadded.
        offset += len.next_multiple_of(4).min(left);
    }
    Ok(changes)
}

/// Whether `/proc/net/route` and `/proc/net/ipv6_route` (their text) hold a route
/// through an interface other than loopback.
pub fn has_route(ipv4: &str, ipv6: &str) -> bool {
    // IPv4: a header line, then the interface is the first column.
    let v4 = ipv4
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .any(|dev| dev != "lo");
    // IPv6: no header, the interface is the tenth column.
    let v6 = ipv6
        .lines()
        .filter_map(|l| l.split_whitespace().nth(9))
        .any(|dev| dev != "lo");
    v4 || v6
}

/// Whether the calling thread's network namespace has a network now. It reads
/// `/proc/thread-self/net` (the thread's namespace, which a test may have moved it
/// into; `/proc/net` is the main thread's), or `/proc/net` on a kernel without it.
pub fn available() -> bool {
    let read = |file: &str| {
        std::fs::read_to_string(format!("/proc/thread-self/net/{file}"))
            .or_else(|_| std::fs::read_to_string(format!("/proc/net/{file}")))
            .unwrap_or_default()
    };
    has_route(&read("route"), &read("ipv6_route"))
}

fn subscribe() -> std::io::Result<OwnedFd> {
    // `None` is NETLINK_ROUTE.
    let fd = rustix::net::socket_with(
        AddressFamily::NETLINK,
        SocketType::RAW,
        SocketFlags::CLOEXEC,
        None,
    )?;
    rustix::net::bind(&fd, &netlink::SocketAddrNetlink::new(0, GROUPS))?;
    Ok(fd)
}

/// Watches the network until the receiver is dropped: an event after each settled
/// change (and one at once, with the state at start). Netlink is read on a thread of
/// its own (blocking reads with a timeout, so it notices the receiver is gone).
pub fn watch() -> mpsc::UnboundedReceiver<NetworkEvent> {
    let (tx, rx) = mpsc::unbounded_channel();
    let _ = tx.send(NetworkEvent {
        available: available(),
    });
    match subscribe() {
        Ok(fd) => {
            let spawned = std::thread::Builder::new()
                .name("network-watch".into())
                .spawn({
                    let tx = tx.clone();
                    move || follow(&fd, &tx)
                });
            if let Err(e) = spawned {
                tracing::warn!("no network watch thread ({e}): looking every {POLL:?}");
                tokio::spawn(async move { poll(&tx).await });
            }
        }
        Err(e) => {
            tracing::warn!("no netlink ({e}): looking at the network every {POLL:?}");
            tokio::spawn(async move { poll(&tx).await });
        }
    }
    rx
}

/// Reads change messages; a burst settles for [`SETTLE`] from its first message,
/// then one event says whether the network is there. A read error (the kernel's
/// buffer overflowed, say) counts as a change.
fn follow(fd: &OwnedFd, tx: &mpsc::UnboundedSender<NetworkEvent>) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut pending: Option<Instant> = None;
    while !tx.is_closed() {
        let wait = pending.map_or(IDLE_READ, |first| {
            SETTLE
                .saturating_sub(first.elapsed())
                .max(Duration::from_millis(1))
        });
        if let Err(e) = sockopt::set_socket_timeout(fd, Timeout::Recv, Some(wait)) {
            tracing::warn!("network watch: {e}; stopping it");
            return;
        }
        let changed = match rustix::net::recv(fd, &mut buf[..], RecvFlags::empty()) {
            Ok((n, _)) => match rtnetlink_changes(&buf[..n.min(buf.len())]) {
                Ok(k) => k > 0,
                Err(e) => {
                    tracing::warn!("{e}");
                    true
                }
            },
            Err(Errno::AGAIN | Errno::INTR) => false,
            Err(e) => {
                tracing::debug!("netlink read: {e}");
                true
            }
        };
        if changed {
            pending.get_or_insert_with(Instant::now);
        }
        if pending.is_some_and(|first| first.elapsed() >= SETTLE) {
            pending = None;
            if tx
                .send(NetworkEvent {
                    available: available(),
                })
                .is_err()
            {
                return;
            }
        }
    }
}

async fn poll(tx: &mpsc::UnboundedSender<NetworkEvent>) {
    let mut last = available();
    loop {
        tokio::time::sleep(POLL).await;
        let now = available();
        if now != last && tx.send(NetworkEvent { available: now }).is_err() {
            return;
        }
        last = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(kind: u16, body: usize) -> Vec<u8> {
        let len = HEADER + body;
        let mut m = Vec::new();
        m.extend_from_slice(&u32::try_from(len).unwrap().to_ne_bytes());
        m.extend_from_slice(&kind.to_ne_bytes());
        m.extend_from_slice(&[0; 10]);
        m.resize(len.next_multiple_of(4), 0);
        m
    }

    #[test]
    fn counts_link_address_and_route_messages_only() {
        let mut d = message(16, 16); // RTM_NEWLINK
        d.extend(message(21, 7)); // RTM_DELADDR, padded to 4
        d.extend(message(3, 4)); // NLMSG_DONE
        d.extend(message(24, 12)); // RTM_NEWROUTE
        assert_eq!(rtnetlink_changes(&d), Ok(3));
        assert_eq!(rtnetlink_changes(&message(28, 8)), Ok(0), "RTM_NEWNEIGH");
        assert_eq!(rtnetlink_changes(&[]), Ok(0));
    }

    #[test]
    fn malformed_datagrams_are_errors() {
        assert_eq!(
            rtnetlink_changes(&[0; 15]),
            Err(NetlinkError::Truncated {
                offset: 0,
                left: 15
            })
        );
        let mut short = message(16, 0);
        short[0..4].copy_from_slice(&8u32.to_ne_bytes());
        assert_eq!(
            rtnetlink_changes(&short),
            Err(NetlinkError::BadLength {
                offset: 0,
                len: 8,
                left: 16
            })
        );
        let mut long = message(16, 4);
        long[0..4].copy_from_slice(&100u32.to_ne_bytes());
        assert_eq!(
            rtnetlink_changes(&long),
            Err(NetlinkError::BadLength {
                offset: 0,
                len: 100,
                left: 20
            })
        );
        let mut d = message(16, 0);
        d.extend_from_slice(&[1, 2, 3]);
        assert_eq!(
            rtnetlink_changes(&d),
            Err(NetlinkError::Truncated {
                offset: 16,
                left: 3
            })
        );
    }

    #[test]
    fn any_bytes_read_without_a_panic() {
        // A fixed pseudo-random sweep (the fuzz target `netlink_messages` goes further).
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for len in 0..2000usize {
            let bytes: Vec<u8> = (0..len % 97)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    // Small lengths in the headers' first bytes now and then.
                    (x % if len % 3 == 0 { 40 } else { 256 }) as u8
                })
                .collect();
            if let Ok(k) = rtnetlink_changes(&bytes) {
                assert!(k <= bytes.len() / HEADER);
            }
        }
    }

    #[test]
    fn a_route_through_another_interface_than_loopback_is_a_network() {
        let v4_header = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\n";
        let v4 = format!("{v4_header}veth0\t00004D0A\t00000000\t0001\t0\t0\t0\tFCFFFFFF\n");
        let v6_lo = "00000000000000000000000000000001 80 00000000000000000000000000000000 00 00000000000000000000000000000000 00000000 00000002 00000000 80200001       lo\n";
        let v6_eth = "fe800000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001    eth0\n";
        assert!(has_route(&v4, ""));
        assert!(!has_route(v4_header, v6_lo), "loopback only");
        assert!(has_route(v4_header, &format!("{v6_lo}{v6_eth}")));
        assert!(!has_route("", ""));
    }
}
