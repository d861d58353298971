//! XHTTP (Xray's SplitHTTP successor): one proxied stream carried by ordinary HTTP
//! requests, so it crosses anything that carries HTTP (a CDN included) and never
//! asks for an upgrade. The names and defaults are Xray's (`transport/internet/
//! splithttp`, `xhttpSettings`), written in snake case.
//!
//! ```text
//! download  GET  {path}{session}[?x_padding=000…]           → 200, the stream's bytes down
//! stream-up POST {path}{session}                  (body: the stream's bytes up, streaming)
//! packet-up POST {path}{session}/{seq}            (body: one packet, ≤ sc_max_each_post_bytes)
//! stream-one POST {path}                          (body up, response down, one request)
//! ```
//!
//! `{path}` always ends with `/` ([`normalize_path`]); a session id is what the
//! client made up for the stream (Xray: a UUID); `seq` counts the packets from 0,
//! and the server puts them back in order. Requests carry `x_padding=` with a
//! length in `x_padding_bytes` in their query; responses an `X-Padding` header.
//! Xray 24.11.21 speaks `packet-up` and `stream-up` (and `auto`, which picks one);
//! `stream-one` is the later Xray's single-request mode.
//!
//! This module is pure: [`classify`] reads a request line into a [`Request`],
//! [`Range`] reads and writes Xray's `"from-to"` ranges; the HTTP itself is the
//! transport layer's.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The longest session id accepted: a UUID is 36 characters.
pub const MAX_SESSION_LEN: usize = 64;

/// The name of the padding parameter in a request's query.
pub const PADDING_PARAM: &str = "x_padding";

/// How a client sends a stream's upload (the download is always one long response).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// The client picks: `stream-up` over TLS with HTTP/2 or over REALITY,
    /// `packet-up` otherwise (Xray 24.11.21's rule). A server in `auto` takes every
    /// mode.
    #[default]
    Auto,
    /// The upload as numbered POSTs of at most `sc_max_each_post_bytes` each, at least
    /// `sc_min_posts_interval_ms` apart: gets through anything that carries HTTP.
    PacketUp,
    /// The upload as one long streaming POST; needs a path that does not buffer
    /// request bodies (HTTP/2, or a CDN that streams them).
    StreamUp,
    /// Upload and download in one POST and its response (HTTP/2).
    StreamOne,
}

impl Mode {
    /// Every mode, in declaration order.
    pub const ALL: [Self; 4] = [Self::Auto, Self::PacketUp, Self::StreamUp, Self::StreamOne];

    /// The name Xray and the configs use.
    pub fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::PacketUp => "packet-up",
            Self::StreamUp => "stream-up",
            Self::StreamOne => "stream-one",
        }
    }

    /// Reads a mode's name (an empty one is `auto`, as in Xray).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "" | "auto" => Some(Self::Auto),
            "packet-up" => Some(Self::PacketUp),
            "stream-up" => Some(Self::StreamUp),
            "stream-one" => Some(Self::StreamOne),
            _ => None,
        }
    }

    /// Whether a server in this mode takes a request of `kind`.
    pub fn accepts(self, kind: &Request<'_>) -> bool {
        matches!(
            (self, kind),
            (Self::Auto, _)
                | (Self::PacketUp | Self::StreamUp, Request::Download { .. })
                | (Self::PacketUp, Request::Packet { .. })
                | (Self::StreamUp, Request::StreamUp { .. })
                | (Self::StreamOne, Request::StreamOne)
        )
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An inclusive range of numbers, `from ≤ to`, from which a side picks a value per
/// use (Xray's `RandRangeConfig`). Written `"from-to"`, or one number when both are
/// equal; read from either form, or from a JSON number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Range {
    /// The least value.
    pub from: u32,
    /// The greatest value.
    pub to: u32,
}

/// Why a range does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RangeError {
    /// Not `n` or `from-to` with decimal numbers.
    #[error("{0:?} is not a number or a range \"from-to\"")]
    Syntax(String),
    /// `from` is greater than `to`.
    #[error("{from}-{to}: the first number is greater than the second")]
    Reversed {
        /// The first number.
        from: u32,
        /// The second number.
        to: u32,
    },
}

impl Range {
    /// `n..=n`.
    pub const fn fixed(n: u32) -> Self {
        Self { from: n, to: n }
    }

    /// `from..=to`, checked.
    pub fn new(from: u32, to: u32) -> Result<Self, RangeError> {
        if from > to {
            return Err(RangeError::Reversed { from, to });
        }
        Ok(Self { from, to })
    }

