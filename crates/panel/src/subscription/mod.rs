//! # Subscriptions
//!
//! What a subscription request gets. The pure parts decide without I/O: [`agents`]
//! picks the [`agents::Format`] from the client's User-Agent (operator rules first,
//! then a versioned built-in table); [`choice`] picks each route's inbound for the
//! user with the balancer (`switchyard_balance`); [`headers`] writes the headers apps
//! read; [`page`] renders the HTML page a browser gets (usage, expiry, share links with
//! QR codes and copy buttons) and [`body`] an app's config or links; [`names`] names
//! entries after their routes; [`limit`] counts each token's fetches; [`support`]
//! leaves out the entries an app cannot run ([`features`]) and says why; [`rule_sets`]
//! holds the split-tunnelling settings and the rule sets apps fetch. None of them
//! reads a clock, the store or the request.
//!
//! Around them, what reads the store: [`topology`] caches the clusters' routes,
//! servers and inbounds; [`entries`] builds a user's entries from it (and remembers
//! changed choices); [`refusal`] decides whether the user gets servers at all (and
//! registers their device). The HTTP handler in `api::subscription` parses the
//! request, passes the User-Agent, the device and "now" in, and sends what comes back.

pub mod agents;
pub mod body;
pub mod choice;
pub mod entries;
pub mod features;
pub mod geodat;
pub mod headers;
pub mod limit;
pub mod names;
pub mod page;
pub mod refusal;
pub mod rule_cache;
pub mod rule_sets;
pub mod support;
pub mod templates;
pub mod topology;
