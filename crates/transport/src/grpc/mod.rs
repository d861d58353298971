//! gRPC ("gun"), as Xray, sing-box and mihomo speak it: each proxied stream is one
//! HTTP/2 request, `POST /{service}/Tun` (or `/{service}/TunMulti`, Xray's multi
//! mode), its bytes both ways in gRPC messages ([`switchyard_proto::grpc`]); many
//! streams share one connection. HTTP/2 is the `h2` crate's.
//!
//! - [`GrpcStream`]: one stream as bytes, with HTTP/2's flow control (a write waits
//!   for the peer's window; the receive window opens as bytes are read).
//! - Server ([`server`]): [`read_preface`] tells HTTP/2 from anything else (an
//!   HTTP/1.1 probe comes back with every byte, for a fallback), [`serve`] runs the
//!   connection and hands each gun request to the caller; other requests get what a
//!   gRPC server answers (`grpc-status: 12`, or `404`). Limits: [`Settings`].
//! - Client ([`client`]): [`Pool`], the connection a stack's streams share;
//!   [`Layer::Grpc`](crate::dial::Layer::Grpc) dials through it.

pub mod client;
pub mod server;
mod stream;

pub use client::{Pool, Target};
pub use server::{ServeError, Settings, read_preface, serve};
pub use stream::{FRAME_PAYLOAD, GrpcReader, GrpcStream, GrpcWriter, MAX_WRITE};

#[cfg(test)]
mod tests;
