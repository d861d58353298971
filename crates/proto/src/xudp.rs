//! Mux.Cool frames, as XUDP carries UDP over a VLESS Mux request (command 3).
//!
//! sing-box's VLESS outbound uses XUDP when `packet_encoding` is unset (the default,
//! `protocol/vless/outbound.go`: `if options.PacketEncoding == nil { xudp = true }`),
//! so a sing-box client's UDP arrives here: a VLESS request with command 3 and no
//! destination, then Mux.Cool frames.
//!
//! Followed: Xray's `common/mux/frame.go` (`FrameMetadata`, metadata at most 512
//! bytes) and `common/xudp/xudp.go` (per-packet addresses, the 8-byte global id),
//! sing-vmess's `xudp.go` (the client's frames) and `mux.go` (the server's session:
//! it answers UDP with `Keep` frames that carry the source address).
//!
//! ```text
//! metadata length (2, BE) | session id (2) | status (1) | options (1)
//!   | [network (1) | address, VLESS form] | [global id (8)]     <- metadata
//! [data length (2, BE) | data]                                   <- when options & 1
//! ```
//! - status 1 `New` opens a session and always has network (1 TCP, 2 UDP) and address;
//!   Xray's XUDP client adds an 8-byte global id after the address;
//! - status 2 `Keep` carries data; for XUDP its metadata may carry network and the
//!   packet's address (a per-packet destination, or the source in a reply);
//! - status 3 `End` closes the session (options & 2: with an error); 4 `KeepAlive`
//!   carries nothing the receiver keeps.
//!
//! Bytes past the address other than an 8-byte global id (Xray's source and local
//! addresses for reverse proxies, padding) are skipped, as sing-vmess does.

use crate::PayloadTooLarge;
use crate::address::{Address, AddressError};

/// The longest metadata Xray reads (`common/mux/frame.go`); longer is an error.
pub const MAX_METADATA_LEN: usize = 512;

const OPTION_DATA: u8 = 0x01;
const OPTION_ERROR: u8 = 0x02;

/// A session's status in a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// 1: opens a session to the frame's target.
    New,
    /// 2: data for an open session.
    Keep,
    /// 3: closes a session.
    End,
    /// 4: keeps the connection alive; any data is discarded.
    KeepAlive,
}

impl Status {
    /// The status byte on the wire.
    pub fn code(self) -> u8 {
        match self {
            Self::New => 1,
            Self::Keep => 2,
            Self::End => 3,
            Self::KeepAlive => 4,
        }
    }
}

/// The network of a session's target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Network {
    /// 1: a TCP stream.
    Tcp,
    /// 2: UDP packets.
    Udp,
}

impl Network {
    /// The network byte on the wire.
    pub fn code(self) -> u8 {
        match self {
            Self::Tcp => 1,
            Self::Udp => 2,
        }
    }
}

/// A session's target, or an XUDP packet's address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// TCP or UDP.
    pub network: Network,
    /// Where to, or for a reply, where from.
    pub address: Address,
}

/// One Mux.Cool frame; `data` borrows from the parsed buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame<'a> {
    /// The session the frame belongs to (XUDP uses 0).
    pub session_id: u16,
    /// New, Keep, End or KeepAlive.
    pub status: Status,
    /// The error option (0x02): the session ends because of an error.
    pub error: bool,
    /// The target: always present in `New`, optional in `Keep`, ignored otherwise.
    pub target: Option<Target>,
    /// Xray's XUDP global id, after the target of a `New` frame; written only with a
    /// target.
    pub global_id: Option<[u8; 8]>,
    /// The data (option 0x01 set), possibly empty.
    pub data: Option<&'a [u8]>,
}

/// Why bytes are not a Mux.Cool frame.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum XudpError {
    /// The metadata length is over 512 bytes.
    #[error("mux frame metadata of {0} bytes is longer than 512")]
    MetadataTooLong(u16),
    /// The metadata length is under the 4 bytes every frame has.
    #[error("mux frame metadata of {0} bytes is shorter than 4")]
    MetadataTooShort(u16),
    /// The status byte is not 1 to 4.
    #[error("mux frame status {0} is unknown")]
    UnknownStatus(u8),
    /// The network byte is not 1 (TCP) or 2 (UDP).
    #[error("mux frame network {0} is unknown")]
    UnknownNetwork(u8),
    /// A `New` frame without a target, or a target cut short by the metadata length.
    #[error("mux frame metadata ends inside the target address")]
    TruncatedTarget,
    /// The target address is malformed.
    #[error("mux frame target: {0}")]
    Address(#[from] AddressError),
}

