//! The relay of plain HTTP proxy requests ([`super::http`] reads and rewrites the
//! heads): each request goes to its origin through the current server, the response
//! comes back, and the app's connection stays open for its next request (keep-alive).
//!
//! - **One origin connection at a time.** It is kept while the app's requests go to
//!   the same host and port and the origin keeps it; a request to another origin
//!   closes it and dials the new one through the current server (so a switch of
//!   server takes effect at the next origin, and a switch that closes connections
//!   ends the app's connection, as for CONNECT).
//! - A request on a kept origin connection that the origin closed meanwhile (before
//!   answering a byte) is sent again once on a new one, when it had no body.
//! - The app's connection ends after a response whose end is the origin's close,
//!   when the app or an HTTP/1.0 exchange says so, after a response that came before
//!   the request's body was all sent, and after [`KEEP_ALIVE_IDLE`] without a request.
//! - `Upgrade` (a WebSocket over plain HTTP) and a `CONNECT` on a kept connection
//!   turn it into a tunnel, both ways, until either side closes.
//! - Bounds: each request head within [`MAX_REQUEST`] bytes and [`REQUEST_TIMEOUT`]
//!   once it began; response heads within
//!   [`MAX_RESPONSE_HEAD`](super::http::MAX_RESPONSE_HEAD); chunk-size and
//!   trailer lines within [`MAX_LINE`], at most [`MAX_TRAILERS`] trailer lines.

use std::io;
use std::time::Duration;

use switchyard_proto::Address;
use switchyard_transport::BoxIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::watch;

use super::http::{Body, ProxyRequest, ProxyResponse, parse_request, parse_response};
use super::{ConnectError, MAX_REQUEST, Proxy, REQUEST_TIMEOUT, ServeError, parse_connect};
use crate::meter::Metered;

/// How long a kept app connection waits for its next request.
pub const KEEP_ALIVE_IDLE: Duration = Duration::from_secs(60);
/// The longest chunk-size or trailer line.
pub const MAX_LINE: usize = 4096;
/// The most trailer lines after a chunked body.
pub const MAX_TRAILERS: usize = 64;

/// A stream with the bytes read from it but not used yet.
struct Buffered<R> {
    inner: R,
    buf: Vec<u8>,
}

impl<R: AsyncRead + Unpin> Buffered<R> {
    /// Reads once more; 0 at the end of the stream.
    async fn fill(&mut self) -> io::Result<usize> {
        let mut chunk = [0u8; 16 * 1024];
        let n = self.inner.read(&mut chunk).await?;
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(n)
    }

    async fn copy_exact<W: AsyncWrite + Unpin>(&mut self, w: &mut W, mut n: u64) -> io::Result<()> {
        while n > 0 {
            if self.buf.is_empty() && self.fill().await? == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            let take = usize::try_from(n).unwrap_or(usize::MAX).min(self.buf.len());
            w.write_all(&self.buf[..take]).await?;
            self.buf.drain(..take);
            n -= take as u64;
        }
        Ok(())
    }

    /// One line, its CRLF included, within [`MAX_LINE`].
    async fn line(&mut self) -> io::Result<Vec<u8>> {
        loop {
            let end = self.buf.windows(2).position(|w| w == b"\r\n");
            if end.unwrap_or(self.buf.len()) > MAX_LINE {
                return Err(invalid("a chunk-size or trailer line is too long"));
            }
            if let Some(i) = end {
                return Ok(self.buf.drain(..i + 2).collect());
            }
            if self.buf.len() > MAX_LINE {
                return Err(invalid("a chunk-size or trailer line is too long"));
            }
            if self.fill().await? == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
        }
    }

    /// A chunked body as it is, up to its last chunk and trailers.
    async fn copy_chunked<W: AsyncWrite + Unpin>(&mut self, w: &mut W) -> io::Result<()> {
        loop {
            let line = self.line().await?;
            let size = match httparse::parse_chunk_size(&line) {
                Ok(httparse::Status::Complete((_, size))) => size,
                _ => return Err(invalid("a malformed chunk size")),
            };
            w.write_all(&line).await?;
            if size == 0 {
                break;
            }
            self.copy_exact(w, size).await?;
            let end = self.line().await?;
            if end != b"\r\n" {
                return Err(invalid("a chunk longer than its size"));
            }
            w.write_all(&end).await?;
        }
        for _ in 0..=MAX_TRAILERS {
            let line = self.line().await?;
            w.write_all(&line).await?;
            if line == b"\r\n" {
                return Ok(());
            }
        }
        Err(invalid("too many trailer lines"))
    }

    async fn copy_body<W: AsyncWrite + Unpin>(&mut self, w: &mut W, body: Body) -> io::Result<()> {
        match body {
            Body::None => Ok(()),
            Body::Length(n) => self.copy_exact(w, n).await,
            Body::Chunked => self.copy_chunked(w).await,
            Body::UntilClose => {
                w.write_all(&self.buf).await?;
                self.buf.clear();
                tokio::io::copy(&mut self.inner, w).await.map(drop)
            }
        }
    }
}

