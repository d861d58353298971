//! HTTPUpgrade: the HTTP/1.1 upgrade of V2Ray's `httpupgrade` transport (Xray-core
//! `transport/internet/httpupgrade`, sing-box `transport/v2rayhttpupgrade`, mihomo's
//! `ws` with `v2ray-http-upgrade`). The client sends `GET <path>` with
//! `Connection: Upgrade` and `Upgrade: websocket`; the server answers
//! `101 Switching Protocols`; after that the connection carries the bytes as they
//! are, with no WebSocket framing.
//!
//! - [`parse_request`]: the server reads the request head (at most [`MAX_HEAD_LEN`]
//!   bytes, with `httparse`) and checks it against a [`Config`]: method `GET`, the
//!   path (any query ignored, as Xray and sing-box compare the URL's path), the `Host`
//!   when one is configured (port and case ignored), `Upgrade: websocket` and
//!   `Connection: upgrade`. The pinned Xray 24.11.21, sing-box 1.14.4 and mihomo
//!   1.19.2 send exactly `Host`, Go's `User-Agent`, `Connection` and `Upgrade`;
//!   `Sec-WebSocket-Key` and `-Version` (newer Xray sends them) are allowed, never
//!   required.
//! - [`Request::encode_response`]: the `101` answer, with `Sec-WebSocket-Accept` when
//!   the client sent a key (a client that checks it is satisfied).
//! - [`encode_request`] and [`parse_response`]: the client's side.
//!
//! Early data (Xray's `?ed=` in `Sec-WebSocket-Protocol`) is not supported: a
//! request carrying it is an ordinary request whose header is ignored.

use crate::websocket::{accept_key, has_token, same_host};

/// The longest request or response head read; a longer one is
/// [`HttpUpgradeError::TooLarge`].
pub const MAX_HEAD_LEN: usize = 8 * 1024;

/// The most headers a head may have.
const MAX_HEADERS: usize = 64;

/// What an inbound's HTTPUpgrade transport accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The path, with its leading `/` and without a query.
    pub path: String,
    /// The host to require in `Host`, without port; `None` accepts any.
    pub host: Option<String>,
}

/// An accepted upgrade request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The request target as sent (path and query).
    pub target: String,
    /// The `Host` header, when present.
    pub host: Option<String>,
    /// The `Sec-WebSocket-Key`, when the client sent one: answered with its accept
    /// value.
    pub key: Option<String>,
}

/// The server's answer to an upgrade, as the client reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The status code: 101 when upgraded.
    pub status: u16,
    /// The reason phrase.
    pub reason: String,
}

/// Why a head is not an upgrade this side accepts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HttpUpgradeError {
    /// The head is longer than 8 KiB or has more than 64 headers.
    #[error("HTTP head is over 8 KiB or 64 headers")]
    TooLarge,
    /// The bytes are not an HTTP/1.x request or response.
    #[error("malformed HTTP head: {0}")]
    Malformed(String),
    /// The method is not GET.
    #[error("HTTP method {0} is not GET")]
    NotGet(String),
    /// The path is not the configured one.
    #[error("path {0:?} is not the configured HTTPUpgrade path")]
    WrongPath(String),
    /// The host is not the configured one (`None`: no Host header).
    #[error("host {0:?} is not the configured HTTPUpgrade host")]
    WrongHost(Option<String>),
    /// `Upgrade: websocket` or `Connection: upgrade` is missing.
    #[error("not an HTTP upgrade (Upgrade: websocket and Connection: upgrade needed)")]
    NotUpgrade,
    /// The server answered something other than `101`.
    #[error("server answered {status} {reason}, not 101 Switching Protocols")]
    Status {
        /// Its status code.
        status: u16,
        /// Its reason phrase.
        reason: String,
    },
}

/// The value of the header `name` (case-insensitive), trimmed.
fn header(headers: &[httparse::Header<'_>], name: &str) -> Option<String> {
    headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case(name))
        .map(|h| String::from_utf8_lossy(h.value).trim().to_owned())
}