impl<'a> Frame<'a> {
    /// A `Keep` frame carrying one UDP packet with its address, as the server answers
    /// XUDP (sing-vmess `writePacketFrame`).
    pub fn udp_packet(session_id: u16, address: Address, data: &'a [u8]) -> Self {
        Self {
            session_id,
            status: Status::Keep,
            error: false,
            target: Some(Target {
                network: Network::Udp,
                address,
            }),
            global_id: None,
            data: Some(data),
        }
    }

    /// An `End` frame closing `session_id`, with the error option when `error`.
    pub fn end(session_id: u16, error: bool) -> Self {
        Self {
            session_id,
            status: Status::End,
            error,
            target: None,
            global_id: None,
            data: None,
        }
    }

    /// Parses one frame at the start of `buf`.
    pub fn parse(buf: &'a [u8]) -> Result<Option<(Self, usize)>, XudpError> {
        let Some((len, rest)) = buf.split_first_chunk::<2>() else {
            return Ok(None);
        };
        let meta_len = u16::from_be_bytes(*len);
        if usize::from(meta_len) > MAX_METADATA_LEN {
            return Err(XudpError::MetadataTooLong(meta_len));
        }
        if meta_len < 4 {
            return Err(XudpError::MetadataTooShort(meta_len));
        }
        // The status is known before the whole metadata is: fail early on junk.
        if let Some(&status) = rest.get(2) {
            parse_status(status)?;
        }
        let Some(meta) = rest.get(..usize::from(meta_len)) else {
            return Ok(None);
        };
        let session_id = u16::from_be_bytes([meta[0], meta[1]]);
        let status = parse_status(meta[2])?;
        let options = meta[3];
        let extra = &meta[4..];
        let (target, global_id) = match status {
            Status::New if extra.is_empty() => return Err(XudpError::TruncatedTarget),
            Status::New | Status::Keep if !extra.is_empty() => {
                let (target, after) = parse_target(extra)?;
                let global_id = match status {
                    Status::New => after.try_into().ok(),
                    _ => None,
                };
                (Some(target), global_id)
            }
            _ => (None, None),
        };
        let mut used = 2 + usize::from(meta_len);
        let data = if options & OPTION_DATA != 0 {
            let Some(len) = buf.get(used..used + 2) else {
                return Ok(None);
            };
            let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
            let Some(data) = buf.get(used + 2..used + 2 + len) else {
                return Ok(None);
            };
            used += 2 + len;
            Some(data)
        } else {
            None
        };
        let frame = Self {
            session_id,
            status,
            error: options & OPTION_ERROR != 0,
            target,
            global_id,
            data,
        };
        Ok(Some((frame, used)))
    }

    /// Appends the frame. Fails, appending nothing, when the data is over 65535 bytes.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), PayloadTooLarge> {
        let data_len = match self.data {
            Some(data) => Some(u16::try_from(data.len()).map_err(|_| PayloadTooLarge(data.len()))?),
            None => None,
        };
        let start = out.len();
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(&self.session_id.to_be_bytes());
        out.push(self.status.code());
        let mut options = 0;
        if data_len.is_some() {
            options |= OPTION_DATA;
        }
        if self.error {
            options |= OPTION_ERROR;
        }
        out.push(options);
        if let Some(target) = &self.target {
            out.push(target.network.code());
            target.address.encode_vless(out);
            if let Some(id) = &self.global_id {
                out.extend_from_slice(id);
            }
        }
        // At most 4 + 1 + 259 + 8 bytes, so it fits the 16-bit length.
        let meta_len = (out.len() - start - 2) as u16;
        out[start..start + 2].copy_from_slice(&meta_len.to_be_bytes());
        if let (Some(len), Some(data)) = (data_len, self.data) {
            out.extend_from_slice(&len.to_be_bytes());
            out.extend_from_slice(data);
        }
        Ok(())
    }
}

fn parse_status(code: u8) -> Result<Status, XudpError> {
    match code {
        1 => Ok(Status::New),
        2 => Ok(Status::Keep),
        3 => Ok(Status::End),
        4 => Ok(Status::KeepAlive),
        other => Err(XudpError::UnknownStatus(other)),
    }
}

/// Reads network and address from complete metadata; the rest follows.
fn parse_target(extra: &[u8]) -> Result<(Target, &[u8]), XudpError> {
    let (&network, rest) = extra.split_first().ok_or(XudpError::TruncatedTarget)?;
    let network = match network {
        1 => Network::Tcp,
        2 => Network::Udp,
        other => return Err(XudpError::UnknownNetwork(other)),
    };
    let (address, used) = Address::parse_vless(rest)?.ok_or(XudpError::TruncatedTarget)?;
    Ok((Target { network, address }, &rest[used..]))
}

#[cfg(test)]
#[path = "xudp_tests.rs"]
mod tests;
