//! The TLS ClientHello as a REALITY server reads it before any TLS library sees the
//! connection (RFC 8446, sections 4.1.2 and 5.1).
//!
//! [`parse`] takes the first bytes a client sent, TLS records as they came, and
//! returns the ClientHello handshake message reassembled from as many handshake
//! records as it spans, with the fields REALITY needs: the random, the legacy
//! session id (where REALITY's client puts its sealed auth) and its offset in the
//! message, the cipher suites, the SNI host name, whether TLS 1.3 is offered, and the
//! X25519 key share. Nothing else is interpreted; extensions are only walked, so an
//! unknown or GREASE one is no error.
//!
//! The parsing contract of the crate holds: no panic whatever the bytes, `Ok(None)`
//! for a prefix of a valid hello, a typed error as soon as the bytes cannot be one.
//! Memory is bounded: the message is at most [`MAX_MESSAGE`] bytes, and nothing is
//! allocated by an untrusted length beyond that.

use thiserror::Error;

/// The longest ClientHello message accepted, header included: 16 KiB. A browser's
/// hello, post-quantum key share and padding included, is under 2 KiB; Go's own
/// limit is 64 KiB, but a REALITY client's hello never comes near this one.
pub const MAX_MESSAGE: usize = 16 * 1024;

/// The largest TLS record payload (2^14 bytes, RFC 8446 section 5.1).
pub const MAX_RECORD: usize = 16 * 1024;

/// The most records a hello may span. Clients send it in one or two; one cut into
/// more is no REALITY client's ([`HelloError::Fragmented`]).
pub const MAX_RECORDS: usize = 64;

/// What a reader buffers at most before [`parse`] has its answer: a [`MAX_MESSAGE`]
/// hello in [`MAX_RECORDS`] records.
pub const MAX_RECORDS_LEN: usize = MAX_MESSAGE + 5 * MAX_RECORDS;

/// TLS record content type of handshake records.
const HANDSHAKE: u8 = 22;
/// Handshake message type of the ClientHello.
const CLIENT_HELLO: u8 = 1;
/// Where the legacy session id starts in the message: type (1), length (3), legacy
/// version (2), random (32), session id length (1).
pub const SESSION_ID_OFFSET: usize = 39;

/// Extension types read.
const SERVER_NAME: u16 = 0;
const SUPPORTED_VERSIONS: u16 = 43;
const KEY_SHARE: u16 = 51;
/// The X25519 named group.
pub const X25519: u16 = 0x001d;
/// TLS 1.3 in `supported_versions`.
pub const TLS13: u16 = 0x0304;

/// Why bytes are not a ClientHello.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum HelloError {
    /// A record that is not a handshake record (its content type).
    #[error("record of content type {0}, not a handshake")]
    NotHandshake(u8),
    /// A record whose legacy version is not 3.x.
    #[error("record version {0:#06x}")]
    RecordVersion(u16),
    /// A record longer than 2^14 bytes, or empty.
    #[error("record of {0} bytes")]
    RecordLength(usize),
    /// The first handshake message is not a ClientHello (its type).
    #[error("handshake message of type {0}, not a ClientHello")]
    NotClientHello(u8),
    /// The message is longer than [`MAX_MESSAGE`].
    #[error("ClientHello of {0} bytes, more than {MAX_MESSAGE}")]
    TooLong(usize),
    /// The hello spans more than [`MAX_RECORDS`] records.
    #[error("ClientHello in more than {MAX_RECORDS} records")]
    Fragmented,
    /// More handshake bytes follow the ClientHello in its last record.
    #[error("bytes after the ClientHello in its record")]
    TrailingHandshake,
    /// The message's body is malformed: what was being read.
    #[error("malformed ClientHello: {0}")]
    Malformed(&'static str),
}

/// A ClientHello, reassembled, with the fields REALITY reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientHello {
    /// The whole handshake message (type, length, body): what REALITY's auth is sealed
    /// over, with the session id zeroed.
    pub message: Vec<u8>,
    /// The client's random.
    pub random: [u8; 32],
    /// The legacy session id (0 to 32 bytes), found at [`SESSION_ID_OFFSET`] in
    /// [`Self::message`].
    pub session_id: Vec<u8>,
    /// The offered cipher suites, in the client's order.
    pub cipher_suites: Vec<u16>,
    /// The SNI host name, when the client sent one.
    pub server_name: Option<String>,
    /// Whether `supported_versions` offers TLS 1.3.
    pub offers_tls13: bool,
    /// The first X25519 key share of 32 bytes, if any.
    pub x25519: Option<[u8; 32]>,
}

