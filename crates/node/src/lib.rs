//! # The Switchyard node
//!
//! The data plane on each server: user-facing inbounds (VLESS, Trojan, Shadowsocks
//! 2022, SOCKS5) over TCP, TLS and WebSocket, VLESS over REALITY ([`reality`] makes
//! its keys), outbounds (`direct`, `block`), routing rules ([`route`]), per-user
//! accounting with a durable journal, live configuration applied as a difference, and
//! the control API (`/v1/status`, `/v1/stats`, `/v1/config`, `/metrics`), served on
//! loopback and over the channel the node dials to its panel ([`channel`]).
//!
//! Its configuration is the contract it shares with the panel, `switchyard_config`
//! (types, defaults, validation), re-exported as [`config`], [`reality`] and [`route`].

#![warn(missing_docs)]

pub mod accounting;
mod acme;
pub mod channel;
pub mod config;
pub mod control;
pub mod handover;
mod inbound;
pub mod journal;
pub mod node;
pub mod outbound;
pub mod runtime;
pub mod sessions;
pub mod state;
mod supervise;
pub mod tls;
mod tunnel_site;
mod tunnels;
pub mod users;

pub use config::{ConfigError, NodeConfig};
pub use inbound::reality::RealityError;
pub use inbound::{BindError, InboundError};
pub use node::{ApplyError, Node};
pub use switchyard_config::{reality, route};
pub use tunnels::TunnelError;