fn invalid(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why)
}

/// The origin connection kept between requests.
struct Origin {
    destination: Address,
    stream: Buffered<Metered<BoxIo>>,
    /// Says when a switch of server closes connections.
    closed: watch::Receiver<u64>,
    /// It carried a request already (a failure before any answer may be its idle close).
    reused: bool,
}

/// How one request and its response went.
enum Ended {
    /// The response is relayed; whether each side's connection carries another.
    Done { app_keeps: bool, origin_keeps: bool },
    /// `101 Switching Protocols`: a tunnel from now on.
    Upgraded,
}

/// Why an exchange failed.
struct Failed {
    why: ServeError,
    /// The app got nothing of the response yet (it may get a 502).
    before_answer: bool,
    /// Nothing came from the origin, and the request had no body: it may be sent again.
    retryable: bool,
}

/// Serves an app connection whose first request is `first`; `rest` are the bytes
/// the app sent after its head.
pub(super) async fn serve(
    proxy: &Proxy,
    client: TcpStream,
    first: ProxyRequest,
    rest: Vec<u8>,
) -> Result<(), ServeError> {
    let (read, mut write) = client.into_split();
    let mut app = Buffered {
        inner: read,
        buf: rest,
    };
    let mut origin: Option<Origin> = None;
    let mut request = first;
    loop {
        let mut retried = false;
        let ended = loop {
            if origin.as_ref().is_some_and(|o| {
                o.destination != request.destination || o.closed.has_changed().unwrap_or(true)
            }) {
                origin = None;
            }
            if origin.is_none() {
                match proxy.dial(&request.destination, request.head.len()).await {
                    Ok((stream, closed)) => {
                        origin = Some(Origin {
                            destination: request.destination.clone(),
                            stream: Buffered {
                                inner: stream,
                                buf: Vec::new(),
                            },
                            closed,
                            reused: false,
                        });
                    }
                    Err(e) => {
                        let _ = write
                            .write_all(bad_gateway(&e.to_string()).as_bytes())
                            .await;
                        return Err(e.into());
                    }
                }
            }
            let Some(o) = origin.as_mut() else {
                return Err(ServeError::NoOrigin);
            };
            let result = tokio::select! {
                r = exchange(&mut app, &mut write, &mut o.stream, &request) => r,
                _ = o.closed.changed() => return Err(ServeError::Switched),
            };
            match result {
                Ok(ended) => {
                    o.reused = true;
                    break ended;
                }
                Err(f) if f.retryable && o.reused && !retried => {
                    retried = true;
                    origin = None;
                }
                Err(f) => {
                    if f.before_answer {
                        let _ = write
                            .write_all(bad_gateway(&f.why.to_string()).as_bytes())
                            .await;
                    }
                    return Err(f.why);
                }
            }
        };
        match ended {
            Ended::Upgraded => {
                let Some(o) = origin.take() else {
                    return Ok(());
                };
                return tunnel(app, write, o).await;
            }
            Ended::Done {
                app_keeps,
                origin_keeps,
            } => {
                if !origin_keeps {
                    origin = None;
                }
                if !app_keeps {
                    let _ = write.shutdown().await;
                    return Ok(());
                }
            }
        }
        match next_request(&mut app, &mut write).await? {
            Next::Plain(r) => request = r,
            Next::Closed => return Ok(()),
            Next::Connect(destination) => {
                let (stream, closed) = match proxy.dial(&destination, 0).await {
                    Ok(d) => d,
                    Err(e) => {
                        let _ = write
                            .write_all(bad_gateway(&e.to_string()).as_bytes())
                            .await;
                        return Err(e.into());
                    }
                };
                write
                    .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    .await?;
                let o = Origin {
                    destination,
                    stream: Buffered {
                        inner: stream,
                        buf: Vec::new(),
                    },
                    closed,
                    reused: false,
                };
                return tunnel(app, write, o).await;
            }
        }
    }
}

/// The app's next request on a kept connection.
enum Next {
    Plain(ProxyRequest),
    Connect(Address),
    /// The app closed between requests.
    Closed,
}

