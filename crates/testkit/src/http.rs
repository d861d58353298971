//! A tiny HTTP/1.1 target for traffic through a proxy, and its client side.
//!
//! [`HttpTarget`] serves two routes, one request per connection (`Connection:
//! close`):
//!
//! - `GET /bytes/{n}`: `n` bytes of the [`pattern`](crate::pattern);
//! - `POST /sink` with a `Content-Length`: reads the body and answers with
//!   `{"len": <bytes read>, "checksum": <checksum of them>}` (see
//!   [`pattern::checksum`]).
//!
//! Anything else gets 404 (or 400 when it is not HTTP). [`get_bytes`] (or
//! [`get_bytes_by_length`]) and [`post_sink`] speak to it over any stream, such as one from
//! [`socks5::connect`](crate::socks5::connect).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result, bail, ensure};
use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use crate::pattern::{self, Block, Checksum};
use crate::socks5;

/// The longest request or response head read.
const MAX_HEAD: usize = 16 * 1024;

/// Bytes moved by an [`HttpTarget`], bodies only.
#[derive(Debug, Default)]
struct Counters {
    /// Body bytes sent by `GET /bytes/{n}`.
    out: AtomicU64,
    /// Body bytes read by `POST /sink`.
    sunk: AtomicU64,
    /// Requests answered, any route.
    requests: AtomicU64,
    /// The address of every connection's peer, in order.
    peers: std::sync::Mutex<Vec<SocketAddr>>,
}

/// The HTTP/1.1 server on `127.0.0.1:0`; it stops accepting when dropped.
#[derive(Debug)]
pub struct HttpTarget {
    addr: SocketAddr,
    counters: Arc<Counters>,
    accept: JoinHandle<()>,
}

impl HttpTarget {
    /// Binds 127.0.0.1 on a port of the kernel's choice and serves on the current
    /// tokio runtime.
    pub async fn start() -> Result<Self> {
        let listener = TcpListener::bind((crate::LOCALHOST, 0))
            .await
            .context("binding the HTTP target to 127.0.0.1:0")?;
        Self::accept_on(listener)
    }

    /// Serves on `listener`, bound elsewhere: in a network namespace
    /// ([`crate::netns::NetNs::tcp_listener`]), on the current tokio runtime.
    pub fn start_on(listener: std::net::TcpListener) -> Result<Self> {
        listener.set_nonblocking(true)?;
        Self::accept_on(TcpListener::from_std(listener)?)
    }

