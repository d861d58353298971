//! REALITY's authentication: what a REALITY server reads in a ClientHello to tell
//! its own clients from everyone else, and how it answers them.
//!
//! The rules below are those of Xray-core 24.11.21's client
//! (`transport/internet/reality/reality.go`) and of the server it ships with
//! (`github.com/xtls/reality` at 48f0b2d, `tls.go` and `handshake_server_tls13.go`),
//! read from their sources; the tests here check them with exact bytes, and the
//! node's tests against the real Xray client.
//!
//! - **Keys.** The server has a static X25519 key pair; clients know its public key
//!   (`publicKey`, `pbk`). Both are written in base64url without padding (Go's
//!   `RawURLEncoding`, 43 characters). A short id is 0 to 8 bytes, written as 0 to 16
//!   hex digits and zero-padded to 8 bytes (so `""` is eight zero bytes).
//! - **The auth key.** The client takes the X25519 key share it offers in its
//!   ClientHello and computes the shared secret with the server's public key; the
//!   server does the same from its private key and that share. The auth key is
//!   HKDF-SHA256 of that secret, salt = the hello's `random[..20]`, info =
//!   `"REALITY"`, 32 bytes. A shared secret of all zeroes (a low-order share) is
//!   refused, as Go's `curve25519.X25519` refuses it.
//! - **The sealed session id.** The hello's 32-byte legacy session id holds 16 bytes
//!   of plaintext sealed with an AEAD under the auth key, nonce = `random[20..]`
//!   (12 bytes), additional data = the whole ClientHello handshake message (type,
//!   length, body) with the session id's 32 bytes set to zero. The plaintext is the
//!   client's version (3 bytes: Xray's x.y.z), a reserved zero byte, the client's Unix
//!   time in seconds (u32, big-endian), and the short id (8 bytes). The AEAD is
//!   AES-256-GCM when the first cipher suite of the hello that Go knows is an AES-GCM
//!   one, else ChaCha20-Poly1305 (both sides call Go's `aesgcmPreferred`; a
//!   browser-like hello lists `TLS_AES_128_GCM_SHA256` first, so in practice
//!   AES-256-GCM). [`SessionCipher::for_suites`] is that rule.
//! - **Acceptance.** The server answers as REALITY only when the hello offers TLS 1.3,
//!   its SNI is one of the configured server names, the session id opens, the short
//!   id is a configured one, the client's time is within the allowed difference of
//!   the server's (`|now - time| <= max`, `now` in milliseconds, the client's time in
//!   whole seconds; 0 = unchecked) and its version within the configured range, if
//!   any ([`Policy::check`]). Everyone else is spliced to the target site by the
//!   caller. This crate adds one rule Xray's server lacks: an accepted hello seen
//!   again is refused ([`ReplayFilter`]).
//! - **The certificate.** An accepted client gets a certificate whose public key is an
//!   Ed25519 key and whose signature field holds HMAC-SHA512(auth key, that public
//!   key's 32 bytes) ([`certificate_signature`]); the client checks exactly that
//!   instead of a chain, then the CertificateVerify signature with that key.
//!
//! Everything here is pure: time comes in as an argument, randomness as bytes.

use std::collections::HashSet;

use ring::aead::{AES_256_GCM, Aad, CHACHA20_POLY1305, LessSafeKey, Nonce, UnboundKey};
use ring::{hkdf, hmac};
use thiserror::Error;

use crate::client_hello::{ClientHello, SESSION_ID_OFFSET};

/// The HKDF info of the auth key.
const INFO: &[u8] = b"REALITY";

/// A key or short id that does not read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum KeyError {
    /// Not base64 (either alphabet, padding optional).
    #[error("not base64url")]
    NotBase64,
    /// Decodes to the wrong number of bytes.
    #[error("decodes to {0} bytes, not 32")]
    Length(usize),
    /// A short id that is not 0 to 16 hex digits, an even number of them.
    #[error("a short id is 0 to 16 hex digits, an even number of them")]
    ShortId,
    /// A client version that is not `x.y.z` with each part 0 to 255.
    #[error("a version is x.y.z, each part 0 to 255")]
    Version,
}

