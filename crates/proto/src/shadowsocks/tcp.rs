//! Shadowsocks 2022 (SIP022) TCP, the client's side, as pure functions and two small
//! state machines: [`request`] writes the request's head and returns the [`Sealer`]
//! of the client's chunks and the [`Opener`] of the server's response.
//!
//! ```text
//! request:  salt | identity headers | AEAD(type 0, timestamp, length)
//!           | AEAD(address, padding length, padding, initial payload)
//!           | (AEAD(length) | AEAD(payload))...
//! response: salt | AEAD(type 1, timestamp, request salt, length) | AEAD(payload)
//!           | (AEAD(length) | AEAD(payload))...
//! ```
//! Each direction derives its session subkey from the user's key and its own salt
//! (`BLAKE3-derive("shadowsocks 2022 session subkey", key ‖ salt)`), and counts a
//! 12-byte little-endian nonce up by one per AEAD operation (the ciphers come from
//! [`super::aead`], on ring). An identity header is
//! `AES(BLAKE3-derive("shadowsocks 2022 identity subkey", iPSK ‖ salt), BLAKE3(next key)[..16])`.
//!
//! The [`Opener`] checks what SIP022 asks a client to check of the response header:
//! type 1, a timestamp within [`MAX_CLOCK_SKEW`] of `now`, and the echo of the
//! request's salt. It decrypts in place and never panics, whatever the bytes.

use std::ops::Range;

use super::aead::TcpAead;

use super::keys::ClientKeys;
use super::{MAX_CLOCK_SKEW, Method};
use crate::address::Address;

/// The most padding a request header carries (SIP022's `MaxPaddingLength`).
pub const MAX_PADDING: u16 = 900;
/// The most payload in one chunk.
pub const MAX_CHUNK: usize = u16::MAX as usize;
/// AEAD tag of every method.
pub const TAG_LEN: usize = 16;
/// A length chunk, sealed.
pub const LENGTH_CHUNK: usize = 2 + TAG_LEN;
/// Key-derivation context of identity subkeys.
const IDENTITY_SUBKEY: &str = "shadowsocks 2022 identity subkey";
/// The type byte of a request stream.
const REQUEST_TYPE: u8 = 0;
/// The type byte of a response stream.
const RESPONSE_TYPE: u8 = 1;
/// A request's fixed header: type, timestamp, length.
const REQUEST_FIXED: usize = 1 + 8 + 2;

/// Why a request could not be written or a response was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TcpError {
    /// The salt does not have the method's length.
    #[error("salt of {got} bytes; the method wants {want}")]
    SaltLength {
        /// Its length.
        got: usize,
        /// The method's salt length.
        want: usize,
    },
    /// A key does not fit the method (a configuration slip).
    #[error("key length does not fit the method")]
    KeyLength,
    /// The request has neither initial payload nor padding (SIP022 wants one).
    #[error("a request without initial payload needs padding")]
    NoPadding,
    /// The variable-length header is longer than a chunk holds.
    #[error("request header of {0} bytes is longer than the 65535 a chunk holds")]
    HeaderTooLarge(usize),
    /// A chunk did not authenticate: another key, or tampered bytes.
    #[error("the server's {0} does not authenticate")]
    Decrypt(&'static str),
    /// The response header's type is not a server's.
    #[error("response type {0} is not a server's (1)")]
    Type(u8),
    /// The response header's timestamp is more than [`MAX_CLOCK_SKEW`] from now.
    #[error("response timestamp {sent} is more than 30 s from now ({now})")]
    Timestamp {
        /// The header's timestamp.
        sent: u64,
        /// Our time.
        now: u64,
    },
    /// The response header echoes another request's salt.
    #[error("the response answers another request (its request salt is not ours)")]
    RequestSalt,
}

/// What the request's header says.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// Where the server connects.
    pub destination: &'a Address,
    /// Zero bytes of padding (1 to [`MAX_PADDING`], random, when there is no
    /// payload).
    pub padding: u16,
    /// The first bytes for the destination, if any.
    pub payload: &'a [u8],
    /// Unix seconds, the header's timestamp.
    pub now: u64,
}