    fn accept_on(listener: TcpListener) -> Result<Self> {
        let addr = listener.local_addr()?;
        let counters = Arc::new(Counters::default());
        let shared = Arc::clone(&counters);
        let accept = tokio::spawn(async move {
            while let Ok((stream, peer)) = listener.accept().await {
                shared
                    .peers
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(peer);
                let counters = Arc::clone(&shared);
                tokio::spawn(async move {
                    // A client that goes away mid-request is the client's test's
                    // business; the target just drops the connection.
                    let _ = serve(stream, &counters).await;
                });
            }
        });
        Ok(Self {
            addr,
            counters,
            accept,
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Body bytes served by `GET /bytes/{n}` so far.
    pub fn bytes_out(&self) -> u64 {
        self.counters.out.load(Ordering::Relaxed)
    }

    /// Body bytes read by `POST /sink` so far.
    pub fn bytes_in(&self) -> u64 {
        self.counters.sunk.load(Ordering::Relaxed)
    }

    /// Requests answered so far.
    pub fn requests(&self) -> u64 {
        self.counters.requests.load(Ordering::Relaxed)
    }

    /// Where every connection came from, in order (through a proxy: the proxy's
    /// address, not the client's).
    pub fn peers(&self) -> Vec<SocketAddr> {
        self.counters
            .peers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Downloads `n` bytes from this target through the SOCKS5 proxy at `proxy` and
    /// checks every byte against the pattern.
    pub async fn download_via_socks(&self, proxy: SocketAddr, n: u64) -> Result<()> {
        let stream = socks5::connect(proxy, self.addr).await?;
        let got = get_bytes(stream, n)
            .await
            .with_context(|| format!("GET /bytes/{n} from {} through {proxy}", self.addr))?;
        ensure!(got == n, "received {got} of {n} bytes");
        Ok(())
    }

    /// Starts downloading `n` bytes through the SOCKS5 proxy at `proxy`, read slowly
    /// (32 KiB every 10 ms, about 3 MiB/s), so the connection stays open a while (an
    /// upgrade's drain is tested under it): every byte checked, the count returned.
    pub fn download_via_socks_slowly(&self, proxy: SocketAddr, n: u64) -> JoinHandle<Result<u64>> {
        let target = self.addr;
        tokio::spawn(async move {
            let stream = socks5::connect(proxy, target).await?;
            let (mut from, to) = tokio::io::split(stream);
            let (slow, mut paced) = tokio::io::duplex(64 * 1024);
            tokio::spawn(async move {
                let mut buf = vec![0u8; 32 * 1024];
                loop {
                    let got = from.read(&mut buf).await.unwrap_or(0);
                    if got == 0 || paced.write_all(&buf[..got]).await.is_err() {
                        return;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
            });
            get_bytes(tokio::io::join(slow, to), n)
                .await
                .with_context(|| format!("GET /bytes/{n} from {target}, slowly, through {proxy}"))
        })
    }

    /// Like [`Self::download_via_socks`], but done once the `n` bytes are in, checked,
    /// without waiting for the proxy to close: the stream is handed back, open or not.
    pub async fn download_via_socks_by_length(
        &self,
        proxy: SocketAddr,
        n: u64,
    ) -> Result<TcpStream> {
        let mut stream = socks5::connect(proxy, self.addr).await?;
        get_bytes_by_length(&mut stream, n)
            .await
            .with_context(|| format!("GET /bytes/{n} from {} through {proxy}", self.addr))?;
        Ok(stream)
    }

    /// Uploads `n` pattern bytes to this target's sink through the SOCKS5 proxy at
    /// `proxy` and checks that the sink read exactly them.
    pub async fn upload_via_socks(&self, proxy: SocketAddr, n: u64) -> Result<()> {
        let stream = socks5::connect(proxy, self.addr).await?;
        post_sink(stream, n)
            .await
            .with_context(|| format!("POST /sink of {n} bytes to {} through {proxy}", self.addr))
    }
}

impl Drop for HttpTarget {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

async fn serve(mut stream: TcpStream, counters: &Counters) -> Result<()> {
    let (head, mut body_start) = read_head(&mut stream).await?;
    let mut request_line = head.lines().next().unwrap_or_default().split(' ');
    let (method, path) = (request_line.next(), request_line.next());
    let response = match (method, path) {
        (Some("GET"), Some(path)) if path.starts_with("/bytes/") => {
            match path["/bytes/".len()..].parse::<u64>() {
                Ok(n) => {
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\
                         Content-Length: {n}\r\nConnection: close\r\n\r\n"
                    );
                    stream.write_all(head.as_bytes()).await?;
                    send_pattern(&mut stream, n, counters).await?;
                    counters.requests.fetch_add(1, Ordering::Relaxed);
                    return Ok(stream.shutdown().await?);
                }
                Err(_) => reply(400, "n must be a number of bytes\n"),
            }
        }
        (Some("POST"), Some("/sink")) => match content_length(&head) {
            Some(len) => {
                let take = body_start
                    .len()
                    .min(usize::try_from(len).unwrap_or(usize::MAX));
                body_start.truncate(take);
                let mut sum = Checksum::new();
                sum.update(&body_start);
                let mut read = body_start.len() as u64;
                counters.sunk.fetch_add(read, Ordering::Relaxed);
                let mut buf = vec![0; 64 * 1024];
                while read < len {
                    let want = buf
                        .len()
                        .min(usize::try_from(len - read).unwrap_or(usize::MAX));
                    let n = stream.read(&mut buf[..want]).await?;
                    if n == 0 {
                        bail!("the client closed after {read} of {len} body bytes");
                    }
                    sum.update(&buf[..n]);
                    read += n as u64;
                    counters.sunk.fetch_add(n as u64, Ordering::Relaxed);
                }
                let body = json!({ "len": read, "checksum": sum.finish() }).to_string();
                reply(200, &body)
            }
            None => reply(411, "POST /sink needs a Content-Length\n"),
        },
        (Some(_), Some(_)) => reply(404, "routes: GET /bytes/{n}, POST /sink\n"),
        _ => reply(400, "not an HTTP request\n"),
    };
    stream.write_all(response.as_bytes()).await?;
    counters.requests.fetch_add(1, Ordering::Relaxed);
    Ok(stream.shutdown().await?)
}

async fn send_pattern(stream: &mut TcpStream, n: u64, counters: &Counters) -> Result<()> {
    let block = Block::new();
    let mut sent = 0u64;
    while sent < n {
        let chunk = block.at(sent, usize::try_from(n - sent).unwrap_or(Block::MAX));
        stream.write_all(chunk).await?;
        sent += chunk.len() as u64;
        counters
            .out
            .fetch_add(chunk.len() as u64, Ordering::Relaxed);
    }
    Ok(())
}

fn reply(status: u16, body: &str) -> String {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        411 => "Length Required",
        _ => "Status",
    };
    format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// Reads up to the blank line ending a head; returns the head and the bytes read
/// past it.
async fn read_head<S: AsyncRead + Unpin>(stream: &mut S) -> Result<(String, Vec<u8>)> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            return Ok((String::from_utf8_lossy(&buf).into_owned(), rest));
        }
        ensure!(
            buf.len() <= MAX_HEAD,
            "an HTTP head longer than {MAX_HEAD} bytes"
        );
        let n = stream.read(&mut chunk).await?;
        ensure!(
            n > 0,
            "the peer closed before the end of the HTTP head ({} bytes)",
            buf.len()
        );
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn content_length(head: &str) -> Option<u64> {
    head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| value.trim().parse().ok())?
    })
}

/// Status code and `Content-Length` of a response head.
fn parse_response(head: &str) -> Result<(u16, Option<u64>)> {
    let status_line = head.lines().next().unwrap_or_default();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("not an HTTP status line: {status_line:?}"))?;
    Ok((status, content_length(head)))
}

/// Sends `GET /bytes/{n}` on `stream`, reads the response and checks every body byte
/// against the pattern as it arrives; returns the body's length, counted up to the
/// close of the stream.
pub async fn get_bytes<S>(mut stream: S, n: u64) -> Result<u64>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    get_body(&mut stream, n, BodyEnd::Close).await
}

