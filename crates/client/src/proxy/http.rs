//! Plain HTTP proxy requests (`GET http://host/path HTTP/1.1`, the absolute form
//! browsers and system proxies send for `http://` sites): reading the app's request
//! head and the origin's response head, and rewriting both for the other side. Pure:
//! the relay that uses them is [`super::http_relay`].
//!
//! What goes to the origin: the request line in origin form (`GET /path HTTP/1.1`),
//! `Host` from the URL, the app's other headers as they came, minus the hop-by-hop
//! ones (`Connection` and the headers it names, `Keep-Alive`, `TE`, `Upgrade` unless
//! the app asks for one) and every `Proxy-*` header (`Proxy-Authorization`,
//! `Proxy-Connection`). Nothing is added: no `Via`, no `X-Forwarded-For`. Bodies pass
//! unchanged; their framing (`Content-Length` or chunked) is read only to find where
//! each message ends, so a connection can carry the next request.

use switchyard_proto::Address;

/// Headers read in a request head at most.
pub const MAX_REQUEST_HEADERS: usize = 64;
/// Headers read in a response head at most.
pub const MAX_RESPONSE_HEADERS: usize = 128;
/// The most bytes of a response head (the origin's `Set-Cookie`s can be long).
pub const MAX_RESPONSE_HEAD: usize = 64 * 1024;

/// Why an app's plain HTTP request is refused (400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// Not an HTTP/1.x request head.
    #[error("not an HTTP request: {0}")]
    Malformed(String),
    /// The request target is not an absolute `http://` URL with a host.
    #[error("a proxy request needs an absolute http:// URL, not {0:?}")]
    Target(String),
    /// The body's framing cannot be read safely (`Content-Length` and
    /// `Transfer-Encoding` together, several lengths, a length that is not a number, a
    /// transfer coding other than chunked last).
    #[error("request body framing: {0}")]
    Framing(String),
}

impl RequestError {
    /// The HTTP answer the app gets.
    pub fn answer(&self) -> String {
        let body = format!("{self}\n");
        format!(
            "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    }
}

/// Where a message's body ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body {
    /// No body.
    None,
    /// Exactly this many bytes.
    Length(u64),
    /// Chunked: up to the last chunk and the trailers.
    Chunked,
    /// Up to the close of the connection (responses only).
    UntilClose,
}

/// An app's request, read and rewritten for the origin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProxyRequest {
    /// The origin: the URL's host and port (80 by default).
    pub destination: Address,
    /// The method, as sent.
    pub method: String,
    /// The head to send to the origin.
    pub head: Vec<u8>,
    /// The request's body.
    pub body: Body,
    /// The app wants the connection kept after the response (HTTP/1.1 without
    /// `Connection: close`, HTTP/1.0 with `Connection: keep-alive`).
    pub keep_alive: bool,
    /// The app asks to switch protocols (`Connection: upgrade` with `Upgrade`).
    pub upgrade: bool,
    /// The bytes of the input the head took.
    pub head_len: usize,
}

/// Reads a plain HTTP proxy request head at the start of `buf` (through `httparse`):
/// `None` while it is not whole.
pub fn parse_request(buf: &[u8]) -> Result<Option<ProxyRequest>, RequestError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_REQUEST_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let head_len = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(RequestError::Malformed(e.to_string())),
    };
    let method = req.method.unwrap_or_default().to_owned();
    let target = req.path.unwrap_or_default();
    let version = req.version.unwrap_or(1);
    let (authority, path) = split_url(target).ok_or_else(|| RequestError::Target(target.into()))?;
    let destination = destination(authority).ok_or_else(|| RequestError::Target(target.into()))?;
    let connection = tokens(req.headers, "connection");
    let upgrade = connection.iter().any(|t| t == "upgrade") && has(req.headers, "upgrade");
    let keep_alive = if version == 0 {
        connection.iter().any(|t| t == "keep-alive")
    } else {
        !connection.iter().any(|t| t == "close")
    };
    let body = request_body(req.headers)?;

    let mut head = Vec::with_capacity(head_len);
    head.extend_from_slice(method.as_bytes());
    head.push(b' ');
    head.extend_from_slice(path.as_bytes());
    head.extend_from_slice(if version == 0 {
        b" HTTP/1.0\r\n"
    } else {
        b" HTTP/1.1\r\n"
    });
    head.extend_from_slice(b"Host: ");
    head.extend_from_slice(authority.as_bytes());
    head.extend_from_slice(b"\r\n");
    for h in req.headers.iter() {
        let name = h.name.to_ascii_lowercase();
        if name == "host" || hop_by_hop(&name, &connection, upgrade) {
            continue;
        }
        push_header(&mut head, h.name, h.value);
    }
    if upgrade {
        head.extend_from_slice(b"Connection: upgrade\r\n");
    }
    head.extend_from_slice(b"\r\n");
    Ok(Some(ProxyRequest {
        destination,
        method,
        head,
        body,
        keep_alive,
        upgrade,
        head_len,
    }))
}

