//! The speed test: a download through one server, its speed in Mbit/s. The result
//! goes to Auto (`Event::SpeedTest`), where a server without a score but with a speed
//! result is queued before the unchecked ones, fastest first.
//!
//! The download is an HTTP `GET` of the speed-test URL (plain `http://`: the server's
//! own encryption carries it) through the server. The speed counts the body from its
//! first byte to its end, or to [`MAX_TIME`] or [`MAX_BYTES`], whichever comes first;
//! setting up the connection and waiting for the first byte are not part of it. A
//! test that gets less than [`MIN_BYTES`] of body is an error, not a speed.

use std::time::Duration;
use tokio::time::Instant;

use switchyard_transport::BoxIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::outbound::Outbound;
use crate::probe::ProbeUrl;

/// The default speed-test URL: 25 MB from Cloudflare's speed test.
pub const DEFAULT_URL: &str = "http://speed.cloudflare.com/__down?bytes=25000000";

/// The longest download.
pub const MAX_TIME: Duration = Duration::from_secs(10);

/// The most bytes read.
pub const MAX_BYTES: u64 = 100 << 20;

/// The least body for a result.
pub const MIN_BYTES: u64 = 64 << 10;

/// How long the connection and the response head may take.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// A speed test's result.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Speed {
    /// Megabits per second.
    pub mbps: f64,
    /// Body bytes counted.
    pub bytes: u64,
    /// The time they took.
    pub elapsed: Duration,
}

/// Why a speed test gave no result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpeedTestError {
    /// The server could not be reached, or the download failed.
    #[error("speed test through {server}: {reason}")]
    Failed {
        /// The server's name.
        server: String,
        /// What went wrong.
        reason: DownloadError,
    },
}

/// Why a speed test's download failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DownloadError {
    /// The server could not be used or reached.
    #[error(transparent)]
    Connect(#[from] crate::outbound::OutboundError),
    /// No response head within [`HEAD_TIMEOUT`].
    #[error("no answer within {HEAD_TIMEOUT:?}")]
    NoAnswer,
    /// Sending the request or reading the head failed.
    #[error(transparent)]
    Io(std::io::Error),
    /// The connection closed before the response head was whole.
    #[error("closed before the response head")]
    Closed,
    /// The response head is not a 2xx answer.
    #[error(transparent)]
    Head(#[from] HeadError),
    /// The connection closed right after the head.
    #[error("no body")]
    NoBody,
    /// No body within [`HEAD_TIMEOUT`] of the head.
    #[error("no body within {HEAD_TIMEOUT:?}")]
    NoBodyInTime,
    /// Reading the body failed.
    #[error("reading the body: {0}")]
    Body(#[source] std::io::Error),
    /// Too little body to measure.
    #[error("only {bytes} bytes of body (at least {MIN_BYTES} make a result)")]
    TooShort {
        /// The bytes of body that came.
        bytes: u64,
    },
}

/// Why a response head is not one a speed test takes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeadError {
    /// Another status than 2xx.
    #[error("HTTP {0}")]
    Status(u16),
    /// The head is longer than [`MAX_HEAD`].
    #[error("a response head over 16 KiB")]
    TooLong,
    /// The bytes are not HTTP.
    #[error("not an HTTP response: {0}")]
    Malformed(#[source] httparse::Error),
}

/// Downloads `url` through `server` and measures the speed.
pub async fn run(server: &Outbound, url: &ProbeUrl) -> Result<Speed, SpeedTestError> {
    let fail = |reason: DownloadError| SpeedTestError::Failed {
        server: server.entry().name.clone(),
        reason,
    };
    let (mut s, with_head) = tokio::time::timeout(HEAD_TIMEOUT, head(server, url))
        .await
        .map_err(|_| fail(DownloadError::NoAnswer))?
        .map_err(fail)?;
    // The clock starts at the body's first byte: the bytes that came with the head
    // came before it, and are not counted.
    let mut buf = vec![0u8; 64 << 10];
    let (mut body, started) = if with_head > 0 {
        (0, Instant::now())
    } else {
        match tokio::time::timeout(HEAD_TIMEOUT, s.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => (0, Instant::now()),
            Ok(Ok(_)) => return Err(fail(DownloadError::NoBody)),
            Ok(Err(e)) => return Err(fail(DownloadError::Body(e))),
            Err(_) => return Err(fail(DownloadError::NoBodyInTime)),
        }
    };
    let deadline = tokio::time::Instant::now() + MAX_TIME;
    while body < MAX_BYTES {
        match tokio::time::timeout_at(deadline, s.read(&mut buf)).await {
            Err(_) | Ok(Ok(0)) => break,
            Ok(Ok(n)) => body += n as u64,
            Ok(Err(e)) => return Err(fail(DownloadError::Body(e))),
        }
    }
    let elapsed = started.elapsed();
    if body < MIN_BYTES {
        return Err(fail(DownloadError::TooShort { bytes: body }));
    }
    Ok(Speed {
        mbps: body as f64 * 8.0 / elapsed.as_secs_f64().max(1e-3) / 1e6,
        bytes: body,
        elapsed,
    })
}

/// Connects, sends the request and reads the response head: the stream and how many
/// body bytes came with the head.
async fn head(server: &Outbound, url: &ProbeUrl) -> Result<(BoxIo, u64), DownloadError> {
    let mut s = server.connect(&url.destination).await?;
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: switchyard-client\r\nAccept-Encoding: identity\r\nConnection: close\r\n\r\n",
        url.path, url.host
    );
    s.write_all(request.as_bytes())
        .await
        .map_err(DownloadError::Io)?;
    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = s.read(&mut chunk).await.map_err(DownloadError::Io)?;
        if n == 0 {
            return Err(DownloadError::Closed);
        }
        head.extend_from_slice(&chunk[..n]);
        if let Some(len) = response_head(&head)? {
            return Ok((s, (head.len() - len) as u64));
        }
    }
}

