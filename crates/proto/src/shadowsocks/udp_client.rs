//! Shadowsocks 2022 (SIP022) UDP, the client's side: [`UdpSealer`] seals a session's
//! packets to the server, [`UdpOpener`] opens the server's answers.
//!
//! A client packet (AES methods) is the separate header `session id ‖ packet id`
//! encrypted with the first key ([`ClientKeys::first`]), one identity header per
//! identity key (`AES(iPSKᵢ, BLAKE3(next key)[..16] ⊕ separate header)`), then the
//! body sealed with the session subkey of the user's key; the body is what
//! [`encode_body`] writes. For ChaCha: a 24-byte random nonce, then
//! `XChaCha20-Poly1305(user key, separate header ‖ body)`.
//!
//! A server packet is sealed with the user's key alone (header and body), under the
//! server's own session id; its body is `type (1) ‖ timestamp ‖ client session id ‖
//! padding length ‖ padding ‖ source address (SOCKS form) ‖ payload`. The opener
//! checks the type, the timestamp (within [`MAX_CLOCK_SKEW`]), that the packet
//! answers this client's session, and drops a packet id it has seen (a sliding
//! window per server session; the last [`MAX_SERVER_SESSIONS`] sessions are kept).
//!
//! Time and randomness come in as arguments.

use shadowsocks_crypto::v2::udp::UdpCipher;

use super::keys::ClientKeys;
use super::window::Window;
use super::{
    BODY_FIXED, CHACHA_NONCE_LEN, HEADER_LEN, IDENTITY_LEN, MAX_CLOCK_SKEW, Method, PacketError,
    TAG_LEN, encode_body,
};
use crate::address::Address;

/// Server sessions an opener remembers (SIP022 asks for at least the current and
/// the previous one: a server that restarts starts a new session).
pub const MAX_SERVER_SESSIONS: usize = 4;
/// The type byte of a server's packet.
const SERVER_TYPE: u8 = 1;
/// A server body's fixed part: type, timestamp, client session id, padding length.
const SERVER_FIXED: usize = 1 + 8 + 8 + 2;

/// Seals one client session's packets.
pub struct UdpSealer {
    keys: ClientKeys,
    session_id: u64,
    next_packet_id: u64,
    cipher: UdpCipher,
}

impl std::fmt::Debug for UdpSealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UdpSealer")
            .field("session_id", &self.session_id)
            .field("next_packet_id", &self.next_packet_id)
            .finish_non_exhaustive()
    }
}

impl UdpSealer {
    /// A session `session_id` (random) with `keys`.
    pub fn new(keys: ClientKeys, session_id: u64) -> Result<Self, PacketError> {
        let method = keys.method();
        if keys.user().len() != method.key_len()
            || keys
                .identities()
                .iter()
                .any(|k| k.len() != method.key_len())
        {
            return Err(PacketError::KeyLength);
        }
        let cipher = method.cipher(keys.user(), session_id);
        Ok(Self {
            keys,
            session_id,
            next_packet_id: 0,
            cipher,
        })
    }

    /// The session's id.
    pub fn session_id(&self) -> u64 {
        self.session_id
    }

    /// Appends the session's next packet, carrying `payload` to `to`, with the
    /// timestamp `now`, `padding` zero bytes and (ChaCha) the random `nonce`.
    pub fn seal(
        &mut self,
        to: &Address,
        payload: &[u8],
        now: u64,
        padding: u16,
        nonce: &[u8; CHACHA_NONCE_LEN],
        out: &mut Vec<u8>,
    ) -> Result<(), PacketError> {
        let method = self.keys.method();
        let packet_id = self.next_packet_id;
        self.next_packet_id += 1;
        let mut ids = [0u8; HEADER_LEN];
        ids[..8].copy_from_slice(&self.session_id.to_be_bytes());
        ids[8..].copy_from_slice(&packet_id.to_be_bytes());
        let start = out.len();
        if !method.has_identity() {
            out.extend_from_slice(nonce);
            out.extend_from_slice(&ids);
            encode_body(now, padding, to, payload, out);
            out.resize(out.len() + TAG_LEN, 0);
            let (nonce, sealed) = out[start..].split_at_mut(CHACHA_NONCE_LEN);
            self.cipher.encrypt_packet(nonce, sealed);
            return Ok(());
        }
        let mut header = ids;
        method.ecb(self.keys.first(), &mut header, true)?;
        out.extend_from_slice(&header);
        for (i, identity) in self.keys.identities().iter().enumerate() {
            let mut eih = [0u8; IDENTITY_LEN];
            eih.copy_from_slice(&blake3::hash(self.keys.next_after(i)).as_bytes()[..IDENTITY_LEN]);
            eih.iter_mut().zip(ids).for_each(|(e, p)| *e ^= p);
            method.ecb(identity, &mut eih, true)?;
            out.extend_from_slice(&eih);
        }
        let body_at = out.len();
        encode_body(now, padding, to, payload, out);
        out.resize(out.len() + TAG_LEN, 0);
        self.cipher.encrypt_packet(&ids[4..], &mut out[body_at..]);
        Ok(())
    }
}

