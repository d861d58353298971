//! # Certificates from an ACME server
//!
//! Whoever serves TLS (the panel's HTTPS, a node's TLS inbound) can take its
//! certificate from an ACME server (Let's Encrypt by default,
//! [`switchyard_config::AcmeSettings`]). A [`Keeper`] obtains it, keeps it with its
//! key and the ACME account in a private directory, serves it through [`Served`] and
//! renews it once fewer than `renew_days` are left. The server validates with
//! TLS-ALPN-01 (RFC 8737) on the listener itself: a handshake offering ALPN
//! `acme-tls/1` gets the challenge certificate for the name it asks for ([`accept`]
//! tells such a handshake from a client's, [`Served`] resolves both), and nothing else
//! happens on that connection.
//!
//! Until the first certificate arrives, handshakes other than the challenge's fail; a
//! failed attempt is retried after 1 minute, doubling up to 1 hour; the age of the
//! certificate is looked at every hour.

#![warn(missing_docs)]

mod keeper;
mod served;

pub use keeper::{AcmeError, Keeper, check_issued};
pub use served::{ACME_TLS, Served, accept, challenge_name};

/// Seconds since the Unix epoch: the crate's one reading of the wall clock
/// (certificates' expiries are wall-clock times).
#[allow(clippy::disallowed_methods)] // the crate's one clock
fn now_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}
