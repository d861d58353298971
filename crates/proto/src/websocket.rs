//! The HTTP/1.1 WebSocket upgrade (RFC 6455 §4.2) as the VLESS and Trojan WebSocket
//! transports use it; the frames after it are the node's (tokio-tungstenite).
//!
//! [`parse_upgrade`] reads the request head (at most [`MAX_HEAD_LEN`] bytes, with
//! `httparse`) and checks it against an [`UpgradeConfig`]: method `GET`, the path,
//! the `Host` when one is configured (port and case ignored, as Xray's
//! `IsValidHTTPHost`), `Upgrade: websocket`, `Connection: upgrade`,
//! `Sec-WebSocket-Version: 13` and a `Sec-WebSocket-Key` of 16 bytes in base64.
//! [`UpgradeRequest::encode_response`] builds the `101 Switching Protocols` answer.
//!
//! Early data (the client's first bytes sent inside the upgrade, saving a round trip)
//! comes in the two forms of sing-box's `transport/v2raywebsocket/server.go`:
//! - [`EarlyData::Header`]: base64url in a header, `Sec-WebSocket-Protocol` for
//!   Xray (`transport/internet/websocket/hub.go`) and for sing-box configured with
//!   `early_data_header_name: "Sec-WebSocket-Protocol"`. The header is echoed in the
//!   response, as Xray does; sing-box's client offers it as its one subprotocol, so
//!   the echo is what it expects;
//! - [`EarlyData::PathSuffix`]: base64url appended to the configured path (sing-box
//!   with `max_early_data` and no header name).

use sha1::{Digest, Sha1};

use crate::base64;

/// The longest request head read; a longer one is [`WebSocketError::TooLarge`].
pub const MAX_HEAD_LEN: usize = 8 * 1024;

/// The most headers a request may have.
const MAX_HEADERS: usize = 64;

/// The GUID RFC 6455 appends to the key before hashing.
const ACCEPT_GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// Where the client may put early data.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum EarlyData {
    /// No early data: the path must match exactly.
    #[default]
    Off,
    /// In the named header (usually `Sec-WebSocket-Protocol`), base64url.
    Header(String),
    /// Appended to the path, base64url.
    PathSuffix,
    /// Either form: in the named header, or appended to the path (sing-box puts it
    /// there when its `early_data_header_name` is unset). A request for the path
    /// itself (any query aside) carries none in the path.
    HeaderOrPath(String),
}

/// What an inbound's WebSocket transport accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpgradeConfig {
    /// The path, with its leading `/` and without a query (a query string in the
    /// request is ignored).
    pub path: String,
    /// The host to require in `Host`, without port; `None` accepts any.
    pub host: Option<String>,
    /// Where early data may come.
    pub early_data: EarlyData,
}

/// An accepted upgrade request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpgradeRequest {
    /// The request target as sent (path and query).
    pub target: String,
    /// The `Host` header, when present.
    pub host: Option<String>,
    /// The `Sec-WebSocket-Key`, for the accept value.
    pub key: String,
    /// Decoded early data: the first bytes of the tunnelled stream.
    pub early_data: Option<Vec<u8>>,
    /// The `Sec-WebSocket-Protocol` value to echo in the response.
    pub protocol: Option<String>,
}

/// Why a request head is not an upgrade this inbound accepts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WebSocketError {
    /// The head is longer than 8 KiB or has more than 64 headers.
    #[error("HTTP request head is over 8 KiB or 64 headers")]
    TooLarge,
    /// The bytes are not an HTTP/1.x request.
    #[error("malformed HTTP request: {0}")]
    Malformed(String),
    /// The method is not GET.
    #[error("HTTP method {0} is not GET")]
    NotGet(String),
    /// The path is not the configured one.
    #[error("path {0:?} is not the configured WebSocket path")]
    WrongPath(String),
    /// The host is not the configured one (`None`: no Host header).
    #[error("host {0:?} is not the configured WebSocket host")]
    WrongHost(Option<String>),
    /// `Upgrade: websocket` or `Connection: upgrade` is missing.
    #[error("not a WebSocket upgrade (Upgrade: websocket and Connection: upgrade needed)")]
    NotUpgrade,
    /// `Sec-WebSocket-Version` is not 13 (`None`: missing).
    #[error("Sec-WebSocket-Version {0:?} is not 13")]
    UnsupportedVersion(Option<String>),
    /// `Sec-WebSocket-Key` is missing or not 16 bytes in base64.
    #[error("Sec-WebSocket-Key is missing or not 16 bytes in base64")]
    BadKey,
    /// The early data is not base64url.
    #[error("early data is not base64url")]
    BadEarlyData,
}

