//! # One transport layer (`docs/architecture.md`, "Transports")
//!
//! Every byte stream Switchyard carries (a node inbound's client, a client outbound's
//! server, a tunnel link) is the same stack: TCP at the bottom, then layers, each
//! turning one byte stream into another: TLS, REALITY, WebSocket, HTTPUpgrade, gRPC. The node, the
//! client and the tunnel describe *which* layers in their own config; this crate is
//! the only place that knows *how* each one is spoken, so a new transport (XHTTP,
//! gRPC, HTTPUpgrade, QUIC) is written once and every part gets it.
//!
//! - [`Io`] and [`BoxIo`]: what every layer takes and gives.
//! - Dialing ([`dial`]): a [`Stack`](dial::Stack) is an address and its layers in
//!   order; [`Connector`](dial::Connector) is what a stack (or anything that makes
//!   streams) offers its users. Every failure names its step
//!   ([`DialError`](dial::DialError)).
//! - Accepting ([`listen`]): a [`Listener`](listen::Listener) only *accepts*; the
//!   handshakes of the layers above run afterwards, in the connection's own task, so
//!   one slow peer never holds up the others. `accept` is cancel-safe: dropping its
//!   future (a `select!` with a shutdown signal) loses no connection.
//! - The server side of each layer: TLS is tokio-rustls' acceptor, serving a
//!   [`certificate::Certificate`] that is swapped live on a renewal; [`ws`] reads and
//!   answers the upgrade ([`ws::read_upgrade`], [`ws::accept`]) and frames bytes as
//!   binary messages; [`httpupgrade`] reads and answers its upgrade
//!   ([`httpupgrade::read_upgrade`], [`httpupgrade::accept`]), then the bytes go as
//!   they are; [`grpc`] tells HTTP/2 from a probe ([`grpc::read_preface`]) and
//!   serves one HTTP/2 connection, each gun request a stream ([`grpc::serve`]);
//!   [`reality`] answers its own clients and splices everyone else to the target
//!   site.
//! - [`xhttp`] (Xray's XHTTP) on the serving side: an inbound's
//!   [`xhttp::Server`] holds the sessions all its connections share; its first
//!   request tells our client from a probe ([`xhttp::Server::read_first`], a probe
//!   comes back with every byte), then hyper serves HTTP/1.1 or HTTP/2 and each
//!   stream is handed over as an [`xhttp::ServerStream`] ([`xhttp::Server::serve`]).
//! - gRPC on the dialing side shares one HTTP/2 connection among a stack's
//!   streams ([`grpc::Pool`], [`Layer::Grpc`](dial::Layer::Grpc)).
//! - XHTTP on the dialing side: each stream a session of HTTP/1.1 or HTTP/2
//!   requests on connections a stack's clones share, as XMUX says
//!   ([`xhttp::client::Pool`], [`Layer::Xhttp`](dial::Layer::Xhttp)).
//! - [`io::Prefixed`]: bytes already read put back in front of a stream (a header's
//!   tail, a ClientHello), so a refused handshake can go to a fallback intact.

#![warn(missing_docs)]

pub mod certificate;
pub mod dial;
pub mod grpc;
pub mod header;
pub mod httpupgrade;
pub mod hysteria2;
pub mod io;
pub mod listen;
pub mod reality;
pub mod shadowsocks;
pub mod ws;
pub mod xhttp;

pub use io::{BoxIo, ChunkWrite, Io, Prefixed};
