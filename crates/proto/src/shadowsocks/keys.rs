//! A Shadowsocks 2022 client's keys, read from an entry's method and password.
//!
//! The password is the user's key (uPSK), or identity keys before it
//! (`iPSK:…:uPSK`, SIP022 extensible identity headers: the panel issues
//! `"<server key>:<user key>"` for an inbound with several users), every key in
//! base64 and of the method's length. `2022-blake3-chacha20-poly1305` has no identity
//! headers: its last key is the user's, and the only one used (a server of that
//! method finds its user by the key alone).

use std::fmt;

use super::Method;
use crate::base64;

/// The most identity keys a password may hold (the relays before the server).
pub const MAX_IDENTITY_KEYS: usize = 4;

/// Why a method or password is not a Shadowsocks 2022 client's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The method is not one of the SIP022 methods.
    #[error("method {0:?} is not a Shadowsocks 2022 method")]
    UnknownMethod(String),
    /// A key is not base64 (keys are numbered from 1, left to right).
    #[error("key {0} of the password is not base64")]
    Base64(usize),
    /// A key has the wrong length for the method.
    #[error("key {index} of the password has {got} bytes; {method} wants {want}")]
    Length {
        /// The key's place, from 1.
        index: usize,
        /// Its length.
        got: usize,
        /// The method's key length.
        want: usize,
        /// The method's name.
        method: &'static str,
    },
    /// More identity keys than [`MAX_IDENTITY_KEYS`].
    #[error("the password has {0} identity keys; at most {MAX_IDENTITY_KEYS} are supported")]
    TooManyIdentities(usize),
}

/// A client's keys for one server. `Debug` hides them.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientKeys {
    method: Method,
    identities: Vec<Vec<u8>>,
    user: Vec<u8>,
}

impl fmt::Debug for ClientKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientKeys")
            .field("method", &self.method)
            .field("identities", &self.identities.len())
            .field("user", &crate::entry::REDACTED)
            .finish()
    }
}

impl ClientKeys {
    /// Reads `password` (`uPSK` or `iPSK:…:uPSK`, base64 each) for `method`.
    pub fn parse(method: Method, password: &str) -> Result<Self, KeyError> {
        let mut keys = Vec::new();
        for (i, text) in password.split(':').enumerate() {
            let key = base64::decode_lenient(text.trim().as_bytes())
                .filter(|k| !k.is_empty())
                .ok_or(KeyError::Base64(i + 1))?;
            if key.len() != method.key_len() {
                return Err(KeyError::Length {
                    index: i + 1,
                    got: key.len(),
                    want: method.key_len(),
                    method: method.name(),
                });
            }
            keys.push(key);
        }
        let Some(user) = keys.pop() else {
            return Err(KeyError::Base64(1));
        };
        if !method.has_identity() {
            keys.clear();
        }
        if keys.len() > MAX_IDENTITY_KEYS {
            return Err(KeyError::TooManyIdentities(keys.len()));
        }
        Ok(Self {
            method,
            identities: keys,
            user,
        })
    }

    /// Keys given as bytes (tests and fuzzing); lengths are the caller's to get right.
    pub fn from_parts(method: Method, identities: Vec<Vec<u8>>, user: Vec<u8>) -> Self {
        let identities = if method.has_identity() {
            identities
        } else {
            Vec::new()
        };
        Self {
            method,
            identities,
            user,
        }
    }

    /// The method.
    pub fn method(&self) -> Method {
        self.method
    }

    /// The identity keys, first layer first (empty for a single-user server).
    pub fn identities(&self) -> &[Vec<u8>] {
        &self.identities
    }

    /// The user's key: it derives the session subkeys both ways.
    pub fn user(&self) -> &[u8] {
        &self.user
    }

    /// The key the first hop knows: the first identity key, else the user's. It
    /// encrypts a UDP packet's separate header.
    pub fn first(&self) -> &[u8] {
        self.identities.first().unwrap_or(&self.user)
    }

    /// The key after layer `i`: identity key `i + 1`, or the user's after the last.
    pub(crate) fn next_after(&self, i: usize) -> &[u8] {
        self.identities.get(i + 1).unwrap_or(&self.user)
    }
}
