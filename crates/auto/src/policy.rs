//! The interface every selection policy offers its driver.

use crate::error::InputError;
use crate::event::{Event, Output};
use crate::time::Timestamp;

/// A server-selection policy driven by events: Auto itself, or a model of a peer's
/// policy in the simulator. Implementations are pure: no clock, no I/O.
pub trait Policy {
    /// The policy's name in reports (`auto`, `urltest`, `fallback`).
    fn name(&self) -> &'static str;

    /// Feed one event that happened at `now`. Times come from a monotonic clock and
    /// never go backwards (see [`crate::time`]; Auto copes with a step back, a model
    /// need not). A refused event leaves the policy's state unchanged.
    fn handle_event(&mut self, now: Timestamp, event: Event) -> Result<(), InputError>;

    /// Advance the policy's own timers to `now`: call this when the time returned by
    /// [`poll_timeout`](Self::poll_timeout) is reached.
    fn handle_timeout(&mut self, now: Timestamp);

    /// The next output to act on, if any. Call until it returns `None` after every
    /// `handle_event` and `handle_timeout`.
    fn poll_output(&mut self) -> Option<Output>;

    /// When the policy next wants [`handle_timeout`](Self::handle_timeout) called.
    fn poll_timeout(&self) -> Option<Timestamp>;
}
