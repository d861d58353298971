//! The local TCP target every way reaches: the client sends the number of bytes it
//! wants (a big-endian u64), the target sends that many and then holds the
//! connection until the client closes it. A request for 0 bytes is an idle
//! connection, counted while it is held.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::Result;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// Bytes per write.
pub(crate) const CHUNK: usize = 64 * 1024;

/// The target, serving until dropped.
pub(crate) struct Target {
    addr: SocketAddr,
    idle: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl Target {
    /// Listens on 127.0.0.1 on the current runtime.
    pub(crate) async fn start() -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let idle = Arc::new(AtomicUsize::new(0));
        let counted = idle.clone();
        let task = tokio::spawn(async move {
            while let Ok((s, _)) = listener.accept().await {
                tokio::spawn(serve(s, counted.clone()));
            }
        });
        Ok(Self { addr, idle, task })
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Idle connections (requests for 0 bytes) held now.
    pub(crate) fn idle(&self) -> usize {
        self.idle.load(Ordering::Relaxed)
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(mut s: TcpStream, idle: Arc<AtomicUsize>) {
    let _ = s.set_nodelay(true);
    let mut want = [0u8; 8];
    if s.read_exact(&mut want).await.is_err() {
        return;
    }
    let mut left = u64::from_be_bytes(want);
    let counted = left == 0;
    if counted {
        idle.fetch_add(1, Ordering::Relaxed);
    }
    let chunk = vec![0x5a_u8; CHUNK];
    while left > 0 {
        let k = usize::try_from(left).map_or(CHUNK, |l| l.min(CHUNK));
        if s.write_all(&chunk[..k]).await.is_err() {
            break;
        }
        left -= k as u64;
    }
    // Hold until the client closes.
    let mut sink = [0u8; 64];
    while matches!(s.read(&mut sink).await, Ok(n) if n > 0) {}
    if counted {
        idle.fetch_sub(1, Ordering::Relaxed);
    }
}
