//! The bench's own network pieces, all on 127.0.0.1: a [`Tap`] per client and server
//! (latency, a count of what goes through it, and a real refusal), the probe target
//! every client's URL tests ask, the subscriptions our client reads, and a small HTTP
//! GET for the peers' controllers.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// How long a tap waits for a client's VLESS request header before it forwards
/// whatever came.
const HEADER_WAIT: Duration = Duration::from_secs(10);

/// What went through a tap, by the destination port in each connection's VLESS
/// request header.
#[derive(Debug, Default)]
pub(crate) struct Seen {
    /// When each connection to the probe target was opened.
    pub(crate) probes: Mutex<Vec<Instant>>,
    /// Connections to anything else (the request loop's downloads).
    pub(crate) other: AtomicU64,
}

/// One client's way to one server: a TCP relay on 127.0.0.1 in front of the server's
/// [`FaultProxy`](switchyard_testkit::fault::FaultProxy).
///
/// It holds each connection's first bytes for `delay` (the server's distance: the
/// reply comes that much later), reads the destination port out of the VLESS request
/// header (plain VLESS over TCP: version, 16-byte id, add-ons, command, port) to count
/// probes, then relays both ways. [`Self::refuse`] closes its port, so new connections
/// are refused by the kernel (`ECONNREFUSED`), as by a server whose service is down.
#[derive(Debug)]
pub(crate) struct Tap {
    addr: SocketAddr,
    accept: Mutex<Option<JoinHandle<()>>>,
    pub(crate) seen: Arc<Seen>,
}

impl Tap {
    /// A tap on a port of its own forwarding to `upstream`, counting connections to
    /// `probe_port` as probes.
    pub(crate) async fn start(
        upstream: SocketAddr,
        delay: Duration,
        probe_port: u16,
    ) -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .context("binding a tap")?;
        let addr = listener.local_addr()?;
        let seen = Arc::new(Seen::default());
        let counts = seen.clone();
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let counts = counts.clone();
                tokio::spawn(async move {
                    let _ = relay(client, upstream, delay, probe_port, &counts).await;
                });
            }
        });
        Ok(Self {
            addr,
            accept: Mutex::new(Some(accept)),
            seen,
        })
    }

    /// Its address: what the client's config names as the server.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Closes the port for good: connections are refused from now on (open ones go
    /// on; the fault proxy behind cuts those).
    pub(crate) fn refuse(&self) {
        if let Some(task) = self.accept.lock().unwrap_or_else(|p| p.into_inner()).take() {
            task.abort();
        }
    }

    /// Probes seen in `[from, to)`.
    pub(crate) fn probes_between(&self, from: Instant, to: Instant) -> usize {
        let probes = self.seen.probes.lock().unwrap_or_else(|p| p.into_inner());
        probes.iter().filter(|t| **t >= from && **t < to).count()
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        self.refuse();
    }
}

async fn relay(
    mut client: TcpStream,
    upstream: SocketAddr,
    delay: Duration,
    probe_port: u16,
    seen: &Seen,
) -> Result<()> {
    client.set_nodelay(true)?;
    let mut server = TcpStream::connect(upstream).await?;
    server.set_nodelay(true)?;
    let mut first = Vec::with_capacity(256);
    let read_header = async {
        let mut buf = [0u8; 4096];
        loop {
            if let Some(port) = vless_port(&first) {
                return Some(port);
            }
            match client.read(&mut buf).await {
                Ok(0) | Err(_) => return None,
                Ok(n) => first.extend_from_slice(&buf[..n]),
            }
        }
    };
    let port = tokio::time::timeout(HEADER_WAIT, read_header)
        .await
        .ok()
        .flatten();
    match port {
        Some(p) if p == probe_port => seen
            .probes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Instant::now()),
        _ => {
            seen.other.fetch_add(1, Ordering::Relaxed);
        }
    }
    if first.is_empty() {
        return Ok(());
    }
    tokio::time::sleep(delay).await;
    server.write_all(&first).await?;
    tokio::io::copy_bidirectional(&mut client, &mut server).await?;
    Ok(())
}

