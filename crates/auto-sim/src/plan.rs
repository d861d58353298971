//! A validated scenario in the engine's units, ready to run.

use core::time::Duration;

use switchyard_auto::config::Platform;
use switchyard_auto::measurement::Measurement;
use switchyard_auto::server::{ServerId, Subscription};
use switchyard_auto::time::Timestamp;

use super::error::ScenarioError;
use super::scenario::Scenario;
use super::world::World;

/// Longest run a scenario may ask for (`until`): 31 days of virtual time.
pub const MAX_UNTIL_S: f64 = 31.0 * 24.0 * 3600.0;

/// Longest probe timeout a scenario may set: one hour.
pub const MAX_PROBE_TIMEOUT_S: f64 = 3600.0;

/// A scenario that passed [`Scenario::validate`]: times in milliseconds, names
/// resolved, the world precomputed. [`run`](super::run) takes this.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Device kind.
    pub platform: Platform,
    /// The run covers `[0, until)`.
    pub until: Timestamp,
    /// Each probe's timeout.
    pub probe_timeout: Duration,
    /// Subscriptions at t = 0, in list order; a server's identity is its name.
    pub subscriptions: Vec<Subscription>,
    /// The subscription Auto is turned on in at t = 0.
    pub auto: String,
    /// Measurements before t = 0, in file order.
    pub history: Vec<(ServerId, Measurement)>,
    /// Speed-test results of the initial subscriptions' servers, in subscription order.
    pub speeds: Vec<(ServerId, f64)>,
    /// How servers and the network answer over time.
    pub world: World,
    /// Intervals of user traffic: sorted, disjoint, inside `[0, until)`.
    pub traffic: Vec<(Timestamp, Timestamp)>,
    /// User actions by time; actions at the same time keep file order.
    pub actions: Vec<Action>,
}

/// A user action at a time.
#[derive(Clone, Debug, PartialEq)]
pub struct Action {
    /// When.
    pub at: Timestamp,
    /// What.
    pub kind: ActionKind,
}

/// What a user action does; each maps to one [`Event`](switchyard_auto::Event).
#[derive(Clone, Debug, PartialEq)]
pub enum ActionKind {
    /// `mark`: [`Event::Mark`](switchyard_auto::Event::Mark).
    Mark(Vec<ServerId>),
    /// `unmark`: [`Event::Unmark`](switchyard_auto::Event::Unmark).
    Unmark(Vec<ServerId>),
    /// `done`: [`Event::MarksDone`](switchyard_auto::Event::MarksDone).
    Done,
    /// `update`: [`Event::SubscriptionUpdated`](switchyard_auto::Event::SubscriptionUpdated),
    /// then a [`Event::SpeedTest`](switchyard_auto::Event::SpeedTest) per server given with
    /// `speed_mbps`.
    Update {
        /// The subscription's servers from now on.
        subscription: Subscription,
        /// Speed-test results given in the update.
        speeds: Vec<(ServerId, f64)>,
    },
    /// `network_change`: [`Event::NetworkChanged`](switchyard_auto::Event::NetworkChanged).
    NetworkChange,
    /// `auto_on`: [`Event::AutoOn`](switchyard_auto::Event::AutoOn).
    AutoOn(String),
}

impl ActionKind {
    /// The action's name in the scenario format (`mark`, `update`, ...).
    pub const fn as_str(&self) -> &'static str {
        match self {
            Self::Mark(_) => "mark",
            Self::Unmark(_) => "unmark",
            Self::Done => "done",
            Self::Update { .. } => "update",
            Self::NetworkChange => "network_change",
            Self::AutoOn(_) => "auto_on",
        }
    }
}

impl Plan {
    /// Parses and validates a scenario in one step.
    pub fn from_json(text: &str) -> Result<Self, ScenarioError> {
        Scenario::from_json(text)?.validate()
    }
}

/// Sorts, clips to `[0, until)` and merges intervals given in milliseconds.
pub(crate) fn merge_intervals(
    mut v: Vec<(Timestamp, Timestamp)>,
    until: Timestamp,
) -> Vec<(Timestamp, Timestamp)> {
    v.sort();
    let mut out: Vec<(Timestamp, Timestamp)> = Vec::with_capacity(v.len());
    for (from, to) in v {
        let (from, to) = (from.max(Timestamp::ZERO), to.min(until));
        if from >= to {
            continue;
        }
        match out.last_mut() {
            Some(last) if from <= last.1 => last.1 = last.1.max(to),
            _ => out.push((from, to)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_merge_and_clip() {
        let t = Timestamp;
        let v = vec![
            (t(500), t(900)),
            (t(0), t(100)),
            (t(100), t(200)),
            (t(850), t(2000)),
        ];
        assert_eq!(
            merge_intervals(v, t(1000)),
            vec![(t(0), t(200)), (t(500), t(1000))]
        );
    }
}