/// Like [`get_bytes`], but done once the `n` announced body bytes are in, checked:
/// the stream may stay open, as HTTP/1.1 allows, and is left to the caller.
pub async fn get_bytes_by_length<S>(stream: &mut S, n: u64) -> Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    get_body(stream, n, BodyEnd::Length).await.map(|_| ())
}

/// Where a response body ends for [`get_body`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum BodyEnd {
    /// At the close of the stream, which must come after exactly the announced bytes.
    Close,
    /// After the announced `Content-Length`; the close is not waited for.
    Length,
}

async fn get_body<S>(stream: &mut S, n: u64, end: BodyEnd) -> Result<u64>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let request = format!("GET /bytes/{n} HTTP/1.1\r\nHost: target\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let (head, first) = read_head(stream)
        .await
        .context("reading the response head")?;
    let (status, len) = parse_response(&head)?;
    ensure!(status == 200, "the target answered {status}: {head}");
    ensure!(
        len == Some(n),
        "the target announced {len:?} bytes, asked for {n}"
    );
    let mut got = 0u64;
    let mut buf = first;
    buf.reserve(64 * 1024);
    loop {
        if let Some(at) = pattern::first_mismatch(got, &buf) {
            bail!("byte {at} of the body differs from the pattern");
        }
        got += buf.len() as u64;
        ensure!(
            got <= n,
            "received {got} bytes, more than the {n} asked for"
        );
        if end == BodyEnd::Length && got == n {
            break;
        }
        buf.clear();
        buf.resize(64 * 1024, 0);
        let read = stream.read(&mut buf).await?;
        if read == 0 {
            ensure!(end == BodyEnd::Close, "closed after {got} of {n} bytes");
            break;
        }
        buf.truncate(read);
    }
    Ok(got)
}

/// Sends `POST /sink` with `n` pattern bytes on `stream` and checks that the sink's
/// reply names that length and the body's checksum.
pub async fn post_sink<S>(mut stream: S, n: u64) -> Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let request = format!(
        "POST /sink HTTP/1.1\r\nHost: target\r\nContent-Length: {n}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await?;
    let block = Block::new();
    let mut sum = Checksum::new();
    let mut sent = 0u64;
    while sent < n {
        let chunk = block.at(sent, usize::try_from(n - sent).unwrap_or(Block::MAX));
        stream.write_all(chunk).await?;
        sum.update(chunk);
        sent += chunk.len() as u64;
    }
    let (head, mut body) = read_head(&mut stream)
        .await
        .context("reading the response head")?;
    stream.read_to_end(&mut body).await?;
    let (status, _) = parse_response(&head)?;
    let body = String::from_utf8_lossy(&body);
    ensure!(status == 200, "the sink answered {status}: {body}");
    let reply: serde_json::Value =
        serde_json::from_str(&body).with_context(|| format!("the sink's reply {body:?}"))?;
    let want = json!({ "len": n, "checksum": sum.finish() });
    ensure!(reply == want, "the sink read {reply}, sent {want}");
    Ok(())
}