/// A server's answer, opened.
#[derive(Debug, PartialEq, Eq)]
pub struct ServerPacket<'a> {
    /// The server's session.
    pub session_id: u64,
    /// The packet's number in it.
    pub packet_id: u64,
    /// Where the payload came from.
    pub source: Address,
    /// The datagram.
    pub payload: &'a [u8],
}

/// One server session the opener knows.
struct ServerSession {
    id: u64,
    /// AES methods: the session's cipher (a key derivation each, so kept).
    cipher: Option<UdpCipher>,
    window: Window,
    /// When it was last used, in the opener's packet count.
    used: u64,
}

/// Opens the server's packets of one client session.
pub struct UdpOpener {
    method: Method,
    key: Vec<u8>,
    client_session_id: u64,
    /// ChaCha: one cipher for every packet (the key itself, a nonce per packet).
    chacha: Option<UdpCipher>,
    sessions: Vec<ServerSession>,
    opened: u64,
}

impl std::fmt::Debug for UdpOpener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UdpOpener")
            .field("client_session_id", &self.client_session_id)
            .field("server_sessions", &self.sessions.len())
            .finish_non_exhaustive()
    }
}

impl UdpOpener {
    /// Opens answers to the client session `client_session_id` with `keys`.
    pub fn new(keys: &ClientKeys, client_session_id: u64) -> Result<Self, PacketError> {
        let method = keys.method();
        if keys.user().len() != method.key_len() {
            return Err(PacketError::KeyLength);
        }
        Ok(Self {
            method,
            key: keys.user().to_vec(),
            client_session_id,
            chacha: (!method.has_identity()).then(|| method.cipher(keys.user(), 0)),
            sessions: Vec::new(),
            opened: 0,
        })
    }

    /// Opens `packet` in place, checked; a packet id already seen in its server
    /// session is [`PacketError::Replayed`].
    pub fn open<'a>(
        &mut self,
        packet: &'a mut [u8],
        now: u64,
    ) -> Result<ServerPacket<'a>, PacketError> {
        self.opened += 1;
        let (session_id, packet_id, body) = match &self.chacha {
            Some(cipher) => {
                let need = CHACHA_NONCE_LEN + HEADER_LEN + SERVER_FIXED + TAG_LEN;
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
                let (session_id, packet_id) = ids_of(ids);
                (session_id, packet_id, body)
            }
            None => {
                let need = HEADER_LEN + SERVER_FIXED + TAG_LEN;
                if packet.len() < need {
                    return Err(PacketError::TooShort {
                        need,
                        got: packet.len(),
                    });
                }
                let mut ids = [0u8; HEADER_LEN];
                ids.copy_from_slice(&packet[..HEADER_LEN]);
                self.method.ecb(&self.key, &mut ids, false)?;
                let (session_id, _) = ids_of(&ids);
                let fresh;
                let cipher = match self.sessions.iter().find(|s| s.id == session_id) {
                    Some(s) => s.cipher.as_ref().ok_or(PacketError::KeyLength)?,
                    None => {
                        fresh = self.method.cipher(&self.key, session_id);
                        &fresh
                    }
                };
                let sealed = &mut packet[HEADER_LEN..];
                if !cipher.decrypt_packet(&ids[4..], sealed) {
                    return Err(PacketError::Decrypt);
                }
                let (session_id, packet_id) = ids_of(&ids);
                let body = &sealed[..sealed.len() - TAG_LEN];
                (session_id, packet_id, body)
            }
        };
        let (source, payload) = parse_server_body(body, now, self.client_session_id)?;
        self.accept(session_id, packet_id)?;
        Ok(ServerPacket {
            session_id,
            packet_id,
            source,
            payload,
        })
    }

    /// Records an authenticated, well-formed packet in its session's window.
    fn accept(&mut self, session_id: u64, packet_id: u64) -> Result<(), PacketError> {
        let now = self.opened;
        if let Some(s) = self.sessions.iter_mut().find(|s| s.id == session_id) {
            s.used = now;
            return if s.window.accept(packet_id) {
                Ok(())
            } else {
                Err(PacketError::Replayed(packet_id))
            };
        }
        if self.sessions.len() >= MAX_SERVER_SESSIONS
            && let Some(oldest) = self
                .sessions
                .iter()
                .enumerate()
                .min_by_key(|(_, s)| s.used)
                .map(|(i, _)| i)
        {
            self.sessions.swap_remove(oldest);
        }
        let mut window = Window::default();
        window.accept(packet_id);
        self.sessions.push(ServerSession {
            id: session_id,
            cipher: self
                .chacha
                .is_none()
                .then(|| self.method.cipher(&self.key, session_id)),
            window,
            used: now,
        });
        Ok(())
    }
}

