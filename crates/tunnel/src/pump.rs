//! Carrying bytes both ways between a user and a destination, counting them: the
//! pump behind every connection a node carries (its inbounds, its tunnel halves'
//! streams and fallbacks) and behind the tunnel bench's origin, so both measure and run
//! the same copying. Transport-agnostic: any two `AsyncRead + AsyncWrite` streams.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::BytesMut;
use switchyard_transport::ChunkWrite;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Bytes read per call while a direction is busy. 16 KiB: a TLS record's worth, so one
/// read fills one record on the way back.
pub const BUFFER: usize = 16 * 1024;

/// Bytes read per call while a direction is quiet, from a buffer inside the task
/// itself. A read that fills it moves the direction to a heap buffer ([`BUFFER`], or
/// its size in [`Buffers`]); that buffer is given back after [`RELEASE_AFTER`] without
/// data, so an idle connection costs its task and two small buffers, not 32 KiB.
pub const SMALL_BUFFER: usize = 1024;

/// How long a quiet direction keeps its large buffer.
pub const RELEASE_AFTER: Duration = Duration::from_secs(2);

/// What each direction reads per call while busy: [`BUFFER`] both ways unless a
/// protocol frames more than a TLS record at a time (a Shadowsocks 2022 chunk carries
/// up to 64 KiB, and every chunk costs the peer's reads and ours alike).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Buffers {
    /// From the user to the remote.
    pub up: usize,
    /// From the remote to the user.
    pub down: usize,
}

impl Default for Buffers {
    fn default() -> Self {
        Self {
            up: BUFFER,
            down: BUFFER,
        }
    }
}

/// Why a relay ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Ended {
    /// Both sides closed.
    Closed,
    /// Nothing moved either way for the idle timeout.
    Idle,
    /// The node closed it (user removed or disabled, inbound removed).
    Cancelled,
}

/// Relays between `user` and `remote` until both directions end, nothing moves for
/// `idle`, or `cancel` fires. `count(up, down)` is called for every chunk carried.
pub async fn relay<U, R>(
    user: U,
    remote: R,
    idle: Duration,
    cancel: &CancellationToken,
    count: impl Fn(u64, u64) + Send + Sync,
) -> io::Result<Ended>
where
    U: AsyncRead + AsyncWrite + Send,
    R: AsyncRead + AsyncWrite + Send,
{
    relay_with(user, remote, Buffers::default(), idle, cancel, count).await
}

/// [`relay`], reading `buffers` bytes per call each way while busy.
pub async fn relay_with<U, R>(
    user: U,
    remote: R,
    buffers: Buffers,
    idle: Duration,
    cancel: &CancellationToken,
    count: impl Fn(u64, u64) + Send + Sync,
) -> io::Result<Ended>
where
    U: AsyncRead + AsyncWrite + Send,
    R: AsyncRead + AsyncWrite + Send,
{
    let activity = Activity::new();
    let (ur, uw) = tokio::io::split(user);
    let (rr, rw) = tokio::io::split(remote);
    let count = &count;
    crate::both_ways!(
        pump(ur, rw, buffers.up, &activity, move |n| count(n, 0), None),
        pump(rr, uw, buffers.down, &activity, move |n| count(0, n), None),
        activity,
        idle,
        cancel
    )
}

/// Runs a relay's two directions (futures of `io::Result<_>`) to their end, the
/// idle timeout of `activity` or `cancel`: an error either way ends both at once (a
/// reset stream, a broken link); a clean end of one direction (half-close) lets the
/// other finish. A macro, not a function, so that each direction's future is built
/// where it is awaited and held once: a future handed through a function is stored
/// at every level it passes (a relay's task was 8.6 KiB that way, 3.2 KiB this way).
#[macro_export]
macro_rules! both_ways {
    ($up:expr, $down:expr, $activity:expr, $idle:expr, $cancel:expr $(,)?) => {{
        let both = async { ::tokio::try_join!($up, $down).map(|_| ()) };
        ::tokio::select! {
            r = both => r.map(|()| $crate::pump::Ended::Closed),
            () = $activity.idle_for($idle) => Ok($crate::pump::Ended::Idle),
            () = $cancel.cancelled() => Ok($crate::pump::Ended::Cancelled),
        }
    }};
}

