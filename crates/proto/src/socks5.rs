//! SOCKS5, server side: RFC 1928 with username/password authentication (RFC 1929).
//!
//! The exchange, each message with its parser or encoder here:
//! 1. client [`Greeting`] (`05 n methods...`); server [`MethodSelection`] (`05 m`),
//!    the method from [`Greeting::select`];
//! 2. with method 2, client [`Credentials`] (`01 ulen user plen pass`); server
//!    [`AuthStatus`] (`01 00` accepted, `01 01` refused);
//! 3. client [`Request`] (`05 cmd 00 address`); server [`Reply`] (`05 rep 00 address`).
//!
//! CONNECT and UDP ASSOCIATE are supported; BIND is [`Socks5Error::BindUnsupported`],
//! which [`Socks5Error::reply_code`] turns into the reply to send before closing.
//! UDP datagrams carry the header `00 00 frag address` ([`UdpPacket`]); fragments
//! (`frag` ≠ 0) are refused, as most servers do.

use std::fmt;

use crate::address::{Address, AddressError};

/// The SOCKS protocol version byte.
pub const VERSION: u8 = 5;
/// The username/password sub-negotiation version byte (RFC 1929).
pub const AUTH_VERSION: u8 = 1;
/// Method 0: no authentication.
pub const METHOD_NO_AUTH: u8 = 0x00;
/// Method 2: username/password.
pub const METHOD_USER_PASS: u8 = 0x02;
/// The "no acceptable methods" answer; the server closes after sending it.
pub const METHOD_NONE_ACCEPTABLE: u8 = 0xff;

/// Why bytes are not the SOCKS5 message expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Socks5Error {
    /// The version byte is not 5.
    #[error("SOCKS version {0} is not supported (only 5)")]
    BadVersion(u8),
    /// The greeting lists no method.
    #[error("SOCKS5 greeting lists no authentication method")]
    NoMethods,
    /// The authentication sub-negotiation version is not 1.
    #[error("SOCKS5 username/password version {0} is not supported (only 1)")]
    BadAuthVersion(u8),
    /// The client asks for BIND, which this server does not offer.
    #[error("SOCKS5 BIND is not supported")]
    BindUnsupported,
    /// The command byte is none of CONNECT, BIND, UDP ASSOCIATE.
    #[error("SOCKS5 command {0} is unknown")]
    UnknownCommand(u8),
    /// The address is malformed.
    #[error("SOCKS5 address: {0}")]
    Address(#[from] AddressError),
    /// A UDP datagram is a fragment (FRAG ≠ 0).
    #[error("SOCKS5 UDP fragment {0} refused: fragmentation is not supported")]
    Fragmented(u8),
    /// A UDP datagram ends inside its header.
    #[error("SOCKS5 UDP datagram is shorter than its header")]
    TruncatedDatagram,
}

impl Socks5Error {
    /// The reply a server sends for this error on a request before closing, if any
    /// (RFC 1928 §6): command not supported, or address type not supported.
    pub fn reply_code(&self) -> Option<ReplyCode> {
        match self {
            Self::BindUnsupported | Self::UnknownCommand(_) => Some(ReplyCode::CommandNotSupported),
            Self::Address(AddressError::UnknownType(_)) => Some(ReplyCode::AddressTypeNotSupported),
            Self::Address(_) => Some(ReplyCode::GeneralFailure),
            _ => None,
        }
    }
}

/// The client's first message: the authentication methods it offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Greeting {
    /// The methods, in the client's order (1 to 255 of them).
    pub methods: Vec<u8>,
}

impl Greeting {
    /// Parses a greeting at the start of `buf`.
    pub fn parse(buf: &[u8]) -> Result<Option<(Self, usize)>, Socks5Error> {
        let Some((&version, rest)) = buf.split_first() else {
            return Ok(None);
        };
        if version != VERSION {
            return Err(Socks5Error::BadVersion(version));
        }
        let Some((&n, rest)) = rest.split_first() else {
            return Ok(None);
        };
        if n == 0 {
            return Err(Socks5Error::NoMethods);
        }
        let Some(methods) = rest.get(..usize::from(n)) else {
            return Ok(None);
        };
        let greeting = Self {
            methods: methods.to_vec(),
        };
        Ok(Some((greeting, 2 + usize::from(n))))
    }

    /// Appends the greeting (for test clients). Methods past the 255th are dropped.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let methods = &self.methods[..self.methods.len().min(255)];
        out.extend_from_slice(&[VERSION, methods.len() as u8]);
        out.extend_from_slice(methods);
    }

    /// The method the server picks: username/password when it requires credentials,
    /// else no authentication; [`METHOD_NONE_ACCEPTABLE`] when the client does not
    /// offer it.
    pub fn select(&self, require_credentials: bool) -> u8 {
        let wanted = if require_credentials {
            METHOD_USER_PASS
        } else {
            METHOD_NO_AUTH
        };
        if self.methods.contains(&wanted) {
            wanted
        } else {
            METHOD_NONE_ACCEPTABLE
        }
    }
}

/// The server's answer to a greeting: the chosen method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MethodSelection(pub u8);

impl MethodSelection {
    /// Appends `05 method`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&[VERSION, self.0]);
    }
}

/// Username and password (RFC 1929); each 0 to 255 bytes, any bytes. `Debug` hides
/// the password.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The username.
    pub username: Vec<u8>,
    /// The password.
    pub password: Vec<u8>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &String::from_utf8_lossy(&self.username))
            .field("password", &"<redacted>")
            .finish()
    }
}

