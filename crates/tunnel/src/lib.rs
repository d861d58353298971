//! # The relay→origin tunnel (`docs/tunnel.md`)
//!
//! A tunnel carries users' connections from one node, the **relay**, to other nodes,
//! the **origins**, which send them on. This crate owns the tunnel's pure parts, which
//! the panel, the standalone CLI and the node all use:
//! - [`credentials`]: the values derived from the panel's secret, the tunnel's name and
//!   an origin's name (the origin's credential, the tunnel tag, the certificate name),
//!   re-exported from the config contract (`switchyard_config`), which the panel and
//!   the node's config read them from;
//! - [`placement`]: which origin a user's connection goes to (sticky table plus
//!   rendezvous hashing), so a user keeps their exit address;
//! - [`backoff`]: when the dialing side tries again;
//! - [`frame`]: the link's frame codec;
//! - [`mux`]: streams multiplexed over one link (tokio tasks around a pure state
//!   machine);
//! - [`link`]: how a link is made and trusted (certificates, pins, transports, the
//!   hello, the dialer);
//! - [`pool`] and [`user_limits`]: the relay's links per origin, and how many streams
//!   one user may hold in them.
//! - [`pump`]: bytes carried both ways between two streams, counted, with an idle
//!   timeout: what the node does with every connection, tunnelled or not.
//!
//! [`backoff`], [`credentials`], [`frame`] and [`placement`] are pure: no I/O, no clock,
//! no randomness that is not passed in. [`mux`] and [`link`] are the async shells.

#![warn(missing_docs)]

pub mod backoff;
pub use switchyard_config::credentials;
pub mod frame;
pub mod half;
pub mod link;
pub mod mux;
pub mod placement;
pub mod pool;
pub mod pump;
pub mod splice;
pub mod supervise;
pub mod user_limits;
