//! Switchyard's client, the end user's side: subscriptions fetched from a panel, the
//! servers in them as [`Outbound`]s (VLESS and Trojan over TCP, TLS and WebSocket),
//! and the local [`Proxy`] (SOCKS5 and HTTP CONNECT on one port) that sends apps'
//! connections through the chosen server.
//!
//! Choosing the server is the Auto engine's job (`switchyard-auto`); wiring it to real
//! probes and the traffic watch is the next step (see `docs/client.md`). Today the
//! client uses the first server of the first subscription that it can use.

pub mod auto;
pub mod control;
pub mod meter;
pub mod outbound;
pub mod probe;
pub mod proxy;
pub mod subscription;

pub use outbound::{Outbound, OutboundError};
pub use proxy::Proxy;
pub use subscription::{Subscription, SubscriptionError, fetch};
