//! Trojan: the request, the password hash and Trojan UDP framing.
//!
//! Followed: the Trojan protocol as trojan-gfw documents it and sing-box implements it
//! in `transport/trojan/protocol.go` (`Key`, `ClientHandshake`, `ReadPacket`,
//! `WritePacket`).
//!
//! ```text
//! request:    hex(SHA-224(password)) (56) | CRLF | command (1) | address (SOCKS form) | CRLF
//! UDP packet: address (SOCKS form) | length (2, BE) | CRLF | payload
//! ```
//! Command 1 is CONNECT (a TCP stream follows), 3 is UDP ASSOCIATE (UDP packets
//! follow, the request's address being only the first destination). sing-box's
//! command 0x7f (its own mux) is not supported.
//!
//! A Trojan server hands anything that is not Trojan to a fallback, byte for byte.
//! [`Request::parse`] never consumes: on [`TrojanError::NotTrojan`] (or any error),
//! the caller still has every byte it read and may replay them to the fallback. It
//! says `NotTrojan` as soon as a byte rules Trojan out (a non-hex byte among the first
//! 56, no CRLF after them), so an HTTP request falls back after its first byte rather
//! than after 58.

use sha2::{Digest, Sha224};

use crate::PayloadTooLarge;
use crate::address::{Address, AddressError};

/// The length of the hex SHA-224 password hash that starts a request.
pub const HASH_LEN: usize = 56;

/// The hex SHA-224 of `password`, lowercase, as clients send it.
pub fn password_hash(password: &str) -> [u8; HASH_LEN] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha224::digest(password.as_bytes());
    let mut out = [0u8; HASH_LEN];
    for (pair, byte) in out.chunks_exact_mut(2).zip(digest) {
        pair[0] = HEX[usize::from(byte >> 4)];
        pair[1] = HEX[usize::from(byte & 0x0f)];
    }
    out
}

/// What the client asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Command {
    /// 1: a TCP stream to the destination.
    Connect,
    /// 3: UDP packets, each with its own destination ([`UdpPacket`]).
    UdpAssociate,
}

impl Command {
    /// The command byte on the wire.
    pub fn code(self) -> u8 {
        match self {
            Self::Connect => 1,
            Self::UdpAssociate => 3,
        }
    }
}

/// A Trojan request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The hex password hash, to look up among the inbound's users.
    pub hash: [u8; HASH_LEN],
    /// CONNECT or UDP ASSOCIATE.
    pub command: Command,
    /// The destination (for UDP ASSOCIATE, the first packet's).
    pub destination: Address,
}

/// Why bytes are not a Trojan request, or not one this node accepts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TrojanError {
    /// The bytes do not start with a hex hash and CRLF: another protocol, for the
    /// fallback.
    #[error("not a Trojan request (no hex password hash and CRLF)")]
    NotTrojan,
    /// The command byte is not 1 (CONNECT) or 3 (UDP ASSOCIATE).
    #[error("Trojan command {0} is not supported")]
    UnsupportedCommand(u8),
    /// The destination address is malformed.
    #[error("Trojan destination: {0}")]
    Address(#[from] AddressError),
    /// The CRLF after the address, or after a UDP packet's length, is missing.
    #[error("Trojan {0}: expected CRLF")]
    MissingCrlf(&'static str),
}

/// Checks that `got` is a prefix of CRLF: `Ok(true)` when complete.
fn crlf(got: &[u8], what: &'static str) -> Result<bool, TrojanError> {
    let n = got.len().min(2);
    if got[..n] != b"\r\n"[..n] {
        return Err(TrojanError::MissingCrlf(what));
    }
    Ok(n == 2)
}

impl Request {
    /// Parses a request at the start of `buf`; bytes after `consumed` are payload.
    pub fn parse(buf: &[u8]) -> Result<Option<(Self, usize)>, TrojanError> {
        let head = &buf[..buf.len().min(HASH_LEN)];
        if !head.iter().all(u8::is_ascii_hexdigit) {
            return Err(TrojanError::NotTrojan);
        }
        let Some((hash, rest)) = buf.split_first_chunk::<HASH_LEN>() else {
            return Ok(None);
        };
        if crlf(rest, "after the password hash").is_err() {
            return Err(TrojanError::NotTrojan);
        }
        let Some((&code, rest)) = rest.get(2..).and_then(<[u8]>::split_first) else {
            return Ok(None);
        };
        let command = match code {
            1 => Command::Connect,
            3 => Command::UdpAssociate,
            other => return Err(TrojanError::UnsupportedCommand(other)),
        };
        let Some((destination, used)) = Address::parse_socks(rest)? else {
            return Ok(None);
        };
        if !crlf(&rest[used..], "after the destination")? {
            return Ok(None);
        }
        let request = Self {
            hash: *hash,
            command,
            destination,
        };
        Ok(Some((request, HASH_LEN + 2 + 1 + used + 2)))
    }

    /// Appends the request.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.hash);
        out.extend_from_slice(b"\r\n");
        out.push(self.command.code());
        self.destination.encode_socks(out);
        out.extend_from_slice(b"\r\n");
    }
}

/// One Trojan UDP packet; `payload` borrows from the parsed buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UdpPacket<'a> {
    /// Where the packet goes (client to node) or comes from (node to client).
    pub address: Address,
    /// The datagram.
    pub payload: &'a [u8],
}

impl<'a> UdpPacket<'a> {
    /// Parses one packet at the start of `buf` (a packet is at most 65,798 bytes).
    pub fn parse(buf: &'a [u8]) -> Result<Option<(Self, usize)>, TrojanError> {
        let Some((address, used)) = Address::parse_socks(buf)? else {
            return Ok(None);
        };
        let Some(len) = buf.get(used..used + 2) else {
            return Ok(None);
        };
        let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
        let at = used + 2;
        if !crlf(&buf[at..], "UDP packet")? {
            return Ok(None);
        }
        let at = at + 2;
        let Some(payload) = buf.get(at..at + len) else {
            return Ok(None);
        };
        Ok(Some((Self { address, payload }, at + len)))
    }

    /// Appends the packet. Fails, appending nothing, when the payload is over 65535.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), PayloadTooLarge> {
        let len =
            u16::try_from(self.payload.len()).map_err(|_| PayloadTooLarge(self.payload.len()))?;
        self.address.encode_socks(out);
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(self.payload);
        Ok(())
    }
}

#[cfg(test)]
#[path = "trojan_tests.rs"]
mod tests;