/// Appends the request's head to `out`, all of it for one write (salt, identity
/// headers, both header chunks), sealed with `keys` and `salt` (random, the method's
/// key length). Returns the sealer of the client's further chunks and the opener of
/// the server's response.
pub fn request(
    keys: &ClientKeys,
    salt: &[u8],
    request: &Request<'_>,
    out: &mut Vec<u8>,
) -> Result<(Sealer, Opener), TcpError> {
    let method = keys.method();
    if salt.len() != method.key_len() {
        return Err(TcpError::SaltLength {
            got: salt.len(),
            want: method.key_len(),
        });
    }
    check_key(method, keys.user())?;
    if keys
        .identities()
        .iter()
        .any(|k| k.len() != method.key_len())
    {
        return Err(TcpError::KeyLength);
    }
    if request.payload.is_empty() && request.padding == 0 {
        return Err(TcpError::NoPadding);
    }
    let variable =
        request.destination.wire_len() + 2 + usize::from(request.padding) + request.payload.len();
    let length = u16::try_from(variable).map_err(|_| TcpError::HeaderTooLarge(variable))?;
    let start = out.len();
    out.extend_from_slice(salt);
    for (i, identity) in keys.identities().iter().enumerate() {
        let material = [identity.as_slice(), salt].concat();
        let subkey = blake3::derive_key(IDENTITY_SUBKEY, &material);
        let mut block = [0u8; 16];
        block.copy_from_slice(&blake3::hash(keys.next_after(i)).as_bytes()[..16]);
        method
            .ecb(&subkey[..method.key_len()], &mut block, true)
            .map_err(|_| TcpError::KeyLength)?;
        out.extend_from_slice(&block);
    }
    let mut sealer = Sealer {
        cipher: TcpAead::new(method, keys.user(), salt),
    };
    let at = out.len();
    out.push(REQUEST_TYPE);
    out.extend_from_slice(&request.now.to_be_bytes());
    out.extend_from_slice(&length.to_be_bytes());
    sealer.seal_in_place(out, at);
    let at = out.len();
    request.destination.encode_socks(out);
    out.extend_from_slice(&request.padding.to_be_bytes());
    out.resize(out.len() + usize::from(request.padding), 0);
    out.extend_from_slice(request.payload);
    sealer.seal_in_place(out, at);
    debug_assert_eq!(
        out.len() - start,
        salt.len() + 16 * keys.identities().len() + REQUEST_FIXED + variable + 2 * TAG_LEN
    );
    let opener = Opener {
        method,
        key: keys.user().to_vec(),
        request_salt: salt.to_vec(),
        cipher: None,
        next: Next::Header,
    };
    Ok((sealer, opener))
}

/// A key of the wrong length would make the cipher crate panic: refuse it first.
fn check_key(method: Method, key: &[u8]) -> Result<(), TcpError> {
    if key.len() == method.key_len() {
        Ok(())
    } else {
        Err(TcpError::KeyLength)
    }
}

/// Seals one direction's chunks: each payload as a length chunk and a payload chunk.
pub struct Sealer {
    cipher: TcpAead,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sealer").finish_non_exhaustive()
    }
}

impl Sealer {
    /// Appends `payload` sealed, in chunks of at most [`MAX_CHUNK`] bytes; nothing
    /// for an empty payload (an empty chunk would read as the end to some peers).
    pub fn seal(&mut self, payload: &[u8], out: &mut Vec<u8>) {
        for chunk in payload.chunks(MAX_CHUNK) {
            let at = out.len();
            // At most MAX_CHUNK, so it fits.
            out.extend_from_slice(&(chunk.len() as u16).to_be_bytes());
            self.seal_in_place(out, at);
            let at = out.len();
            out.extend_from_slice(chunk);
            self.seal_in_place(out, at);
        }
    }

