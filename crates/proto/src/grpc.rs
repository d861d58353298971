//! gRPC "gun": the stream framing of V2Ray's `grpc` transport (Xray-core
//! `transport/internet/grpc/encoding`, sing-box `transport/v2raygrpclite`, mihomo's
//! `gun`). Each proxied stream is one HTTP/2 request, `POST /{service}/Tun` (or
//! `/{service}/TunMulti`, Xray's multi mode); both ways its body is gRPC messages:
//!
//! ```text
//! gRPC message: flag (1 byte, 0: not compressed) ─ length (4 bytes, big-endian) ─ protobuf
//! Hunk:         0x0A ─ varint n ─ n bytes              (message Hunk { bytes data = 1; })
//! MultiHunk:    (0x0A ─ varint n ─ n bytes) repeated   (message MultiHunk { repeated bytes data = 1; })
//! ```
//!
//! A Hunk is a MultiHunk with one element, so one [`Decoder`] reads both and
//! [`encode_header`] writes what both read.
//!
//! - [`Decoder`]: streaming, sans-io, bounded: fed whatever bytes came, it gives back
//!   the payload slices among them, never buffering a message (its state is a few
//!   counters). A message longer than [`MAX_MESSAGE_LEN`], a compressed one, a
//!   malformed varint or a field running past its message is a typed [`GrpcError`];
//!   fields other than `data` are skipped.
//! - [`encode_header`]: the bytes to put in front of a payload of `n` bytes.
//! - [`match_path`]: which [`Mode`] a request path asks for, for a service name.

/// The longest gRPC message accepted (16 MiB); a longer one is
/// [`GrpcError::TooLarge`]. Xray, sing-box and mihomo send at most a few tens of KiB.
pub const MAX_MESSAGE_LEN: u32 = 16 * 1024 * 1024;

/// The longest payload [`encode_header`] frames in one message (the rest goes in the
/// next one): 1 MiB.
pub const MAX_PAYLOAD_LEN: usize = 1024 * 1024;

/// The longest header [`encode_header`] writes: 5 bytes of gRPC, the tag and a
/// varint of at most 5 bytes.
pub const MAX_HEADER_LEN: usize = 5 + 1 + 5;

/// Which request a stream is: plain gun or Xray's multi mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `/{service}/Tun`: one `Hunk` per message.
    Gun,
    /// `/{service}/TunMulti`: `MultiHunk`s.
    Multi,
}

impl Mode {
    /// The method name in the path (`Tun`, `TunMulti`).
    pub fn method(self) -> &'static str {
        match self {
            Self::Gun => "Tun",
            Self::Multi => "TunMulti",
        }
    }

    /// The request path for `service_name`.
    pub fn path(self, service_name: &str) -> String {
        format!("/{service_name}/{}", self.method())
    }
}

/// The mode a request for `path` asks of the service `service_name`, or `None` when
/// the path is another one (a query is never part of a gRPC path).
pub fn match_path(path: &str, service_name: &str) -> Option<Mode> {
    let rest = path.strip_prefix('/')?.strip_prefix(service_name)?;
    match rest {
        "/Tun" => Some(Mode::Gun),
        "/TunMulti" => Some(Mode::Multi),
        _ => None,
    }
}

/// Why gRPC bytes were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GrpcError {
    /// A message flagged compressed (no compression was negotiated).
    #[error("gRPC message flagged compressed ({0})")]
    Compressed(u8),
    /// A message longer than [`MAX_MESSAGE_LEN`].
    #[error("gRPC message of {0} bytes, more than {MAX_MESSAGE_LEN}")]
    TooLarge(u32),
    /// A varint longer than 10 bytes.
    #[error("malformed protobuf varint")]
    Varint,
    /// A protobuf field runs past the end of its message.
    #[error("protobuf field runs past its message")]
    Overrun,
    /// A protobuf wire type that does not exist (or a group).
    #[error("unsupported protobuf wire type {0}")]
    WireType(u8),
}

/// A varint being read, a byte at a time.
#[derive(Debug, Clone, Copy, Default)]
struct Varint {
    value: u64,
    shift: u32,
}

impl Varint {
    /// Takes one byte; `Some(value)` when it was the last.
    fn push(&mut self, b: u8) -> Result<Option<u64>, GrpcError> {
        if self.shift >= 64 {
            return Err(GrpcError::Varint);
        }
        self.value |= u64::from(b & 0x7f) << self.shift;
        self.shift += 7;
        if b & 0x80 == 0 {
            Ok(Some(self.value))
        } else {
            Ok(None)
        }
    }
}

/// Where the decoder is.
#[derive(Debug, Clone, Copy)]
enum State {
    /// The 5-byte gRPC header, `have` bytes of it read.
    Header { bytes: [u8; 5], have: u8 },
    /// A field's key.
    Key(Varint),
    /// A length-delimited field's length; `data` when it is field 1.
    Len { data: bool, varint: Varint },
    /// The payload bytes of a `data` field, `left` to go.
    Data { left: u64 },
    /// Bytes of a field skipped, `left` to go.
    Skip { left: u64 },
    /// A varint field skipped.
    SkipVarint(Varint),
}

/// The streaming reader of gun and multi messages; see the [module docs](self).
#[derive(Debug, Clone)]
pub struct Decoder {
    state: State,
    /// Bytes left in the current gRPC message (after its header).
    message_left: u64,
}

impl Default for Decoder {
    fn default() -> Self {
        Self::new()
    }
}

