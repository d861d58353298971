//! Shadowsocks 2022 (SIP022): UDP packets from a client, opened with our own checked
//! parser (the node's side, here), and the client's side of TCP ([`tcp`]) and UDP
//! ([`udp_client`]) with its keys ([`keys`]), which Switchyard's client uses.
//!
//! The `shadowsocks` crate's own UDP decoder reads the destination with an unchecked
//! cursor (a domain whose length byte equals the bytes left, with no room for the port,
//! panics), so the node opens client packets here and only uses the crate's ciphers.
//!
//! A client packet is, for the AES methods:
//! `AES-ECB(psk, session_id ‖ packet_id)`, then (several users on one key) the
//! identity header `AES-ECB(psk, BLAKE3(user_key)[..16] ⊕ session_id ‖ packet_id)`,
//! then `AEAD(session subkey, nonce = packet_id's last 12 header bytes, body)`.
//! For `2022-blake3-chacha20-poly1305`: a 24-byte nonce, then
//! `XChaCha20-Poly1305(user key, session_id ‖ packet_id ‖ body)`.
//! The body is `type (0) ‖ timestamp (u64 seconds) ‖ padding length (u16) ‖ padding ‖
//! address (SOCKS form) ‖ payload`.
//!
//! Time comes in as an argument (`now`, Unix seconds): no clock is read here.

use aes::cipher::{BlockDecrypt, BlockEncrypt, KeyInit};
use shadowsocks_crypto::CipherKind;
use shadowsocks_crypto::v2::udp::UdpCipher;

use crate::address::{Address, AddressError};

pub mod aead;
pub mod keys;
pub mod tcp;
pub mod tcp_server;
pub mod udp_client;
pub mod window;

/// How far a packet's timestamp may be from `now`, in seconds (SIP022: 30).
pub const MAX_CLOCK_SKEW: u64 = 30;
/// Length of the separate header (session id and packet id, one AES block).
const HEADER_LEN: usize = 16;
/// Length of an identity header.
pub const IDENTITY_LEN: usize = 16;
/// XChaCha20-Poly1305's nonce.
const CHACHA_NONCE_LEN: usize = 24;
/// AEAD tag of every method.
const TAG_LEN: usize = 16;
/// The fixed part of a body: type, timestamp, padding length.
const BODY_FIXED: usize = 1 + 8 + 2;
/// The body's type byte for a packet from a client.
const CLIENT_TYPE: u8 = 0;

/// A SIP022 method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Method {
    /// `2022-blake3-aes-128-gcm`.
    Aes128Gcm,
    /// `2022-blake3-aes-256-gcm`.
    Aes256Gcm,
    /// `2022-blake3-chacha20-poly1305` (no identity headers).
    Chacha20Poly1305,
}

