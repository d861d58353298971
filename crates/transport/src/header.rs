//! Reading a handshake's header (a WebSocket upgrade, a protocol's request) from a
//! peer that has not proved who it is: bounded in size and time, and every byte read
//! kept, so a refused peer can be handed to a fallback intact.

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::time::{Instant, timeout_at};

/// The outcome of reading a header.
#[derive(Debug)]
pub enum Header<T> {
    /// Parsed, with the bytes it used.
    Parsed((T, usize)),
    /// Not acceptable: the reason (for logs).
    Rejected(String),
    /// The peer stopped sending (closed its side, or the deadline passed) before a
    /// whole header came: what came so far is in the buffer.
    Incomplete,
}

/// Reads into `buf` until `parse` accepts or rejects it, the header grows past
/// `max` bytes, or `deadline` passes.
pub async fn read_header<T, E: std::fmt::Display>(
    stream: &mut (impl AsyncRead + Unpin),
    buf: &mut Vec<u8>,
    max: usize,
    deadline: Instant,
    parse: impl Fn(&[u8]) -> Result<Option<(T, usize)>, E>,
) -> Header<T> {
    loop {
        if !buf.is_empty() {
            match parse(buf) {
                Ok(Some(done)) => return Header::Parsed(done),
                Ok(None) => {}
                Err(e) => return Header::Rejected(e.to_string()),
            }
        }
        if buf.len() >= max {
            return Header::Rejected(format!("header longer than {max} bytes"));
        }
        // Read into the buffer's spare room: no array lives in the connection's future.
        let want = 2048.min(max - buf.len());
        buf.reserve(want);
        let mut limited = (&mut *stream).take(want as u64);
        match timeout_at(deadline, limited.read_buf(buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => return Header::Incomplete,
            Ok(Ok(_)) => {}
        }
    }
}

/// A request head read whole: the parsed request, the stream it came on, and the
/// bytes the peer sent behind the head (to be read first).
#[derive(Debug)]
pub struct Upgrade<S, R> {
    /// The parsed request.
    pub request: R,
    /// The stream it came on.
    pub stream: S,
    /// Bytes read past the request's head.
    pub rest: Vec<u8>,
    /// The request's `X-Forwarded-For` lines, in order ([`forwarded_for`]): what a
    /// trusted proxy says of the user's address
    /// ([`switchyard_proto::forwarded::client_ip`]).
    pub forwarded_for: Vec<String>,
}

/// The most `X-Forwarded-For` lines kept of one request.
const MAX_FORWARDED_LINES: usize = 16;

/// The `X-Forwarded-For` lines of an HTTP/1.x request head `head` (whole), in order:
/// at most 16, a line over [`switchyard_proto::forwarded::MAX_VALUE_LEN`] left out
/// (the rule ignores it anyway). None when `head` is not a request head.
pub fn forwarded_for(head: &[u8]) -> Vec<String> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut request = httparse::Request::new(&mut headers);
    if request.parse(head).is_err() {
        return Vec::new();
    }
    forwarded_lines(
        request
            .headers
            .iter()
            .filter(|h| {
                h.name
                    .eq_ignore_ascii_case(switchyard_proto::forwarded::HEADER)
            })
            .map(|h| h.value),
    )
}

/// [`forwarded_for`] of an HTTP/2 or hyper request's headers.
pub fn forwarded_for_map(headers: &http::HeaderMap) -> Vec<String> {
    forwarded_lines(
        headers
            .get_all(switchyard_proto::forwarded::HEADER)
            .iter()
            .map(|v| v.as_bytes()),
    )
}

fn forwarded_lines<'a>(values: impl Iterator<Item = &'a [u8]>) -> Vec<String> {
    values
        .filter(|v| v.len() <= switchyard_proto::forwarded::MAX_VALUE_LEN)
        .take(MAX_FORWARDED_LINES)
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .collect()
}

/// A request that is not one for this server (another path, not HTTP, cut short):
/// the stream and every byte read from it, for a fallback.
#[derive(Debug)]
pub struct Refused<S> {
    /// The stream.
    pub stream: S,
    /// Every byte read from it.
    pub read: Vec<u8>,
    /// Why, when the request was whole but wrong (for logs); `None` when the peer
    /// stopped sending or the deadline passed first.
    pub why: Option<String>,
}