impl Decoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self {
            state: State::Header {
                bytes: [0; 5],
                have: 0,
            },
            message_left: 0,
        }
    }

    /// Whether the decoder is between messages: a stream that ends here ended
    /// cleanly.
    pub fn at_boundary(&self) -> bool {
        matches!(self.state, State::Header { have: 0, .. })
    }

    /// Reads from the start of `input`: returns how many bytes it took and the
    /// payload among them (a sub-slice of `input[..taken]`, maybe empty). Call again
    /// with `&input[taken..]` until everything is taken; `taken` is 0 only for an
    /// empty `input`.
    pub fn feed<'a>(&mut self, input: &'a [u8]) -> Result<(usize, &'a [u8]), GrpcError> {
        let mut at = 0;
        while at < input.len() {
            match &mut self.state {
                State::Header { bytes, have } => {
                    bytes[usize::from(*have)] = input[at];
                    at += 1;
                    *have += 1;
                    if *have == 5 {
                        let (flag, len) = (
                            bytes[0],
                            u32::from_be_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]),
                        );
                        if flag != 0 {
                            return Err(GrpcError::Compressed(flag));
                        }
                        if len > MAX_MESSAGE_LEN {
                            return Err(GrpcError::TooLarge(len));
                        }
                        self.message_left = u64::from(len);
                        self.next_field();
                    }
                }
                State::Key(varint) => {
                    let b = input[at];
                    at += 1;
                    self.message_left -= 1;
                    if let Some(key) = varint.push(b)? {
                        let wire = (key & 7) as u8;
                        let field = key >> 3;
                        self.state = match wire {
                            0 => State::SkipVarint(Varint::default()),
                            1 => State::Skip { left: 8 },
                            2 => State::Len {
                                data: field == 1,
                                varint: Varint::default(),
                            },
                            5 => State::Skip { left: 4 },
                            other => return Err(GrpcError::WireType(other)),
                        };
                        if let State::Skip { left } = self.state {
                            if left > self.message_left {
                                return Err(GrpcError::Overrun);
                            }
                        } else if self.message_left == 0 {
                            return Err(GrpcError::Overrun);
                        }
                    } else if self.message_left == 0 {
                        return Err(GrpcError::Overrun);
                    }
                }
                State::Len { data, varint } => {
                    let b = input[at];
                    at += 1;
                    self.message_left -= 1;
                    if let Some(len) = varint.push(b)? {
                        if len > self.message_left {
                            return Err(GrpcError::Overrun);
                        }
                        self.state = if *data {
                            State::Data { left: len }
                        } else {
                            State::Skip { left: len }
                        };
                        if len == 0 {
                            self.next_field();
                        }
                    } else if self.message_left == 0 {
                        return Err(GrpcError::Overrun);
                    }
                }
                State::Data { left } => {
                    let n = usize::try_from(*left)
                        .unwrap_or(usize::MAX)
                        .min(input.len() - at);
                    let start = at;
                    at += n;
                    *left -= n as u64;
                    self.message_left -= n as u64;
                    if *left == 0 {
                        self.next_field();
                    }
                    return Ok((at, &input[start..at]));
                }
                State::Skip { left } => {
                    let n = usize::try_from(*left)
                        .unwrap_or(usize::MAX)
                        .min(input.len() - at);
                    at += n;
                    *left -= n as u64;
                    self.message_left -= n as u64;
                    if *left == 0 {
                        self.next_field();
                    }
                }
                State::SkipVarint(varint) => {
                    let b = input[at];
                    at += 1;
                    self.message_left -= 1;
                    if varint.push(b)?.is_some() {
                        self.next_field();
                    } else if self.message_left == 0 {
                        return Err(GrpcError::Overrun);
                    }
                }
            }
        }
        Ok((at, &input[at..at]))
    }

    /// After a field (or a message's header): the next field's key, or the next
    /// message when this one is done.
    fn next_field(&mut self) {
        self.state = if self.message_left == 0 {
            State::Header {
                bytes: [0; 5],
                have: 0,
            }
        } else {
            State::Key(Varint::default())
        };
    }
}

/// Appends the header of a message carrying `n` payload bytes (a `Hunk`, which is
/// also a one-element `MultiHunk`): what goes before the payload itself. `n` must
/// be at most [`MAX_PAYLOAD_LEN`] (callers split longer writes); the header is at
/// most [`MAX_HEADER_LEN`] bytes.
pub fn encode_header(n: usize, out: &mut Vec<u8>) {
    let (header, len) = header(n);
    out.extend_from_slice(&header[..len]);
}

/// The header [`encode_header`] appends, in the first `.1` bytes of `.0`: for a
/// writer that puts it in room left in front of a payload it already holds.
pub fn header(n: usize) -> ([u8; MAX_HEADER_LEN], usize) {
    let n = n.min(MAX_PAYLOAD_LEN);
    let mut out = [0u8; MAX_HEADER_LEN];
    // The flag byte, four of length and the field's tag come before the varint.
    let mut at = 6;
    let mut v = n;
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out[at] = b;
            at += 1;
            break;
        }
        out[at] = b | 0x80;
        at += 1;
    }
    // The tag, the varint and the payload; 1 + 5 + 1 MiB fits in u32 by far.
    let message = (at - 5 + n) as u32;
    out[1..5].copy_from_slice(&message.to_be_bytes());
    out[5] = 0x0A;
    (out, at)
}

#[cfg(test)]
#[path = "grpc_tests.rs"]
mod tests;
