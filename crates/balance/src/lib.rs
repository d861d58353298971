//! # Balance: which inbound of a route a user gets
//!
//! A route is one line in the user's app; behind it is a pool of inbounds, often on
//! different servers (`docs/routes.md`). When a user fetches the
//! subscription, the panel calls [`choose`] once per route with fresh measurements of
//! every inbound's server ([`Candidate`]) and the inbound the user got last time
//! ([`Previous`]), and gets back one [`Choice`] with the reason for it ([`Reason`]).
//! The [`capacity`] module estimates each server's channel capacity from its observed
//! traffic peaks, which is what "least loaded" needs.
//!
//! This crate owns those decisions and nothing else: it does no I/O, reads no clock
//! (time comes in as milliseconds with every [`capacity::Capacity::observe`] call),
//! draws no randomness and never panics on odd numbers. The same inputs give the same
//! choice, whatever the order of the pool slice.
//!
//! ## The rules in plain words
//!
//! 1. **Unavailable inbounds are left out.** An inbound whose server monitoring marks
//!    unavailable is not considered while any inbound of the pool is available. The
//!    *considered* candidates are the available ones, or all of them when none is.
//! 2. **Two algorithms, each with its metric.**
//!    - *Least loaded* ([`Algorithm::LeastLoaded`], the default): the free bandwidth the
//!      newcomer would get, `max(0, capacity − traffic) / (users + 1)`, in bytes/s.
//!      Higher is better, so a saturated server (traffic ≥ capacity) scores 0 and gets
//!      nobody while another has room, however few people it has.
//!    - *Round-robin* ([`Algorithm::RoundRobin`]): `users / coefficient`. Lower is
//!      better, so a server with coefficient 2.0 receives about twice the users of one
//!      with 1.0.
//! 3. **Graceful fallback.** If any considered candidate has no capacity estimate yet
//!    (`capacity: None`), least loaded cannot compare it, and the route is balanced by
//!    round-robin instead. [`Choice::applied`] says which algorithm decided.
//! 4. **Stickiness.** If the user's previous inbound is still in the pool and
//!    available, it is kept unless another candidate beats it by more than the
//!    hysteresis ([`Settings::hysteresis`], 25 % by default) on the applied metric:
//!    least loaded moves when `challenger > kept × (1 + h)`, round-robin when
//!    `challenger × (1 + h) < kept`. When it moves, the user gets the best challenger.
//!    If the user is counted among the previous inbound's users
//!    ([`Previous::counted`]), that inbound is judged with one user fewer, so every
//!    candidate is judged as the newcomer would see it; otherwise a user alone on a
//!    server would look like a crowd of one and flap to an empty server and back.
//! 5. **Ties** go to the earlier position in the route's pool, then the smaller
//!    inbound id.
//! 6. **All unavailable.** The route still gets an entry, because users must not lose
//!    it when monitoring blinks: the previous inbound if it is still in the pool,
//!    otherwise the best of all candidates by the applied algorithm
//!    ([`Reason::LeastBad`]).
//!
//! Odd numbers are made harmless before any of this ([`choose`] lists how), so a metric
//! is always finite and never negative.
//!
//! ## A worked example: least loaded
//!
//! Three inbounds, capacities and traffic in MB/s (10⁶ bytes/s):
//!
//! | inbound | capacity | traffic | users | metric for a newcomer |
//! |---|---|---|---|---|
//! | 1 | 100 | 60 | 3 | (100 − 60) / 4 = 10 |
//! | 2 | 50 | 10 | 5 | (50 − 10) / 6 ≈ 6.67 |
//! | 3 | 20 | 25 | 0 | max(0, 20 − 25) / 1 = 0 (saturated) |
//!
//! A new user gets inbound 1. A user who had inbound 2 and is counted among its 5 users
//! sees inbound 2 as (50 − 10) / (4 + 1) = 8; inbound 1 would have to offer more than
//! 8 × 1.25 = 10, and 10 is not more, so that user keeps inbound 2.
//!
//! ```
//! use switchyard_balance::{choose, Algorithm, Candidate, Previous, Reason, Settings};
//!
//! let mb = 1e6;
//! let pool = [
//!     Candidate { capacity: Some(100.0 * mb), traffic: 60.0 * mb, users: 3, ..Candidate::new(1, 0) },
//!     Candidate { capacity: Some(50.0 * mb), traffic: 10.0 * mb, users: 5, ..Candidate::new(2, 1) },
//!     Candidate { capacity: Some(20.0 * mb), traffic: 25.0 * mb, users: 0, ..Candidate::new(3, 2) },
//! ];
//! let s = Settings::default();
//!
//! let new = choose(Algorithm::LeastLoaded, &pool, None, &s).unwrap();
//! assert_eq!((new.inbound, new.reason, new.metric), (1, Reason::Best, 10.0 * mb));
//!
//! let back = Previous { inbound: 2, counted: true };
//! let old = choose(Algorithm::LeastLoaded, &pool, Some(back), &s).unwrap();
//! assert_eq!((old.inbound, old.reason, old.metric), (2, Reason::Kept, 8.0 * mb));
//! ```
//!
//! ## A worked example: round-robin
//!
//! | inbound | coefficient | users | metric for a newcomer |
//! |---|---|---|---|
//! | 1 | 2.0 | 10 | 10 / 2 = 5 |
//! | 2 | 1.0 | 4 | 4 / 1 = 4 |
//! | 3 | 1.0 | 6 | 6 / 1 = 6 |
//!
//! A new user gets inbound 2. A user who had inbound 3 but has not been online lately
//! (not counted) sees it at 6; inbound 2 at 4 beats it by more than the margin
//! (4 × 1.25 = 5 < 6), so that user moves to inbound 2. Had the user been counted,
//! inbound 3 would be judged at 5, and 5 is not below 5: kept.
//!
//! ```
//! use switchyard_balance::{choose, Algorithm, Candidate, Previous, Reason, Settings};
//!
//! let pool = [
//!     Candidate { coefficient: 2.0, users: 10, ..Candidate::new(1, 0) },
//!     Candidate { users: 4, ..Candidate::new(2, 1) },
//!     Candidate { users: 6, ..Candidate::new(3, 2) },
//! ];
//! let s = Settings::default();
//!
//! let new = choose(Algorithm::RoundRobin, &pool, None, &s).unwrap();
//! assert_eq!((new.inbound, new.reason, new.metric), (2, Reason::Best, 4.0));
//!
//! let away = Previous { inbound: 3, counted: false };
//! let moved = choose(Algorithm::RoundRobin, &pool, Some(away), &s).unwrap();
//! assert_eq!((moved.inbound, moved.reason), (2, Reason::Moved));
//!
//! let online = Previous { inbound: 3, counted: true };
//! let kept = choose(Algorithm::RoundRobin, &pool, Some(online), &s).unwrap();
//! assert_eq!((kept.inbound, kept.reason, kept.metric), (3, Reason::Kept, 5.0));
//! ```

