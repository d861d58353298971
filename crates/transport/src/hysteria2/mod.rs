//! Hysteria 2 over QUIC (quinn), both sides. Serving: an HTTP/3 server that
//! authenticates its clients with `POST /auth` (answered `233`) and answers everyone
//! else as a plain web server would; then each of a client's bidirectional QUIC
//! streams is one proxied TCP connection, and its QUIC datagrams carry UDP.
//!
//! - [`endpoint`]: a QUIC endpoint on a UDP socket with the node's TLS (ALPN `h3`),
//!   bounded streams, windows and datagram buffers.
//! - [`handshake`]: one incoming connection to an [`Authenticated`] one, within a
//!   deadline; a connection that never authenticates gets the masquerade's answers
//!   ([`Masquerade`]: a web server's 404, or a real site's answers through
//!   [`masquerade`]'s reverse proxy) until the deadline, then is closed.
//! - [`Authenticated`]: [`Authenticated::accept_tcp`] gives each TCP request
//!   ([`TcpAccept`]: answered ok with the stream, or refused with a message);
//!   [`Authenticated::recv_udp`] and [`Authenticated::send_udp`] carry UDP packets,
//!   fragmented to the path's datagram size and reassembled, bounded per session and
//!   per connection.
//!
//! - [`connect`]: the dialing side, a [`Client`] whose [`Client::open_tcp`] gives a
//!   stream through the server and whose [`Client::send_udp`] / [`Client::recv_udp`]
//!   carry UDP.
//! - [`endpoint_on`] and [`hop`]: one endpoint on a range of ports (port hopping);
//!   [`client_hop`]: the client hopping across them ([`ClientSettings::hop`]).
//! - [`brutal`]: Brutal congestion control at the rate a client declares (its
//!   `Hysteria-CC-RX`, capped by [`ServerSettings::tx`]); BBR when it declares none,
//!   under [`bound`]'s loss bound (so is the client's).
//! - [`SalamanderSocket`]: Salamander obfuscation under QUIC, when the inbound has an
//!   obfs password ([`ServerSettings::salamander`]).
//!
//! The messages themselves are [`switchyard_proto::hysteria2`]'s.

pub mod bound;
pub mod brutal;
mod client;
pub mod client_hop;
pub mod hop;
pub mod masquerade;
mod obfs;
mod server;
mod stream;
mod udp;
mod wire;

pub use client::{Client, ClientError, ClientSettings, connect};
pub use client_hop::{ClientHop, DEFAULT_HOP_INTERVAL};
pub use masquerade::ProxySite;
pub use obfs::SalamanderSocket;
pub use server::{
    Authenticated, HandshakeError, Masquerade, PendingTcp, RequestError, ServerSettings, TcpAccept,
    endpoint, endpoint_on, handshake,
};
pub use stream::QuicStream;
pub use udp::{SendUdpError, UdpPacket};