async fn next_request(
    app: &mut Buffered<OwnedReadHalf>,
    write: &mut OwnedWriteHalf,
) -> Result<Next, ServeError> {
    if app.buf.is_empty() {
        match tokio::time::timeout(KEEP_ALIVE_IDLE, app.fill()).await {
            Err(_) | Ok(Ok(0)) => return Ok(Next::Closed),
            Ok(Err(e)) => return Err(e.into()),
            Ok(Ok(_)) => {}
        }
    }
    let head = async {
        loop {
            match parse_request(&app.buf) {
                Ok(Some(r)) => {
                    app.buf.drain(..r.head_len);
                    return Ok(Next::Plain(r));
                }
                Ok(None) => {}
                Err(e) => {
                    if let Ok(Some((destination, used))) = parse_connect(&app.buf) {
                        app.buf.drain(..used);
                        return Ok(Next::Connect(destination));
                    }
                    let _ = write.write_all(e.answer().as_bytes()).await;
                    return Err(e.into());
                }
            }
            if app.buf.len() >= MAX_REQUEST {
                let e = ConnectError::Malformed(format!(
                    "a request head longer than {MAX_REQUEST} bytes"
                ));
                let _ = write.write_all(e.answer().as_bytes()).await;
                return Err(e.into());
            }
            match app.fill().await {
                Ok(0) => return Err(ServeError::ClosedEarly),
                Ok(_) => {}
                Err(e) => return Err(e.into()),
            }
        }
    };
    tokio::time::timeout(REQUEST_TIMEOUT, head)
        .await
        .map_err(|_| ServeError::NextRequestTimeout)?
}

/// Sends `request` (head and body) to the origin and relays its response to the app,
/// both at once (an origin may answer `100 Continue` before the body, or answer early).
async fn exchange(
    app: &mut Buffered<OwnedReadHalf>,
    write: &mut OwnedWriteHalf,
    origin: &mut Buffered<Metered<BoxIo>>,
    request: &ProxyRequest,
) -> Result<Ended, Failed> {
    let (read, mut send_half) = tokio::io::split(&mut origin.inner);
    let mut response = Buffered {
        inner: read,
        buf: std::mem::take(&mut origin.buf),
    };
    let mut answered = false;
    let mut heard = false;
    let (result, sent) = {
        let send = async {
            send_half.write_all(&request.head).await?;
            app.copy_body(&mut send_half, request.body).await?;
            send_half.flush().await
        };
        let receive = async {
            loop {
                let head = loop {
                    match parse_response(
                        &response.buf,
                        &request.method,
                        request.upgrade,
                        request.keep_alive,
                    ) {
                        Ok(Some(head)) => break head,
                        Ok(None) => {}
                        Err(e) => return Err(ServeError::from(e)),
                    }
                    match response.fill().await {
                        Ok(0) => return Err(ServeError::OriginClosed),
                        Ok(_) => heard = true,
                        Err(e) => return Err(ServeError::OriginRead(e)),
                    }
                };
                response.buf.drain(..head.head_len);
                answered = true;
                write.write_all(&head.head).await?;
                let ProxyResponse {
                    status,
                    body,
                    app_keeps,
                    origin_keeps,
                    ..
                } = head;
                if status == 101 && request.upgrade {
                    return Ok(Ended::Upgraded);
                }
                if (100..200).contains(&status) {
                    continue;
                }
                response
                    .copy_body(write, body)
                    .await
                    .map_err(ServeError::ResponseBody)?;
                write.flush().await?;
                return Ok(Ended::Done {
                    app_keeps,
                    origin_keeps: origin_keeps && response.buf.is_empty(),
                });
            }
        };
        tokio::pin!(send, receive);
        let mut sent: Option<io::Result<()>> = None;
        let result = loop {
            tokio::select! {
                r = &mut send, if sent.is_none() => sent = Some(r),
                r = &mut receive => break r,
            }
        };
        (result, sent)
    };
    origin.buf = response.buf;
    let whole = matches!(sent, Some(Ok(())));
    match result {
        Ok(Ended::Done {
            app_keeps,
            origin_keeps,
        }) => Ok(Ended::Done {
            // An answer before the whole body: where the app's next request begins is
            // not known, and the origin may still wait for the rest.
            app_keeps: app_keeps && whole,
            origin_keeps: origin_keeps && whole,
        }),
        Ok(Ended::Upgraded) => Ok(Ended::Upgraded),
        Err(why) => Err(Failed {
            why,
            before_answer: !answered,
            retryable: !heard && !answered && request.body == Body::None,
        }),
    }
}

/// Both ways between the app and the origin until either closes (or a switch of
/// server closes connections).
async fn tunnel(
    app: Buffered<OwnedReadHalf>,
    mut write: OwnedWriteHalf,
    mut origin: Origin,
) -> Result<(), ServeError> {
    write.write_all(&origin.stream.buf).await?;
    origin.stream.inner.write_all(&app.buf).await?;
    let mut client = app.inner.reunite(write)?;
    tokio::select! {
        r = tokio::io::copy_bidirectional(&mut client, &mut origin.stream.inner) => {
            Ok(r.map(drop)?)
        }
        _ = origin.closed.changed() => Err(ServeError::Switched),
    }
}

/// The app's answer when its origin cannot be reached or answers nothing usable.
fn bad_gateway(why: &str) -> String {
    let body = format!("{why}\n");
    format!(
        "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

#[cfg(test)]
#[path = "http_relay_tests.rs"]
mod tests;
