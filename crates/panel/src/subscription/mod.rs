//! # Subscriptions: the pure parts
//!
//! What a subscription request gets, decided without I/O: [`agents`] picks the
//! [`agents::Format`] from the client's User-Agent (operator rules first, then a
//! versioned built-in table); [`choice`] picks each route's inbound for the user with
//! the balancer (`switchyard_balance`); [`headers`] writes the headers apps read; and
//! [`page`] renders the HTML page a browser gets (usage, expiry, share links with QR
//! codes and copy buttons); [`names`] names entries after their routes; [`limit`]
//! counts each token's fetches.
//!
//! None of them reads a clock, the store or the request: the HTTP handler in
//! `api::subscription` passes the User-Agent, the measurements, the profile and "now"
//! in, and sends what comes back.

pub mod agents;
pub mod choice;
pub mod headers;
pub mod limit;
pub mod names;
pub mod page;
