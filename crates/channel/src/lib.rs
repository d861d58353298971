//! # The node↔panel control channel
//!
//! A node is managed over a connection **it dials** to the panel, so a node behind NAT
//! is managed like any other. This crate owns that connection end to end, for both
//! sides; it decides nothing about servers or tokens (the panel's [`Enroller`] does) and
//! knows nothing of the node's handlers (the node passes its `axum::Router`).
//!
//! ## Wire model
//! 1. **Join token** ([`JoinToken`]): `syj1.` + base64url of the panel's channel address
//!    (`host:port`), the [`Pin`] of the panel's channel certificate and a single-use
//!    secret (≥ 128 random bits). The panel makes it ([`JoinToken::generate`],
//!    [`JoinToken::encode`]); the operator pastes it into `switchyard node join`.
//! 2. **Enrollment** ([`join`]): the node makes its own P-256 key pair, dials the
//!    panel's channel listener with TLS 1.3, accepts exactly the pinned certificate (no
//!    CA, no host name trust: the certificate must be the token's, self-signed, and name
//!    [`PANEL_CERT_NAME`]), and **without** a client certificate sends one HTTP/1.1
//!    `POST /enroll` `{"secret", "public_key" (base64 of the 65-byte point),
//!    "hostname", "version"}`. The panel calls [`Enroller::enroll`] (checks and consumes
//!    the secret, returns the server id), signs a client certificate for the node's key
//!    with its CA ([`PanelIdentity::issue_node_certificate`]), calls
//!    [`Enroller::enrolled`] with the certificate's pin (so it is stored before the node
//!    has it), and answers `200 {"server_id", "certificate_pem"}`. A refusal is `403`
//!    with a problem document (`application/problem+json`) whose `detail` the node
//!    prints: `the join token was already used`, `the join token expired`, `unknown
//!    join token`. The node keeps the result in `state_dir/panel.json` ([`Enrollment`],
//!    `0600`, written atomically): panel address, pin, server id, certificate, key.
//! 3. **Channel** ([`run_node`] / [`serve_panel`]): the node dials again, now with its
//!    client certificate (mutual TLS 1.3: the node pins the panel's certificate; the
//!    panel takes a client certificate only when it is signed by its CA **and**
//!    [`Enroller::authorize`] maps its SHA-256 to a server). Then the roles reverse: the
//!    node is the **HTTP/2 server** on that connection, serving its control router; the
//!    panel is the HTTP/2 **client** and sends requests through a [`NodeChannel`].
//!    Both ends ping every 5 s and drop the connection after 10 s without an answer;
//!    the node dials again with back-off (1 s doubling to 30 s, jittered, reset after a
//!    channel that stayed up 10 s).
//!
//! ## The panel's side
//! ```no_run
//! # use std::sync::Arc;
//! # use switchyard_channel::*;
//! # async fn f(enroller: Arc<dyn Enroller>) -> std::io::Result<()> {
//! let identity = Arc::new(PanelIdentity::generate(&["panel.example.org".into()]).unwrap());
//! let token = JoinToken::generate("panel.example.org:7443", identity.pin().unwrap()).unwrap();
//! println!("switchyard node join {}", token.encode()); // store token.secret first
//! let (tx, mut rx) = tokio::sync::mpsc::channel(16);
//! let listener = tokio::net::TcpListener::bind("0.0.0.0:7443").await?;
//! tokio::spawn(serve_panel(listener, identity, enroller, tx, std::future::pending()));
//! while let Some(channel) = rx.recv().await {
//!     let (status, body) = channel.request(http::Method::GET, "/v1/status", None).await.unwrap();
//! }
//! # Ok(()) }
//! ```
//! The listener bounds what strangers can cost: a TLS handshake deadline (10 s from
//! the accept, so a silent socket is closed then), at most 256 connections not yet a
//! node's channel and 8 of them from one address (an IPv6 /64 counts as one), so an
//! address holding its share cannot keep other nodes from enrolling or re-joining; an
//! enrollment's request head within 10 s of its handshake, one `/enroll` request per
//! connection with a body of at most 16 KiB within 30 s ([`PanelOptions`]).
//!
//! ## The node's side
//! [`join`] once (or [`load_enrollment`] on later starts), then [`run_node`] (or
//! [`run_node_with`] for the back-off and a [`ChannelStatus`] watch) with the control
//! router, until its cancellation token fires.
//!
//! Modules: [`token`] (join tokens), [`identity`] (the panel's CA and certificate),
//! [`enroll`] (the enrollment's wire and [`Enroller`]), [`backoff`] (pure), and the
//! async ends: `panel` ([`serve_panel`], [`NodeChannel`]), `join` ([`join`]) and
//! `hold` ([`run_node`]).

#![warn(missing_docs)]

pub mod backoff;
pub mod enroll;
pub mod fs;
pub mod handover;
mod hold;
pub mod identity;
mod join;
mod panel;
mod pending;
mod tls;
pub mod token;

/// The attribute for `impl Enroller for …` (re-exported, so the panel needs no
/// dependency of its own).
pub use async_trait::async_trait;
pub use backoff::Backoff;
pub use enroll::{EnrollBodyError, EnrollRefused, EnrollRequest, Enroller, TokenSecret};
pub use hold::{ChannelStatus, NodeOptions, run_node, run_node_with};
pub use http::{Method, StatusCode};
pub use identity::{IdentityError, KeyPem, PANEL_CERT_NAME, PanelIdentity};
pub use join::{
    AnswerFailure, ConnectFailure, ENROLLMENT_FILE, Enrollment, JoinError, StateFailure,
    TlsFailure, join, load_enrollment, save_enrollment,
};
pub use panel::{ChannelError, NodeChannel, PanelOptions, serve_panel, serve_panel_with};
pub use switchyard_tunnel::link::pin::Pin;
pub use token::{JoinToken, TokenError};

/// Fills `buf` from the system's randomness (ring, as rustls).
pub(crate) fn random(buf: &mut [u8]) -> Result<(), ()> {
    rustls::crypto::ring::default_provider()
        .secure_random
        .fill(buf)
        .map_err(|_| ())
}
