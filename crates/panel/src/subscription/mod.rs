//! # Subscriptions: the pure parts
//!
//! What a subscription request gets, decided without I/O: [`agents`] picks the
//! [`agents::Format`] from the client's User-Agent (operator rules first, then a
//! versioned built-in table), and [`page`] renders the HTML page a browser gets
//! (usage, expiry, share links with QR codes and copy buttons).
//!
//! Neither module reads a clock, the store or the request: the HTTP handler in
//! `api::subscription` passes the User-Agent, the profile and "now" in, and sends
//! what comes back.

pub mod agents;
pub mod page;
