//! A slow, lossy link between two network namespaces, emulated in user space.
//!
//! `tc netem` is the usual tool, but not every kernel has it (this machine's has no
//! `sch_netem`), so the link is a "wire" of our own: each namespace gets a TAP
//! device (`sy-lossy`, [`SERVERS_ADDR`] in `servers`, [`CLIENT_ADDR`] in
//! `client`), and a task of the caller's tokio runtime carries every Ethernet frame
//! from one to the other, after
//!
//! - a one-way **delay** ([`Shape::delay`]),
//! - a **rate** ([`Shape::rate_bps`]): frames leave one after another at that rate,
//!   queued behind each other; a frame that would wait longer than
//!   [`Shape::queue`] is dropped at the tail, as a router's full buffer drops it,
//! - random **loss** ([`Shape::loss_ppm`], per million frames, from a seeded
//!   generator: the same seed drops the same frames).
//!
//! Everything that crosses (ARP, TCP, QUIC) meets the same link, both ways. The
//! namespaces are removed when the [`LossyLink`] drops; stop the processes you start
//! in them first ([`NetNs::command`]).

use std::fs::OpenOptions;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep_until};

use crate::netns::NetNs;

/// The servers side's address.
pub const SERVERS_ADDR: Ipv4Addr = Ipv4Addr::new(10, 78, 0, 1);
/// The client side's address.
pub const CLIENT_ADDR: Ipv4Addr = Ipv4Addr::new(10, 78, 0, 2);
/// The TAP device's name in each namespace.
const LINK: &str = "sy-lossy";
/// `TUNSETIFF` (`_IOW('T', 202, int)`).
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
/// The longest frame read: the MTU's 1500 and the Ethernet header, with room.
const FRAME: usize = 2048;
/// Frames in flight per direction at most (beyond the queue's own bound in time).
const IN_FLIGHT: usize = 65_536;

/// What the link does to frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Frames lost per million, each way.
    pub loss_ppm: u32,
    /// The one-way delay.
    pub delay: Duration,
    /// The rate each way, bits per second; 0: as fast as the wire task runs.
    pub rate_bps: u64,
    /// The most a frame may wait for the rate before it is dropped.
    pub queue: Duration,
    /// The loss generator's seed.
    pub seed: u64,
}

/// Frames carried and dropped, each way.
#[derive(Debug, Default)]
pub struct Counts {
    /// Frames delivered.
    pub carried: AtomicU64,
    /// Frames dropped at random.
    pub lost: AtomicU64,
    /// Frames dropped because the queue was full.
    pub overflowed: AtomicU64,
}

/// Two namespaces joined by the emulated link.
pub struct LossyLink {
    /// The side servers run in.
    pub servers: NetNs,
    /// The side clients run in.
    pub client: NetNs,
    counts: Arc<Counts>,
    tasks: Vec<JoinHandle<()>>,
}

impl LossyLink {
    /// Makes both namespaces and their TAP devices and starts the wire on the current
    /// tokio runtime.
    pub async fn new(shape: Shape) -> Result<Self> {
        let servers = NetNs::new()?;
        let client = NetNs::new()?;
        let a = tap(&servers, SERVERS_ADDR)?;
        let b = tap(&client, CLIENT_ADDR)?;
        let counts = Arc::new(Counts::default());
        let mut tasks = Vec::new();
        for (from, to, seed) in [
            (a.clone(), b.clone(), shape.seed),
            (b, a, shape.seed ^ 0x9e37_79b9_7f4a_7c15),
        ] {
            let (tx, rx) = mpsc::channel(IN_FLIGHT);
            tasks.push(tokio::spawn(take(from, tx, shape, seed, counts.clone())));
            tasks.push(tokio::spawn(give(to, rx, counts.clone())));
        }
        Ok(Self {
            servers,
            client,
            counts,
            tasks,
        })
    }

    /// Frames carried and dropped so far, both ways together.
    pub fn counts(&self) -> &Counts {
        &self.counts
    }
}

