//! An HTTP/1.1 load generator: many keep-alive connections, each sending its next
//! request as soon as the previous response is complete, and the latency of every
//! request in the measured window.
//!
//! The `loadgen` binary (`src/bin/loadgen.rs`) is a command line over [`run`]; it is
//! its own process so that a benchmark measures the server, not a load generator
//! sharing the server's runtime. Requests are `GET`s of [`Options::paths`] in turn
//! (one counter shared by all connections), over raw tokio TCP; responses are framed
//! by `Content-Length`, chunked coding or the connection's end (the `response`
//! module). A connection the server closes, or that fails, is opened again for the
//! next request; a failed request counts as an error.
//!
//! Latency runs from the request's first byte written to the response's last byte
//! read, plus the connect when that request had to open its connection. Requests
//! that complete during the warm-up are not counted; those still in flight when the
//! measured window ends are dropped.

mod response;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{Instant, sleep, timeout_at};

use response::{Chunked, Framing};

/// Connections when not told: enough to keep a small server's cores busy.
pub const DEFAULT_CONNECTIONS: usize = 64;
/// Measured seconds when not told: long enough for a stable p99 at thousands of
/// requests per second, short enough to repeat.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(10);
/// How long one request may take before it counts as an error (and its connection
/// is opened again). Generous: a slow answer is a latency, not an error.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// The pause after a failed connect, so a server that is down is not hammered in a
/// busy loop.
const RECONNECT_PAUSE: Duration = Duration::from_millis(10);

/// An `http://HOST:PORT/PATH` URL, taken apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The address connected to (`HOST` must be an IP address: tests use 127.0.0.1).
    pub addr: SocketAddr,
    /// The `Host` header: `HOST:PORT` as written.
    pub authority: String,
    /// The path and query, `/` when the URL has none.
    pub path: String,
}