fn ids_of(ids: &[u8]) -> (u64, u64) {
    let mut s = [0u8; 8];
    let mut p = [0u8; 8];
    s.copy_from_slice(&ids[..8]);
    p.copy_from_slice(&ids[8..16]);
    (u64::from_be_bytes(s), u64::from_be_bytes(p))
}

/// Parses a decrypted server body: type, timestamp (checked against `now`), the
/// client session it answers (must be `client_session_id`), padding, source,
/// payload.
pub fn parse_server_body(
    body: &[u8],
    now: u64,
    client_session_id: u64,
) -> Result<(Address, &[u8]), PacketError> {
    let Some((fixed, rest)) = body.split_first_chunk::<SERVER_FIXED>() else {
        return Err(PacketError::TooShort {
            need: SERVER_FIXED,
            got: body.len(),
        });
    };
    if fixed[0] != SERVER_TYPE {
        return Err(PacketError::NotServer(fixed[0]));
    }
    let (sent, client) = ids_of(&fixed[1..17]);
    if sent.abs_diff(now) > MAX_CLOCK_SKEW {
        return Err(PacketError::Timestamp { sent, now });
    }
    if client != client_session_id {
        return Err(PacketError::OtherSession(client));
    }
    let padding = u16::from_be_bytes([fixed[17], fixed[18]]);
    let rest = rest
        .get(usize::from(padding)..)
        .ok_or(PacketError::Padding(padding))?;
    let (source, used) = Address::parse_socks(rest)?.ok_or(PacketError::TruncatedAddress)?;
    Ok((source, &rest[used..]))
}

/// A server's packet, sealed (for tests, fuzzing and our own checks).
#[derive(Debug, Clone)]
pub struct ServerSealing<'a> {
    /// The method.
    pub method: Method,
    /// The user's key.
    pub key: &'a [u8],
    /// The server's session.
    pub session_id: u64,
    /// The packet's number.
    pub packet_id: u64,
    /// ChaCha's nonce.
    pub nonce: [u8; CHACHA_NONCE_LEN],
}

impl ServerSealing<'_> {
    /// Appends the packet carrying `body` (see [`encode_server_body`]).
    pub fn seal_body(&self, body: &[u8], out: &mut Vec<u8>) -> Result<(), PacketError> {
        if self.key.len() != self.method.key_len() {
            return Err(PacketError::KeyLength);
        }
        let mut ids = [0u8; HEADER_LEN];
        ids[..8].copy_from_slice(&self.session_id.to_be_bytes());
        ids[8..].copy_from_slice(&self.packet_id.to_be_bytes());
        let cipher = self.method.cipher(self.key, self.session_id);
        let start = out.len();
        if !self.method.has_identity() {
            out.extend_from_slice(&self.nonce);
            out.extend_from_slice(&ids);
            out.extend_from_slice(body);
            out.resize(out.len() + TAG_LEN, 0);
            let (nonce, sealed) = out[start..].split_at_mut(CHACHA_NONCE_LEN);
            cipher.encrypt_packet(nonce, sealed);
            return Ok(());
        }
        let mut header = ids;
        self.method.ecb(self.key, &mut header, true)?;
        out.extend_from_slice(&header);
        let body_at = out.len();
        out.extend_from_slice(body);
        out.resize(out.len() + TAG_LEN, 0);
        cipher.encrypt_packet(&ids[4..], &mut out[body_at..]);
        Ok(())
    }
}

/// Encodes a server body: type 1, `now`, the client's session, `padding` zero
/// bytes, the source, the payload.
pub fn encode_server_body(
    now: u64,
    client_session_id: u64,
    padding: u16,
    source: &Address,
    payload: &[u8],
    out: &mut Vec<u8>,
) {
    out.push(SERVER_TYPE);
    out.extend_from_slice(&now.to_be_bytes());
    out.extend_from_slice(&client_session_id.to_be_bytes());
    out.extend_from_slice(&padding.to_be_bytes());
    out.resize(out.len() + usize::from(padding), 0);
    source.encode_socks(out);
    out.extend_from_slice(payload);
}

// BODY_FIXED is the client's; the server's has the client session id on top.
const _: () = assert!(SERVER_FIXED == BODY_FIXED + 8);

#[cfg(test)]
#[path = "udp_client_tests.rs"]
mod tests;