impl Drop for LossyLink {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// A TAP device in `ns` with `addr`/30, up, its file non-blocking.
fn tap(ns: &NetNs, addr: Ipv4Addr) -> Result<Arc<AsyncFd<OwnedFd>>> {
    let fd = ns.run_in(open_tap)??;
    ns.ip(&["addr", "add", &format!("{addr}/30"), "dev", LINK])?;
    ns.ip(&["link", "set", LINK, "up"])?;
    Ok(Arc::new(register(fd)?))
}

/// `fd` in tokio's reactor.
// tokio's registration is `unsafe` since 1.52 for descriptors it cannot own; an
// `OwnedFd` is owned, so its promise holds by construction.
#[allow(unsafe_code)]
fn register(fd: OwnedFd) -> Result<AsyncFd<OwnedFd>> {
    // SAFETY: the `OwnedFd` keeps its descriptor open and the same for as long as the
    // `AsyncFd` owns it.
    unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE | Interest::WRITABLE) }
        .map_err(|e| anyhow::anyhow!("registering the TAP device with tokio: {e}"))
}

/// Opens `/dev/net/tun` as the TAP device [`LINK`] of the calling thread's namespace.
fn open_tap() -> Result<OwnedFd> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/net/tun")
        .context("opening /dev/net/tun")?;
    set_tap(&file)?;
    rustix::io::ioctl_fionbio(&file, true).context("making the TAP device non-blocking")?;
    Ok(file.into())
}

/// `TUNSETIFF`: makes `file` the TAP device [`LINK`] (no packet information).
// The workspace denies unsafe code; no safe call sets a TUN file's interface short
// of a whole TUN crate, so this one ioctl is written out.
#[allow(unsafe_code)]
fn set_tap(file: &std::fs::File) -> Result<()> {
    // struct ifreq: the name (16 bytes) and the flags, in 40 bytes.
    let mut ifreq = [0u8; 40];
    ifreq[..LINK.len()].copy_from_slice(LINK.as_bytes());
    let flags = (libc::IFF_TAP | libc::IFF_NO_PI) as libc::c_short;
    ifreq[16..18].copy_from_slice(&flags.to_ne_bytes());
    // SAFETY: the descriptor is open, and `ifreq` is a buffer of `struct ifreq`'s
    // size that lives through the call; the kernel reads and writes only within it.
    let r = unsafe { libc::ioctl(file.as_raw_fd(), TUNSETIFF, ifreq.as_mut_ptr()) };
    if r < 0 {
        bail!("TUNSETIFF: {}", std::io::Error::last_os_error());
    }
    Ok(())
}

/// Reads frames off `from`, drops some, and hands the rest on with the time each is
/// due at the other end.
async fn take(
    from: Arc<AsyncFd<OwnedFd>>,
    to: mpsc::Sender<(Instant, Vec<u8>)>,
    shape: Shape,
    seed: u64,
    counts: Arc<Counts>,
) {
    let mut random = seed | 1;
    // When the link is free to send the next frame.
    let mut free_at = Instant::now();
    loop {
        let mut frame = vec![0u8; FRAME];
        let n = match from
            .async_io(Interest::READABLE, |fd| {
                rustix::io::read(fd, &mut frame[..]).map_err(std::io::Error::from)
            })
            .await
        {
            Ok(n) => n,
            Err(_) => return,
        };
        frame.truncate(n);
        // xorshift64: enough for dropping frames at a rate.
        random ^= random << 13;
        random ^= random >> 7;
        random ^= random << 17;
        if (random % 1_000_000) < u64::from(shape.loss_ppm) {
            counts.lost.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let now = Instant::now();
        let start = free_at.max(now);
        if start.duration_since(now) > shape.queue {
            counts.overflowed.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        if let Some(nanos) = (n as u64 * 8)
            .saturating_mul(1_000_000_000)
            .checked_div(shape.rate_bps)
        {
            free_at = start + Duration::from_nanos(nanos);
        }
        if to
            .try_send((free_at.max(now) + shape.delay, frame))
            .is_err()
        {
            counts.overflowed.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Writes each frame to `to` when it is due.
async fn give(
    to: Arc<AsyncFd<OwnedFd>>,
    mut frames: mpsc::Receiver<(Instant, Vec<u8>)>,
    counts: Arc<Counts>,
) {
    while let Some((due, frame)) = frames.recv().await {
        sleep_until(due).await;
        let written = to
            .async_io(Interest::WRITABLE, |fd| {
                rustix::io::write(fd, &frame).map_err(std::io::Error::from)
            })
            .await;
        if written.is_err() {
            return;
        }
        counts.carried.fetch_add(1, Ordering::Relaxed);
    }
}
