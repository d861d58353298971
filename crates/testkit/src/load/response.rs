//! Where an HTTP/1.1 response ends, from the bytes read so far: the head parsed
//! with `httparse`, then the body framed by `Content-Length`, by chunked transfer
//! coding or by the connection's end. No I/O: the caller reads and asks again.

use anyhow::{Result, bail, ensure};

/// The longest response head accepted.
pub(crate) const MAX_HEAD: usize = 64 * 1024;

/// The most headers a response head may have.
const MAX_HEADERS: usize = 64;

/// How a response's body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// Exactly this many bytes (`Content-Length`, or 0 for 204, 304 and 1xx).
    Length(usize),
    /// Chunked transfer coding, up to the last chunk and the trailers.
    Chunked,
    /// Everything up to the end of the connection (neither header given).
    UntilClose,
}

/// A parsed response head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Head {
    /// The status code.
    pub(crate) status: u16,
    /// The head's length in bytes, blank line included: the body starts there.
    pub(crate) len: usize,
    /// How the body is delimited.
    pub(crate) framing: Framing,
    /// Whether the connection cannot carry another request after this response
    /// (`Connection: close`, an HTTP/1.0 response without keep-alive, or a body
    /// delimited by the connection's end).
    pub(crate) close: bool,
}

/// Parses the head at the start of `buf`: `None` while it is incomplete.
pub(crate) fn parse_head(buf: &[u8]) -> Result<Option<Head>> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    let len = match response.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => {
            ensure!(
                buf.len() <= MAX_HEAD,
                "a response head longer than {MAX_HEAD} bytes"
            );
            return Ok(None);
        }
        Err(e) => bail!("not an HTTP/1.x response head ({e})"),
    };
    let status = response.code.unwrap_or_default();
    let mut length = None;
    let mut chunked = false;
    let mut close = response.version == Some(0);
    for h in response.headers.iter() {
        let value = String::from_utf8_lossy(h.value);
        if h.name.eq_ignore_ascii_case("content-length") {
            let n: usize = value
                .trim()
                .parse()
                .map_err(|_| anyhow::anyhow!("Content-Length {value:?} is not a length"))?;
            ensure!(
                length.is_none_or(|l| l == n),
                "two different Content-Length headers"
            );
            length = Some(n);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked |= value
                .split(',')
                .any(|c| c.trim().eq_ignore_ascii_case("chunked"));
        } else if h.name.eq_ignore_ascii_case("connection") {
            for option in value.split(',').map(str::trim) {
                if option.eq_ignore_ascii_case("close") {
                    close = true;
                } else if option.eq_ignore_ascii_case("keep-alive") {
                    close = false;
                }
            }
        }
    }
    let framing = if (100..200).contains(&status) || status == 204 || status == 304 {
        Framing::Length(0)
    } else if chunked {
        Framing::Chunked
    } else if let Some(n) = length {
        Framing::Length(n)
    } else {
        close = true;
        Framing::UntilClose
    };
    Ok(Some(Head {
        status,
        len,
        framing,
        close,
    }))
}

/// Finds the end of a chunked body as its bytes arrive. It remembers where the
/// last complete chunk ended, so each call scans only what is new.
#[derive(Debug, Default)]
pub(crate) struct Chunked {
    /// Offset in the body of the next chunk-size line.
    next: usize,
}

impl Chunked {
    /// The length of the whole chunked body (last chunk and trailers included) when
    /// `body`, which starts at the body's first byte, holds all of it; `None` while
    /// more is needed.
    pub(crate) fn end(&mut self, body: &[u8]) -> Result<Option<usize>> {
        loop {
            let Some(line_end) = find_crlf(body, self.next) else {
                ensure!(
                    body.len() - self.next <= 1024,
                    "a chunk-size line longer than 1024 bytes"
                );
                return Ok(None);
            };
            let line = &body[self.next..line_end];
            let size_text = line.split(|&b| b == b';').next().unwrap_or_default();
            let size_text = String::from_utf8_lossy(size_text);
            let size = usize::from_str_radix(size_text.trim(), 16)
                .map_err(|_| anyhow::anyhow!("chunk size {size_text:?} is not hexadecimal"))?;
            let data = line_end + 2;
            if size == 0 {
                // Trailer lines up to an empty one.
                let mut at = data;
                loop {
                    let Some(end) = find_crlf(body, at) else {
                        return Ok(None);
                    };
                    if end == at {
                        return Ok(Some(end + 2));
                    }
                    at = end + 2;
                }
            }
            let after = data
                .checked_add(size)
                .and_then(|n| n.checked_add(2))
                .ok_or_else(|| anyhow::anyhow!("chunk size {size} is too large"))?;
            if body.len() < after {
                return Ok(None);
            }
            ensure!(
                &body[after - 2..after] == b"\r\n",
                "chunk data not followed by CRLF"
            );
            self.next = after;
        }
    }
}

fn find_crlf(buf: &[u8], from: usize) -> Option<usize> {
    buf.get(from..)?
        .windows(2)
        .position(|w| w == b"\r\n")
        .map(|p| from + p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_and_their_framing() {
        let h = parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
            .unwrap()
            .unwrap();
        assert_eq!(
            (h.status, h.len, h.framing, h.close),
            (200, 38, Framing::Length(5), false)
        );
        let h = parse_head(b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(
            (h.status, h.framing, h.close),
            (404, Framing::Chunked, true)
        );
        let h = parse_head(b"HTTP/1.0 200 OK\r\n\r\n").unwrap().unwrap();
        assert_eq!((h.framing, h.close), (Framing::UntilClose, true));
        let h = parse_head(b"HTTP/1.0 204 No Content\r\nConnection: keep-alive\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!((h.framing, h.close), (Framing::Length(0), false));
        assert_eq!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Le").unwrap(), None);
        assert!(parse_head(b"SSH-2.0-OpenSSH\r\n\r\n").is_err());
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n").is_err());
    }

    #[test]
    fn chunked_bodies_end_after_the_last_chunk_and_trailers() {
        let body = b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\nNEXT";
        let whole = body.len() - 4;
        // Complete at once, and byte by byte with the same scanner.
        assert_eq!(Chunked::default().end(body).unwrap(), Some(whole));
        let mut c = Chunked::default();
        for n in 0..whole {
            assert_eq!(c.end(&body[..n]).unwrap(), None, "at {n}");
        }
        assert_eq!(c.end(&body[..whole]).unwrap(), Some(whole));
        assert_eq!(Chunked::default().end(b"0\r\n\r\n").unwrap(), Some(5));
        assert!(Chunked::default().end(b"zz\r\n").is_err());
        assert!(Chunked::default().end(b"1\r\nab\r\n").is_err());
    }
}
