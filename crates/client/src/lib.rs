//! Switchyard's client, the end user's side: subscriptions fetched from a panel, the
//! servers in them as [`Outbound`]s (VLESS and Trojan over TCP, TLS and WebSocket,
//! Shadowsocks 2022 over TCP; TCP and UDP), the local [`Proxy`] (SOCKS5 with UDP
//! ASSOCIATE, and HTTP, CONNECT and plain requests, on one port) that sends apps'
//! connections and datagrams through the chosen server, and the driver ([`auto`])
//! that lets the Auto engine (`switchyard-auto`) choose that server on real traffic,
//! real probes and the [`network`]'s changes, controlled over a local socket
//! ([`control`]).

#![warn(missing_docs)]

pub mod auto;
pub mod control;
pub mod meter;
pub mod network;
pub mod outbound;
pub mod page;
pub mod probe;
pub mod proxy;
pub mod speedtest;
pub mod subscription;
mod wall;

pub use outbound::{Outbound, OutboundError};
pub use proxy::Proxy;
pub use subscription::{Subscription, SubscriptionError, fetch};
