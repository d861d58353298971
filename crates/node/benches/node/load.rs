//! The load: bulk downloads, short requests one after another, idle connections.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Mutex, Semaphore};
use tokio::task::JoinSet;
use tokio::time::{Instant, sleep};

use switchyard_testkit::{LOCALHOST, socks5};

use crate::server::Server;
use crate::target::Target;

/// Connections opened at once while setting up the idle ones.
const OPENING_AT_ONCE: usize = 32;
/// How long the idle connections may take to reach the hold server.
const OPEN_TIMEOUT: Duration = Duration::from_secs(60);
/// Pause before reading memory, so the server's allocations after the last
/// connection (buffers, Go's background work) have settled.
const SETTLE: Duration = Duration::from_secs(1);

/// Downloads `total` bytes from `target` through the SOCKS5 proxy at `proxy` (straight
/// from the target with `None`), split over `conns` connections at once, checking
/// every byte; returns MB/s (10^6 bytes).
pub(crate) async fn bulk(
    proxy: Option<SocketAddr>,
    target: &Target,
    total: u64,
    conns: u64,
) -> Result<f64> {
    let each = total / conns;
    let start = Instant::now();
    let mut tasks = JoinSet::new();
    for _ in 0..conns {
        let target = target.clone();
        tasks.spawn(async move {
            let got = match proxy {
                Some(proxy) => target.get(proxy, each).await?,
                None => target.get_direct(each).await?,
            };
            ensure!(got == each, "received {got} of {each} bytes");
            anyhow::Ok(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    Ok((each * conns) as f64 / start.elapsed().as_secs_f64() / 1e6)
}

/// Fetches `body` bytes `n` times, one new proxied connection after another;
/// returns connections per second.
pub(crate) async fn connections_per_second(
    proxy: SocketAddr,
    target: &Target,
    n: u32,
    body: u64,
) -> Result<f64> {
    let start = Instant::now();
    for i in 0..n {
        let got = target
            .get(proxy, body)
            .await
            .with_context(|| format!("request {i}"))?;
        ensure!(got == body, "request {i}: received {got} of {body} bytes");
    }
    Ok(f64::from(n) / start.elapsed().as_secs_f64())
}

/// Opens `n` proxied connections through the SOCKS5 proxy at `proxy` to a local
/// server that accepts and holds them, and returns how much the server process's
/// resident memory grew per connection, in bytes.
///
/// Each connection sends a few bytes first: the clients send a protocol's request
/// header with the first payload, so without them the server would only hold an
/// unfinished handshake, not a proxied connection.
pub(crate) async fn idle_memory(
    server: &mut Server,
    proxy: SocketAddr,
    target: &Target,
    n: usize,
) -> Result<f64> {
    // Warm-up, so that what a server builds on its first connections is in the base.
    for _ in 0..8 {
        target.get(proxy, 1024).await?;
    }
    sleep(SETTLE).await;
    let before = server.rss()?;

    let hold = Hold::start().await?;
    let opened = open_idle(proxy, hold.addr, n).await?;
    let deadline = Instant::now() + OPEN_TIMEOUT;
    while hold.accepted() < n {
        server.ensure_running()?;
        if Instant::now() >= deadline {
            bail!(
                "only {} of {n} connections reached the hold server within {OPEN_TIMEOUT:?}",
                hold.accepted()
            );
        }
        sleep(Duration::from_millis(20)).await;
    }
    sleep(SETTLE).await;
    let after = server.rss()?;
    drop(opened);
    Ok((after as f64 - before as f64) / n as f64)
}

async fn open_idle(proxy: SocketAddr, to: SocketAddr, n: usize) -> Result<Vec<TcpStream>> {
    let limit = Arc::new(Semaphore::new(OPENING_AT_ONCE));
    let mut tasks = JoinSet::new();
    for _ in 0..n {
        let limit = Arc::clone(&limit);
        tasks.spawn(async move {
            let _permit = limit.acquire_owned().await?;
            let mut stream = socks5::connect(proxy, to).await?;
            stream.write_all(b"hold\n").await?;
            anyhow::Ok(stream)
        });
    }
    let mut streams = Vec::with_capacity(n);
    while let Some(done) = tasks.join_next().await {
        streams.push(done??);
    }
    Ok(streams)
}

/// A TCP server on 127.0.0.1 that accepts connections and holds them, unread, until
/// dropped.
struct Hold {
    addr: SocketAddr,
    accepted: Arc<AtomicUsize>,
    held: Arc<Mutex<Vec<TcpStream>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Hold {
    async fn start() -> Result<Self> {
        let listener = TcpListener::bind((LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let accepted = Arc::new(AtomicUsize::new(0));
        let held = Arc::new(Mutex::new(Vec::new()));
        let (count, keep) = (Arc::clone(&accepted), Arc::clone(&held));
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                keep.lock().await.push(stream);
                count.fetch_add(1, Ordering::Relaxed);
            }
        });
        Ok(Self {
            addr,
            accepted,
            held,
            task,
        })
    }

    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::Relaxed)
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.task.abort();
        if let Ok(mut held) = self.held.try_lock() {
            held.clear();
        }
    }
}