/// The destination port of a plain VLESS request header, once `b` holds it.
fn vless_port(b: &[u8]) -> Option<u16> {
    let addons = usize::from(*b.get(17)?);
    let at = 18 + addons + 1;
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

/// The URL tests' target: answers every request `204 No Content` and counts them.
#[derive(Debug)]
pub(crate) struct ProbeTarget {
    addr: SocketAddr,
    answered: Arc<AtomicU64>,
    accept: JoinHandle<()>,
}

impl ProbeTarget {
    pub(crate) async fn start() -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .context("binding the probe target")?;
        let addr = listener.local_addr()?;
        let answered = Arc::new(AtomicU64::new(0));
        let count = answered.clone();
        let accept = tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let count = count.clone();
                tokio::spawn(async move {
                    if read_head(&mut s).await.is_ok() {
                        let _ = s
                            .write_all(
                                b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\
                                  Connection: close\r\n\r\n",
                            )
                            .await;
                        count.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
        });
        Ok(Self {
            addr,
            answered,
            accept,
        })
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL every client tests with.
    pub(crate) fn url(&self) -> String {
        format!("http://{}/generate_204", self.addr)
    }

    /// Requests answered so far.
    pub(crate) fn answered(&self) -> u64 {
        self.answered.load(Ordering::Relaxed)
    }
}

impl Drop for ProbeTarget {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// Reads an HTTP request or response head (up to the blank line), at most 16 KiB.
async fn read_head(s: &mut TcpStream) -> Result<Vec<u8>> {
    let mut head = Vec::new();
    let mut b = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = s.read(&mut b).await?;
        if n == 0 || head.len() > 16 * 1024 {
            bail!("no complete head");
        }
        head.extend_from_slice(&b[..n]);
    }
    Ok(head)
}

/// Our client's subscriptions as share links, one path each, on 127.0.0.1. While
/// [`Self::set_silent`] holds, connections are accepted and never answered (the
/// network loss reaches the panel too).
#[derive(Debug)]
pub(crate) struct Subscriptions {
    addr: SocketAddr,
    silent: Arc<AtomicBool>,
    accept: JoinHandle<()>,
}

impl Subscriptions {
    /// Serves `bodies` (path, body) as `text/plain`.
    pub(crate) async fn start(bodies: Vec<(String, String)>) -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .context("binding the subscription server")?;
        let addr = listener.local_addr()?;
        let silent = Arc::new(AtomicBool::new(false));
        let quiet = silent.clone();
        let bodies = Arc::new(bodies);
        let accept = tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let (bodies, quiet) = (bodies.clone(), quiet.clone());
                tokio::spawn(async move {
                    let Ok(head) = read_head(&mut s).await else {
                        return;
                    };
                    while quiet.load(Ordering::Relaxed) {
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                    let line = String::from_utf8_lossy(&head);
                    let path = line.split_whitespace().nth(1).unwrap_or("");
                    let answer = match bodies.iter().find(|(p, _)| p == path) {
                        Some((_, body)) => format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
                             Connection: close\r\n\r\n{body}",
                            body.len()
                        ),
                        None => "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                            .to_owned(),
                    };
                    let _ = s.write_all(answer.as_bytes()).await;
                });
            }
        });
        Ok(Self {
            addr,
            silent,
            accept,
        })
    }

    /// The URL of `path`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub(crate) fn set_silent(&self, silent: bool) {
        self.silent.store(silent, Ordering::Relaxed);
    }
}

impl Drop for Subscriptions {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// `GET path` from `addr` (HTTP/1.1, `Connection: close`); the body when the status is
/// 200, within 3 s.
pub(crate) async fn http_get(addr: SocketAddr, path: &str) -> Result<String> {
    let once = async {
        let mut s = TcpStream::connect(addr).await?;
        let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        s.write_all(request.as_bytes()).await?;
        let mut all = Vec::new();
        s.read_to_end(&mut all).await?;
        let text = String::from_utf8_lossy(&all).into_owned();
        let Some((head, body)) = text.split_once("\r\n\r\n") else {
            bail!("GET {path} from {addr}: no complete answer");
        };
        if !head.starts_with("HTTP/1.1 200") {
            bail!(
                "GET {path} from {addr}: {}",
                head.lines().next().unwrap_or("")
            );
        }
        if head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked")
        {
            return Ok(dechunk(body));
        }
        Ok(body.to_owned())
    };
    tokio::time::timeout(Duration::from_secs(3), once)
        .await
        .with_context(|| format!("GET {path} from {addr}: no answer within 3 s"))?
}

/// A chunked body put together (the controllers answer small JSON documents).
fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}
