//! The Auto engine: the state machine of `docs/auto.md`.
//!
//! [`Engine`] implements [`Policy`]: feed it [`Event`]s with their times, act on the
//! [`Output`]s it returns, and call [`Policy::handle_timeout`] at the time
//! [`Policy::poll_timeout`] names. The modules split the work:
//! `clock` (the driver's times, made monotonic), `traffic` (triggers from counters),
//! `limits` (switch limit, cool-downs), `hold` (holding new connections for the
//! verdict of a check a failed connect started), `checks` (when a check starts, what
//! it probes, when it is overdue), `decide` (what a check's replies mean), `switch`
//! (moving to another server, reports), `actions` (user actions and subscription
//! changes), `prune` (forgetting servers gone for a day), `state` (durable memory).

mod actions;
mod checks;
mod clock;
mod decide;
mod hold;
mod limits;
mod prune;
mod state;
mod switch;
mod traffic;

use std::collections::{HashMap, VecDeque};

pub use state::State;

use crate::config::AutoConfig;
use crate::error::InputError;
use crate::event::{Check, Event, Output};
use crate::policy::Policy;
use crate::server::{ServerId, Subscription};
use crate::time::Timestamp;

use clock::Clock;
use limits::Limits;
use traffic::TrafficWatch;

/// Auto, per `docs/auto.md`: keeps the VPN on a working server of one subscription and
/// switches only when the current server stops answering.
#[derive(Clone, Debug)]
pub struct Engine {
    config: AutoConfig,
    state: State,
    subs: Vec<Subscription>,
    /// Where each server stands: (subscription index, position), for O(1) look-ups.
    places: HashMap<ServerId, Vec<(usize, usize)>>,
    out: VecDeque<Output>,
    clock: Clock,
    /// The engine's time of the input being handled (from `clock`).
    now: Timestamp,
    /// Auto was turned on by [`Event::AutoOn`] in this run. A restored [`State`] names a
    /// subscription and server, but only the event turns Auto on.
    on: bool,
    traffic: TrafficWatch,
    limits: Limits,
    network_available: bool,
    running: Option<Running>,
    /// The id of the next check; replies to an earlier one that is not running (it ended
    /// on its deadline, or a user's action made it moot) are dropped.
    next_check: u64,
    /// When the next server absent from every subscription is due to be forgotten.
    next_prune: Option<Timestamp>,
    /// The core failed to connect to the current server (first failure not yet acted on).
    connect_failed_at: Option<Timestamp>,
    /// Start of the last scheduled check (or of Auto being turned on).
    last_scheduled: Timestamp,
    /// End of the last check.
    last_check_end: Timestamp,
    lost: Lost,
    /// Set after "the neighbours answer": the next check is wide, due at this time.
    wide_due: Option<Timestamp>,
    /// Set while on a server of a neighbouring subscription.
    neighbour: Option<NeighbourStay>,
    /// Checks in a row in which the return server answered.
    return_answers: u32,
    /// A switch was held back by the switch limit: check again at this time.
    switch_retry_at: Option<Timestamp>,
    /// A failed connect to the current server waits for a check's verdict: new
    /// connections are held meanwhile ([`Engine::hold_until`]). Set by the failure,
    /// cleared when the check round that follows ends (switch or stay) or is dropped.
    holding: bool,
}

/// Auto's network-loss back-off, as [`Engine::network_pause`] reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct NetworkPause {
    /// Checks in a row that found the network gone (the spec's k).
    pub attempts: u32,
    /// When the pause began (the driver's time).
    pub since: Timestamp,
    /// When the next attempt comes (the driver's time).
    pub until: Timestamp,
}

/// "Network gone" attempts in a row and the pause after the last one.
#[derive(Clone, Copy, Debug, Default)]
struct Lost {
    k: u32,
    paused: Option<Pause>,
    /// A network change ended the pause: retry at once.
    retry_now: bool,
}