fn key_bytes(text: &str) -> Result<[u8; 32], KeyError> {
    let bytes = crate::base64::decode_lenient(text.trim().as_bytes()).ok_or(KeyError::NotBase64)?;
    <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| KeyError::Length(bytes.len()))
}

/// The server's static X25519 private key. `Debug` never shows it.
#[derive(Clone)]
pub struct PrivateKey(x25519_dalek::StaticSecret);

impl std::fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PrivateKey(***)")
    }
}

impl PrivateKey {
    /// A key from 32 random bytes, clamped as RFC 7748 says (and as `xray x25519`
    /// prints its keys).
    pub fn from_random(mut bytes: [u8; 32]) -> Self {
        bytes[0] &= 248;
        bytes[31] &= 127;
        bytes[31] |= 64;
        Self(x25519_dalek::StaticSecret::from(bytes))
    }

    /// Reads a key in Xray's form (base64url, no padding; the standard alphabet and
    /// padding are accepted too). The error never repeats the text.
    pub fn parse(text: &str) -> Result<Self, KeyError> {
        key_bytes(text).map(|b| Self(x25519_dalek::StaticSecret::from(b)))
    }

    /// The key in Xray's form: base64url without padding.
    pub fn encode(&self) -> String {
        crate::base64::encode_url_unpadded(self.0.as_bytes())
    }

    /// The public key clients are given.
    pub fn public_key(&self) -> PublicKey {
        PublicKey(*x25519_dalek::PublicKey::from(&self.0).as_bytes())
    }

    /// The shared secret with a client's X25519 share; `None` when it is all zeroes
    /// (a low-order share).
    pub fn agree(&self, share: &[u8; 32]) -> Option<[u8; 32]> {
        let shared = self
            .0
            .diffie_hellman(&x25519_dalek::PublicKey::from(*share));
        shared.was_contributory().then(|| *shared.as_bytes())
    }
}

/// A server's public key, what clients call `publicKey` or `pbk`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PublicKey(pub [u8; 32]);

impl PublicKey {
    /// Reads a key in Xray's form.
    pub fn parse(text: &str) -> Result<Self, KeyError> {
        key_bytes(text).map(Self)
    }

    /// The key in Xray's form: base64url without padding.
    pub fn encode(&self) -> String {
        crate::base64::encode_url_unpadded(&self.0)
    }
}

/// A short id: up to 8 bytes, zero-padded to 8.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ShortId(pub [u8; 8]);

impl ShortId {
    /// Reads 0 to 16 hex digits (an even number).
    pub fn parse(text: &str) -> Result<Self, KeyError> {
        let digits = text.as_bytes();
        if digits.len() > 16 || !digits.len().is_multiple_of(2) {
            return Err(KeyError::ShortId);
        }
        let mut id = [0u8; 8];
        for (i, pair) in digits.chunks_exact(2).enumerate() {
            let hex = |c: u8| (c as char).to_digit(16).ok_or(KeyError::ShortId);
            id[i] = (hex(pair[0])? * 16 + hex(pair[1])?) as u8;
        }
        Ok(Self(id))
    }

    /// 16 hex digits.
    pub fn encode(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// A client version, Xray's x.y.z.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ClientVersion(pub [u8; 3]);

impl ClientVersion {
    /// Reads `x.y.z`, each part 0 to 255 (fewer parts mean zeroes, as Xray reads
    /// `minClientVer`).
    pub fn parse(text: &str) -> Result<Self, KeyError> {
        let mut v = [0u8; 3];
        for (i, part) in text.split('.').enumerate() {
            let slot = v.get_mut(i).ok_or(KeyError::Version)?;
            *slot = part.parse().map_err(|_| KeyError::Version)?;
        }
        Ok(Self(v))
    }
}

impl std::fmt::Display for ClientVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [x, y, z] = self.0;
        write!(f, "{x}.{y}.{z}")
    }
}

/// The key everything of one connection's REALITY is derived from.
#[derive(Clone, PartialEq, Eq)]
pub struct AuthKey(pub [u8; 32]);

impl std::fmt::Debug for AuthKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuthKey(***)")
    }
}

struct Len32;

impl hkdf::KeyType for Len32 {
    fn len(&self) -> usize {
        32
    }
}

