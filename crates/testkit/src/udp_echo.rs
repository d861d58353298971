//! A UDP echo server, and a check that datagrams make the round trip through a
//! SOCKS5 proxy's UDP ASSOCIATE.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use tokio::net::UdpSocket;
use tokio::task::JoinHandle;
use tokio::time::timeout;

use crate::socks5::{Dest, UdpAssociation};

/// How long [`UdpEcho::check_via_socks`] waits for one echo before sending again.
pub const ECHO_WAIT: Duration = Duration::from_secs(2);
/// How many times it sends a datagram before giving up on it. UDP may drop; on
/// loopback it practically never does, so a retry mostly covers a proxy still
/// setting up the association.
pub const ECHO_TRIES: u32 = 3;

/// A UDP echo server on `127.0.0.1:0`: every datagram goes back to its sender
/// unchanged. It stops when dropped.
#[derive(Debug)]
pub struct UdpEcho {
    addr: SocketAddr,
    datagrams: Arc<AtomicU64>,
    task: JoinHandle<()>,
}

impl UdpEcho {
    /// Binds and serves on the current tokio runtime.
    pub async fn start() -> Result<Self> {
        let socket = UdpSocket::bind((crate::LOCALHOST, 0))
            .await
            .context("binding the UDP echo to 127.0.0.1:0")?;
        let addr = socket.local_addr()?;
        let datagrams = Arc::new(AtomicU64::new(0));
        let count = Arc::clone(&datagrams);
        let task = tokio::spawn(async move {
            let mut buf = vec![0; 65536];
            while let Ok((n, from)) = socket.recv_from(&mut buf).await {
                count.fetch_add(1, Ordering::Relaxed);
                let _ = socket.send_to(&buf[..n], from).await;
            }
        });
        Ok(Self {
            addr,
            datagrams,
            task,
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Datagrams echoed so far.
    pub fn datagrams(&self) -> u64 {
        self.datagrams.load(Ordering::Relaxed)
    }

    /// Sends `count` datagrams of `size` bytes (at least 4) to this echo through a
    /// UDP association with the SOCKS5 proxy at `proxy`, one at a time, and checks
    /// that each comes back whole and from this echo's address. Each datagram starts
    /// with its index (big-endian `u32`), then pattern bytes.
    pub async fn check_via_socks(&self, proxy: SocketAddr, count: u32, size: usize) -> Result<()> {
        ensure!(size >= 4, "a datagram needs at least 4 bytes for its index");
        let assoc = UdpAssociation::open(proxy).await?;
        let dest = Dest::Addr(self.addr);
        for i in 0..count {
            let mut payload = i.to_be_bytes().to_vec();
            payload.extend_from_slice(&crate::pattern::bytes(size - 4));
            round_trip(&assoc, &dest, &payload).await.with_context(|| {
                format!(
                    "datagram {i} of {count} ({size} bytes) to {} through {proxy}",
                    self.addr
                )
            })?;
        }
        Ok(())
    }
}

impl Drop for UdpEcho {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn round_trip(assoc: &UdpAssociation, dest: &Dest, payload: &[u8]) -> Result<()> {
    for _ in 0..ECHO_TRIES {
        assoc.send_to(payload, dest).await?;
        // Late echoes of an earlier try or datagram are skipped by content.
        let answer = timeout(ECHO_WAIT, async {
            loop {
                let (from, data) = assoc.recv_from().await?;
                if data == payload {
                    return Ok::<_, anyhow::Error>(from);
                }
                if data.get(..4) == payload.get(..4) {
                    bail!(
                        "the echo came back changed: {} bytes, sent {}",
                        data.len(),
                        payload.len()
                    );
                }
            }
        })
        .await;
        match answer {
            Ok(from) => {
                let from = from?;
                ensure!(&from == dest, "the echo came back from {from}, not {dest}");
                return Ok(());
            }
            Err(_) => continue,
        }
    }
    bail!("no echo after {ECHO_TRIES} tries of {ECHO_WAIT:?} each")
}