/// Reads the ClientHello from the records at the start of `buf`: `Ok(None)` until the
/// whole message is in, then the hello and the bytes of the records that carried it.
///
/// A call on a prefix only walks the record headers (at most [`MAX_RECORDS`]), so a
/// reader may call it after every read however the client trickles its bytes.
pub fn parse(buf: &[u8]) -> Result<Option<(ClientHello, usize)>, HelloError> {
    // First the headers alone: is the whole message in?
    let mut head = [0u8; 4];
    let mut head_len = 0;
    let mut payload = 0;
    let mut at = 0;
    let mut records = 0;
    let end = loop {
        let Some(header) = buf.get(at..at + 5) else {
            // A record header cut short: check what there is of it.
            let rest = &buf[at.min(buf.len())..];
            if let Some(&kind) = rest.first()
                && kind != HANDSHAKE
            {
                return Err(HelloError::NotHandshake(kind));
            }
            if let Some(&major) = rest.get(1)
                && major != 3
            {
                return Err(HelloError::RecordVersion(u16::from(major) << 8));
            }
            return Ok(None);
        };
        if header[0] != HANDSHAKE {
            return Err(HelloError::NotHandshake(header[0]));
        }
        if header[1] != 3 {
            return Err(HelloError::RecordVersion(u16::from_be_bytes([
                header[1], header[2],
            ])));
        }
        let len = usize::from(u16::from_be_bytes([header[3], header[4]]));
        if len == 0 || len > MAX_RECORD {
            return Err(HelloError::RecordLength(len));
        }
        records += 1;
        if records > MAX_RECORDS {
            return Err(HelloError::Fragmented);
        }
        let body = &buf[at + 5..buf.len().min(at + 5 + len)];
        for &b in body.iter().take(4 - head_len) {
            head[head_len] = b;
            head_len += 1;
        }
        if head_len > 0 && head[0] != CLIENT_HELLO {
            return Err(HelloError::NotClientHello(head[0]));
        }
        payload += body.len();
        if head_len == 4 {
            let total =
                4 + (usize::from(head[1]) << 16 | usize::from(head[2]) << 8 | usize::from(head[3]));
            if total > MAX_MESSAGE {
                return Err(HelloError::TooLong(total));
            }
            if payload >= total {
                // More handshake bytes in the record that ends the message (in or
                // not yet in `buf`).
                if payload > total || body.len() < len {
                    return Err(HelloError::TrailingHandshake);
                }
                break at + 5 + len;
            }
        }
        if body.len() < len {
            return Ok(None);
        }
        at += 5 + len;
    };
    // Then the message, from the records' payloads.
    let mut message = Vec::with_capacity(payload);
    let mut at = 0;
    while at < end {
        let len = usize::from(u16::from_be_bytes([buf[at + 3], buf[at + 4]]));
        message.extend_from_slice(&buf[at + 5..at + 5 + len]);
        at += 5 + len;
    }
    body(message).map(|hello| Some((hello, end)))
}

