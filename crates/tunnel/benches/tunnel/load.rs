//! The client side: the same requests to the target by each way (direct TCP, our
//! tunnel, rathole), and the three measurements made of them.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use futures_util::future::try_join_all;
use switchyard_proto::Address;
use switchyard_tunnel::frame::{Network, Open};
use switchyard_tunnel::half::RelayHalf;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::target::CHUNK;

/// A connection or stream to the target.
pub(crate) trait Duplex: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Duplex for T {}
pub(crate) type Conn = Box<dyn Duplex>;

/// How the client reaches the target.
#[derive(Clone)]
pub(crate) enum Way {
    /// TCP to this address: the target itself, or rathole's forwarded port.
    Tcp(SocketAddr),
    /// A new stream through our relay half, for the target's address.
    Tunnel(Arc<RelayHalf>, SocketAddr),
}

impl Way {
    /// Opens a connection and asks the target for `bytes`.
    pub(crate) async fn request(&self, bytes: u64) -> Result<Conn> {
        let mut conn: Conn = match self {
            Self::Tcp(addr) => {
                let s = TcpStream::connect(addr)
                    .await
                    .with_context(|| format!("connecting to {addr}"))?;
                s.set_nodelay(true)?;
                Box::new(s)
            }
            Self::Tunnel(relay, target) => {
                let open = Open {
                    network: Network::Tcp,
                    user: "bench".into(),
                    destination: Address::Ip(*target),
                };
                Box::new(relay.open(open, 0).context("opening a tunnel stream")?)
            }
        };
        conn.write_all(&bytes.to_be_bytes()).await?;
        Ok(conn)
    }
}

/// Reads exactly `bytes` from `conn`.
async fn drain(conn: &mut Conn, bytes: u64) -> Result<()> {
    let mut buf = vec![0u8; CHUNK];
    let mut got = 0u64;
    while got < bytes {
        let n = conn.read(&mut buf).await?;
        ensure!(n > 0, "the connection ended after {got} of {bytes} bytes");
        got += n as u64;
    }
    ensure!(got == bytes, "got {got} bytes, asked for {bytes}");
    Ok(())
}

/// Downloads `total` bytes split evenly over `conns` parallel connections.
pub(crate) async fn bulk(way: &Way, conns: u64, total: u64) -> Result<Duration> {
    let each = total / conns;
    let start = Instant::now();
    let tasks = (0..conns).map(|_| {
        let way = way.clone();
        tokio::spawn(async move {
            let mut c = way.request(each).await?;
            drain(&mut c, each).await
        })
    });
    for r in try_join_all(tasks).await? {
        r?;
    }
    Ok(start.elapsed())
}

/// Median time from opening a connection to its first byte back, over `rounds`
/// connections one after another.
pub(crate) async fn first_byte(way: &Way, rounds: usize) -> Result<Duration> {
    let mut times = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let start = Instant::now();
        let mut c = way.request(1).await?;
        drain(&mut c, 1).await?;
        times.push(start.elapsed());
    }
    Ok(median(times))
}

/// Opens `n` idle connections (100 at a time) and returns them open.
pub(crate) async fn hold(way: &Way, n: usize) -> Result<Vec<Conn>> {
    let mut held = Vec::with_capacity(n);
    while held.len() < n {
        let batch = (n - held.len()).min(100);
        let opened = try_join_all((0..batch).map(|_| way.request(0))).await?;
        held.extend(opened);
    }
    Ok(held)
}

/// Waits until `done()` or `limit` has passed.
pub(crate) async fn wait_for(
    what: &str,
    limit: Duration,
    mut done: impl FnMut() -> bool,
) -> Result<()> {
    let start = Instant::now();
    while !done() {
        if start.elapsed() > limit {
            bail!("{what}: not reached in {limit:?}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

pub(crate) fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// A process's resident memory (`VmRSS`), in KiB.
pub(crate) fn rss_kib(pid: u32) -> Result<u64> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .with_context(|| format!("{path} has no VmRSS"))
}

/// A free port on 127.0.0.1 (bound, then released for the caller to bind).
pub(crate) fn free_addr() -> Result<SocketAddr> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?)
}
