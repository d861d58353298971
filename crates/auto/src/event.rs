//! What goes into a policy ([`Event`]) and what comes out of it ([`Output`]).
//!
//! These types are the whole contract between a selection policy and its driver: the
//! real client and the simulator feed the same events and act on the same outputs.

use core::fmt;
use core::time::Duration;

use serde::Serialize;

use crate::measurement::{Measurement, Method, ProbeReply};
use crate::server::{ServerId, Subscription};

/// Something that happened, reported by the driver with the time it happened.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// The app's subscriptions, in list order; replaces the whole list. Neighbours of a
    /// subscription are the nearest ones above and below in this order.
    Subscriptions(Vec<Subscription>),
    /// One subscription's servers after an update (the subscription must exist).
    SubscriptionUpdated(Subscription),
    /// The user turned Auto on in this subscription with the VPN connected. Auto is
    /// on in one subscription at a time: this turns it off everywhere else.
    AutoOn {
        /// Name of the subscription.
        subscription: String,
    },
    /// Cumulative byte counters of the VPN connection (the traffic meter), sampled by
    /// the driver about once a second. They count over the engine's whole run: an
    /// [`Output::Connect`] to another server must not reset them (a driver whose meter
    /// restarts adds the totals from before), since counters that go back are refused
    /// and the traffic triggers then see nothing until the counts pass the old ones.
    Traffic {
        /// Bytes sent by the device so far.
        sent: u64,
        /// Bytes received by the device so far.
        received: u64,
    },
    /// The core could not connect to this server.
    ConnectFailed {
        /// The server the core tried.
        server: ServerId,
    },
    /// The replies to the probes of a check, one per probed server.
    ProbeResults {
        /// The check these replies answer.
        check: CheckId,
        /// One reply per probed server.
        replies: Vec<(ServerId, ProbeReply)>,
    },
    /// Whether the device has any network at all (an interface that is up).
    NetworkAvailable(bool),
    /// The device moved to another network (mobile data to Wi-Fi, say).
    NetworkChanged,
    /// The user marks servers Auto must not switch to.
    Mark(Vec<ServerId>),
    /// The user removes marks.
    Unmark(Vec<ServerId>),
    /// The user pressed "Done" after marking.
    MarksDone,
    /// A speed-test result for a server, in megabits per second.
    SpeedTest {
        /// The measured server.
        server: ServerId,
        /// The result.
        mbps: f64,
    },
    /// A measurement taken outside Auto's checks (imported history, a manual ping).
    Measured {
        /// The measured server.
        server: ServerId,
        /// The measurement.
        measurement: Measurement,
    },
}

/// Identifies one check; probe replies name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct CheckId(pub u64);

impl fmt::Display for CheckId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// What a policy asks its driver to do, or reports that it did.
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    /// Probe these servers concurrently, each with `timeout`, then report every reply in
    /// one [`Event::ProbeResults`].
    Probe(Check),
    /// Connect the VPN through this server.
    Connect {
        /// The server to use from now on.
        server: ServerId,
        /// Why.
        reason: ConnectReason,
    },
    /// Report: a check finished with this outcome.
    CheckDone(CheckReport),
    /// Report: the policy left `from` for `to`.
    Switched {
        /// The server left.
        from: ServerId,
        /// The server now used.
        to: ServerId,
        /// Why.
        reason: SwitchReason,
    },
    /// Report: every probe went unanswered, neighbours included; the network looks
    /// gone and the next attempt comes after `retry_in`.
    NetworkLost {
        /// The pause before the next attempt.
        retry_in: Duration,
    },
    /// Report: **Auto paused, no server.** Auto's subscription has no server to use: an
    /// update emptied it, Auto was turned on in an empty one, or it was deleted. Auto
    /// connects nowhere and starts no check until an update brings servers (or, once
    /// deleted, until the next [`Event::AutoOn`]); the current server is cleared. What
    /// happens to the VPN connection meanwhile is the driver's choice; the app should
    /// tell the user.
    NoServer {
        /// The subscription Auto was on in.
        subscription: String,
        /// The subscription was deleted, so Auto is off; otherwise it is empty and Auto
        /// is still on in it.
        deleted: bool,
    },
}

/// A check to run: probe `servers` with `method`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    /// Names this check in the reply.
    pub id: CheckId,
    /// What started the check.
    pub trigger: Trigger,
    /// Servers to probe, in the order they were chosen.
    pub servers: Vec<ServerId>,
    /// How to probe.
    pub method: Method,
    /// Each probe counts as "no answer" past this.
    pub timeout: Duration,
}