impl Target {
    /// Parses `http://IP:PORT/PATH` (no TLS, no names to resolve).
    pub fn parse(url: &str) -> Result<Self> {
        let rest = url
            .strip_prefix("http://")
            .with_context(|| format!("URL {url:?}: only http:// is supported"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let addr = authority.parse().with_context(|| {
            format!("URL {url:?}: {authority:?} is not IP:PORT (such as 127.0.0.1:8080)")
        })?;
        Ok(Self {
            addr,
            authority: authority.to_owned(),
            path: path.to_owned(),
        })
    }
}

/// What to load and how hard.
#[derive(Debug, Clone)]
pub struct Options {
    /// Where to connect and the `Host` header.
    pub target: Target,
    /// The paths requested in turn; at least one.
    pub paths: Vec<String>,
    /// Extra request headers, `(name, value)`.
    pub headers: Vec<(String, String)>,
    /// How many connections run at once.
    pub connections: usize,
    /// The unmeasured lead-in.
    pub warmup: Duration,
    /// The measured window, after the warm-up.
    pub duration: Duration,
    /// The most one request may take.
    pub timeout: Duration,
}

impl Options {
    /// Requests to `target`'s own path with the defaults.
    pub fn new(target: Target) -> Self {
        Self {
            paths: vec![target.path.clone()],
            target,
            headers: Vec::new(),
            connections: DEFAULT_CONNECTIONS,
            warmup: Duration::ZERO,
            duration: DEFAULT_DURATION,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// The paths of a URL file: one path (`/sub/abc`) or URL on `target`'s
    /// authority per line; blank lines are skipped.
    pub fn paths_from_file(target: &Target, text: &str) -> Result<Vec<String>> {
        let mut paths = Vec::new();
        for (n, line) in text.lines().enumerate().map(|(n, l)| (n + 1, l.trim())) {
            if line.is_empty() {
                continue;
            }
            if line.starts_with('/') {
                paths.push(line.to_owned());
                continue;
            }
            let other = Target::parse(line).with_context(|| format!("line {n}"))?;
            ensure!(
                other.addr == target.addr,
                "line {n}: {line} is not on {} (one server per run)",
                target.authority
            );
            paths.push(other.path);
        }
        ensure!(!paths.is_empty(), "the URL file has no paths");
        Ok(paths)
    }
}

/// One run's figures, as the `loadgen` binary prints them.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// Responses completed in the measured window (any status).
    pub requests: u64,
    /// The measured window's length.
    pub seconds: f64,
    /// `requests / seconds`.
    pub rps: f64,
    /// Latency percentiles over the window's requests, milliseconds.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// The slowest.
    pub max_ms: f64,
    /// Requests that failed (connect, I/O, bad response, timeout) in the window.
    pub errors: u64,
    /// Responses whose status was not 2xx (counted in `requests` too).
    pub non_2xx: u64,
}

impl Report {
    /// The one JSON line: `{"requests":N,"seconds":S,"rps":R,"p50_ms":..,"p90_ms":..,
    /// "p99_ms":..,"max_ms":..,"errors":E,"non_2xx":K}`.
    pub fn to_json(&self) -> String {
        format!(
            "{{\"requests\":{},\"seconds\":{:.3},\"rps\":{:.3},\"p50_ms\":{:.3},\
             \"p90_ms\":{:.3},\"p99_ms\":{:.3},\"max_ms\":{:.3},\"errors\":{},\
             \"non_2xx\":{}}}",
            self.requests,
            self.seconds,
            self.rps,
            self.p50_ms,
            self.p90_ms,
            self.p99_ms,
            self.max_ms,
            self.errors,
            self.non_2xx
        )
    }

    fn from_tally(mut tally: Tally, seconds: f64) -> Self {
        tally.latencies_us.sort_unstable();
        let ms = |p: f64| f64::from(percentile(&tally.latencies_us, p)) / 1000.0;
        let requests = tally.latencies_us.len() as u64;
        Self {
            requests,
            seconds,
            rps: if seconds > 0.0 {
                requests as f64 / seconds
            } else {
                0.0
            },
            p50_ms: ms(50.0),
            p90_ms: ms(90.0),
            p99_ms: ms(99.0),
            max_ms: ms(100.0),
            errors: tally.errors,
            non_2xx: tally.non_2xx,
        }
    }
}

/// The nearest-rank percentile `p` (0–100) of sorted `values`; 0 when empty.
fn percentile(sorted: &[u32], p: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Parses `10s`, `500ms`, `2m` or a plain number of seconds (`1.5`).
pub fn parse_duration(text: &str) -> Result<Duration> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => text.split_at(i),
        None => (text, "s"),
    };
    let value: f64 = number
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite() && *v >= 0.0)
        .with_context(|| format!("duration {text:?}: say 10s, 500ms or 2m"))?;
    let seconds = match unit {
        "ms" => value / 1000.0,
        "s" => value,
        "m" => value * 60.0,
        _ => bail!("duration {text:?}: the unit is ms, s or m"),
    };
    Ok(Duration::from_secs_f64(seconds))
}

/// What one connection saw in the measured window.
#[derive(Debug, Default)]
struct Tally {
    latencies_us: Vec<u32>,
    errors: u64,
    non_2xx: u64,
}

impl Tally {
    fn merge(&mut self, other: Self) {
        self.latencies_us.extend(other.latencies_us);
        self.errors += other.errors;
        self.non_2xx += other.non_2xx;
    }
}

/// The request bytes of every path, built once.
fn requests(options: &Options) -> Vec<Vec<u8>> {
    let mut extra = String::new();
    for (name, value) in &options.headers {
        extra += &format!("{name}: {value}\r\n");
    }
    options
        .paths
        .iter()
        .map(|path| {
            format!(
                "GET {path} HTTP/1.1\r\nHost: {}\r\nUser-Agent: switchyard-loadgen\r\n{extra}\r\n",
                options.target.authority
            )
            .into_bytes()
        })
        .collect()
}

/// Runs the load on the current tokio runtime and reports the measured window.
pub async fn run(options: Options) -> Result<Report> {
    ensure!(options.connections > 0, "connections must be at least 1");
    ensure!(!options.paths.is_empty(), "no paths to request");
    ensure!(!options.duration.is_zero(), "the duration must be above 0");
    let shared = Arc::new(Shared {
        requests: requests(&options),
        next: AtomicUsize::new(0),
        addr: options.target.addr,
        timeout: options.timeout,
    });
    let begin = Instant::now() + options.warmup;
    let end = begin + options.duration;
    let tasks: Vec<_> = (0..options.connections)
        .map(|_| tokio::spawn(connection(Arc::clone(&shared), begin, end)))
        .collect();
    let mut tally = Tally::default();
    for task in tasks {
        tally.merge(task.await.context("a connection task panicked")?);
    }
    Ok(Report::from_tally(tally, options.duration.as_secs_f64()))
}

/// What every connection reads.
struct Shared {
    requests: Vec<Vec<u8>>,
    next: AtomicUsize,
    addr: SocketAddr,
    timeout: Duration,
}

/// One connection's loop until `end`: request, response, record, again.
async fn connection(shared: Arc<Shared>, begin: Instant, end: Instant) -> Tally {
    let mut tally = Tally::default();
    let mut stream: Option<TcpStream> = None;
    let mut buf = Vec::with_capacity(16 * 1024);
    while Instant::now() < end {
        let i = shared.next.fetch_add(1, Ordering::Relaxed) % shared.requests.len();
        let started = Instant::now();
        let deadline = (started + shared.timeout).min(end);
        let exchange = exchange(&shared, &mut stream, &mut buf, &shared.requests[i]);
        let outcome = timeout_at(deadline, exchange).await;
        let done = Instant::now();
        let counted = done >= begin && done <= end;
        match outcome {
            Ok(Ok(status)) => {
                if counted {
                    let us = done.duration_since(started).as_micros();
                    tally
                        .latencies_us
                        .push(u32::try_from(us).unwrap_or(u32::MAX));
                    if !(200..300).contains(&status) {
                        tally.non_2xx += 1;
                    }
                }
            }
            Ok(Err(_)) | Err(_) => {
                stream = None;
                buf.clear();
                if done >= end {
                    break; // cut off by the window's end: not an error
                }
                if counted {
                    tally.errors += 1;
                }
                sleep(RECONNECT_PAUSE).await;
            }
        }
    }
    tally
}

/// Sends `request` (connecting first when needed) and reads its whole response;
/// returns the status. Leaves `stream` as `None` when the connection cannot carry
/// another request.
async fn exchange(
    shared: &Shared,
    stream: &mut Option<TcpStream>,
    buf: &mut Vec<u8>,
    request: &[u8],
) -> Result<u16> {
    let s = match stream {
        Some(s) => s,
        None => {
            let s = TcpStream::connect(shared.addr)
                .await
                .with_context(|| format!("connecting to {}", shared.addr))?;
            s.set_nodelay(true)?;
            buf.clear();
            stream.insert(s)
        }
    };
    s.write_all(request).await?;
    loop {
        let head = loop {
            if let Some(head) = response::parse_head(buf)? {
                break head;
            }
            read_more(s, buf).await?;
        };
        buf.drain(..head.len);
        if (100..200).contains(&head.status) {
            continue; // an interim response; the real one follows
        }
        let body_len = match head.framing {
            Framing::Length(n) => {
                while buf.len() < n {
                    read_more(s, buf).await?;
                }
                n
            }
            Framing::Chunked => {
                let mut chunked = Chunked::default();
                loop {
                    if let Some(n) = chunked.end(buf)? {
                        break n;
                    }
                    read_more(s, buf).await?;
                }
            }
            Framing::UntilClose => {
                while s.read_buf(buf).await? > 0 {}
                buf.len()
            }
        };
        buf.drain(..body_len);
        if head.close {
            *stream = None;
            buf.clear();
        }
        return Ok(head.status);
    }
}

async fn read_more(s: &mut TcpStream, buf: &mut Vec<u8>) -> Result<()> {
    buf.reserve(16 * 1024);
    let n = s.read_buf(buf).await?;
    ensure!(n > 0, "the server closed the connection mid-response");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_url_files() {
        let t = Target::parse("http://127.0.0.1:8080/sub/abc?x=1").unwrap();
        assert_eq!(t.addr, crate::local(8080));
        assert_eq!(
            (t.authority.as_str(), t.path.as_str()),
            ("127.0.0.1:8080", "/sub/abc?x=1")
        );
        assert_eq!(Target::parse("http://127.0.0.1:1").unwrap().path, "/");
        assert!(Target::parse("https://127.0.0.1:1/").is_err());
        assert!(Target::parse("http://localhost:1/").is_err());
        let paths = Options::paths_from_file(&t, "/a\n\n  http://127.0.0.1:8080/b \n").unwrap();
        assert_eq!(paths, ["/a", "/b"]);
        assert!(Options::paths_from_file(&t, "http://127.0.0.1:9/c\n").is_err());
        assert!(Options::paths_from_file(&t, "\n").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
        assert!(parse_duration("10h").is_err());
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u32> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), 50);
        assert_eq!(percentile(&v, 99.0), 99);
        assert_eq!(percentile(&v, 100.0), 100);
        assert_eq!(percentile(&v, 0.0), 1);
        assert_eq!(percentile(&[7], 90.0), 7);
        assert_eq!(percentile(&[], 50.0), 0);
    }

    #[test]
    fn the_report_is_one_json_line_with_every_field() {
        let tally = Tally {
            latencies_us: vec![3000, 1000, 2000, 4000],
            errors: 1,
            non_2xx: 2,
        };
        let r = Report::from_tally(tally, 2.0);
        assert_eq!(
            r.to_json(),
            r#"{"requests":4,"seconds":2.000,"rps":2.000,"p50_ms":2.000,"p90_ms":4.000,"p99_ms":4.000,"max_ms":4.000,"errors":1,"non_2xx":2}"#
        );
    }
}