    /// Reads `"n"` or `"from-to"` (white space around the numbers ignored).
    pub fn parse(s: &str) -> Result<Self, RangeError> {
        let syntax = || RangeError::Syntax(s.chars().take(32).collect());
        let number = |t: &str| -> Result<u32, RangeError> {
            let t = t.trim();
            if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
                return Err(syntax());
            }
            t.parse().map_err(|_| syntax())
        };
        match s.split_once('-') {
            None => Ok(Self::fixed(number(s)?)),
            Some((a, b)) => Self::new(number(a)?, number(b)?),
        }
    }

    /// Whether `n` is in the range.
    pub fn contains(&self, n: u64) -> bool {
        u64::from(self.from) <= n && n <= u64::from(self.to)
    }

    /// The value picked with `random` (any `u32`, e.g. from a RNG): uniform over the
    /// range within rounding.
    pub fn pick(&self, random: u32) -> u32 {
        let span = u64::from(self.to - self.from) + 1;
        // `span` ≤ 2^32, so the offset fits: it is below `span`.
        self.from + (u64::from(random) % span) as u32
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.from == self.to {
            write!(f, "{}", self.from)
        } else {
            write!(f, "{}-{}", self.from, self.to)
        }
    }
}

impl Serialize for Range {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Range {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(u32),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Number(n) => Ok(Self::fixed(n)),
            Raw::Text(t) => Self::parse(&t).map_err(serde::de::Error::custom),
        }
    }
}

/// Xray's default `x_padding_bytes`: 100–1000.
pub const DEFAULT_PADDING: Range = Range {
    from: 100,
    to: 1000,
};
/// Xray's default `sc_max_each_post_bytes`: 1,000,000.
pub const DEFAULT_MAX_EACH_POST: Range = Range::fixed(1_000_000);
/// Xray's default `sc_min_posts_interval_ms`: 30.
pub const DEFAULT_MIN_POSTS_INTERVAL_MS: Range = Range::fixed(30);
/// How many packet-up POSTs a server holds out of order per session before it gives
/// the session up (Xray 24.11.21's `scMaxConcurrentPosts` default, 100).
pub const DEFAULT_MAX_BUFFERED_POSTS: u32 = 100;

/// An XHTTP transport's settings, the same on both sides (a server uses `path`,
/// `host`, `mode`, the padding range, `sc_max_each_post_bytes`,
/// `sc_max_buffered_posts` and `no_sse_header`; a client all of them).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// The path requests go under; normalized as [`normalize_path`] says.
    pub path: String,
    /// The `Host` sent (client) or required (server, when set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// How the upload travels.
    #[serde(default)]
    pub mode: Mode,
    /// The padding's length in every request's query and response's header.
    #[serde(default = "default_padding")]
    pub x_padding_bytes: Range,
    /// The largest packet-up POST body.
    #[serde(default = "default_max_each_post")]
    pub sc_max_each_post_bytes: Range,
    /// The least time between two packet-up POSTs of a stream (client).
    #[serde(default = "default_min_posts_interval")]
    pub sc_min_posts_interval_ms: Range,
    /// How many packet-up POSTs a server keeps out of order per session.
    #[serde(default = "default_max_buffered_posts")]
    pub sc_max_buffered_posts: u32,
    /// Leave out `Content-Type: application/grpc` on stream-up POSTs (client).
    #[serde(default, skip_serializing_if = "is_false")]
    pub no_grpc_header: bool,
    /// Leave out `Content-Type: text/event-stream` on downloads (server).
    #[serde(default, skip_serializing_if = "is_false")]
    pub no_sse_header: bool,
    /// How a client spreads streams over connections.
    #[serde(default)]
    pub xmux: Xmux,
}

impl Settings {
    /// Xray's defaults for `path`.
    pub fn new(path: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            host: None,
            mode: Mode::Auto,
            x_padding_bytes: DEFAULT_PADDING,
            sc_max_each_post_bytes: DEFAULT_MAX_EACH_POST,
            sc_min_posts_interval_ms: DEFAULT_MIN_POSTS_INTERVAL_MS,
            sc_max_buffered_posts: DEFAULT_MAX_BUFFERED_POSTS,
            no_grpc_header: false,
            no_sse_header: false,
            xmux: Xmux::default(),
        }
    }
}

/// XMUX: how many streams share a connection and for how long (a client's). When
/// all are unset a client uses Xray's defaults: 16–32 streams at once, a connection
/// reused 64–128 times. `max_connections` and `max_concurrency` exclude each other.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Xmux {
    /// Streams at once on one connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<Range>,
    /// Connections at most; streams spread over them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_connections: Option<Range>,
    /// Streams a connection carries in its life.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub c_max_reuse_times: Option<Range>,
    /// How long a connection takes new streams, in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub c_max_lifetime_ms: Option<Range>,
}

impl Xmux {
    /// Whether nothing is set (then Xray's defaults apply).
    pub fn is_unset(&self) -> bool {
        *self == Self::default()
    }
}

fn default_padding() -> Range {
    DEFAULT_PADDING
}
fn default_max_each_post() -> Range {
    DEFAULT_MAX_EACH_POST
}
fn default_min_posts_interval() -> Range {
    DEFAULT_MIN_POSTS_INTERVAL_MS
}
fn default_max_buffered_posts() -> u32 {
    DEFAULT_MAX_BUFFERED_POSTS
}
fn is_false(b: &bool) -> bool {
    !*b
}

