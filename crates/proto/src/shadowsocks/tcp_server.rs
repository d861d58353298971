//! Shadowsocks 2022 (SIP022) TCP, the server's side of a request: [`open_request`]
//! opens the request's two header chunks once the caller knows the user's key (from
//! the identity header, or by trial for ChaCha), checks what SIP022 asks a server to
//! check (type 0, a timestamp within [`MAX_CLOCK_SKEW`] of now, padding of at most
//! [`MAX_PADDING`] bytes and never a request with neither padding nor payload, a
//! well-formed address) and gives the [`Opener`] of the chunks that follow. The
//! response is [`super::tcp::Response`]'s. Like the rest of this module it is pure,
//! decrypts in place and never panics, whatever the bytes.
//!
//! The salt replay filter is the server's state, not this function's: a caller
//! checks the salt ([`RequestHead::salt`]) against the salts it saw in the last 60
//! seconds before it answers.

use std::ops::Range;

use super::aead::TcpAead;
use super::tcp::{MAX_PADDING, Opener, TAG_LEN};
use super::{MAX_CLOCK_SKEW, Method};
use crate::address::Address;

/// The type byte of a request stream.
const REQUEST_TYPE: u8 = 0;
/// A request's fixed header: type, timestamp, length.
const REQUEST_FIXED: usize = 1 + 8 + 2;

/// Why a request is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// The key does not fit the method (a configuration slip).
    #[error("key length does not fit the method")]
    KeyLength,
    /// A header chunk did not authenticate: another key, or tampered bytes.
    #[error("the request's {0} does not authenticate")]
    Decrypt(&'static str),
    /// The fixed header's type is not a client's.
    #[error("request type {0} is not a client's (0)")]
    Type(u8),
    /// The timestamp is more than [`MAX_CLOCK_SKEW`] from now.
    #[error("request timestamp {sent} is more than 30 s from now ({now})")]
    Timestamp {
        /// The header's timestamp.
        sent: u64,
        /// Our time.
        now: u64,
    },
    /// The variable header is too short for what it says it holds.
    #[error("the request header is malformed: {0}")]
    Malformed(&'static str),
    /// Padding longer than [`MAX_PADDING`].
    #[error("padding of {0} bytes; at most 900")]
    Padding(u16),
    /// Neither padding nor initial payload.
    #[error("a request without initial payload needs padding")]
    NoPadding,
    /// The destination does not read.
    #[error("destination: {0}")]
    Address(#[from] crate::address::AddressError),
}

/// An opened request head.
#[derive(Debug)]
pub struct RequestHead {
    /// Where the client wants to go.
    pub destination: Address,
    /// Where the initial payload is, decrypted, in the buffer given.
    pub payload: Range<usize>,
    /// Bytes of the buffer the head took (salt and identity headers included).
    pub consumed: usize,
    /// The request's salt, for the replay filter and the response.
    pub salt: Vec<u8>,
    /// Opens the chunks after the head.
    pub opener: Opener,
}

/// The bytes of a request's head before its variable header: salt, `identities`
/// identity headers, and the sealed fixed header.
pub fn fixed_len(method: Method, identities: usize) -> usize {
    method.key_len() + 16 * identities + REQUEST_FIXED + TAG_LEN
}

/// Opens the head at the start of `buf`: the salt, `identities` identity headers
/// (skipped: the caller found `key` with them), the fixed and the variable header
/// chunks, decrypted in place under the user's `key`. `None` while `buf` holds
/// only part of the head (nothing was changed; call again with more).
pub fn open_request(
    method: Method,
    key: &[u8],
    identities: usize,
    buf: &mut [u8],
    now: u64,
) -> Result<Option<RequestHead>, RequestError> {
    if key.len() != method.key_len() {
        return Err(RequestError::KeyLength);
    }
    let fixed_end = fixed_len(method, identities);
    if buf.len() < fixed_end {
        return Ok(None);
    }
    let salt_len = method.key_len();
    let fixed_at = salt_len + 16 * identities;
    // Peek at the fixed header on a copy: a short buffer must leave `buf` as it is.
    let mut fixed = [0u8; REQUEST_FIXED + TAG_LEN];
    fixed.copy_from_slice(&buf[fixed_at..fixed_end]);
    let mut cipher = TcpAead::new(method, key, &buf[..salt_len]);
    if !cipher.decrypt_packet(&mut fixed) {
        return Err(RequestError::Decrypt("fixed header"));
    }
    if fixed[0] != REQUEST_TYPE {
        return Err(RequestError::Type(fixed[0]));
    }
    let mut stamp = [0u8; 8];
    stamp.copy_from_slice(&fixed[1..9]);
    let sent = u64::from_be_bytes(stamp);
    if sent.abs_diff(now) > MAX_CLOCK_SKEW {
        return Err(RequestError::Timestamp { sent, now });
    }
    let length = usize::from(u16::from_be_bytes([fixed[9], fixed[10]]));
    let end = fixed_end + length + TAG_LEN;
    if buf.len() < end {
        return Ok(None);
    }
    let salt = buf[..salt_len].to_vec();
    let variable = &mut buf[fixed_end..end];
    if !cipher.decrypt_packet(variable) {
        return Err(RequestError::Decrypt("variable header"));
    }
    let plain = &variable[..length];
    let (destination, used) =
        Address::parse_socks(plain)?.ok_or(RequestError::Malformed("the address is cut short"))?;
    let padding = plain
        .get(used..used + 2)
        .map(|p| u16::from_be_bytes([p[0], p[1]]))
        .ok_or(RequestError::Malformed("no padding length"))?;
    if padding > MAX_PADDING {
        return Err(RequestError::Padding(padding));
    }
    let payload_at = used + 2 + usize::from(padding);
    if payload_at > length {
        return Err(RequestError::Malformed("padding runs past the header"));
    }
    if padding == 0 && payload_at == length {
        return Err(RequestError::NoPadding);
    }
    Ok(Some(RequestHead {
        destination,
        payload: fixed_end + payload_at..fixed_end + length,
        consumed: end,
        salt,
        opener: Opener::after_request_head(method, cipher),
    }))
}

#[cfg(test)]
#[path = "tcp_server_tests.rs"]
mod tests;