/// Whether `Upgrade: websocket` and `Connection: upgrade` are both there.
fn is_upgrade(headers: &[httparse::Header<'_>]) -> bool {
    header(headers, "Upgrade").is_some_and(|v| has_token(&v, "websocket"))
        && header(headers, "Connection").is_some_and(|v| has_token(&v, "upgrade"))
}

/// Maps httparse's outcome: the bytes used, `None` for a head not yet whole.
fn head_status(
    parsed: Result<httparse::Status<usize>, httparse::Error>,
    len: usize,
) -> Result<Option<usize>, HttpUpgradeError> {
    match parsed {
        Ok(httparse::Status::Complete(used)) => Ok(Some(used)),
        Ok(httparse::Status::Partial) if len >= MAX_HEAD_LEN => Err(HttpUpgradeError::TooLarge),
        Ok(httparse::Status::Partial) => Ok(None),
        Err(httparse::Error::TooManyHeaders) => Err(HttpUpgradeError::TooLarge),
        Err(e) => Err(HttpUpgradeError::Malformed(e.to_string())),
    }
}

/// Parses an upgrade request head at the start of `buf`, checked against `config`;
/// `Ok(None)` while the head is not whole. The bytes after the returned count are
/// the tunnelled stream's first bytes.
pub fn parse_request(
    buf: &[u8],
    config: &Config,
) -> Result<Option<(Request, usize)>, HttpUpgradeError> {
    let window = &buf[..buf.len().min(MAX_HEAD_LEN)];
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let parsed = req.parse(window);
    let Some(used) = head_status(parsed, buf.len())? else {
        return Ok(None);
    };
    let method = req.method.unwrap_or_default();
    if method != "GET" {
        return Err(HttpUpgradeError::NotGet(method.to_owned()));
    }
    let target = req.path.unwrap_or_default();
    let path = target.split_once('?').map_or(target, |(p, _)| p);
    if path != config.path {
        return Err(HttpUpgradeError::WrongPath(target.to_owned()));
    }
    let host = header(req.headers, "Host");
    if let Some(want) = &config.host
        && !host.as_deref().is_some_and(|h| same_host(h, want))
    {
        return Err(HttpUpgradeError::WrongHost(host));
    }
    if !is_upgrade(req.headers) {
        return Err(HttpUpgradeError::NotUpgrade);
    }
    let key = header(req.headers, "Sec-WebSocket-Key").filter(|k| !k.is_empty());
    let request = Request {
        target: target.to_owned(),
        host,
        key,
    };
    Ok(Some((request, used)))
}

impl Request {
    /// Appends the `101 Switching Protocols` answer (Xray's header set), with
    /// `Sec-WebSocket-Accept` when the client sent a key.
    pub fn encode_response(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"HTTP/1.1 101 Switching Protocols\r\n");
        out.extend_from_slice(b"Connection: Upgrade\r\nUpgrade: websocket\r\n");
        if let Some(key) = &self.key {
            out.extend_from_slice(b"Sec-WebSocket-Accept: ");
            out.extend_from_slice(accept_key(key).as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
    }
}

/// Appends the client's upgrade request for `path` (with its query, if any) on
/// `host`: `GET`, `Host`, `Connection: Upgrade`, `Upgrade: websocket`, as sing-box
/// writes it.
pub fn encode_request(path: &str, host: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(b"GET ");
    out.extend_from_slice(path.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    out.extend_from_slice(host.as_bytes());
    out.extend_from_slice(b"\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n");
}

/// Parses the server's answer at the start of `buf`; `Ok(None)` while the head is
/// not whole. A status other than 101 is [`HttpUpgradeError::Status`]; a 101 without
/// `Upgrade: websocket` and `Connection: upgrade` is
/// [`HttpUpgradeError::NotUpgrade`]. The bytes after the returned count are the
/// tunnelled stream's.
pub fn parse_response(buf: &[u8]) -> Result<Option<(Response, usize)>, HttpUpgradeError> {
    let window = &buf[..buf.len().min(MAX_HEAD_LEN)];
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut headers);
    let parsed = resp.parse(window);
    let Some(used) = head_status(parsed, buf.len())? else {
        return Ok(None);
    };
    let response = Response {
        status: resp.code.unwrap_or_default(),
        reason: resp.reason.unwrap_or_default().to_owned(),
    };
    if response.status != 101 {
        return Err(HttpUpgradeError::Status {
            status: response.status,
            reason: response.reason,
        });
    }
    if !is_upgrade(resp.headers) {
        return Err(HttpUpgradeError::NotUpgrade);
    }
    Ok(Some((response, used)))
}

#[cfg(test)]
#[path = "httpupgrade_tests.rs"]
mod tests;