    /// Seals one chunk laid out in place: `chunk` is room for the length chunk
    /// ([`LENGTH_CHUNK`] bytes), the payload (1 to [`MAX_CHUNK`] bytes, already
    /// there) and room for its tag ([`TAG_LEN`]); what [`Self::seal`] would append
    /// for that payload, without copying it. `None` when the payload's length is out
    /// of range (nothing is sealed then).
    pub fn seal_laid_out(&mut self, chunk: &mut [u8]) -> Option<()> {
        let len = chunk.len().checked_sub(LENGTH_CHUNK + TAG_LEN)?;
        if !(1..=MAX_CHUNK).contains(&len) {
            return None;
        }
        chunk[..2].copy_from_slice(&u16::try_from(len).ok()?.to_be_bytes());
        self.cipher.encrypt_packet(&mut chunk[..LENGTH_CHUNK]);
        self.cipher.encrypt_packet(&mut chunk[LENGTH_CHUNK..]);
        Some(())
    }

    /// Seals `out[at..]` in place, appending its tag.
    fn seal_in_place(&mut self, out: &mut Vec<u8>, at: usize) {
        out.resize(out.len() + TAG_LEN, 0);
        self.cipher.encrypt_packet(&mut out[at..]);
    }
}

/// What the opener expects next.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Next {
    /// The salt and the response's fixed header.
    Header,
    /// A length chunk.
    Length,
    /// A payload chunk of this many bytes.
    Payload(usize),
    /// An error ended the stream; it is given again.
    Failed(TcpError),
}

/// One step of the response: `consumed` bytes of the buffer used, and the payload
/// they carried, decrypted in place (`payload` indexes the buffer; empty for a
/// header or length chunk).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// Bytes of the buffer this step used.
    pub consumed: usize,
    /// Where in the buffer the decrypted payload is.
    pub payload: Range<usize>,
}

/// Opens the server's response stream.
pub struct Opener {
    method: Method,
    key: Vec<u8>,
    request_salt: Vec<u8>,
    cipher: Option<TcpAead>,
    next: Next,
}

impl std::fmt::Debug for Opener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Opener")
            .field("method", &self.method)
            .field("next", &self.next)
            .finish_non_exhaustive()
    }
}

impl Opener {
    /// The response header's length: salt, then type, timestamp, request salt,
    /// length and tag.
    pub fn header_len(&self) -> usize {
        let salt = self.method.key_len();
        salt + 1 + 8 + salt + 2 + TAG_LEN
    }

    /// The opener of a request's chunks after its head, continuing `cipher` (a
    /// server's: [`super::tcp_server::open_request`] builds it).
    pub(crate) fn after_request_head(method: Method, cipher: TcpAead) -> Self {
        Self {
            method,
            key: Vec::new(),
            request_salt: Vec::new(),
            cipher: Some(cipher),
            next: Next::Length,
        }
    }

    /// Whether the stream is between chunks, where it may end cleanly (not before
    /// the header, nor inside a length and its payload).
    pub fn at_boundary(&self) -> bool {
        self.next == Next::Length
    }

    /// Bytes the next step takes in all (the response's header, a length chunk, or a
    /// payload chunk with its tag); 0 after an error. A reader holding fewer reads at
    /// least the rest at once, instead of a fixed-size piece at a time.
    pub fn wants(&self) -> usize {
        match self.next {
            Next::Header => self.header_len(),
            Next::Length => LENGTH_CHUNK,
            Next::Payload(length) => length + TAG_LEN,
            Next::Failed(_) => 0,
        }
    }

    /// Takes the next step off the start of `buf`, decrypting it in place: `None`
    /// while `buf` holds only part of it (read more, call again with the longer
    /// buffer; nothing was changed). After an error every call gives it again.
    pub fn open(&mut self, buf: &mut [u8], now: u64) -> Result<Option<Chunk>, TcpError> {
        let result = self.step(buf, now);
        if let Err(e) = &result {
            self.next = Next::Failed(e.clone());
        }
        result
    }