/// The largest response head a speed test server may send.
pub const MAX_HEAD: usize = 16 << 10;

/// Reads the response head at the start of `bytes` (what a speed test server sent so
/// far): `Ok(None)` until it is whole, then its length; an error for anything but a
/// 2xx answer, a head over [`MAX_HEAD`], or bytes that are not HTTP.
pub fn response_head(bytes: &[u8]) -> Result<Option<usize>, HeadError> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut response = httparse::Response::new(&mut headers);
    match response.parse(bytes) {
        Ok(httparse::Status::Complete(len)) => {
            let code = response.code.unwrap_or(0);
            if (200..300).contains(&code) {
                Ok(Some(len))
            } else {
                Err(HeadError::Status(code))
            }
        }
        Ok(httparse::Status::Partial) if bytes.len() <= MAX_HEAD => Ok(None),
        Ok(httparse::Status::Partial) => Err(HeadError::TooLong),
        Err(e) => Err(HeadError::Malformed(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_head_is_read_whole_and_only_2xx_passes() {
        let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
        assert_eq!(response_head(ok), Ok(Some(ok.len() - 5)));
        assert_eq!(response_head(&ok[..20]), Ok(None));
        assert_eq!(
            response_head(b"HTTP/1.1 404 Not Found\r\n\r\n"),
            Err(HeadError::Status(404))
        );
        assert_eq!(HeadError::Status(404).to_string(), "HTTP 404");
        assert!(response_head(b"SSH-2.0-x\r\n").is_err());
        let long = [&b"HTTP/1.1 200 OK\r\nX: "[..], &[b'a'; MAX_HEAD]].concat();
        assert_eq!(response_head(&long), Err(HeadError::TooLong));
        assert_eq!(
            HeadError::TooLong.to_string(),
            "a response head over 16 KiB"
        );
    }
}