#![warn(missing_docs)]

pub mod capacity;
mod choose;

pub use choose::choose;

/// An inbound's stable id (the panel's database id).
pub type InboundId = i64;

/// How a route spreads its users over its pool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// "Least loaded by traffic": the most free bandwidth per user,
    /// `max(0, capacity − traffic) / (users + 1)`, wins. Falls back to round-robin
    /// while a considered candidate has no capacity estimate.
    #[default]
    LeastLoaded,
    /// "Round-robin": the fewest users per unit of weight, `users / coefficient`, wins.
    RoundRobin,
}

/// One inbound of the route's pool with fresh measurements (of its server).
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// The inbound.
    pub inbound: InboundId,
    /// Its order in the route's pool; ties go to the smaller position, then the
    /// smaller inbound id.
    pub position: u32,
    /// `false` when monitoring says the inbound's server is unavailable.
    pub available: bool,
    /// The server's capacity estimate in bytes/s ([`capacity::Capacity::estimate`]);
    /// `None` while there is no estimate yet.
    pub capacity: Option<f64>,
    /// The server's traffic now in bytes/s, both directions summed.
    pub traffic: f64,
    /// Users online on the server now (seen in the last few minutes).
    pub users: u64,
    /// The server's round-robin weight, greater than 0; 1.0 by default.
    pub coefficient: f64,
}

impl Candidate {
    /// An available inbound at `position` with no capacity estimate, no traffic, no
    /// users and coefficient 1.0: a base to fill with struct update syntax.
    pub fn new(inbound: InboundId, position: u32) -> Self {
        Self {
            inbound,
            position,
            available: true,
            capacity: None,
            traffic: 0.0,
            users: 0,
            coefficient: 1.0,
        }
    }
}

/// The inbound this user got last time for this route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Previous {
    /// The inbound chosen last time.
    pub inbound: InboundId,
    /// `true` when the user is believed to be among that inbound's
    /// [`users`](Candidate::users) (seen online recently). That candidate is then
    /// judged with one user fewer (saturating at 0), so the user counts nowhere and
    /// every candidate is judged as the newcomer would see it.
    pub counted: bool,
}

/// The balancer's tunables.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settings {
    /// How much better, as a fraction of the applied metric, another candidate must be
    /// before a user leaves the previous inbound. Default 0.25 (25 %): larger keeps
    /// users in place longer while load shifts, smaller follows load more closely at
    /// the price of users' servers changing more often. 0 moves on any strict
    /// improvement. A negative or NaN value is treated as 0.
    pub hysteresis: f64,
}

impl Settings {
    /// The default hysteresis, 25 %.
    pub const DEFAULT_HYSTERESIS: f64 = 0.25;
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            hysteresis: Self::DEFAULT_HYSTERESIS,
        }
    }
}

/// What [`choose`] decided for one route.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Choice {
    /// The inbound the user gets.
    pub inbound: InboundId,
    /// Why this inbound.
    pub reason: Reason,
    /// The algorithm that decided: [`Algorithm::RoundRobin`] when asked for, or as the
    /// fallback when a considered candidate has no capacity estimate.
    pub applied: Algorithm,
    /// The chosen inbound's metric under the applied algorithm (free bytes/s per user
    /// for least loaded, users per unit of coefficient for round-robin), with the user
    /// not counted on it. Always finite and never negative.
    pub metric: f64,
}

/// Why [`choose`] chose an inbound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// No usable previous choice: the best candidate by the applied algorithm.
    Best,
    /// The previous choice kept: still available, and nobody beats it by the
    /// hysteresis margin.
    Kept,
    /// The previous choice is available, but another candidate beat it by more than
    /// the margin.
    Moved,
    /// Every candidate is unavailable; the route still gets an entry.
    LeastBad,
}

impl Reason {
    /// The reason's stable name for logs and the API: `"best"`, `"kept"`, `"moved"` or
    /// `"least_bad"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Best => "best",
            Self::Kept => "kept",
            Self::Moved => "moved",
            Self::LeastBad => "least_bad",
        }
    }
}