impl Credentials {
    /// Parses the sub-negotiation request at the start of `buf`. RFC 1929 asks for
    /// lengths of at least 1; empty ones are accepted, as many servers do.
    pub fn parse(buf: &[u8]) -> Result<Option<(Self, usize)>, Socks5Error> {
        let Some((&version, rest)) = buf.split_first() else {
            return Ok(None);
        };
        if version != AUTH_VERSION {
            return Err(Socks5Error::BadAuthVersion(version));
        }
        let Some((username, rest)) = short_field(rest) else {
            return Ok(None);
        };
        let Some((password, _)) = short_field(rest) else {
            return Ok(None);
        };
        let used = 1 + 1 + username.len() + 1 + password.len();
        let credentials = Self {
            username: username.to_vec(),
            password: password.to_vec(),
        };
        Ok(Some((credentials, used)))
    }

    /// Appends the sub-negotiation request (for test clients); fields past 255 bytes
    /// are cut.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(AUTH_VERSION);
        for field in [&self.username, &self.password] {
            let field = &field[..field.len().min(255)];
            out.push(field.len() as u8);
            out.extend_from_slice(field);
        }
    }
}

/// A length byte and that many bytes.
fn short_field(buf: &[u8]) -> Option<(&[u8], &[u8])> {
    let (&len, rest) = buf.split_first()?;
    let field = rest.get(..usize::from(len))?;
    Some((field, &rest[field.len()..]))
}

/// The server's answer to credentials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuthStatus {
    /// Whether the credentials are accepted; on `false` the server closes.
    pub accepted: bool,
}

impl AuthStatus {
    /// Appends `01 00` (accepted) or `01 01` (refused).
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&[AUTH_VERSION, u8::from(!self.accepted)]);
    }
}

/// What a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Command {
    /// 1: a TCP stream to the destination.
    Connect,
    /// 3: a UDP relay; the destination is where the client will send from (often
    /// `0.0.0.0:0`).
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

/// A client request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// CONNECT or UDP ASSOCIATE.
    pub command: Command,
    /// The destination address.
    pub destination: Address,
}

impl Request {
    /// Parses a request at the start of `buf`. The reserved byte is not checked.
    pub fn parse(buf: &[u8]) -> Result<Option<(Self, usize)>, Socks5Error> {
        let Some((&version, rest)) = buf.split_first() else {
            return Ok(None);
        };
        if version != VERSION {
            return Err(Socks5Error::BadVersion(version));
        }
        let Some((&code, rest)) = rest.split_first() else {
            return Ok(None);
        };
        let command = match code {
            1 => Command::Connect,
            2 => return Err(Socks5Error::BindUnsupported),
            3 => Command::UdpAssociate,
            other => return Err(Socks5Error::UnknownCommand(other)),
        };
        let Some(rest) = rest.get(1..) else {
            return Ok(None);
        };
        let Some((destination, used)) = Address::parse_socks(rest)? else {
            return Ok(None);
        };
        let request = Self {
            command,
            destination,
        };
        Ok(Some((request, 3 + used)))
    }

    /// Appends the request (for test clients).
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&[VERSION, self.command.code(), 0]);
        self.destination.encode_socks(out);
    }
}

/// The reply field of a [`Reply`] (RFC 1928 §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReplyCode {
    /// 0: succeeded.
    Succeeded,
    /// 1: general SOCKS server failure.
    GeneralFailure,
    /// 2: connection not allowed by ruleset.
    NotAllowed,
    /// 3: network unreachable.
    NetworkUnreachable,
    /// 4: host unreachable.
    HostUnreachable,
    /// 5: connection refused.
    ConnectionRefused,
    /// 6: TTL expired.
    TtlExpired,
    /// 7: command not supported.
    CommandNotSupported,
    /// 8: address type not supported.
    AddressTypeNotSupported,
}

impl ReplyCode {
    /// The reply byte on the wire.
    pub fn code(self) -> u8 {
        match self {
            Self::Succeeded => 0,
            Self::GeneralFailure => 1,
            Self::NotAllowed => 2,
            Self::NetworkUnreachable => 3,
            Self::HostUnreachable => 4,
            Self::ConnectionRefused => 5,
            Self::TtlExpired => 6,
            Self::CommandNotSupported => 7,
            Self::AddressTypeNotSupported => 8,
        }
    }
}

/// The server's reply to a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// Success or why not.
    pub code: ReplyCode,
    /// The bound address: the outgoing socket for CONNECT, the relay's UDP socket for
    /// UDP ASSOCIATE, `0.0.0.0:0` on failure.
    pub bound: Address,
}

impl Reply {
    /// Appends `05 rep 00 bound`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&[VERSION, self.code.code(), 0]);
        self.bound.encode_socks(out);
    }
}

/// One SOCKS5 UDP datagram: `RSV RSV FRAG` then address and payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UdpPacket<'a> {
    /// The destination (client to relay) or source (relay to client).
    pub address: Address,
    /// The datagram's payload.
    pub payload: &'a [u8],
}

impl<'a> UdpPacket<'a> {
    /// Parses a whole datagram (not a stream: a short one is an error). The reserved
    /// bytes are not checked.
    pub fn parse(datagram: &'a [u8]) -> Result<Self, Socks5Error> {
        let Some(&[_, _, frag]) = datagram.first_chunk::<3>() else {
            return Err(Socks5Error::TruncatedDatagram);
        };
        if frag != 0 {
            return Err(Socks5Error::Fragmented(frag));
        }
        let (address, used) =
            Address::parse_socks(&datagram[3..])?.ok_or(Socks5Error::TruncatedDatagram)?;
        Ok(Self {
            address,
            payload: &datagram[3 + used..],
        })
    }

    /// Appends the datagram.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&[0, 0, 0]);
        self.address.encode_socks(out);
        out.extend_from_slice(self.payload);
    }
}

#[cfg(test)]
#[path = "socks5_tests.rs"]
mod tests;