impl AuthKey {
    /// HKDF-SHA256 of the shared secret, salt = `random[..20]`, info = `"REALITY"`.
    pub fn derive(shared: &[u8; 32], random: &[u8; 32]) -> Self {
        let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, &random[..20]).extract(shared);
        let mut key = [0u8; 32];
        // 32 bytes is far below HKDF-SHA256's limit of 255 × 32: neither call fails.
        if let Ok(okm) = prk.expand(&[INFO], Len32) {
            let _ = okm.fill(&mut key);
        }
        Self(key)
    }
}

/// The AEAD that seals the session id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionCipher {
    /// AES-256-GCM.
    AesGcm,
    /// ChaCha20-Poly1305.
    ChaCha20Poly1305,
}

/// The cipher suites Go's TLS knows (TLS 1.3 and the TLS 1.0-1.2 ones it
/// implements), as `aesgcmPreferred` skips unknown ones such as GREASE.
const GO_SUITES: [u16; 25] = [
    0x1301, 0x1302, 0x1303, 0xcca8, 0xcca9, 0xc02f, 0xc02b, 0xc030, 0xc02c, 0xc027, 0xc013, 0xc023,
    0xc009, 0xc014, 0xc00a, 0x009c, 0x009d, 0x003c, 0x002f, 0x0035, 0xc012, 0x000a, 0x0005, 0xc011,
    0xc007,
];

/// Of those, the AES-GCM ones in Go's `aesgcmCiphers` (`TLS_RSA_WITH_AES_*_GCM` are
/// not among them).
const GO_AES_GCM: [u16; 6] = [0x1301, 0x1302, 0xc02f, 0xc030, 0xc02b, 0xc02c];

impl SessionCipher {
    /// Go's `aesgcmPreferred`: AES-GCM when the first known suite is an AES-GCM one.
    pub fn for_suites(suites: &[u16]) -> Self {
        match suites.iter().find(|s| GO_SUITES.contains(s)) {
            Some(s) if GO_AES_GCM.contains(s) => Self::AesGcm,
            _ => Self::ChaCha20Poly1305,
        }
    }

    fn key(self, key: &AuthKey) -> LessSafeKey {
        let algorithm = match self {
            Self::AesGcm => &AES_256_GCM,
            Self::ChaCha20Poly1305 => &CHACHA20_POLY1305,
        };
        // Both take 32-byte keys.
        LessSafeKey::new(UnboundKey::new(algorithm, &key.0).expect("a 32-byte key"))
    }
}

/// What an authenticated client's session id says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAuth {
    /// The client's version (Xray's x.y.z).
    pub version: ClientVersion,
    /// The client's clock, Unix seconds.
    pub unix_time: u32,
    /// Its short id.
    pub short_id: ShortId,
}

impl ClientAuth {
    fn plaintext(&self) -> [u8; 16] {
        let mut p = [0u8; 16];
        p[..3].copy_from_slice(&self.version.0);
        p[4..8].copy_from_slice(&self.unix_time.to_be_bytes());
        p[8..].copy_from_slice(&self.short_id.0);
        p
    }
}

fn nonce(random: &[u8; 32]) -> Nonce {
    let mut n = [0u8; 12];
    n.copy_from_slice(&random[20..]);
    Nonce::assume_unique_for_key(n)
}

/// What the session id's seal covers as additional data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SealForm {
    /// Xray's: the whole ClientHello message with the session id zeroed. Its client
    /// (uTLS) writes the hello, seals it, and puts the seal in place before the
    /// hello enters the TLS transcript.
    Xray,
    /// Switchyard's tunnel links: [`TUNNEL_AAD`], the hello's random and its X25519
    /// share. Our client is rustls, which fixes the session id before it writes the
    /// hello and hashes what it wrote, so the seal cannot cover the hello itself;
    /// the random and the key share it covers are the hello's fresh values.
    Tunnel,
}

/// The first bytes of a tunnel seal's additional data.
pub const TUNNEL_AAD: &[u8] = b"switchyard tunnel REALITY";

fn tunnel_aad(random: &[u8; 32], share: &[u8; 32]) -> Vec<u8> {
    [TUNNEL_AAD, &random[..], &share[..]].concat()
}