/// An origin's response head, read and rewritten for the app.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProxyResponse {
    /// The status code.
    pub status: u16,
    /// The head to send to the app, hop-by-hop headers dropped; with `Connection:
    /// close` when the app's connection ends after it.
    pub head: Vec<u8>,
    /// The response's body.
    pub body: Body,
    /// The origin keeps its connection for another request.
    pub origin_keeps: bool,
    /// The app's connection is kept for another request after this response.
    pub app_keeps: bool,
    /// The bytes of the input the head took.
    pub head_len: usize,
}

/// Why an origin's response cannot be relayed (the app gets 502).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResponseError {
    /// Not an HTTP/1.x response head.
    #[error("the origin's answer is not HTTP: {0}")]
    Malformed(String),
    /// A head longer than [`MAX_RESPONSE_HEAD`].
    #[error("the origin's response head is longer than {MAX_RESPONSE_HEAD} bytes")]
    TooLong,
    /// A `Content-Length` that is not one number.
    #[error("the origin's Content-Length is not one number")]
    Length,
}

/// Reads an origin's response head at the start of `buf`, to the request `method`
/// (a `HEAD` response has no body); `keep_app` says whether the app's connection is
/// to be kept (the head then says so, or says `Connection: close`). `None` while the
/// head is not whole.
pub fn parse_response(
    buf: &[u8],
    method: &str,
    upgrade: bool,
    keep_app: bool,
) -> Result<Option<ProxyResponse>, ResponseError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_RESPONSE_HEADERS];
    let mut res = httparse::Response::new(&mut headers);
    let head_len = match res.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() > MAX_RESPONSE_HEAD => {
            return Err(ResponseError::TooLong);
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(ResponseError::Malformed(e.to_string())),
    };
    if head_len > MAX_RESPONSE_HEAD {
        return Err(ResponseError::TooLong);
    }
    let status = res.code.unwrap_or_default();
    let version = res.version.unwrap_or(1);
    let connection = tokens(res.headers, "connection");
    let switching = status == 101 && upgrade;
    let body = if method.eq_ignore_ascii_case("HEAD")
        || (100..200).contains(&status)
        || status == 204
        || status == 304
    {
        Body::None
    } else if let Some(codings) = value(res.headers, "transfer-encoding") {
        if last_coding_is_chunked(&codings) {
            Body::Chunked
        } else {
            Body::UntilClose
        }
    } else {
        match content_length(res.headers) {
            Ok(Some(n)) => Body::Length(n),
            Ok(None) => Body::UntilClose,
            Err(()) => return Err(ResponseError::Length),
        }
    };
    let origin_keeps = body != Body::UntilClose
        && if version == 0 {
            connection.iter().any(|t| t == "keep-alive")
        } else {
            !connection.iter().any(|t| t == "close")
        };
    let app_keeps = keep_app && body != Body::UntilClose && !switching;

    let reason = res.reason.unwrap_or_default();
    let mut head = Vec::with_capacity(head_len);
    // Three digits, as it came (httparse reads any three, 099 included).
    head.extend_from_slice(format!("HTTP/1.1 {status:03} ").as_bytes());
    head.extend_from_slice(reason.as_bytes());
    head.extend_from_slice(b"\r\n");
    for h in res.headers.iter() {
        let name = h.name.to_ascii_lowercase();
        if hop_by_hop(&name, &connection, switching) {
            continue;
        }
        push_header(&mut head, h.name, h.value);
    }
    if switching {
        head.extend_from_slice(b"Connection: upgrade\r\n");
    } else if !app_keeps && status >= 200 {
        head.extend_from_slice(b"Connection: close\r\n");
    }
    head.extend_from_slice(b"\r\n");
    Ok(Some(ProxyResponse {
        status,
        head,
        body,
        origin_keeps,
        app_keeps,
        head_len,
    }))
}