/// What a request is, read from its method and path ([`classify`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request<'a> {
    /// `GET {path}{session}`: the session's download.
    Download {
        /// The session id.
        session: &'a str,
    },
    /// `POST {path}{session}`: the session's whole upload, streamed.
    StreamUp {
        /// The session id.
        session: &'a str,
    },
    /// `POST {path}{session}/{seq}`: one packet of the session's upload.
    Packet {
        /// The session id.
        session: &'a str,
        /// Its place in the upload, from 0.
        seq: u64,
    },
    /// `POST {path}`: upload and download in this one request.
    StreamOne,
}

/// Why a request is not one of ours (the server hands it to the fallback).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum XhttpError {
    /// The path is not under the inbound's path.
    #[error("the path is not under the configured path")]
    Path,
    /// A method other than GET and POST, or GET with no session.
    #[error("method {0} is not used by XHTTP here")]
    Method(String),
    /// A session id that is too long or has characters other than letters, digits
    /// and `-`.
    #[error("a session id must be 1 to {MAX_SESSION_LEN} letters, digits or '-'")]
    Session,
    /// A `seq` that is not a decimal number below 2^64.
    #[error("a packet's seq must be a decimal number")]
    Seq,
    /// More path segments than `{session}/{seq}`.
    #[error("too many path segments after the configured path")]
    Segments,
    /// The padding's length is outside `x_padding_bytes`.
    #[error("x_padding of {len} bytes is outside {range}")]
    Padding {
        /// The length sent.
        len: usize,
        /// The range configured.
        range: Range,
    },
}

/// `path` as Xray uses it: the part before any `?`, starting and ending with `/`.
/// The query part (a path may carry one) is [`path_query`]'s.
pub fn normalize_path(path: &str) -> String {
    let path = path.split_once('?').map_or(path, |(p, _)| p);
    let mut out = String::with_capacity(path.len() + 2);
    if !path.starts_with('/') {
        out.push('/');
    }
    out.push_str(path);
    if !out.ends_with('/') {
        out.push('/');
    }
    out
}

/// The query a configured `path` carries after `?` (sent with every request), if any.
pub fn path_query(path: &str) -> Option<&str> {
    path.split_once('?')
        .map(|(_, q)| q)
        .filter(|q| !q.is_empty())
}

/// Reads a request: `method`, and `target` (its path and query, as sent) under
/// `base` (a [`normalize_path`]ed path). The query is not looked at here
/// ([`padding_len`] reads it).
pub fn classify<'a>(base: &str, method: &str, target: &'a str) -> Result<Request<'a>, XhttpError> {
    let path = target.split_once('?').map_or(target, |(p, _)| p);
    let rest = path.strip_prefix(base).ok_or(XhttpError::Path)?;
    let mut segments = rest.split('/');
    let session = segments.next().unwrap_or("");
    let seq = segments.next();
    if segments.next().is_some() || seq == Some("") {
        return Err(XhttpError::Segments);
    }
    if session.is_empty() {
        // `{path}` itself: only stream-one.
        return match method {
            "POST" if seq.is_none() => Ok(Request::StreamOne),
            _ => Err(XhttpError::Method(method.chars().take(16).collect())),
        };
    }
    if session.len() > MAX_SESSION_LEN
        || !session
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
    {
        return Err(XhttpError::Session);
    }
    match (method, seq) {
        ("GET", None) => Ok(Request::Download { session }),
        ("POST", None) => Ok(Request::StreamUp { session }),
        ("POST", Some(seq)) => {
            if seq.len() > 20 || !seq.bytes().all(|b| b.is_ascii_digit()) {
                return Err(XhttpError::Seq);
            }
            let seq = seq.parse().map_err(|_| XhttpError::Seq)?;
            Ok(Request::Packet { session, seq })
        }
        _ => Err(XhttpError::Method(method.chars().take(16).collect())),
    }
}

/// The length of the `x_padding` parameter's value in `target`'s query (0 when it
/// has none). The value is counted as sent, not percent-decoded (Xray sends `0`s).
pub fn padding_len(target: &str) -> usize {
    let Some((_, query)) = target.split_once('?') else {
        return 0;
    };
    query
        .split('&')
        .find_map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            (name == PADDING_PARAM).then_some(value.len())
        })
        .unwrap_or(0)
}

/// Checks a request's padding against the configured range.
pub fn check_padding(target: &str, range: Range) -> Result<(), XhttpError> {
    let len = padding_len(target);
    if range.contains(len as u64) {
        Ok(())
    } else {
        Err(XhttpError::Padding { len, range })
    }
}

/// Whether a request's `Host` (or `:authority`) names the configured host, ignoring
/// the port and case.
pub fn host_matches(header: &str, want: &str) -> bool {
    crate::websocket::same_host(header, want)
}

/// The query parameter for `len` bytes of padding (`x_padding=000…`), empty for 0.
pub fn padding_param(len: u32) -> String {
    if len == 0 {
        return String::new();
    }
    let mut s = String::with_capacity(PADDING_PARAM.len() + 1 + len as usize);
    s.push_str(PADDING_PARAM);
    s.push('=');
    s.extend(std::iter::repeat_n('0', len as usize));
    s
}

#[cfg(test)]
#[path = "xhttp_tests.rs"]
mod tests;