    fn step(&mut self, buf: &mut [u8], now: u64) -> Result<Option<Chunk>, TcpError> {
        match self.next.clone() {
            Next::Failed(e) => Err(e),
            Next::Header => {
                let need = self.header_len();
                let Some(head) = buf.get_mut(..need) else {
                    return Ok(None);
                };
                let salt_len = self.method.key_len();
                let (salt, sealed) = head.split_at_mut(salt_len);
                check_key(self.method, &self.key)?;
                let mut cipher = TcpAead::new(self.method, &self.key, salt);
                if !cipher.decrypt_packet(sealed) {
                    return Err(TcpError::Decrypt("response header"));
                }
                let plain = &sealed[..sealed.len() - TAG_LEN];
                if plain[0] != RESPONSE_TYPE {
                    return Err(TcpError::Type(plain[0]));
                }
                let mut stamp = [0u8; 8];
                stamp.copy_from_slice(&plain[1..9]);
                let sent = u64::from_be_bytes(stamp);
                if sent.abs_diff(now) > MAX_CLOCK_SKEW {
                    return Err(TcpError::Timestamp { sent, now });
                }
                if plain[9..9 + salt_len] != self.request_salt[..] {
                    return Err(TcpError::RequestSalt);
                }
                let at = 9 + salt_len;
                let length = u16::from_be_bytes([plain[at], plain[at + 1]]);
                self.cipher = Some(cipher);
                self.next = Next::Payload(usize::from(length));
                Ok(Some(Chunk {
                    consumed: need,
                    payload: need..need,
                }))
            }
            Next::Length => {
                let Some(sealed) = buf.get_mut(..LENGTH_CHUNK) else {
                    return Ok(None);
                };
                if !self.decrypt(sealed) {
                    return Err(TcpError::Decrypt("length chunk"));
                }
                let length = u16::from_be_bytes([sealed[0], sealed[1]]);
                self.next = Next::Payload(usize::from(length));
                Ok(Some(Chunk {
                    consumed: LENGTH_CHUNK,
                    payload: LENGTH_CHUNK..LENGTH_CHUNK,
                }))
            }
            Next::Payload(length) => {
                let need = length + TAG_LEN;
                let Some(sealed) = buf.get_mut(..need) else {
                    return Ok(None);
                };
                if !self.decrypt(sealed) {
                    return Err(TcpError::Decrypt("payload chunk"));
                }
                self.next = Next::Length;
                Ok(Some(Chunk {
                    consumed: need,
                    payload: 0..length,
                }))
            }
        }
    }

    fn decrypt(&mut self, sealed: &mut [u8]) -> bool {
        self.cipher
            .as_mut()
            .is_some_and(|c| c.decrypt_packet(sealed))
    }
}

/// A server's response, sealed (for tests, fuzzing and our own checks): what the
/// server puts before its first payload.
#[derive(Debug, Clone)]
pub struct Response<'a> {
    /// The method.
    pub method: Method,
    /// The user's key.
    pub key: &'a [u8],
    /// The response's own salt.
    pub salt: &'a [u8],
    /// The salt of the request it answers.
    pub request_salt: &'a [u8],
    /// The type byte (1 for a real server).
    pub kind: u8,
    /// Unix seconds, the header's timestamp.
    pub now: u64,
}

impl Response<'_> {
    /// Appends the response's head with `first` (at most [`MAX_CHUNK`] bytes; more is
    /// cut) as its first payload, and returns the sealer of the further chunks.
    pub fn seal(&self, first: &[u8], out: &mut Vec<u8>) -> Result<Sealer, TcpError> {
        if self.salt.len() != self.method.key_len() {
            return Err(TcpError::SaltLength {
                got: self.salt.len(),
                want: self.method.key_len(),
            });
        }
        check_key(self.method, self.key)?;
        let first = &first[..first.len().min(MAX_CHUNK)];
        let mut sealer = Sealer {
            cipher: TcpAead::new(self.method, self.key, self.salt),
        };
        out.extend_from_slice(self.salt);
        let at = out.len();
        out.push(self.kind);
        out.extend_from_slice(&self.now.to_be_bytes());
        out.extend_from_slice(self.request_salt);
        out.extend_from_slice(&(first.len() as u16).to_be_bytes());
        sealer.seal_in_place(out, at);
        let at = out.len();
        out.extend_from_slice(first);
        sealer.seal_in_place(out, at);
        Ok(sealer)
    }
}

#[cfg(test)]
#[path = "tcp_tests.rs"]
mod tests;
