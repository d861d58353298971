//! Salamander on the wire: a UDP socket for quinn that obfuscates every QUIC packet
//! it sends and deobfuscates every one it receives
//! ([`switchyard_proto::hysteria2::Salamander`]), so not even QUIC's headers show.
//!
//! Each packet grows by its 8-byte salt, so the socket sends one packet per call
//! (no segmentation offload) and QUIC's packet size is kept 8 bytes under the path's
//! ([`OVERHEAD`]); received batches (GRO) are taken apart and closed up again. A
//! datagram too short to hold a salt is dropped.

use std::cell::RefCell;
use std::fmt;
use std::io::{self, IoSliceMut};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use quinn::udp::{RecvMeta, Transmit};
use quinn::{AsyncUdpSocket, UdpPoller};
use switchyard_proto::hysteria2::{SALT_LEN, Salamander};

/// What Salamander adds to every packet.
pub(super) const OVERHEAD: usize = SALT_LEN;

thread_local! {
    static SEND_BUF: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// A UDP socket speaking Salamander under quinn.
pub struct SalamanderSocket {
    inner: Arc<dyn AsyncUdpSocket>,
    obfs: Salamander,
    /// The salts' generator: a counter run through a mixer from a random start, so
    /// salts never repeat on one socket and cost no system call each.
    salt: AtomicU64,
}

impl fmt::Debug for SalamanderSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SalamanderSocket")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl SalamanderSocket {
    /// Wraps `inner` with `obfs`.
    pub fn new(inner: Arc<dyn AsyncUdpSocket>, obfs: Salamander) -> Self {
        let mut seed = [0u8; 8];
        let _ = ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut seed);
        Self {
            inner,
            obfs,
            salt: AtomicU64::new(u64::from_le_bytes(seed)),
        }
    }

    fn next_salt(&self) -> [u8; SALT_LEN] {
        // splitmix64 of a counter: distinct for every packet, evenly spread.
        let mut z = self
            .salt
            .fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed)
            .wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)).to_le_bytes()
    }
}

impl AsyncUdpSocket for SalamanderSocket {
    fn create_io_poller(self: Arc<Self>) -> Pin<Box<dyn UdpPoller>> {
        self.inner.clone().create_io_poller()
    }

    fn try_send(&self, transmit: &Transmit<'_>) -> io::Result<()> {
        SEND_BUF.with_borrow_mut(|buf| {
            buf.clear();
            self.obfs
                .obfuscate(self.next_salt(), transmit.contents, buf);
            self.inner.try_send(&Transmit {
                destination: transmit.destination,
                ecn: transmit.ecn,
                contents: buf,
                segment_size: None,
                src_ip: transmit.src_ip,
            })
        })
    }

    fn poll_recv(
        &self,
        cx: &mut Context<'_>,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        let n = match self.inner.poll_recv(cx, bufs, meta) {
            Poll::Ready(Ok(n)) => n,
            other => return other,
        };
        for (buf, meta) in bufs.iter_mut().zip(meta.iter_mut()).take(n) {
            let (len, stride) = self.open(&mut buf[..meta.len], meta.stride);
            meta.len = len;
            meta.stride = stride;
        }
        Poll::Ready(Ok(n))
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    fn max_transmit_segments(&self) -> usize {
        1
    }

    fn max_receive_segments(&self) -> usize {
        self.inner.max_receive_segments()
    }

    fn may_fragment(&self) -> bool {
        self.inner.may_fragment()
    }
}

impl SalamanderSocket {
    /// Deobfuscates the datagrams of one received buffer (`stride` apart, the last
    /// maybe shorter) and closes them up; the new length and stride. A datagram too
    /// short for its salt is dropped (only the last can be).
    fn open(&self, buf: &mut [u8], stride: usize) -> (usize, usize) {
        if stride <= OVERHEAD {
            return (0, stride);
        }
        let mut read = 0;
        let mut written = 0;
        while read < buf.len() {
            let end = (read + stride).min(buf.len());
            let packet = &mut buf[read..end];
            if self.obfs.deobfuscate_in_place(packet).is_ok() {
                let body = packet.len() - OVERHEAD;
                buf.copy_within(read + OVERHEAD..end, written);
                written += body;
            }
            read = end;
        }
        (written, stride - OVERHEAD)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gro_batch_is_opened_and_closed_up() {
        let socket = SalamanderSocket {
            inner: idle_socket(),
            obfs: Salamander::new(b"pw"),
            salt: AtomicU64::new(1),
        };
        let packets: [&[u8]; 3] = [&[1; 20], &[2; 20], &[3; 5]];
        let mut batch = Vec::new();
        for p in packets {
            socket.obfs.obfuscate(socket.next_salt(), p, &mut batch);
        }
        let stride = 20 + OVERHEAD;
        let (len, new_stride) = socket.open(&mut batch, stride);
        assert_eq!((len, new_stride), (45, 20));
        assert_eq!(&batch[..20], &[1; 20]);
        assert_eq!(&batch[20..40], &[2; 20]);
        assert_eq!(&batch[40..45], &[3; 5]);
        // A last datagram of only a salt is dropped.
        let mut short = Vec::new();
        socket
            .obfs
            .obfuscate(socket.next_salt(), &[9; 20], &mut short);
        short.extend_from_slice(&[0; OVERHEAD]);
        assert_eq!(socket.open(&mut short, stride), (20, 20));
    }

    /// A socket never used: the test only opens batches.
    fn idle_socket() -> Arc<dyn AsyncUdpSocket> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let _guard = rt.enter();
        let std = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        quinn::Runtime::wrap_udp_socket(&quinn::TokioRuntime, std).unwrap()
    }
}
