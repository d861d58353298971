//! Errors for input a policy cannot accept.

use thiserror::Error;

use crate::event::CheckId;
use crate::server::ServerId;

/// Why an [`Event`](crate::Event) was refused. The engine's state is unchanged when an
/// event is refused.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum InputError {
    /// The event names a subscription the engine does not know.
    #[error(
        "subscription {name:?} is not known; known subscriptions come from Event::Subscriptions"
    )]
    UnknownSubscription {
        /// The name given.
        name: String,
    },
    /// The event names a server that is in no subscription.
    #[error("server {server} is in no subscription")]
    UnknownServer {
        /// The identity given.
        server: ServerId,
    },
    /// Two subscriptions share a name.
    #[error("subscription {name:?} appears twice; subscription names must be unique")]
    DuplicateSubscription {
        /// The repeated name.
        name: String,
    },
    /// A server appears twice in one subscription.
    #[error("subscription {subscription:?}: server {server} appears twice")]
    DuplicateServer {
        /// The subscription.
        subscription: String,
        /// The repeated server.
        server: ServerId,
    },
    /// Probe replies for a check that is not running.
    #[error("probe replies for check {check}, which is not running")]
    UnknownCheck {
        /// The check named.
        check: CheckId,
    },
    /// Probe replies that do not match the servers the check probed.
    #[error("probe replies for check {check} name {server}, which that check did not probe")]
    UnexpectedReply {
        /// The check.
        check: CheckId,
        /// The server that was not probed.
        server: ServerId,
    },
    /// Marking would leave no unmarked server in a subscription.
    #[error(
        "server {server} is the last unmarked server of subscription {subscription:?} and can't be marked"
    )]
    LastUnmarked {
        /// The subscription.
        subscription: String,
        /// The server that would have been marked.
        server: ServerId,
    },
    /// A speed-test result that is not a finite, non-negative number.
    #[error("speed test of {server}: {mbps} is not a valid speed in Mbit/s")]
    InvalidSpeed {
        /// The server.
        server: ServerId,
        /// The value given.
        mbps: f64,
    },
    /// Traffic counters went backwards.
    #[error(
        "traffic counters went backwards ({field}: {before} -> {after}); pass cumulative counters"
    )]
    CountersWentBack {
        /// `sent` or `received`.
        field: &'static str,
        /// The previous value.
        before: u64,
        /// The new value.
        after: u64,
    },
}

/// Refuses cumulative traffic counters that went backwards: the check every policy
/// (the engine, and the simulator's models of peers' policies) makes on
/// [`Event::Traffic`](crate::Event::Traffic). `before` and `after` are `(sent, received)`.
pub fn counters_forward(before: (u64, u64), after: (u64, u64)) -> Result<(), InputError> {
    for (field, b, a) in [("sent", before.0, after.0), ("received", before.1, after.1)] {
        if a < b {
            return Err(InputError::CountersWentBack {
                field,
                before: b,
                after: a,
            });
        }
    }
    Ok(())
}
