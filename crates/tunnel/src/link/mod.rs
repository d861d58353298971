//! How a link is made and trusted.
//!
//! A **link** is one transport connection between the two halves of a tunnel. This
//! module makes links and decides whom to trust; it does not multiplex them (see the
//! stream multiplexer) or pool them (the pool takes each established link from here).
//! - [`cert`]: the tunnel certificate the panel issues, and both sides' TLS configs;
//! - [`pin`]: [`Pin`] and the dialing side's verifier, which accepts exactly the pinned
//!   certificate or key, never a CA chain;
//! - [`transport`]: TCP+TLS, WebSocket+TLS, HTTPUpgrade+TLS, XHTTP+TLS, gRPC+TLS and
//!   REALITY, dialed or
//!   accepted, as one [`LinkStream`]; [`outer`]: the TLS to a CDN in front of the
//!   listening side;
//! - [`handshake`]: the hello after TLS, the listening side's live [`Admitted`] table
//!   and its [`Refusals`];
//! - [`listener`]: the listening side's accept loop (transport, then hello), and
//!   [`streams`] for XHTTP and gRPC, whose links are streams of an HTTP server;
//! - [`schedule`] and [`dialer`]: keep the wanted number of links up to every address of the listening
//!   side at once, each address with its own back-off.
//!
//! Unlike the rest of the crate this module does I/O (tokio); its decisions stay in
//! plain functions and state machines that take the time as an argument.

pub mod cert;
mod dial_error;
pub mod dialer;
pub mod handshake;
pub mod listener;
pub mod outer;
pub mod pin;
pub mod schedule;
pub mod streams;
mod tracked;
pub mod transport;

pub use cert::{IssuedCert, issue};
pub use dialer::{AddressStatus, Dialer, DialerConfig, Link};
pub use handshake::{Admitted, Gate, Refusal, Refusals};
pub use listener::{Accepted, Listener};
pub use outer::OuterTls;
pub use pin::Pin;
pub use tracked::Release;
pub use transport::{LinkStream, Target, Transport};
