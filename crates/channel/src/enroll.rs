//! Enrollment's wire types and the panel's side of the decision ([`Enroller`]).
//!
//! `POST /enroll` (HTTP/1.1, TLS, no client certificate) carries
//! `{"secret": "…", "public_key": "<base64 of the 65-byte P-256 point>", "hostname": "…",
//! "version": "…"}`; the answer is `200 {"server_id": "…", "certificate_pem": "…"}` or a
//! problem document (`application/problem+json`) whose `detail` the node prints.

use core::fmt;
use std::net::SocketAddr;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

use crate::Pin;

/// Most bytes of an `/enroll` request body.
pub const MAX_ENROLL_BODY: usize = 16 * 1024;
/// Most bytes of the hostname a node reports.
pub const MAX_HOSTNAME_LEN: usize = 253;
/// Most bytes of the version a node reports.
pub const MAX_VERSION_LEN: usize = 64;

/// The join token's secret as the panel receives it; `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct TokenSecret(String);

impl TokenSecret {
    /// The secret itself, to look up (compare it in constant time, or by its hash).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for TokenSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TokenSecret(***)")
    }
}

/// What a node sends to enroll, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnrollRequest {
    /// The join token's secret.
    pub secret: TokenSecret,
    /// The node's public key: an uncompressed P-256 point (65 bytes).
    pub public_key: Vec<u8>,
    /// The node's host name, as it reports it (display only).
    pub hostname: String,
    /// The node's software version.
    pub version: String,
    /// Where the request came from.
    pub remote: SocketAddr,
}

/// Why an `/enroll` body was refused (answered `400`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EnrollBodyError {
    /// Not the JSON object expected.
    #[error("the enrollment request is not the expected JSON: {reason}")]
    Json {
        /// What kind of JSON error.
        category: serde_json::error::Category,
        /// What serde_json said.
        reason: String,
    },
    /// A field is out of bounds.
    #[error("the enrollment request's {field} {problem}")]
    Field {
        /// The field.
        field: &'static str,
        /// What is wrong.
        problem: &'static str,
    },
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EnrollWire {
    pub(crate) secret: String,
    pub(crate) public_key: String,
    pub(crate) hostname: String,
    pub(crate) version: String,
}

fn field(field: &'static str, problem: &'static str) -> EnrollBodyError {
    EnrollBodyError::Field { field, problem }
}

impl EnrollRequest {
    /// Parses and checks an `/enroll` body (at most [`MAX_ENROLL_BODY`] bytes).
    pub fn parse(body: &[u8], remote: SocketAddr) -> Result<Self, EnrollBodyError> {
        if body.len() > MAX_ENROLL_BODY {
            return Err(field("body", "is larger than 16 KiB"));
        }
        let wire: EnrollWire = serde_json::from_slice(body).map_err(|e| EnrollBodyError::Json {
            category: e.classify(),
            reason: e.to_string(),
        })?;
        if wire.secret.is_empty() || wire.secret.len() > crate::token::MAX_SECRET_LEN {
            return Err(field("secret", "must be 1 to 128 characters"));
        }
        let public_key = STANDARD
            .decode(&wire.public_key)
            .map_err(|_| field("public_key", "is not base64"))?;
        if public_key.len() != 65 || public_key[0] != 0x04 {
            return Err(field(
                "public_key",
                "is not an uncompressed P-256 point (65 bytes)",
            ));
        }
        if wire.hostname.len() > MAX_HOSTNAME_LEN || wire.hostname.chars().any(char::is_control) {
            return Err(field("hostname", "must be at most 253 printable bytes"));
        }
        if wire.version.len() > MAX_VERSION_LEN || wire.version.chars().any(char::is_control) {
            return Err(field("version", "must be at most 64 printable bytes"));
        }
        Ok(Self {
            secret: TokenSecret(wire.secret),
            public_key,
            hostname: wire.hostname,
            version: wire.version,
            remote,
        })
    }
}

/// The panel's answer to an accepted enrollment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct EnrollAnswer {
    pub(crate) server_id: String,
    pub(crate) certificate_pem: String,
}

/// Why the panel refused an enrollment. The first three and `Other` answer `403` with
/// the message as the problem's `detail`, which the node prints; `Unavailable`
/// answers `503` (its reason is logged on the panel, not shown).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EnrollRefused {
    /// The token's secret was used before.
    #[error("the join token was already used")]
    AlreadyUsed,
    /// The token's secret expired.
    #[error("the join token expired")]
    Expired,
    /// No token has this secret.
    #[error("unknown join token")]
    Unknown,
    /// Another reason, shown to the node as is.
    #[error("{0}")]
    Other(String),
    /// The panel could not decide now (its database is down): the node may try again.
    #[error("the panel cannot enroll nodes right now: {0}")]
    Unavailable(String),
}

/// The panel's decisions about nodes: which token enrolls which server, and which
/// node certificate belongs to which server. Called by [`crate::serve_panel`].
#[async_trait::async_trait]
pub trait Enroller: Send + Sync + 'static {
    /// Checks and consumes the token's secret (single use, expiring) and returns the
    /// server id the node becomes.
    async fn enroll(&self, request: EnrollRequest) -> Result<String, EnrollRefused>;

    /// The node certificate for `server_id` was issued: store its pin (`cert:<sha256 of
    /// the DER>`), so [`Self::authorize`] knows it. Called before the node gets the
    /// certificate; an error refuses the enrollment (the node never sees a certificate
    /// the panel did not store).
    async fn enrolled(&self, server_id: &str, certificate: Pin) -> Result<(), EnrollRefused>;

    /// The server id whose pinned certificate this is (compare
    /// [`Pin::of_certificate`]`(node_certificate_der)`), if any.
    async fn authorize(&self, node_certificate_der: &[u8]) -> Option<String>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote() -> SocketAddr {
        "127.0.0.1:1".parse().unwrap()
    }

    #[test]
    fn bodies_are_checked_field_by_field() {
        let key = STANDARD.encode([4u8; 65]);
        let ok =
            format!(r#"{{"secret":"s3cret","public_key":"{key}","hostname":"a","version":"0.1"}}"#);
        let r = EnrollRequest::parse(ok.as_bytes(), remote()).unwrap();
        assert_eq!(r.public_key, vec![4; 65]);
        assert!(!format!("{r:?}").contains("s3cret"));
        let short = STANDARD.encode([4u8; 33]);
        let bad =
            format!(r#"{{"secret":"s","public_key":"{short}","hostname":"a","version":"0.1"}}"#);
        assert!(matches!(
            EnrollRequest::parse(bad.as_bytes(), remote()),
            Err(EnrollBodyError::Field {
                field: "public_key",
                ..
            })
        ));
        assert!(matches!(
            EnrollRequest::parse(b"{}", remote()),
            Err(EnrollBodyError::Json {
                category: serde_json::error::Category::Data,
                ..
            })
        ));
        assert!(EnrollRequest::parse(&[b'x'; MAX_ENROLL_BODY + 1], remote()).is_err());
    }
}
