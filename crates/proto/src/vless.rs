//! VLESS: the request header, the response header and VLESS UDP framing.
//!
//! Followed: Xray's `proxy/vless/encoding/encoding.go` and `addons.go`, sing-vmess's
//! `vless/protocol.go` (`ReadRequest`, `WriteRequest`) and `vless/service.go`.
//!
//! Request header:
//! ```text
//! version 0 | UUID (16) | addons length (1) | addons (protobuf) | command (1) | [destination]
//! ```
//! The addons are the protobuf message `Addons { string Flow = 1; bytes Seed = 2; }`;
//! clients send length 0 when they use no flow. Command 1 is TCP and 2 is UDP, both
//! followed by the destination in the VLESS address form (port first); command 3 is
//! Mux.Cool (see [`crate::xudp`]) and carries no destination (Xray names it
//! `v1.mux.cool`). The flows are none and `xtls-rprx-vision` ([`Flow`], see
//! [`crate::vision`]); any other is [`VlessError::UnsupportedFlow`].
//!
//! Response header: `[0, 0]` (version, no addons), written before the first bytes
//! back to the client ([`RESPONSE`]).
//!
//! UDP (command 2): each packet is a 2-byte big-endian length and the payload, in
//! both directions ([`parse_udp_packet`], [`encode_udp_packet`]).

use crate::PayloadTooLarge;
use crate::address::{Address, AddressError};

/// The only VLESS version.
pub const VERSION: u8 = 0;

/// The response header: version 0, no addons.
pub const RESPONSE: [u8; 2] = [VERSION, 0];

/// The largest VLESS UDP payload (its length field is 16 bits).
pub const MAX_UDP_PAYLOAD: usize = u16::MAX as usize;

/// A VLESS user id.
pub type Uuid = [u8; 16];

/// Parses a UUID in its 36-character form (or 32 hex digits).
pub fn parse_uuid(text: &str) -> Option<Uuid> {
    let hex: Vec<u8> = text.bytes().filter(|&b| b != b'-').collect();
    let dashes_ok = match text.len() {
        36 => [8, 13, 18, 23].iter().all(|&i| text.as_bytes()[i] == b'-') && hex.len() == 32,
        32 => hex.len() == 32,
        _ => false,
    };
    if !dashes_ok {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, pair) in hex.chunks(2).enumerate() {
        let s = std::str::from_utf8(pair).ok()?;
        out[i] = u8::from_str_radix(s, 16).ok()?;
    }
    Some(out)
}

/// What the client asks the node to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Command 1: a TCP stream to the destination.
    Tcp(Address),
    /// Command 2: UDP packets to the destination, framed with a length each.
    Udp(Address),
    /// Command 3: a Mux.Cool session (XUDP for UDP); frames follow the header.
    Mux,
}

impl Command {
    /// The command byte on the wire.
    pub fn code(&self) -> u8 {
        match self {
            Self::Tcp(_) => 1,
            Self::Udp(_) => 2,
            Self::Mux => 3,
        }
    }
}

/// The flow a VLESS client asks for in its request's addons.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Flow {
    /// No flow: the payload follows the header as it is.
    #[default]
    None,
    /// `xtls-rprx-vision` ([`crate::vision`]).
    Vision,
}

/// A VLESS request header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The user id, to look up among the inbound's users.
    pub uuid: Uuid,
    /// The flow.
    pub flow: Flow,
    /// The command and its destination.
    pub command: Command,
}

/// Why bytes are not a VLESS request this node accepts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VlessError {
    /// The first byte is not version 0.
    #[error("VLESS version {0} is not supported (only 0)")]
    BadVersion(u8),
    /// The addons are not a valid protobuf `Addons` message.
    #[error("VLESS addons are malformed: {0}")]
    BadAddons(&'static str),
    /// The client asks for a flow other than none and `xtls-rprx-vision`.
    #[error(
        "VLESS flow {0:?} is not supported: configure the client with no flow or xtls-rprx-vision"
    )]
    UnsupportedFlow(String),
    /// The command byte is not 1 (TCP), 2 (UDP) or 3 (Mux).
    #[error("VLESS command {0} is not supported")]
    UnsupportedCommand(u8),
    /// The destination address is malformed.
    #[error("VLESS destination: {0}")]
    Address(#[from] AddressError),
}

