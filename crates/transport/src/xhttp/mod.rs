//! XHTTP (Xray's SplitHTTP successor, [`switchyard_proto::xhttp`]): one proxied stream
//! carried by ordinary HTTP/1.1 or HTTP/2 requests. The client side is [`client`].
//!
//! The server side is [`server`]: an inbound's [`Server`] holds its settings and the
//! sessions all its connections share; [`Server::read_first`] tells our client's
//! first request from a probe's (which comes back with every byte, for a fallback),
//! [`Server::serve`] runs the connection with hyper (HTTP/1.1, or HTTP/2 after ALPN
//! `h2` or with prior knowledge) and hands each stream over as a [`ServerStream`].
//! Limits: [`Limits`].

pub mod client;
mod client_conn;
mod client_stream;
pub mod server;
mod session;

pub use client_conn::Dialed;
pub use client_stream::XhttpStream;
pub use server::{First, Refusal, ServeError, Server};
pub use session::{Full, Limits, PushError, ServerStream};

#[cfg(test)]
mod server_tests;
