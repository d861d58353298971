//! REALITY on rustls: the server's side for the node's REALITY inbounds and for tunnel
//! links, and a client for tunnel links.
//!
//! A REALITY server borrows a real site (the *target*): a client that proves it knows
//! the server's X25519 public key, by a seal in its ClientHello's session id, gets a
//! TLS 1.3 session with a certificate made for that connection; everyone else is
//! spliced byte for byte to the target. The wire rules are in
//! [`switchyard_proto::reality`].
//!
//! - [`cert`]: the per-connection certificate (Xray's shape, its signature field the
//!   HMAC of the key under the connection's auth key), shared with the node's inbound.
//! - [`client`]: our client, for tunnel links. rustls writes its ClientHello itself and
//!   hashes what it wrote, so the seal cannot cover the hello as Xray's does (its uTLS
//!   rewrites the hello before hashing); our links seal in
//!   [`SealForm::Tunnel`](switchyard_proto::reality::SealForm::Tunnel), over the
//!   hello's random and X25519 share, which the client chooses itself and hands to
//!   rustls through its crypto provider (a key exchange and a random source for that
//!   one hello). The server's certificate is checked byte for byte against the one
//!   the auth key makes, and its CertificateVerify with that key: the server's REALITY
//!   public key is the pin.
//! - [`server`]: the tunnel's listening side: reads the hello, checks the seal,
//!   refuses replays, splices everyone else to the target.
//! - [`site`]: how the listening side dials the target: through a [`SiteDialer`] it
//!   is given (the node's guarded dialer), never straight, so a target on the
//!   machine's own addresses or networks is refused unless allowed.

pub mod cert;
pub mod client;
pub mod server;
pub mod site;

pub use client::{ClientSettings, connect};
pub use server::{Accepted, ServerSettings, accept};
pub use site::{SiteDial, SiteDialer, SiteError};

/// Unix time in milliseconds: what REALITY's clock check and replay memory take, and
/// (in seconds) what a hello carries. The wall clock by design: each side compares it
/// with the other's.
#[allow(
    clippy::disallowed_methods,
    reason = "REALITY compares the wall clocks of both sides, by design"
)]
pub fn unix_now_ms() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}