/// A cursor over the message's bytes; every read is checked.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], HelloError> {
        let end = self.at.checked_add(n).ok_or(HelloError::Malformed(what))?;
        let out = self
            .bytes
            .get(self.at..end)
            .ok_or(HelloError::Malformed(what))?;
        self.at = end;
        Ok(out)
    }

    fn u8(&mut self, what: &'static str) -> Result<u8, HelloError> {
        Ok(self.take(1, what)?[0])
    }

    fn u16(&mut self, what: &'static str) -> Result<u16, HelloError> {
        let b = self.take(2, what)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    /// A vector with a one-byte length.
    fn vec8(&mut self, what: &'static str) -> Result<&'a [u8], HelloError> {
        let n = self.u8(what)?;
        self.take(usize::from(n), what)
    }

    /// A vector with a two-byte length.
    fn vec16(&mut self, what: &'static str) -> Result<&'a [u8], HelloError> {
        let n = self.u16(what)?;
        self.take(usize::from(n), what)
    }

    fn is_empty(&self) -> bool {
        self.at >= self.bytes.len()
    }
}

/// Reads the body of a whole message.
fn body(message: Vec<u8>) -> Result<ClientHello, HelloError> {
    let mut r = Reader {
        bytes: &message[4..],
        at: 0,
    };
    r.take(2, "legacy_version")?;
    let mut random = [0u8; 32];
    random.copy_from_slice(r.take(32, "random")?);
    let session_id = r.vec8("legacy_session_id")?;
    if session_id.len() > 32 {
        return Err(HelloError::Malformed(
            "legacy_session_id longer than 32 bytes",
        ));
    }
    let session_id = session_id.to_vec();
    let suites = r.vec16("cipher_suites")?;
    if suites.is_empty() || !suites.len().is_multiple_of(2) {
        return Err(HelloError::Malformed("cipher_suites"));
    }
    let cipher_suites = suites
        .chunks_exact(2)
        .map(|c| u16::from_be_bytes([c[0], c[1]]))
        .collect();
    if r.vec8("legacy_compression_methods")?.is_empty() {
        return Err(HelloError::Malformed("legacy_compression_methods"));
    }
    let mut hello = ClientHello {
        random,
        session_id,
        cipher_suites,
        server_name: None,
        offers_tls13: false,
        x25519: None,
        message: Vec::new(),
    };
    // A hello without extensions is a pre-TLS-1.3 one: valid, but offering no 1.3.
    if !r.is_empty() {
        let mut extensions = Reader {
            bytes: r.vec16("extensions")?,
            at: 0,
        };
        if !r.is_empty() {
            return Err(HelloError::Malformed("bytes after the extensions"));
        }
        let mut seen: Vec<u16> = Vec::new();
        while !extensions.is_empty() {
            let kind = extensions.u16("extension type")?;
            let data = extensions.vec16("extension data")?;
            // At most 64 KiB / 4 extensions: the linear look-up stays small.
            if seen.contains(&kind) {
                return Err(HelloError::Malformed("an extension appears twice"));
            }
            seen.push(kind);
            extension(&mut hello, kind, data)?;
        }
    }
    hello.message = message;
    Ok(hello)
}

fn extension(hello: &mut ClientHello, kind: u16, data: &[u8]) -> Result<(), HelloError> {
    let mut r = Reader { bytes: data, at: 0 };
    match kind {
        SERVER_NAME => {
            let mut names = Reader {
                bytes: r.vec16("server_name list")?,
                at: 0,
            };
            while !names.is_empty() {
                let name_type = names.u8("server_name type")?;
                let name = names.vec16("server_name")?;
                if name_type == 0 {
                    if hello.server_name.is_some() {
                        return Err(HelloError::Malformed("two host names in server_name"));
                    }
                    let name = std::str::from_utf8(name)
                        .ok()
                        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_graphic()))
                        .ok_or(HelloError::Malformed("server_name is not a host name"))?;
                    hello.server_name = Some(name.to_owned());
                }
            }
        }
        SUPPORTED_VERSIONS => {
            let versions = r.vec8("supported_versions")?;
            if !versions.len().is_multiple_of(2) {
                return Err(HelloError::Malformed("supported_versions"));
            }
            hello.offers_tls13 = versions
                .chunks_exact(2)
                .any(|v| u16::from_be_bytes([v[0], v[1]]) == TLS13);
        }
        KEY_SHARE => {
            let mut shares = Reader {
                bytes: r.vec16("key_share list")?,
                at: 0,
            };
            while !shares.is_empty() {
                let group = shares.u16("key_share group")?;
                let key = shares.vec16("key_exchange")?;
                if key.is_empty() {
                    return Err(HelloError::Malformed("empty key_exchange"));
                }
                if group == X25519 && key.len() == 32 && hello.x25519.is_none() {
                    let mut k = [0u8; 32];
                    k.copy_from_slice(key);
                    hello.x25519 = Some(k);
                }
            }
        }
        _ => return Ok(()),
    }
    if !r.is_empty() {
        return Err(HelloError::Malformed("bytes after an extension's content"));
    }
    Ok(())
}

#[cfg(test)]
#[path = "client_hello_tests.rs"]
pub(crate) mod tests;
