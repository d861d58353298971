//! # Auto: Switchyard's server-selection engine
//!
//! Auto keeps a user's VPN on a working server of the chosen subscription and switches
//! only when the current server stops answering (`docs/auto.md`). This crate owns:
//!
//! - the **engine** ([`Engine`]): a deterministic state machine. It takes timestamped
//!   [`Event`]s (traffic counters, connect failures, probe replies, subscription
//!   updates, user actions, network availability) and returns [`Output`]s (probe these
//!   servers, connect to that one, and reports of what it decided), plus the next
//!   deadline from [`Policy::poll_timeout`];
//! - the **score** and **queue** ([`score`], [`queue`]) computed from each server's
//!   [`Measurement`] history.
//!
//! The virtual-time simulator, which replays a scenario against Auto or a model of a
//! peer's policy, is a crate of its own (`switchyard-auto-sim`), so that the C ABI
//! (`switchyard-auto-ffi`) ships only the engine.
//!
//! The crate never does I/O, never reads a clock and draws no randomness: time comes
//! in as [`Timestamp`]s with every call, from a monotonic clock of the driver's
//! ([`time`] states the contract and what happens when a clock breaks it), so each rule
//! is testable with exact times. The client's async driver turns sockets and timers into
//! these calls and decides nothing.
//!
//! The engine's durable memory (history, marks, speed results, the server to return
//! to) is a [`State`] that serializes with serde, so a client restart keeps it; it stays
//! bounded (servers gone from every subscription for a day are forgotten), and
//! restoring it does not turn Auto on.

#![warn(missing_docs)]

pub mod config;
mod engine;
pub mod error;
pub mod event;
pub mod history;
pub mod measurement;
pub mod policy;
pub mod queue;
pub mod score;
pub mod server;
pub mod time;

pub use config::{AutoConfig, ConfigError, Platform};
pub use engine::{Engine, NetworkPause, State};
pub use error::InputError;
pub use event::{
    Check, CheckId, CheckReport, ConnectReason, Event, Outcome, Output, SwitchReason, Trigger,
};
pub use measurement::{Measurement, Method, ProbeReply, ProbeRules, UnknownMethod};
pub use policy::Policy;
pub use server::{Server, ServerId, Subscription};
pub use time::Timestamp;
