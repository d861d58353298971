//! # The Switchyard node
//!
//! The data plane on each server: user-facing inbounds (VLESS, Trojan, Shadowsocks
//! 2022, SOCKS5) over TCP, TLS and WebSocket, VLESS over REALITY ([`reality`] makes
//! its keys), outbounds (`direct`, `block`), per-user
//! accounting with a durable journal, live configuration applied as a difference, and
//! the control API (`/v1/status`, `/v1/stats`, `/v1/config`, `/metrics`), served on
//! loopback and over the channel the node dials to its panel ([`channel`]).

pub mod accounting;
pub mod channel;
pub mod config;
pub mod control;
mod inbound;
pub mod journal;
pub mod node;
pub mod outbound;
pub mod reality;
pub mod relay;
pub mod route;
pub mod sessions;
pub mod state;
mod supervise;
pub mod tls;
mod tunnel_site;
mod tunnels;
pub mod users;
pub mod ws;

pub use config::{ConfigError, NodeConfig};
pub use node::{ApplyError, Node};