/// How a direction's [`pump`] stopped.
#[derive(Debug, PartialEq, Eq)]
pub enum Pumped {
    /// The reader ended, and the writer was shut down after it.
    Ended,
    /// Its `switch` was set after a chunk: nothing read is left unwritten, and the
    /// caller carries the rest another way (in the kernel: [`crate::splice`]).
    Switched,
}

/// When a relay last carried anything, for its idle timeout.
pub struct Activity {
    start: Instant,
    /// Milliseconds after `start`.
    last: AtomicU64,
}

impl Default for Activity {
    fn default() -> Self {
        Self::new()
    }
}

impl Activity {
    /// Nothing has moved yet: the idle timeout counts from now.
    pub fn new() -> Self {
        Self {
            start: Instant::now(),
            last: AtomicU64::new(0),
        }
    }

    /// Something moved just now.
    pub fn moved(&self) {
        let elapsed = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last.fetch_max(elapsed, Ordering::Relaxed);
    }

    /// Returns once nothing has moved for `idle`.
    pub async fn idle_for(&self, idle: Duration) {
        loop {
            let since = Duration::from_millis(self.last.load(Ordering::Relaxed));
            let deadline = self.start + since + idle;
            if Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep_until(deadline).await;
        }
    }
}

/// Copies `r` to `w`, reading `size` bytes per call while busy, until `r` ends (then
/// shuts `w` down) or, checked after every chunk, `switch` is set.
pub async fn pump<Rd, Wr>(
    mut r: Rd,
    mut w: Wr,
    size: usize,
    activity: &Activity,
    count: impl Fn(u64),
    switch: Option<&std::sync::atomic::AtomicBool>,
) -> io::Result<Pumped>
where
    Rd: AsyncRead + Unpin,
    Wr: AsyncWrite + Unpin,
{
    let mut small = [0u8; SMALL_BUFFER];
    let mut big: Option<Box<[u8]>> = None;
    loop {
        let (n, buf): (usize, &[u8]) = match big.as_deref_mut() {
            // Reads are cancel-safe: a timed-out read loses nothing.
            Some(b) => match tokio::time::timeout(RELEASE_AFTER, r.read(b)).await {
                Ok(n) => (n?, &*b),
                Err(_) => {
                    big = None;
                    continue;
                }
            },
            None => {
                let n = r.read(&mut small).await?;
                (n, &small[..])
            }
        };
        if n == 0 {
            // Half-close: the other direction may still carry the answer.
            let _ = w.shutdown().await;
            return Ok(Pumped::Ended);
        }
        w.write_all(&buf[..n]).await?;
        // Message transports (WebSocket) buffer until flushed.
        w.flush().await?;
        count(n as u64);
        if n == SMALL_BUFFER && big.is_none() {
            big = Some(vec![0u8; size.max(SMALL_BUFFER)].into_boxed_slice());
        }
        activity.moved();
        if switch.is_some_and(|s| s.load(Ordering::Acquire)) {
            return Ok(Pumped::Switched);
        }
    }
}

/// [`relay_with`] for a user whose writing half takes chunks by value
/// ([`ChunkWrite`]: a gRPC stream's): the download is read into buffers handed
/// over whole ([`pump_chunks`]), the upload pumped as usual.
pub async fn relay_chunks<UR, UW, R>(
    (user_read, user_write): (UR, UW),
    remote: R,
    buffers: Buffers,
    idle: Duration,
    cancel: &CancellationToken,
    count: impl Fn(u64, u64) + Send + Sync,
) -> io::Result<Ended>
where
    UR: AsyncRead + Send + Unpin,
    UW: ChunkWrite,
    R: AsyncRead + AsyncWrite + Send,
{
    let activity = Activity::new();
    let (rr, rw) = tokio::io::split(remote);
    let count = &count;
    crate::both_ways!(
        pump(
            user_read,
            rw,
            buffers.up,
            &activity,
            move |n| count(n, 0),
            None
        ),
        pump_chunks(rr, user_write, buffers.down, &activity, move |n| count(
            0, n
        )),
        activity,
        idle,
        cancel
    )
}