/// `http://AUTHORITY/PATH?QUERY` as the authority and the origin-form target (`/` for
/// none; a fragment is dropped). `None` for anything else, `https://` included (apps
/// use CONNECT for it).
fn split_url(target: &str) -> Option<(&str, String)> {
    let scheme = target.get(..7)?;
    if !scheme.eq_ignore_ascii_case("http://") {
        return None;
    }
    let rest = &target[7..];
    let rest = rest.split('#').next().unwrap_or_default();
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    if authority.is_empty() || authority.contains('@') {
        return None;
    }
    let path = if path.starts_with('?') {
        format!("/{path}")
    } else if path.is_empty() {
        "/".to_owned()
    } else {
        path.to_owned()
    };
    Some((authority, path))
}

/// The URL's authority as an address: `host`, `host:port`, `[v6]` or `[v6]:port`.
fn destination(authority: &str) -> Option<Address> {
    let has_port = match authority.rfind(':') {
        Some(colon) => !authority[colon..].contains(']'),
        None => false,
    };
    let full;
    let with_port = if has_port {
        authority
    } else {
        full = format!("{authority}:80");
        &full
    };
    if authority.starts_with('[') != authority.contains(']') {
        return None;
    }
    super::authority(with_port)
}

/// Whether a header stays on its hop: the standard hop-by-hop ones, every `Proxy-*`,
/// and those the `Connection` header names (but never the framing headers, which
/// the relay needs and passes as they are). `Upgrade` passes when switching.
fn hop_by_hop(name: &str, connection: &[String], upgrading: bool) -> bool {
    if name == "content-length" || name == "transfer-encoding" {
        return false;
    }
    if name == "upgrade" {
        return !upgrading;
    }
    matches!(name, "connection" | "keep-alive" | "te")
        || name.starts_with("proxy-")
        || connection.iter().any(|t| t == name)
}

/// The comma-separated tokens of every header `name`, lower-cased.
fn tokens(headers: &[httparse::Header<'_>], name: &str) -> Vec<String> {
    headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case(name))
        .flat_map(|h| {
            String::from_utf8_lossy(h.value)
                .split(',')
                .map(|t| t.trim().to_ascii_lowercase())
                .collect::<Vec<_>>()
        })
        .filter(|t| !t.is_empty())
        .collect()
}

fn has(headers: &[httparse::Header<'_>], name: &str) -> bool {
    headers.iter().any(|h| h.name.eq_ignore_ascii_case(name))
}

/// Every value of the header `name`, joined with commas; `None` when absent.
fn value(headers: &[httparse::Header<'_>], name: &str) -> Option<String> {
    let values: Vec<String> = headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case(name))
        .map(|h| String::from_utf8_lossy(h.value).into_owned())
        .collect();
    (!values.is_empty()).then(|| values.join(","))
}

fn last_coding_is_chunked(codings: &str) -> bool {
    codings
        .rsplit(',')
        .map(str::trim)
        .find(|c| !c.is_empty())
        .is_some_and(|c| c.eq_ignore_ascii_case("chunked"))
}

/// The one `Content-Length` (several equal values count as one); `Err` for values
/// that are not digits or disagree.
fn content_length(headers: &[httparse::Header<'_>]) -> Result<Option<u64>, ()> {
    let mut length = None;
    for h in headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("content-length"))
    {
        for part in h.value.split(|&b| b == b',') {
            let text = std::str::from_utf8(part).map_err(|_| ())?.trim();
            if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
                return Err(());
            }
            let n: u64 = text.parse().map_err(|_| ())?;
            if length.is_some_and(|l| l != n) {
                return Err(());
            }
            length = Some(n);
        }
    }
    Ok(length)
}

fn request_body(headers: &[httparse::Header<'_>]) -> Result<Body, RequestError> {
    let length = content_length(headers)
        .map_err(|()| RequestError::Framing("Content-Length is not one number".into()))?;
    match (value(headers, "transfer-encoding"), length) {
        (Some(_), Some(_)) => Err(RequestError::Framing(
            "both Content-Length and Transfer-Encoding".into(),
        )),
        (Some(codings), None) if last_coding_is_chunked(&codings) => Ok(Body::Chunked),
        (Some(codings), None) => Err(RequestError::Framing(format!(
            "transfer coding {codings:?} does not end with chunked"
        ))),
        (None, Some(0) | None) => Ok(Body::None),
        (None, Some(n)) => Ok(Body::Length(n)),
    }
}

fn push_header(head: &mut Vec<u8>, name: &str, value: &[u8]) {
    head.extend_from_slice(name.as_bytes());
    head.extend_from_slice(b": ");
    head.extend_from_slice(value);
    head.extend_from_slice(b"\r\n");
}

#[cfg(test)]
#[path = "http_tests.rs"]
mod tests;
