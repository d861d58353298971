//! # Switchyard's wire codecs
//!
//! The byte formats the node's inbounds speak, as pure functions over byte slices:
//!
//! - [`address`]: the destination [`Address`] and its two wire forms (SOCKS5/Trojan
//!   and VLESS/Mux.Cool);
//! - [`vless`]: the VLESS request and response headers and VLESS UDP framing;
//! - [`xudp`]: Mux.Cool frames as XUDP uses them (VLESS command 3), the default
//!   packet encoding of sing-box's VLESS client;
//! - [`trojan`]: the Trojan request, the password hash and Trojan UDP framing;
//! - [`socks5`]: the server side of SOCKS5 (RFC 1928) with username/password
//!   authentication (RFC 1929) and the UDP request header;
//! - [`shadowsocks`]: Shadowsocks 2022 (SIP022) UDP client packets, opened with
//!   checked parsing (the ciphers come from `shadowsocks-crypto`), and the client's
//!   side: its keys, the TCP request and response ([`shadowsocks::tcp`]) and UDP
//!   packets both ways ([`shadowsocks::udp_client`]);
//! - [`websocket`]: the HTTP/1.1 WebSocket upgrade request and its `101` response,
//!   with the early-data forms of sing-box and Xray;
//! - [`client_hello`]: the TLS ClientHello, reassembled from its records, with the
//!   fields REALITY reads;
//! - [`dest`]: a REALITY inbound's `dest` checked (the panel and the node share it),
//!   and which addresses are not global;
//! - [`reality`]: REALITY's authentication (keys, the auth key, the sealed session id,
//!   who is accepted, replays, the certificate's signature), as Xray's client does it;
//! - [`vision`]: XTLS Vision's blocks (the VLESS flow `xtls-rprx-vision`): padding,
//!   reading them back, and the watch for the inner TLS handshake that decides the
//!   switch to direct copy;
//! - [`forwarded`]: a user's own address behind a CDN, from `X-Forwarded-For` when
//!   the connection comes from a trusted proxy;
//! - [`entry`]: one server of a subscription as a client app sees it ([`Entry`]);
//! - [`share`]: share links (`vless://`, `trojan://`, `ss://`) and subscription
//!   bodies, written by the panel and read by the client;
//! - [`singbox`]: a complete sing-box client config for a list of entries;
//! - [`clash`]: a complete Clash (mihomo) client config, as YAML, for a list of
//!   entries, and the entries of a Clash config read back;
//! - [`xray`]: complete Xray client configs, one per entry, as the JSON array
//!   v2rayN-style apps import.
//!
//! This crate never does I/O, never spawns, never reads a clock: the node's async
//! driver reads bytes into a buffer and hands them here.
//!
//! ## The parsing contract
//! Every parser reads bytes that come from the network, so every parser:
//! - never panics, whatever the bytes (fuzzed with cargo-fuzz, see `fuzz/`);
//! - bounds memory: no allocation is sized by an untrusted length beyond a small fixed
//!   cap (a domain is at most 255 bytes, a VLESS addons block 255, an HTTP head 8 KiB);
//! - returns `Ok(None)` when the buffer holds only a prefix of a valid message, so the
//!   caller reads more and calls again with the longer buffer; any prefix of a valid
//!   message gives `Ok(None)`, never an error;
//! - returns `Ok(Some((message, consumed)))` with the number of bytes the message used;
//!   bytes past `consumed` belong to the payload and are the caller's;
//! - returns a typed error naming what was wrong (`VlessError::UnsupportedCommand(9)`,
//!   `Socks5Error::BadVersion(4)`) as soon as the bytes seen so far cannot start a valid
//!   message.
//!
//! Encoders append to a `Vec<u8>`: `fn encode(&self, out: &mut Vec<u8>)`.
//!
//! Share links and subscriptions are text, read whole: [`share::parse_link`] and
//! [`share::parse_subscription`] never panic either (fuzzed too) and return a
//! [`share::LinkError`] naming what is wrong, never repeating a credential; so do
//! [`singbox::entries`] and [`clash::entries`], the latter within fixed bounds of
//! size, depth and alias expansion whatever the YAML.

#![warn(missing_docs)]

pub mod address;
mod base64;
pub mod bittorrent;
pub mod clash;
pub mod clash_vpn;
pub mod client_hello;
pub mod dest;
pub mod entry;
pub mod forwarded;
pub mod grpc;
pub mod h2_settings;
pub mod httpupgrade;
pub mod hysteria2;
pub mod reality;
pub mod routing;
pub mod shadowsocks;
pub mod share;
pub mod singbox;
pub mod singbox_vpn;
pub mod socks5;
pub mod template;
pub mod trojan;
pub mod vision;
pub mod vless;
pub mod vpn;
pub mod websocket;
pub mod xhttp;
pub mod xray;
pub mod xudp;
mod yaml;
mod yaml_read;

pub use address::{Address, AddressError};
pub use entry::{Entry, EntryProtocol, EntryReality, EntryTls, EntryTransport};

/// A payload too large for the 16-bit length field of a frame or packet.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("payload of {0} bytes is larger than the 65535 a 16-bit length allows")]
pub struct PayloadTooLarge(pub usize);

#[cfg(test)]
mod testing;