impl Method {
    /// The method named `name` (`2022-blake3-aes-128-gcm`, …).
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::Aes128Gcm, Self::Aes256Gcm, Self::Chacha20Poly1305]
            .into_iter()
            .find(|m| m.name() == name)
    }

    /// Its name in configs and links.
    pub fn name(self) -> &'static str {
        match self {
            Self::Aes128Gcm => "2022-blake3-aes-128-gcm",
            Self::Aes256Gcm => "2022-blake3-aes-256-gcm",
            Self::Chacha20Poly1305 => "2022-blake3-chacha20-poly1305",
        }
    }

    /// The cipher crate's name for it.
    pub fn kind(self) -> CipherKind {
        match self {
            Self::Aes128Gcm => CipherKind::AEAD2022_BLAKE3_AES_128_GCM,
            Self::Aes256Gcm => CipherKind::AEAD2022_BLAKE3_AES_256_GCM,
            Self::Chacha20Poly1305 => CipherKind::AEAD2022_BLAKE3_CHACHA20_POLY1305,
        }
    }

    /// Key length in bytes.
    pub fn key_len(self) -> usize {
        match self {
            Self::Aes128Gcm => 16,
            Self::Aes256Gcm | Self::Chacha20Poly1305 => 32,
        }
    }

    /// Whether packets carry identity headers (the AES methods).
    pub fn has_identity(self) -> bool {
        !matches!(self, Self::Chacha20Poly1305)
    }

    /// The cipher for a session's packets under `key` (for ChaCha the session id does
    /// not matter). Deriving an AES session key costs a BLAKE3 derivation and a key
    /// schedule, so callers keep it per session.
    pub fn cipher(self, key: &[u8], session_id: u64) -> UdpCipher {
        UdpCipher::new(self.kind(), key, session_id)
    }

    fn ecb(self, key: &[u8], block: &mut [u8; 16], encrypt: bool) -> Result<(), PacketError> {
        let block = aes::Block::from_mut_slice(block);
        let bad_key = |_| PacketError::KeyLength;
        match (self, encrypt) {
            (Self::Aes128Gcm, false) => aes::Aes128::new_from_slice(key)
                .map_err(bad_key)?
                .decrypt_block(block),
            (Self::Aes128Gcm, true) => aes::Aes128::new_from_slice(key)
                .map_err(bad_key)?
                .encrypt_block(block),
            (Self::Aes256Gcm, false) => aes::Aes256::new_from_slice(key)
                .map_err(bad_key)?
                .decrypt_block(block),
            (Self::Aes256Gcm, true) => aes::Aes256::new_from_slice(key)
                .map_err(bad_key)?
                .encrypt_block(block),
            (Self::Chacha20Poly1305, _) => return Err(PacketError::KeyLength),
        }
        Ok(())
    }
}

/// Why a client packet was not opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PacketError {
    /// Shorter than the method's smallest packet.
    #[error("packet of {got} bytes is shorter than the smallest of {need}")]
    TooShort {
        /// The smallest valid length.
        need: usize,
        /// The packet's length.
        got: usize,
    },
    /// A key of the wrong length for the method (a configuration slip).
    #[error("key length does not fit the method")]
    KeyLength,
    /// The AEAD tag did not verify: wrong key, or tampered bytes.
    #[error("packet does not authenticate")]
    Decrypt,
    /// The body's type byte is not a client's.
    #[error("packet type {0} is not a client packet")]
    Type(u8),
    /// The timestamp is more than [`MAX_CLOCK_SKEW`] seconds from now.
    #[error("timestamp {sent} is more than 30 s from now ({now})")]
    Timestamp {
        /// The packet's timestamp.
        sent: u64,
        /// Our time.
        now: u64,
    },
    /// The padding runs past the end of the packet.
    #[error("padding of {0} bytes runs past the packet")]
    Padding(u16),
    /// The destination is cut short.
    #[error("destination address is cut short")]
    TruncatedAddress,
    /// The destination is not a valid address.
    #[error("destination: {0}")]
    Address(#[from] AddressError),
    /// The body's type byte is not a server's (a client reading an answer).
    #[error("packet type {0} is not a server packet")]
    NotServer(u8),
    /// A server packet answers another client session.
    #[error("packet answers client session {0:#x}, not ours")]
    OtherSession(u64),
    /// The packet id was already seen in its session (or is too old to tell).
    #[error("packet id {0} replayed")]
    Replayed(u64),
}

/// The separate header of an AES-method packet, decrypted, and its identity hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The client's session.
    pub session_id: u64,
    /// The packet's number in the session.
    pub packet_id: u64,
    /// The first 16 bytes of BLAKE3 of the user's key, when the packet carries an
    /// identity header.
    pub identity: Option<[u8; IDENTITY_LEN]>,
    plain: [u8; HEADER_LEN],
}

/// An opened client packet.
#[derive(Debug, PartialEq, Eq)]
pub struct ClientPacket<'a> {
    /// The client's session.
    pub session_id: u64,
    /// The packet's number in the session.
    pub packet_id: u64,
    /// Where the payload goes, checked.
    pub address: Address,
    /// The datagram to send.
    pub payload: &'a [u8],
}

