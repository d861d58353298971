//! Relaying raw TCP to raw TCP inside the kernel: `splice(2)` from one socket into a
//! pipe and from the pipe into the other, so bytes that pass unchanged (a fallback
//! site's traffic, a REALITY inbound's borrowed site, a plain relay that encrypts
//! nothing) never cross into user space. The same rules as [`crate::pump::relay`]:
//! counted per chunk, half-close passed on, an error either way ends both, the idle
//! timeout and the cancellation end it.
//!
//! Readiness comes from tokio (the sockets stay registered with its reactor); the
//! pipe is drained before the socket is read again, so "would block" always names
//! the socket, never the pipe.

use std::io;
use std::os::fd::OwnedFd;
use std::time::Duration;

use rustix::net::Shutdown;
use rustix::pipe::{PipeFlags, SpliceFlags};
use tokio::io::Interest;
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

use crate::pump::{Activity, Ended};

/// Bytes moved per `splice` call at most, and the pipe's capacity.
pub const CHUNK: usize = 256 * 1024;

/// Relays between two TCP sockets until both directions end, nothing moves for
/// `idle`, or `cancel` fires; `count(up, down)` is called for every chunk carried
/// (`up`: from `user` to `remote`).
pub async fn relay(
    user: &TcpStream,
    remote: &TcpStream,
    idle: Duration,
    cancel: &CancellationToken,
    count: impl Fn(u64, u64) + Send + Sync,
) -> io::Result<Ended> {
    let activity = Activity::new();
    let count = &count;
    crate::both_ways!(
        one_way(user, remote, &activity, move |n| count(n, 0)),
        one_way(remote, user, &activity, move |n| count(0, n)),
        activity,
        idle,
        cancel
    )
}

/// Moves everything `from` sends to `to` inside the kernel, then half-closes `to`.
pub async fn one_way(
    from: &TcpStream,
    to: &TcpStream,
    activity: &Activity,
    count: impl Fn(u64),
) -> io::Result<()> {
    let (pipe_out, pipe_in) = rustix::pipe::pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK)?;
    let _ = rustix::pipe::fcntl_setpipe_size(&pipe_in, CHUNK);
    loop {
        let n = into_pipe(from, &pipe_in).await?;
        if n == 0 {
            // Half-close: the other direction may still carry the answer. A peer
            // that is already gone makes this fail, which changes nothing.
            let _ = rustix::net::shutdown(to, Shutdown::Write);
            return Ok(());
        }
        let mut held = n;
        while held > 0 {
            held -= out_of_pipe(&pipe_out, to, held).await?;
        }
        count(n as u64);
        activity.moved();
    }
}

/// A second handle of `tcp`'s socket (a duplicate descriptor), registered with the
/// reactor on its own: one side of a stream can move a direction inside the kernel
/// while a layer above keeps the other direction on the first handle.
pub fn second_handle(tcp: &TcpStream) -> io::Result<TcpStream> {
    let fd = rustix::io::fcntl_dupfd_cloexec(tcp, 0)?;
    let std = std::net::TcpStream::from(fd);
    std.set_nonblocking(true)?;
    TcpStream::from_std(std)
}

fn flags() -> SpliceFlags {
    SpliceFlags::MOVE | SpliceFlags::NONBLOCK
}