/// [`pump`] into a [`ChunkWrite`]: while busy, each read lands in a buffer of its own
/// with the writer's headroom in front, and the writer takes the buffer itself (frames
/// it in place, keeps it until sent) instead of copying it. While quiet, reads go to
/// a small buffer in the task and are copied out (a few bytes), as [`pump`]'s are, so
/// an idle direction holds no large buffer; so is a busy read shorter than [`BUFFER`],
/// its large buffer kept for the next read.
pub async fn pump_chunks<Rd, W>(
    mut r: Rd,
    mut w: W,
    size: usize,
    activity: &Activity,
    count: impl Fn(u64),
) -> io::Result<Pumped>
where
    Rd: AsyncRead + Unpin,
    W: ChunkWrite,
{
    let headroom = w.headroom();
    let size = size.max(SMALL_BUFFER);
    let mut small = [0u8; SMALL_BUFFER];
    let mut busy = false;
    // The large buffer a short read left unused, for the next read.
    let mut spare: Option<BytesMut> = None;
    loop {
        let mut chunk;
        if busy {
            chunk = spare.take().unwrap_or_else(|| {
                let mut c = BytesMut::with_capacity(headroom + size);
                c.resize(headroom, 0);
                c
            });
            // Reads are cancel-safe: a timed-out read loses nothing.
            match tokio::time::timeout(RELEASE_AFTER, r.read_buf(&mut chunk)).await {
                Ok(n) => {
                    n?;
                }
                Err(_) => {
                    busy = false;
                    continue;
                }
            }
            let n = chunk.len() - headroom;
            if n > 0 && n < BUFFER {
                // A short read is copied out (a few bytes, as a quiet one's are), so
                // the writer does not keep a large buffer for them.
                let mut short = BytesMut::with_capacity(headroom + n);
                short.extend_from_slice(&chunk);
                chunk.truncate(headroom);
                spare = Some(chunk);
                chunk = short;
            }
        } else {
            let n = r.read(&mut small).await?;
            busy = n == SMALL_BUFFER;
            chunk = BytesMut::with_capacity(headroom + n);
            chunk.resize(headroom, 0);
            chunk.extend_from_slice(&small[..n]);
        }
        let n = chunk.len() - headroom;
        if n == 0 {
            // Half-close: the other direction may still carry the answer.
            let _ = w.shutdown().await;
            return Ok(Pumped::Ended);
        }
        w.write_chunk(chunk).await?;
        count(n as u64);
        activity.moved();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A relay's `count` adding up into `counted`.
    fn counter(counted: &Arc<Mutex<(u64, u64)>>) -> impl Fn(u64, u64) + Send + Sync + use<> {
        let counted = counted.clone();
        move |u, d| {
            let mut g = counted.lock().unwrap();
            g.0 += u;
            g.1 += d;
        }
    }

    /// A [`ChunkWrite`] that keeps what it is handed: each chunk's payload and
    /// capacity, and whether it was shut down.
    #[derive(Default, Clone)]
    struct Kept(Arc<Mutex<(Vec<Chunk>, bool)>>);

    /// A chunk's payload and the capacity of its buffer.
    type Chunk = (Vec<u8>, usize);

    impl ChunkWrite for Kept {
        fn headroom(&self) -> usize {
            7
        }
        async fn write_chunk(&mut self, chunk: BytesMut) -> io::Result<()> {
            assert!(chunk.len() > 7, "a chunk of {} bytes", chunk.len());
            let kept = (chunk[7..].to_vec(), chunk.capacity());
            self.0.lock().unwrap().0.push(kept);
            Ok(())
        }
        async fn shutdown(&mut self) -> io::Result<()> {
            self.0.lock().unwrap().1 = true;
            Ok(())
        }
    }

    #[tokio::test]
    async fn chunks_carry_the_download_whole_with_the_writers_headroom() {
        let (user, mut user_peer) = tokio::io::duplex(1 << 16);
        let (remote, mut remote_peer) = tokio::io::duplex(1 << 20);
        let kept = Kept::default();
        let counted = Arc::new(Mutex::new((0u64, 0u64)));
        let (c, k) = (counted.clone(), kept.clone());
        let cancel = CancellationToken::new();
        let buffers = Buffers {
            up: BUFFER,
            down: 100_000,
        };
        let task = tokio::spawn(async move {
            let (user_read, _) = tokio::io::split(user);
            relay_chunks(
                (user_read, k),
                remote,
                buffers,
                Duration::from_secs(60),
                &cancel,
                counter(&c),
            )
            .await
        });
        // The upload goes through the plain pump.
        user_peer.write_all(b"get").await.unwrap();
        user_peer.shutdown().await.unwrap();
        let mut got = [0u8; 3];
        remote_peer.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"get");
        let sent: Vec<u8> = (0..300_000u32).map(|i| (i % 253) as u8).collect();
        remote_peer.write_all(&sent).await.unwrap();
        remote_peer.shutdown().await.unwrap();
        assert_eq!(task.await.unwrap().unwrap(), Ended::Closed);
        let (chunks, shut) = kept.0.lock().unwrap().clone();
        assert!(shut, "the end of the download shuts the writer down");
        let carried: Vec<u8> = chunks.iter().flat_map(|(p, _)| p.clone()).collect();
        assert!(carried == sent, "the bytes came through changed");
        // Quiet: the first read is the task's small buffer, copied out at its size;
        // then each read is a buffer of the headroom and the direction's size.
        assert_eq!(chunks[0].0.len(), SMALL_BUFFER);
        assert_eq!(chunks[0].1, 7 + SMALL_BUFFER);
        assert!(
            chunks[1..]
                .iter()
                .all(|(p, cap)| *cap == 7 + 100_000 && p.len() <= 100_000)
        );
        assert!(
            chunks.len() < 12,
            "{} chunks for 300,000 bytes",
            chunks.len()
        );
        assert_eq!(*counted.lock().unwrap(), (3, 300_000));
    }

    #[tokio::test(start_paused = true)]
    async fn a_quiet_download_gives_its_large_buffer_back() {
        let (remote, mut remote_peer) = tokio::io::duplex(1 << 16);
        let kept = Kept::default();
        let k = kept.clone();
        let activity = Activity::new();
        let task = tokio::spawn(async move {
            let activity = activity;
            pump_chunks(remote, k, 100_000, &activity, |_| {}).await
        });
        let pause = || tokio::time::sleep(Duration::from_millis(10));
        // A full small read makes the direction busy: the next read has 100,000 bytes.
        remote_peer.write_all(&[1u8; SMALL_BUFFER]).await.unwrap();
        pause().await;
        remote_peer.write_all(&[2u8; 50_000]).await.unwrap();
        pause().await;
        // A short busy read is copied out at its size.
        remote_peer.write_all(b"busy").await.unwrap();
        pause().await;
        // Quiet past RELEASE_AFTER: the buffer is dropped, the next read is small.
        tokio::time::sleep(RELEASE_AFTER + Duration::from_millis(10)).await;
        remote_peer.write_all(&[3u8; 50_000]).await.unwrap();
        pause().await;
        drop(remote_peer);
        assert_eq!(task.await.unwrap().unwrap(), Pumped::Ended);
        let (chunks, shut) = kept.0.lock().unwrap().clone();
        assert!(shut);
        let sizes: Vec<(usize, usize)> = chunks.iter().map(|(p, c)| (p.len(), *c)).collect();
        let (small, large) = (7 + SMALL_BUFFER, 7 + 100_000);
        assert_eq!(
            sizes,
            [
                (SMALL_BUFFER, small),
                (50_000, large),
                (4, 7 + 4),
                (SMALL_BUFFER, small),
                (50_000 - SMALL_BUFFER, large)
            ]
        );
    }

    #[tokio::test]
    async fn carries_both_ways_with_half_close_and_counts() {
        // Pipes larger than the test's writes: the test writes before it reads.
        let (user, mut user_peer) = tokio::io::duplex(1 << 16);
        let (remote, mut remote_peer) = tokio::io::duplex(1 << 16);
        let counted = Arc::new(Mutex::new((0u64, 0u64)));
        let c = counted.clone();
        let cancel = CancellationToken::new();
        let task = tokio::spawn(async move {
            relay(user, remote, Duration::from_secs(60), &cancel, counter(&c)).await
        });
        user_peer.write_all(b"request").await.unwrap();
        user_peer.shutdown().await.unwrap();
        let mut got = Vec::new();
        remote_peer.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"request");
        remote_peer.write_all(&[7u8; 5000]).await.unwrap();
        remote_peer.shutdown().await.unwrap();
        let mut back = Vec::new();
        user_peer.read_to_end(&mut back).await.unwrap();
        assert_eq!(back, vec![7u8; 5000]);
        assert_eq!(task.await.unwrap().unwrap(), Ended::Closed);
        assert_eq!(*counted.lock().unwrap(), (7, 5000));
    }

    #[tokio::test]
    async fn a_relay_holds_each_directions_future_once() {
        // Every open connection's task is this future: a direction's pump stored at
        // each level it was handed through made it 8.6 KiB where 3.2 KiB do.
        fn size<T>(_: &T) -> usize {
            std::mem::size_of::<T>()
        }
        let (a, _a) = tokio::io::duplex(64);
        let (b, _b) = tokio::io::duplex(64);
        let activity = Activity::new();
        let (r, w) = tokio::io::split(a);
        let one = pump(r, w, BUFFER, &activity, |_| {}, None);
        let one = size(&one);
        let (a, _a) = tokio::io::duplex(64);
        let cancel = CancellationToken::new();
        let whole = relay(a, b, Duration::from_secs(1), &cancel, |_, _| {});
        let whole = size(&whole);
        assert!(
            whole < 3 * one,
            "a relay of {whole} bytes for two pumps of {one}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn idle_connections_end_after_the_timeout() {
        let (user, mut user_peer) = tokio::io::duplex(64);
        let (remote, _remote_peer) = tokio::io::duplex(64);
        let cancel = CancellationToken::new();
        let task = tokio::spawn(async move {
            relay(user, remote, Duration::from_secs(300), &cancel, |_, _| {}).await
        });
        tokio::time::sleep(Duration::from_secs(200)).await;
        user_peer.write_all(b"x").await.unwrap(); // activity moves the deadline
        tokio::time::sleep(Duration::from_secs(299)).await;
        assert!(!task.is_finished());
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(task.await.unwrap().unwrap(), Ended::Idle);
    }

    #[tokio::test]
    async fn an_error_one_way_ends_both_ways() {
        struct Failing;
        impl tokio::io::AsyncRead for Failing {
            fn poll_read(
                self: std::pin::Pin<&mut Self>,
                _: &mut std::task::Context<'_>,
                _: &mut tokio::io::ReadBuf<'_>,
            ) -> std::task::Poll<io::Result<()>> {
                std::task::Poll::Ready(Err(io::Error::from(io::ErrorKind::ConnectionReset)))
            }
        }
        impl tokio::io::AsyncWrite for Failing {
            fn poll_write(
                self: std::pin::Pin<&mut Self>,
                _: &mut std::task::Context<'_>,
                b: &[u8],
            ) -> std::task::Poll<io::Result<usize>> {
                std::task::Poll::Ready(Ok(b.len()))
            }
            fn poll_flush(
                self: std::pin::Pin<&mut Self>,
                _: &mut std::task::Context<'_>,
            ) -> std::task::Poll<io::Result<()>> {
                std::task::Poll::Ready(Ok(()))
            }
            fn poll_shutdown(
                self: std::pin::Pin<&mut Self>,
                _: &mut std::task::Context<'_>,
            ) -> std::task::Poll<io::Result<()>> {
                std::task::Poll::Ready(Ok(()))
            }
        }
        // The user sends nothing; the remote fails: the relay ends now, not at idle.
        let (user, _user_peer) = tokio::io::duplex(64);
        let cancel = CancellationToken::new();
        let r = tokio::time::timeout(
            Duration::from_secs(5),
            relay(user, Failing, Duration::from_secs(300), &cancel, |_, _| {}),
        )
        .await
        .expect("ends at once");
        assert_eq!(r.unwrap_err().kind(), io::ErrorKind::ConnectionReset);
    }

    #[tokio::test]
    async fn cancellation_ends_the_relay() {
        let (user, _u) = tokio::io::duplex(64);
        let (remote, _r) = tokio::io::duplex(64);
        let cancel = CancellationToken::new();
        let c = cancel.clone();
        let task = tokio::spawn(async move {
            relay(user, remote, Duration::from_secs(300), &c, |_, _| {}).await
        });
        cancel.cancel();
        assert_eq!(task.await.unwrap().unwrap(), Ended::Cancelled);
    }
}