impl Header {
    /// Reads the separate header of an AES-method `packet` with the server key `psk`;
    /// `identity` says whether an identity header follows (several users on the key).
    /// The packet itself is left as it is.
    pub fn read(
        method: Method,
        psk: &[u8],
        packet: &[u8],
        identity: bool,
    ) -> Result<Self, PacketError> {
        let eih = if identity { IDENTITY_LEN } else { 0 };
        let need = HEADER_LEN + eih + TAG_LEN + BODY_FIXED;
        if packet.len() < need {
            return Err(PacketError::TooShort {
                need,
                got: packet.len(),
            });
        }
        let mut plain = [0u8; HEADER_LEN];
        plain.copy_from_slice(&packet[..HEADER_LEN]);
        method.ecb(psk, &mut plain, false)?;
        let identity = if identity {
            let mut hash = [0u8; IDENTITY_LEN];
            hash.copy_from_slice(&packet[HEADER_LEN..HEADER_LEN + IDENTITY_LEN]);
            method.ecb(psk, &mut hash, false)?;
            hash.iter_mut().zip(plain).for_each(|(h, p)| *h ^= p);
            Some(hash)
        } else {
            None
        };
        Ok(Self {
            session_id: u64::from_be_bytes(plain[..8].try_into().unwrap_or_default()),
            packet_id: u64::from_be_bytes(plain[8..].try_into().unwrap_or_default()),
            identity,
            plain,
        })
    }

    /// Decrypts the rest of `packet` in place with the session's `cipher` (from the
    /// user's key) and parses its body.
    pub fn open<'a>(
        &self,
        cipher: &UdpCipher,
        packet: &'a mut [u8],
        now: u64,
    ) -> Result<ClientPacket<'a>, PacketError> {
        let start = HEADER_LEN
            + if self.identity.is_some() {
                IDENTITY_LEN
            } else {
                0
            };
        let sealed = packet.get_mut(start..).ok_or(PacketError::TooShort {
            need: start,
            got: 0,
        })?;
        if sealed.len() < TAG_LEN + BODY_FIXED {
            return Err(PacketError::TooShort {
                need: start + TAG_LEN + BODY_FIXED,
                got: start + sealed.len(),
            });
        }
        if !cipher.decrypt_packet(&self.plain[4..], sealed) {
            return Err(PacketError::Decrypt);
        }
        let body = &sealed[..sealed.len() - TAG_LEN];
        let (address, payload) = parse_body(body, now)?;
        Ok(ClientPacket {
            session_id: self.session_id,
            packet_id: self.packet_id,
            address,
            payload,
        })
    }
}

/// Opens a ChaCha-method `packet` in place with a user's `cipher`.
pub fn open_chacha<'a>(
    cipher: &UdpCipher,
    packet: &'a mut [u8],
    now: u64,
) -> Result<ClientPacket<'a>, PacketError> {
    let need = CHACHA_NONCE_LEN + HEADER_LEN + BODY_FIXED + TAG_LEN;
    if packet.len() < need {
        return Err(PacketError::TooShort {
            need,
            got: packet.len(),
        });
    }
    let (nonce, sealed) = packet.split_at_mut(CHACHA_NONCE_LEN);
    if !cipher.decrypt_packet(nonce, sealed) {
        return Err(PacketError::Decrypt);
    }
    let plain = &sealed[..sealed.len() - TAG_LEN];
    let (ids, body) = plain.split_at(HEADER_LEN);
    let (address, payload) = parse_body(body, now)?;
    Ok(ClientPacket {
        session_id: u64::from_be_bytes(ids[..8].try_into().unwrap_or_default()),
        packet_id: u64::from_be_bytes(ids[8..].try_into().unwrap_or_default()),
        address,
        payload,
    })
}

/// Parses a decrypted client body: type, timestamp (checked against `now`), padding,
/// destination, payload.
pub fn parse_body(body: &[u8], now: u64) -> Result<(Address, &[u8]), PacketError> {
    let Some((fixed, rest)) = body.split_first_chunk::<BODY_FIXED>() else {
        return Err(PacketError::TooShort {
            need: BODY_FIXED,
            got: body.len(),
        });
    };
    if fixed[0] != CLIENT_TYPE {
        return Err(PacketError::Type(fixed[0]));
    }
    let sent = u64::from_be_bytes(fixed[1..9].try_into().unwrap_or_default());
    if sent.abs_diff(now) > MAX_CLOCK_SKEW {
        return Err(PacketError::Timestamp { sent, now });
    }
    let padding = u16::from_be_bytes([fixed[9], fixed[10]]);
    let rest = rest
        .get(usize::from(padding)..)
        .ok_or(PacketError::Padding(padding))?;
    let (address, used) = Address::parse_socks(rest)?.ok_or(PacketError::TruncatedAddress)?;
    Ok((address, &rest[used..]))
}