/// The client's side of [`SealForm::Tunnel`]: the 32-byte session id for a hello
/// with `random`, the X25519 `share` and cipher suites `suites`.
pub fn tunnel_session_id(
    key: &AuthKey,
    random: &[u8; 32],
    share: &[u8; 32],
    suites: &[u16],
    auth: &ClientAuth,
) -> [u8; 32] {
    let mut sealed = auth.plaintext().to_vec();
    SessionCipher::for_suites(suites)
        .key(key)
        .seal_in_place_append_tag(
            nonce(random),
            Aad::from(&tunnel_aad(random, share)[..]),
            &mut sealed,
        )
        .expect("16 bytes fit an AEAD");
    let mut id = [0u8; 32];
    id.copy_from_slice(&sealed);
    id
}

/// Opens the hello's session id with `key`: `None` unless it is 32 bytes that
/// authenticate.
pub fn open(hello: &ClientHello, key: &AuthKey) -> Option<ClientAuth> {
    open_with(hello, key, SealForm::Xray)
}

/// [`open`] for a seal of `form`.
pub fn open_with(hello: &ClientHello, key: &AuthKey, form: SealForm) -> Option<ClientAuth> {
    let sealed: [u8; 32] = hello.session_id.as_slice().try_into().ok()?;
    let aad = match form {
        SealForm::Xray => {
            let mut aad = hello.message.clone();
            aad.get_mut(SESSION_ID_OFFSET..SESSION_ID_OFFSET + 32)?
                .fill(0);
            aad
        }
        SealForm::Tunnel => tunnel_aad(&hello.random, hello.x25519.as_ref()?),
    };
    let cipher = SessionCipher::for_suites(&hello.cipher_suites);
    let mut buf = sealed;
    let plain = cipher
        .key(key)
        .open_in_place(nonce(&hello.random), Aad::from(&aad[..]), &mut buf)
        .ok()?;
    let mut version = [0u8; 3];
    version.copy_from_slice(&plain[..3]);
    let mut short_id = [0u8; 8];
    short_id.copy_from_slice(&plain[8..16]);
    Some(ClientAuth {
        version: ClientVersion(version),
        unix_time: u32::from_be_bytes([plain[4], plain[5], plain[6], plain[7]]),
        short_id: ShortId(short_id),
    })
}

/// The client's side: seals `auth` into the session id of `message`, a ClientHello
/// handshake message with a 32-byte session id, random `random` and cipher suites
/// `suites` (what Xray's client does before it sends its hello). `false` when the
/// message has no room for it.
pub fn seal(
    message: &mut [u8],
    random: &[u8; 32],
    suites: &[u16],
    key: &AuthKey,
    auth: &ClientAuth,
) -> bool {
    let Some(id) = message.get_mut(SESSION_ID_OFFSET..SESSION_ID_OFFSET + 32) else {
        return false;
    };
    id.fill(0);
    let mut sealed = auth.plaintext().to_vec();
    let sealing = SessionCipher::for_suites(suites)
        .key(key)
        .seal_in_place_append_tag(nonce(random), Aad::from(&message[..]), &mut sealed);
    if sealing.is_err() {
        return false;
    }
    message[SESSION_ID_OFFSET..SESSION_ID_OFFSET + 32].copy_from_slice(&sealed);
    true
}

/// What an accepted client's certificate carries as its signature:
/// HMAC-SHA512(auth key, the certificate's Ed25519 public key).
pub fn certificate_signature(key: &AuthKey, ed25519_public: &[u8; 32]) -> [u8; 64] {
    let tag = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA512, &key.0), ed25519_public);
    let mut out = [0u8; 64];
    out.copy_from_slice(tag.as_ref());
    out
}