#[derive(Clone, Copy, Debug)]
struct Pause {
    since: Timestamp,
    until: Timestamp,
}

#[derive(Clone, Copy, Debug)]
struct NeighbourStay {
    next_own: Timestamp,
    failures: u32,
    answers: u32,
}

#[derive(Clone, Debug)]
struct Running {
    check: Check,
    kind: Kind,
    /// Past this the check ends with every probed server unanswered: its results are
    /// not coming.
    deadline: Timestamp,
}

/// What a running check is for; decides how its replies are read.
#[derive(Clone, Debug)]
enum Kind {
    /// The own subscription (regular, scheduled, retry).
    Own,
    /// After the neighbours answered: up to 30 own servers plus the neighbours' best.
    Wide { neighbours: Vec<ServerId> },
    /// The neighbours, asked after a silent own check whose replies wait here.
    Neighbours { own: Vec<(ServerId, Option<u32>)> },
    /// On a neighbour's server: the once-a-minute look at the own subscription.
    OwnSubscription,
}

impl Engine {
    /// An engine with an empty memory.
    pub fn new(config: AutoConfig) -> Self {
        Self::with_state(config, State::default())
    }

    /// An engine resuming from a saved [`State`] (history, marks, speeds, the server to
    /// return to). Restoring does nothing by itself: Auto stays off, connects nowhere and
    /// starts no check until [`Event::AutoOn`]; the saved subscription and current
    /// server are hints the driver may use to send it. Once on, the first scheduled
    /// check comes 5 minutes after the event, as after any [`Event::AutoOn`].
    /// Measurements dated after the first time passed in are clamped to it.
    pub fn with_state(config: AutoConfig, state: State) -> Self {
        let mut engine = Self {
            config,
            state,
            subs: Vec::new(),
            places: HashMap::new(),
            out: VecDeque::new(),
            clock: Clock::default(),
            now: Timestamp(i64::MIN),
            on: false,
            traffic: TrafficWatch::default(),
            limits: Limits::default(),
            network_available: true,
            running: None,
            next_check: 1,
            next_prune: None,
            connect_failed_at: None,
            last_scheduled: Timestamp(i64::MIN),
            last_check_end: Timestamp(i64::MIN),
            lost: Lost::default(),
            wide_due: None,
            neighbour: None,
            return_answers: 0,
            switch_retry_at: None,
            holding: false,
        };
        engine.schedule_prune();
        engine
    }

    /// The durable memory, to save.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// The server in use (before [`Event::AutoOn`], the restored hint).
    pub fn current(&self) -> Option<&ServerId> {
        self.state.current.as_ref()
    }

    /// The network-loss back-off, when Auto is in one: the attempts in a row that
    /// found every server silent, neighbours included, and the driver's time of the
    /// next attempt (a network change ends the pause sooner).
    pub fn network_pause(&self) -> Option<NetworkPause> {
        self.lost.paused.map(|p| NetworkPause {
            attempts: self.lost.k,
            since: self.clock.to_driver(p.since),
            until: self.clock.to_driver(p.until),
        })
    }

    /// The settings.
    pub fn config(&self) -> &AutoConfig {
        &self.config
    }

    fn sub(&self, name: &str) -> Option<&Subscription> {
        self.subs.iter().find(|s| s.name == name)
    }

    /// The subscription Auto is on in (`None` while Auto is off).
    fn auto_sub(&self) -> Option<&Subscription> {
        if !self.on {
            return None;
        }
        self.state.auto.as_deref().and_then(|n| self.sub(n))
    }

    fn known(&self, id: &ServerId) -> bool {
        self.places.contains_key(id)
    }

    /// Whether the server is in the subscription Auto is on in.
    fn in_auto(&self, id: &ServerId) -> bool {
        let Some(auto) = self.state.auto.as_deref().filter(|_| self.on) else {
            return false;
        };
        self.places
            .get(id)
            .is_some_and(|v| v.iter().any(|&(s, _)| self.subs[s].name == auto))
    }