/// What a client puts in one packet (for tests, fuzzing and our own client).
#[derive(Debug, Clone)]
pub struct Sealing<'a> {
    /// The method.
    pub method: Method,
    /// The server key (AES: encrypts the header; ChaCha: unused).
    pub psk: &'a [u8],
    /// The user's key when it differs from the server key (AES with several users:
    /// adds an identity header; ChaCha: the key itself).
    pub user_key: Option<&'a [u8]>,
    /// The client's session.
    pub session_id: u64,
    /// The packet's number.
    pub packet_id: u64,
    /// Unix seconds to write as the timestamp.
    pub now: u64,
    /// Padding length.
    pub padding: u16,
    /// ChaCha's nonce (random per packet in a real client).
    pub nonce: [u8; CHACHA_NONCE_LEN],
}

impl Sealing<'_> {
    /// Appends the sealed packet carrying `body` (already encoded: see
    /// [`encode_body`]) to `out`.
    pub fn seal_body(&self, body: &[u8], out: &mut Vec<u8>) -> Result<(), PacketError> {
        let key = self.user_key.unwrap_or(self.psk);
        let mut ids = [0u8; HEADER_LEN];
        ids[..8].copy_from_slice(&self.session_id.to_be_bytes());
        ids[8..].copy_from_slice(&self.packet_id.to_be_bytes());
        let cipher = self.method.cipher(key, self.session_id);
        let start = out.len();
        if !self.method.has_identity() {
            out.extend_from_slice(&self.nonce);
            out.extend_from_slice(&ids);
            out.extend_from_slice(body);
            out.extend_from_slice(&[0u8; TAG_LEN]);
            let (nonce, sealed) = out[start..].split_at_mut(CHACHA_NONCE_LEN);
            cipher.encrypt_packet(nonce, sealed);
            return Ok(());
        }
        let mut header = ids;
        self.method.ecb(self.psk, &mut header, true)?;
        out.extend_from_slice(&header);
        if let Some(user_key) = self.user_key {
            let mut eih = [0u8; IDENTITY_LEN];
            eih.copy_from_slice(&blake3::hash(user_key).as_bytes()[..IDENTITY_LEN]);
            eih.iter_mut().zip(ids).for_each(|(e, p)| *e ^= p);
            self.method.ecb(self.psk, &mut eih, true)?;
            out.extend_from_slice(&eih);
        }
        let body_at = out.len();
        out.extend_from_slice(body);
        out.extend_from_slice(&[0u8; TAG_LEN]);
        cipher.encrypt_packet(&ids[4..], &mut out[body_at..]);
        Ok(())
    }

    /// Appends a whole packet for `payload` to `address`.
    pub fn seal(
        &self,
        address: &Address,
        payload: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), PacketError> {
        let mut body = Vec::with_capacity(BODY_FIXED + usize::from(self.padding) + 64);
        encode_body(self.now, self.padding, address, payload, &mut body);
        self.seal_body(&body, out)
    }
}

/// Encodes a client body: type, timestamp `now`, `padding` zero bytes, the address,
/// the payload.
pub fn encode_body(now: u64, padding: u16, address: &Address, payload: &[u8], out: &mut Vec<u8>) {
    out.push(CLIENT_TYPE);
    out.extend_from_slice(&now.to_be_bytes());
    out.extend_from_slice(&padding.to_be_bytes());
    out.resize(out.len() + usize::from(padding), 0);
    address.encode_socks(out);
    out.extend_from_slice(payload);
}

#[cfg(test)]
#[path = "shadowsocks_tests.rs"]
mod tests;