/// Why a hello is not a REALITY client's (for logs; the prober is told nothing).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum Refusal {
    /// It does not offer TLS 1.3.
    #[error("no TLS 1.3 offered")]
    NoTls13,
    /// Its SNI is not a configured server name (or it has none, and `""` is not one).
    #[error("server name {0:?} is not one of server_names")]
    ServerName(Option<String>),
    /// It has no X25519 key share, or a low-order one.
    #[error("no usable X25519 key share")]
    NoX25519,
    /// Its session id does not open under the auth key (another key, or no REALITY).
    #[error("the session id does not authenticate")]
    Unauthenticated,
    /// The short id is not a configured one.
    #[error("short id {0} is not one of short_ids")]
    ShortId(String),
    /// The client's clock is too far from the server's (milliseconds, signed: the
    /// server's time minus the client's).
    #[error("client clock off by {0} ms, more than max_time_diff_ms")]
    Clock(i64),
    /// The client's version is outside the configured range.
    #[error("client version {0} outside the configured range")]
    Version(ClientVersion),
    /// The same hello was accepted before: a replay.
    #[error("a replayed ClientHello")]
    Replay,
}

/// Who a REALITY server accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// SNI host names accepted, lowercase; `""` accepts a hello without SNI.
    pub server_names: HashSet<String>,
    /// Short ids accepted.
    pub short_ids: HashSet<ShortId>,
    /// The largest difference between the client's clock and the server's, in
    /// milliseconds; 0 = unchecked.
    pub max_time_diff_ms: u64,
    /// The oldest client version accepted, if any.
    pub min_client_version: Option<ClientVersion>,
    /// The newest client version accepted, if any.
    pub max_client_version: Option<ClientVersion>,
}

impl Policy {
    /// Whether the SNI and TLS version are ones this server answers; checked before
    /// any key is computed, as Xray's server does.
    pub fn check_hello(&self, hello: &ClientHello) -> Result<(), Refusal> {
        if !hello.offers_tls13 {
            return Err(Refusal::NoTls13);
        }
        let name = hello
            .server_name
            .as_deref()
            .unwrap_or("")
            .to_ascii_lowercase();
        if !self.server_names.contains(&name) {
            return Err(Refusal::ServerName(hello.server_name.clone()));
        }
        Ok(())
    }

    /// Whether an opened session id is one this server accepts at `now_ms` (Unix
    /// milliseconds).
    pub fn check(&self, auth: &ClientAuth, now_ms: i64) -> Result<(), Refusal> {
        if self
            .min_client_version
            .is_some_and(|min| auth.version < min)
            || self
                .max_client_version
                .is_some_and(|max| auth.version > max)
        {
            return Err(Refusal::Version(auth.version));
        }
        if self.max_time_diff_ms != 0 {
            let diff = now_ms.saturating_sub(i64::from(auth.unix_time) * 1000);
            if diff.unsigned_abs() > self.max_time_diff_ms {
                return Err(Refusal::Clock(diff));
            }
        }
        if !self.short_ids.contains(&auth.short_id) {
            return Err(Refusal::ShortId(auth.short_id.encode()));
        }
        Ok(())
    }
}

/// Every check at once: the auth key and what the session id says, or why the hello
/// is not a REALITY client's. The caller then asks its [`ReplayFilter`].
pub fn authenticate(
    policy: &Policy,
    key: &PrivateKey,
    hello: &ClientHello,
    now_ms: i64,
) -> Result<(AuthKey, ClientAuth), Refusal> {
    authenticate_with(policy, key, hello, now_ms, SealForm::Xray)
}

/// [`authenticate`] for clients that seal in `form`.
pub fn authenticate_with(
    policy: &Policy,
    key: &PrivateKey,
    hello: &ClientHello,
    now_ms: i64,
    form: SealForm,
) -> Result<(AuthKey, ClientAuth), Refusal> {
    policy.check_hello(hello)?;
    let share = hello.x25519.as_ref().ok_or(Refusal::NoX25519)?;
    let shared = key.agree(share).ok_or(Refusal::NoX25519)?;
    let auth_key = AuthKey::derive(&shared, &hello.random);
    let auth = open_with(hello, &auth_key, form).ok_or(Refusal::Unauthenticated)?;
    policy.check(&auth, now_ms)?;
    Ok((auth_key, auth))
}

#[path = "reality_replay.rs"]
mod replay;

pub use replay::{REPLAY_CAPACITY, REPLAY_MEMORY_UNCHECKED_MS, ReplayFilter};

#[cfg(test)]
#[path = "reality_tests.rs"]
mod tests;