impl Request {
    /// Parses a request header at the start of `buf`; the bytes after `consumed` are
    /// the first payload bytes.
    pub fn parse(buf: &[u8]) -> Result<Option<(Self, usize)>, VlessError> {
        let Some((&version, rest)) = buf.split_first() else {
            return Ok(None);
        };
        if version != VERSION {
            return Err(VlessError::BadVersion(version));
        }
        let Some((uuid, rest)) = rest.split_first_chunk::<16>() else {
            return Ok(None);
        };
        let Some((&addons_len, rest)) = rest.split_first() else {
            return Ok(None);
        };
        let Some(addons) = rest.get(..usize::from(addons_len)) else {
            return Ok(None);
        };
        let flow = match parse_flow(addons)? {
            b"" => Flow::None,
            f if f == crate::vision::FLOW.as_bytes() => Flow::Vision,
            other => {
                return Err(VlessError::UnsupportedFlow(
                    String::from_utf8_lossy(other).into_owned(),
                ));
            }
        };
        let at = 1 + 16 + 1 + usize::from(addons_len);
        let Some(&code) = buf.get(at) else {
            return Ok(None);
        };
        let at = at + 1;
        let command = match code {
            1 | 2 => {
                let Some((dest, used)) = Address::parse_vless(&buf[at..])? else {
                    return Ok(None);
                };
                let command = if code == 1 {
                    Command::Tcp(dest)
                } else {
                    Command::Udp(dest)
                };
                return Ok(Some((
                    Self {
                        uuid: *uuid,
                        flow,
                        command,
                    },
                    at + used,
                )));
            }
            3 => Command::Mux,
            other => return Err(VlessError::UnsupportedCommand(other)),
        };
        Ok(Some((
            Self {
                uuid: *uuid,
                flow,
                command,
            },
            at,
        )))
    }

    /// Appends the request header: no addons for no flow, the `Flow` field for Vision
    /// (as Xray's client writes it).
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(VERSION);
        out.extend_from_slice(&self.uuid);
        match self.flow {
            Flow::None => out.push(0),
            Flow::Vision => {
                let flow = crate::vision::FLOW.as_bytes();
                out.extend_from_slice(&[2 + flow.len() as u8, 0x0a, flow.len() as u8]);
                out.extend_from_slice(flow);
            }
        }
        out.push(self.command.code());
        match &self.command {
            Command::Tcp(dest) | Command::Udp(dest) => dest.encode_vless(out),
            Command::Mux => {}
        }
    }
}

/// Reads the `Flow` field (1) of the protobuf `Addons` message, skipping the others.
/// `addons` is at most 255 bytes and nothing is allocated here.
fn parse_flow(addons: &[u8]) -> Result<&[u8], VlessError> {
    let mut flow: &[u8] = &[];
    let mut rest = addons;
    while !rest.is_empty() {
        let (key, after) = varint(rest)?;
        rest = after;
        let (field, wire_type) = (key >> 3, key & 7);
        match wire_type {
            0 => rest = varint(rest)?.1,
            1 => {
                rest = rest
                    .get(8..)
                    .ok_or(VlessError::BadAddons("truncated field"))?
            }
            2 => {
                let (len, after) = varint(rest)?;
                let value = usize::try_from(len)
                    .ok()
                    .and_then(|len| after.get(..len))
                    .ok_or(VlessError::BadAddons("field longer than the addons"))?;
                if field == 1 {
                    if std::str::from_utf8(value).is_err() {
                        return Err(VlessError::BadAddons("flow is not UTF-8"));
                    }
                    flow = value;
                }
                rest = &after[value.len()..];
            }
            5 => {
                rest = rest
                    .get(4..)
                    .ok_or(VlessError::BadAddons("truncated field"))?
            }
            _ => return Err(VlessError::BadAddons("unknown wire type")),
        }
    }
    Ok(flow)
}

fn varint(buf: &[u8]) -> Result<(u64, &[u8]), VlessError> {
    let mut value = 0u64;
    for (i, &b) in buf.iter().enumerate().take(10) {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok((value, &buf[i + 1..]));
        }
    }
    Err(VlessError::BadAddons("truncated or overlong varint"))
}

/// Parses one VLESS UDP packet (2-byte big-endian length, payload) at the start of
/// `buf`: the payload and the bytes used, or `None` until the whole packet is there.
/// Any length is valid, so this never fails; a packet is at most 65537 bytes.
pub fn parse_udp_packet(buf: &[u8]) -> Option<(&[u8], usize)> {
    let (len, rest) = buf.split_first_chunk::<2>()?;
    let len = usize::from(u16::from_be_bytes(*len));
    rest.get(..len).map(|payload| (payload, 2 + len))
}

/// Appends one VLESS UDP packet: the payload's length, then the payload.
pub fn encode_udp_packet(payload: &[u8], out: &mut Vec<u8>) -> Result<(), PayloadTooLarge> {
    let len = u16::try_from(payload.len()).map_err(|_| PayloadTooLarge(payload.len()))?;
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(payload);
    Ok(())
}

#[cfg(test)]
#[path = "vless_tests.rs"]
mod tests;