/// Reads a request head from `stream` with [`read_header`] and hands back the stream
/// either way: with the request, or refused with every byte read.
pub async fn read_request<S, R, E>(
    mut stream: S,
    max: usize,
    deadline: Instant,
    parse: impl Fn(&[u8]) -> Result<Option<(R, usize)>, E>,
) -> Result<Upgrade<S, R>, Refused<S>>
where
    S: AsyncRead + Unpin,
    E: std::fmt::Display,
{
    let mut buf = Vec::with_capacity(1024);
    match read_header(&mut stream, &mut buf, max, deadline, parse).await {
        Header::Parsed((request, used)) => {
            let rest = buf.split_off(used);
            let forwarded_for = forwarded_for(&buf);
            Ok(Upgrade {
                request,
                stream,
                rest,
                forwarded_for,
            })
        }
        Header::Rejected(why) => Err(Refused {
            stream,
            read: buf,
            why: Some(why),
        }),
        Header::Incomplete => Err(Refused {
            stream,
            read: buf,
            why: None,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::io::AsyncWriteExt;

    fn line(b: &[u8]) -> Result<Option<(String, usize)>, &'static str> {
        if b.starts_with(b"X") {
            return Err("starts with X");
        }
        Ok(b.iter()
            .position(|&c| c == b'\n')
            .map(|at| (String::from_utf8_lossy(&b[..at]).into_owned(), at + 1)))
    }

    #[tokio::test]
    async fn a_header_split_over_reads_is_parsed_and_the_rest_kept() {
        let (mut a, mut b) = tokio::io::duplex(64);
        let writer = tokio::spawn(async move {
            b.write_all(b"hel").await.unwrap();
            tokio::time::sleep(Duration::from_millis(10)).await;
            b.write_all(b"lo\nrest").await.unwrap();
            b
        });
        let mut buf = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(5);
        let got = read_header(&mut a, &mut buf, 1024, deadline, line).await;
        let _b = writer.await.unwrap();
        let Header::Parsed((text, used)) = got else {
            panic!("{got:?}")
        };
        assert_eq!((text.as_str(), used), ("hello", 6));
        assert!(buf.starts_with(b"hello\n"), "every byte read is kept");
    }

    #[tokio::test]
    async fn too_long_rejected_and_silence_incomplete() {
        let (mut a, mut b) = tokio::io::duplex(4096);
        b.write_all(&[b'a'; 100]).await.unwrap();
        let mut buf = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(5);
        let got = read_header(&mut a, &mut buf, 64, deadline, line).await;
        assert!(
            matches!(&got, Header::Rejected(r) if r == "header longer than 64 bytes"),
            "{got:?}"
        );
        let (mut a, mut b) = tokio::io::duplex(64);
        b.write_all(b"no end").await.unwrap();
        drop(b);
        let mut buf = Vec::new();
        let got = read_header(&mut a, &mut buf, 64, deadline, line).await;
        assert!(matches!(got, Header::Incomplete), "{got:?}");
        assert_eq!(buf, b"no end");
        let (mut a, mut b) = tokio::io::duplex(64);
        b.write_all(b"X").await.unwrap();
        let mut buf = Vec::new();
        let got = read_header(&mut a, &mut buf, 64, deadline, line).await;
        assert!(
            matches!(&got, Header::Rejected(r) if r == "starts with X"),
            "{got:?}"
        );
    }

    #[tokio::test]
    async fn a_request_keeps_its_forwarded_for_lines_in_order() {
        let (mut a, mut b) = tokio::io::duplex(16 * 1024);
        let long = format!("X-Forwarded-For: {}\r\n", "1".repeat(5000));
        let head = format!(
            "GET / HTTP/1.1\r\nHost: h\r\nx-forwarded-for: 198.51.100.7, 10.0.0.1\r\n{long}X-FORWARDED-FOR:  127.0.0.1\r\n\r\nrest"
        );
        b.write_all(head.as_bytes()).await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let parse = |b: &[u8]| -> Result<Option<((), usize)>, &'static str> {
            Ok(b.windows(4)
                .position(|w| w == b"\r\n\r\n")
                .map(|at| ((), at + 4)))
        };
        let Ok(up) = read_request(&mut a, 16 * 1024, deadline, parse).await else {
            panic!("refused")
        };
        assert_eq!(up.forwarded_for, ["198.51.100.7, 10.0.0.1", "127.0.0.1"]);
        assert_eq!(up.rest, b"rest");
        assert!(forwarded_for(b"not http\r\n\r\n").is_empty());
        let mut map = http::HeaderMap::new();
        map.append("x-forwarded-for", "1.2.3.4".parse().unwrap());
        map.append("X-Forwarded-For", "5.6.7.8".parse().unwrap());
        assert_eq!(forwarded_for_map(&map), ["1.2.3.4", "5.6.7.8"]);
    }

    #[tokio::test(start_paused = true)]
    async fn the_deadline_ends_a_slow_header() {
        let (mut a, _b) = tokio::io::duplex(64);
        let mut buf = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(3);
        let got = read_header(&mut a, &mut buf, 64, deadline, line).await;
        assert!(matches!(got, Header::Incomplete), "{got:?}");
        assert_eq!(Instant::now(), deadline);
    }
}