    /// The first place of a server in the subscription list, for ties.
    fn order_of(&self, id: &ServerId) -> (usize, usize) {
        self.places
            .get(id)
            .and_then(|v| v.first())
            .copied()
            .unwrap_or((usize::MAX, usize::MAX))
    }

    /// Rebuilds the look-up of places after the subscriptions changed.
    fn reindex(&mut self) {
        self.places.clear();
        for (i, sub) in self.subs.iter().enumerate() {
            for (j, server) in sub.servers.iter().enumerate() {
                self.places
                    .entry(server.id.clone())
                    .or_default()
                    .push((i, j));
            }
        }
    }

    fn apply(&mut self, event: Event) -> Result<(), InputError> {
        let now = self.now;
        match event {
            Event::Subscriptions(subs) => self.set_subscriptions(now, subs),
            Event::SubscriptionUpdated(sub) => self.update_subscription(now, sub),
            Event::AutoOn { subscription } => self.auto_on(now, &subscription),
            Event::Traffic { sent, received } => self.traffic.sample(now, sent, received),
            Event::ConnectFailed { server } => {
                if !self.known(&server) {
                    return Err(InputError::UnknownServer { server });
                }
                if self.state.current.as_ref() == Some(&server) {
                    self.connect_failed_at.get_or_insert(now);
                    self.holding = true;
                }
                Ok(())
            }
            Event::ProbeResults { check, replies } => self.on_replies(now, check, replies),
            Event::NetworkAvailable(up) => {
                let was = std::mem::replace(&mut self.network_available, up);
                if up && !was {
                    self.network_changed();
                }
                Ok(())
            }
            Event::NetworkChanged => {
                self.network_changed();
                Ok(())
            }
            Event::Mark(ids) => self.mark(ids),
            Event::Unmark(ids) => {
                for id in &ids {
                    self.state.marks.remove(id);
                }
                Ok(())
            }
            Event::MarksDone => self.marks_done(now),
            Event::SpeedTest { server, mbps } => {
                if !mbps.is_finite() || mbps < 0.0 {
                    return Err(InputError::InvalidSpeed { server, mbps });
                }
                self.note_absent(&server);
                self.state.speeds.insert(server, mbps);
                Ok(())
            }
            Event::Measured {
                server,
                mut measurement,
            } => {
                // Dated on the driver's clock; never later than now (see `crate::time`).
                measurement.at = self.clock.to_engine(measurement.at).min(now);
                self.note_absent(&server);
                self.state.record(&server, measurement);
                Ok(())
            }
        }
    }

    /// Moves the engine's clock to the driver's `now`.
    fn advance(&mut self, now: Timestamp) {
        let first = self.clock.unset();
        self.now = self.clock.advance(now);
        if first {
            self.state.clamp_future(self.now);
        }
        self.prune_due();
    }

    /// A network change ends a network-lost pause at once and resets its count.
    fn network_changed(&mut self) {
        self.lost.k = 0;
        if self.lost.paused.take().is_some() {
            self.lost.retry_now = true;
        }
    }
}

impl Policy for Engine {
    fn name(&self) -> &'static str {
        "auto"
    }

    fn handle_event(&mut self, now: Timestamp, event: Event) -> Result<(), InputError> {
        self.advance(now);
        // The event first: late results still count if they beat the deadline's call.
        let result = self.apply(event);
        self.end_overdue_check();
        self.start_due_check();
        result
    }

    fn handle_timeout(&mut self, now: Timestamp) {
        self.advance(now);
        self.end_overdue_check();
        self.start_due_check();
    }

    fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    fn poll_timeout(&self) -> Option<Timestamp> {
        let at = match &self.running {
            Some(running) => Some(running.deadline),
            None => self.next_check_at().map(|(t, _)| t),
        };
        at.map(|t| self.clock.to_driver(t))
    }
}