/// Parses an upgrade request head at the start of `buf`; the bytes after `consumed`
/// are the first WebSocket frames.
pub fn parse_upgrade(
    buf: &[u8],
    config: &UpgradeConfig,
) -> Result<Option<(UpgradeRequest, usize)>, WebSocketError> {
    let window = &buf[..buf.len().min(MAX_HEAD_LEN)];
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let used = match req.parse(window) {
        Ok(httparse::Status::Complete(used)) => used,
        Ok(httparse::Status::Partial) if buf.len() >= MAX_HEAD_LEN => {
            return Err(WebSocketError::TooLarge);
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(WebSocketError::TooLarge),
        Err(e) => return Err(WebSocketError::Malformed(e.to_string())),
    };
    let method = req.method.unwrap_or_default();
    if method != "GET" {
        return Err(WebSocketError::NotGet(method.to_owned()));
    }
    let target = req.path.unwrap_or_default();
    let header = |name: &str| {
        req.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).trim().to_owned())
    };
    let host = header("Host");
    if let Some(want) = &config.host
        && !host.as_deref().is_some_and(|h| same_host(h, want))
    {
        return Err(WebSocketError::WrongHost(host));
    }
    let mut early_data = None;
    let mut protocol = None;
    match &config.early_data {
        EarlyData::PathSuffix => {
            let suffix = target
                .strip_prefix(config.path.as_str())
                .ok_or_else(|| WebSocketError::WrongPath(target.to_owned()))?;
            if !suffix.is_empty() {
                early_data = Some(decode_early(suffix)?);
            }
        }
        EarlyData::Off | EarlyData::Header(_) => {
            let path = target.split_once('?').map_or(target, |(p, _)| p);
            if path != config.path {
                return Err(WebSocketError::WrongPath(target.to_owned()));
            }
        }
        EarlyData::HeaderOrPath(_) => {
            let path = target.split_once('?').map_or(target, |(p, _)| p);
            if path != config.path {
                let suffix = path
                    .strip_prefix(config.path.as_str())
                    .ok_or_else(|| WebSocketError::WrongPath(target.to_owned()))?;
                early_data = Some(
                    decode_early(suffix)
                        .map_err(|_| WebSocketError::WrongPath(target.to_owned()))?,
                );
            }
        }
    }
    if let EarlyData::Header(name) | EarlyData::HeaderOrPath(name) = &config.early_data
        && early_data.is_none()
        && let Some(value) = header(name).filter(|v| !v.is_empty())
    {
        early_data = Some(decode_early(&value)?);
        if name.eq_ignore_ascii_case("Sec-WebSocket-Protocol") {
            protocol = Some(value);
        }
    }
    if !header("Upgrade").is_some_and(|v| has_token(&v, "websocket"))
        || !header("Connection").is_some_and(|v| has_token(&v, "upgrade"))
    {
        return Err(WebSocketError::NotUpgrade);
    }
    let version = header("Sec-WebSocket-Version");
    if version.as_deref() != Some("13") {
        return Err(WebSocketError::UnsupportedVersion(version));
    }
    let key = header("Sec-WebSocket-Key").ok_or(WebSocketError::BadKey)?;
    if key.len() != 24 || base64::decode_lenient(key.as_bytes()).is_none_or(|k| k.len() != 16) {
        return Err(WebSocketError::BadKey);
    }
    let request = UpgradeRequest {
        target: target.to_owned(),
        host,
        key,
        early_data,
        protocol,
    };
    Ok(Some((request, used)))
}

fn decode_early(text: &str) -> Result<Vec<u8>, WebSocketError> {
    base64::decode_lenient(text.as_bytes()).ok_or(WebSocketError::BadEarlyData)
}

/// Whether a comma-separated header value holds `token`, case-insensitively.
pub(crate) fn has_token(value: &str, token: &str) -> bool {
    value
        .split(',')
        .any(|t| t.trim().eq_ignore_ascii_case(token))
}

/// Compares a `Host` header with a configured host, ignoring the port and case.
pub(crate) fn same_host(header: &str, want: &str) -> bool {
    let name = if let Some(rest) = header.strip_prefix('[') {
        rest.split_once(']').map_or(rest, |(ip, _)| ip)
    } else {
        header.rsplit_once(':').map_or(header, |(name, _)| name)
    };
    let want = want.trim_start_matches('[').trim_end_matches(']');
    name.eq_ignore_ascii_case(want)
}

/// The `Sec-WebSocket-Accept` value for a `Sec-WebSocket-Key`.
pub fn accept_key(key: &str) -> String {
    let mut hash = Sha1::new();
    hash.update(key.as_bytes());
    hash.update(ACCEPT_GUID.as_bytes());
    base64::encode_standard(&hash.finalize())
}

impl UpgradeRequest {
    /// Appends the `101 Switching Protocols` response, echoing the protocol header
    /// that carried early data.
    pub fn encode_response(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"HTTP/1.1 101 Switching Protocols\r\n");
        out.extend_from_slice(b"Upgrade: websocket\r\nConnection: Upgrade\r\n");
        out.extend_from_slice(b"Sec-WebSocket-Accept: ");
        out.extend_from_slice(accept_key(&self.key).as_bytes());
        out.extend_from_slice(b"\r\n");
        if let Some(protocol) = &self.protocol {
            out.extend_from_slice(b"Sec-WebSocket-Protocol: ");
            out.extend_from_slice(protocol.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
    }
}

#[cfg(test)]
#[path = "websocket_tests.rs"]
mod tests;