/// Splices what `from` has (up to [`CHUNK`]) into the empty pipe; 0 at the end.
async fn into_pipe(from: &TcpStream, pipe: &OwnedFd) -> io::Result<usize> {
    loop {
        from.readable().await?;
        let spliced = from.try_io(Interest::READABLE, || {
            rustix::pipe::splice(from, None, pipe, None, CHUNK, flags()).map_err(io::Error::from)
        });
        match spliced {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
}

/// Splices up to `held` bytes from the pipe into `to`; how many went.
async fn out_of_pipe(pipe: &OwnedFd, to: &TcpStream, held: usize) -> io::Result<usize> {
    loop {
        to.writable().await?;
        let spliced = to.try_io(Interest::WRITABLE, || {
            rustix::pipe::splice(pipe, None, to, None, held, flags()).map_err(io::Error::from)
        });
        match spliced {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;

    /// A connected pair of TCP sockets on 127.0.0.1.
    async fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let near = TcpStream::connect(listener.local_addr().unwrap());
        let (near, far) = tokio::join!(near, listener.accept());
        (near.unwrap(), far.unwrap().0)
    }

    fn pattern(n: usize, seed: u8) -> Vec<u8> {
        (0..n).map(|i| (i % 251) as u8 ^ seed).collect()
    }

    #[tokio::test]
    async fn carries_megabytes_both_ways_with_half_close_and_counts() {
        let (mut user_peer, user) = pair().await;
        let (remote, mut remote_peer) = pair().await;
        let counted = Arc::new(Mutex::new((0u64, 0u64)));
        let c = Arc::clone(&counted);
        let cancel = CancellationToken::new();
        let task = tokio::spawn(async move {
            relay(
                &user,
                &remote,
                Duration::from_secs(60),
                &cancel,
                move |u, d| {
                    let mut g = c.lock().unwrap();
                    g.0 += u;
                    g.1 += d;
                },
            )
            .await
        });
        // More than a pipe and a socket buffer hold, so every path of the loop runs.
        let up = pattern(3 << 20, 0x5a);
        let down = pattern(5 << 20, 0xa5);
        let (send_up, recv_down) = {
            let up = up.clone();
            let (mut r, mut w) = user_peer.split();
            let send = async move {
                w.write_all(&up).await.unwrap();
                w.shutdown().await.unwrap();
            };
            let recv = async move {
                let mut got = Vec::new();
                r.read_to_end(&mut got).await.unwrap();
                got
            };
            let far = async {
                let (mut r, mut w) = remote_peer.split();
                let recv = async {
                    let mut got = Vec::new();
                    r.read_to_end(&mut got).await.unwrap();
                    got
                };
                let send = async {
                    w.write_all(&down).await.unwrap();
                    w.shutdown().await.unwrap();
                };
                tokio::join!(recv, send).0
            };
            let (_, got_down, got_up) = tokio::join!(send, recv, far);
            (got_up, got_down)
        };
        assert!(send_up == up, "the upload arrived changed");
        assert!(recv_down == down, "the download arrived changed");
        assert_eq!(task.await.unwrap().unwrap(), Ended::Closed);
        assert_eq!(
            *counted.lock().unwrap(),
            (up.len() as u64, down.len() as u64)
        );
    }

    #[tokio::test]
    async fn one_side_closing_leaves_the_other_way_open() {
        let (mut user_peer, user) = pair().await;
        let (remote, mut remote_peer) = pair().await;
        let cancel = CancellationToken::new();
        let task = tokio::spawn(async move {
            relay(&user, &remote, Duration::from_secs(60), &cancel, |_, _| {}).await
        });
        user_peer
            .write_all(b"GET / HTTP/1.0\r\n\r\n")
            .await
            .unwrap();
        user_peer.shutdown().await.unwrap();
        let mut request = Vec::new();
        remote_peer.read_to_end(&mut request).await.unwrap();
        assert_eq!(request, b"GET / HTTP/1.0\r\n\r\n");
        // The answer still comes after the user's half-close.
        remote_peer
            .write_all(b"HTTP/1.0 200 OK\r\n\r\nhi")
            .await
            .unwrap();
        drop(remote_peer);
        let mut answer = Vec::new();
        user_peer.read_to_end(&mut answer).await.unwrap();
        assert_eq!(answer, b"HTTP/1.0 200 OK\r\n\r\nhi");
        assert_eq!(task.await.unwrap().unwrap(), Ended::Closed);
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_relay_ends_after_the_timeout() {
        let (_user_peer, user) = pair().await;
        let (remote, _remote_peer) = pair().await;
        let cancel = CancellationToken::new();
        let task = tokio::spawn(async move {
            relay(&user, &remote, Duration::from_secs(300), &cancel, |_, _| {}).await
        });
        tokio::time::sleep(Duration::from_secs(299)).await;
        assert!(!task.is_finished());
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(task.await.unwrap().unwrap(), Ended::Idle);
    }

    #[tokio::test]
    async fn cancellation_ends_the_relay() {
        let (_user_peer, user) = pair().await;
        let (remote, _remote_peer) = pair().await;
        let cancel = CancellationToken::new();
        let c = cancel.clone();
        let task = tokio::spawn(async move {
            relay(&user, &remote, Duration::from_secs(300), &c, |_, _| {}).await
        });
        cancel.cancel();
        assert_eq!(task.await.unwrap().unwrap(), Ended::Cancelled);
    }

    #[tokio::test]
    async fn a_reset_ends_both_ways() {
        let (user_peer, user) = pair().await;
        let (remote, _remote_peer) = pair().await;
        let cancel = CancellationToken::new();
        let task = tokio::spawn(async move {
            relay(&user, &remote, Duration::from_secs(300), &cancel, |_, _| {}).await
        });
        // SO_LINGER 0: the close is a reset.
        rustix::net::sockopt::set_socket_linger(&user_peer, Some(Duration::ZERO)).unwrap();
        drop(user_peer);
        let ended = tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .expect("ends at once")
            .unwrap();
        assert_eq!(ended.unwrap_err().kind(), io::ErrorKind::ConnectionReset);
    }
}