/// The result of a check, for logs and the simulator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckReport {
    /// The check.
    pub id: CheckId,
    /// What started it.
    pub trigger: Trigger,
    /// Servers that answered, with their delay in milliseconds, in probe order.
    pub answered: Vec<(ServerId, u32)>,
    /// Servers that did not answer, in probe order.
    pub silent: Vec<ServerId>,
    /// What the policy decided.
    pub outcome: Outcome,
    /// Set when a switch was due but the switch limit held it back.
    pub held: bool,
    /// Set when the check's results never came: it ended on its deadline (probe timeout
    /// plus [`RESULTS_GRACE`](crate::config::RESULTS_GRACE)) with every probed server
    /// unanswered.
    pub timed_out: bool,
}

impl CheckReport {
    /// The report of `check` whose probed servers got these delays (`None`: no
    /// answer), in probe order.
    pub fn new(
        check: &Check,
        delays: &[(ServerId, Option<u32>)],
        outcome: Outcome,
        held: bool,
    ) -> Self {
        Self {
            id: check.id,
            trigger: check.trigger,
            answered: delays
                .iter()
                .filter_map(|(id, d)| d.map(|ms| (id.clone(), ms)))
                .collect(),
            silent: delays
                .iter()
                .filter(|(_, d)| d.is_none())
                .map(|(id, _)| id.clone())
                .collect(),
            outcome,
            held,
            timed_out: false,
        }
    }
}

/// What started a check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// Data went out and nothing came back for the platform's stall threshold.
    Stall,
    /// The core could not connect to the current server.
    ConnectFailure,
    /// Nothing came in for 30 s although something was sent.
    NoInbound,
    /// The periodic check (5 min with traffic for Auto; the peers' intervals).
    Scheduled,
    /// The own subscription was silent: probing the neighbouring subscriptions.
    Neighbours,
    /// The own subscription was silent and the neighbours answered: a wider look.
    Wide,
    /// On a neighbour's server: the once-a-minute look at the own subscription.
    OwnSubscription,
    /// An attempt after a pause (network lost, switch limit).
    Retry,
}

impl Trigger {
    /// The snake_case name used in reports.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Stall => "stall",
            Self::ConnectFailure => "connect_failure",
            Self::NoInbound => "no_inbound",
            Self::Scheduled => "scheduled",
            Self::Neighbours => "neighbours",
            Self::Wide => "wide",
            Self::OwnSubscription => "own_subscription",
            Self::Retry => "retry",
        }
    }
}

/// What a check decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Stay on the current server.
    Stay,
    /// Switch to another server.
    Switch,
    /// Nobody answered: ask the neighbouring subscriptions.
    AskNeighbours,
    /// Neighbours silent too: the network is gone.
    NetworkLost,
    /// Neighbours answered: the own subscription is down.
    SubscriptionDown,
}

impl Outcome {
    /// The snake_case name used in reports.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Stay => "stay",
            Self::Switch => "switch",
            Self::AskNeighbours => "ask_neighbours",
            Self::NetworkLost => "network_lost",
            Self::SubscriptionDown => "subscription_down",
        }
    }
}

/// Why a policy connects to a server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnectReason {
    /// Auto was turned on (or the policy started).
    AutoOn,
    /// A switch away from a failing server (or, for peers' policies, to a faster one).
    Switch,
    /// Back to the server left earlier.
    SwitchBack,
    /// The user marked the current server.
    Marked,
    /// An update removed the current server from its subscription.
    Removed,
    /// The own subscription is down: a server of a neighbouring subscription.
    Neighbour,
}

impl ConnectReason {
    /// The snake_case name used in reports.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::AutoOn => "auto_on",
            Self::Switch => "switch",
            Self::SwitchBack => "switch_back",
            Self::Marked => "marked",
            Self::Removed => "removed",
            Self::Neighbour => "neighbour",
        }
    }
}

/// Why a policy left a server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SwitchReason {
    /// The current server did not answer a check.
    CurrentSilent,
    /// The current server failed a connection (peers' policies react to this alone).
    ConnectFailed,
    /// Another server measured faster (peers' policies; Auto never does this).
    Faster,
    /// The remembered server answered twice in a row.
    SwitchBack,
    /// The own subscription is down; moving to a neighbouring one.
    SubscriptionDown,
    /// The user marked the current server.
    Marked,
    /// An update removed the current server.
    Removed,
}

impl SwitchReason {
    /// The snake_case name used in reports.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::CurrentSilent => "current_silent",
            Self::ConnectFailed => "connect_failed",
            Self::Faster => "faster",
            Self::SwitchBack => "switch_back",
            Self::SubscriptionDown => "subscription_down",
            Self::Marked => "marked",
            Self::Removed => "removed",
        }
    }
}
