//! [`run`]: drives a policy through a [`Plan`] in virtual time.
//!
//! # Order at equal times
//! At t = 0, before anything else: `Subscriptions`, one `Measured` per history entry
//! (file order), one `SpeedTest` per server with `speed_mbps` (subscription order),
//! `NetworkAvailable(false)` if the network is `none` at 0, then `AutoOn`.
//!
//! Then, at every instant, in this order:
//! 1. network availability changes (`NetworkAvailable`, at the edges of `none`);
//! 2. user actions, in file order;
//! 3. probe results due, in order of completion time, then of check start;
//! 4. the policy's timeout, if `poll_timeout()` is reached (`handle_timeout`);
//! 5. the traffic tick (every whole second): `Traffic`, then `ConnectFailed` when
//!    traffic flows and the current server refuses.
//!
//! Outputs are drained after every call. An output that causes an input at once
//! (`Connect` to a refusing server → `ConnectFailed`) feeds it after the outputs
//! drained so far, before the next step. A check whose probes all complete at once gets
//! its results at the same instant: in step 3 if it started in steps 1-3, otherwise in
//! a second pass over that instant after step 5 (steps 1, 2 and 5 do not repeat).
//! Refusing servers are only seen while the network is up: with the network down or
//! absent, connections time out or can't start, which the traffic already shows.
//! On `NoServer` ("Auto paused: no server") the simulated client disconnects: until the
//! next `Connect`, traffic goes unanswered and counts as outage.

use std::collections::{BTreeMap, VecDeque};

use switchyard_auto::event::{Check, Event, Output};
use switchyard_auto::measurement::ProbeReply;
use switchyard_auto::policy::Policy;
use switchyard_auto::server::ServerId;
use switchyard_auto::time::Timestamp;

use super::plan::{ActionKind, Plan};
use super::report::{Line, LineKind, Report, Summary, input_name};
use super::world::{NetworkState, ServerState};

/// Traffic tick period and the bytes each tick adds while traffic flows.
const TICK_MS: i64 = 1000;
const BYTES_PER_TICK: u64 = 1000;

/// At most this many `handle_timeout` calls, and this many `ConnectFailed` fed after a
/// `Connect`, at one instant: a policy that keeps asking for them can't stall the run.
const MAX_PER_INSTANT: u32 = 64;

/// Replays `plan` against `policy` from t = 0 to `plan.until` (exclusive) and returns
/// what it did. The run is deterministic: the same plan and policy give the same
/// report. See the module documentation for the order of inputs at equal times.
pub fn run(plan: &Plan, policy: &mut dyn Policy) -> Report {
    let mut r = Runner::new(plan, policy);
    r.start();
    r.run_loop();
    r.finish()
}

struct Runner<'a> {
    plan: &'a Plan,
    policy: &'a mut dyn Policy,
    now: Timestamp,
    /// The current server: its world index (if known) and identity.
    current: Option<(Option<usize>, ServerId)>,
    /// Every connect: from when, which world index.
    periods: Vec<(Timestamp, Option<usize>)>,
    sent: u64,
    received: u64,
    /// Pending probe results by (due time, sequence).
    results: BTreeMap<(Timestamp, u64), Event>,
    seq: u64,
    /// Network availability edges after t = 0.
    availability: Vec<(Timestamp, bool)>,
    next_availability: usize,
    next_action: usize,
    next_tick: Timestamp,
    traffic_cursor: usize,
    /// Inputs caused by outputs, fed before the next step.
    immediate: VecDeque<Event>,
    timeouts_now: u32,
    connect_failures_now: u32,
    lines: Vec<Line>,
    switches: u64,
    probes: u64,
    checks: u64,
}

impl<'a> Runner<'a> {
    fn new(plan: &'a Plan, policy: &'a mut dyn Policy) -> Self {
        let mut available = plan.world.network_at(Timestamp::ZERO) != NetworkState::Absent;
        let mut availability = Vec::new();
        for (t, state) in plan.world.network_changes() {
            let now_available = state != NetworkState::Absent;
            if now_available != available && t < plan.until {
                availability.push((t, now_available));
            }
            available = now_available;
        }
        Self {
            plan,
            policy,
            now: Timestamp::ZERO,
            current: None,
            periods: Vec::new(),
            sent: 0,
            received: 0,
            results: BTreeMap::new(),
            seq: 0,
            availability,
            next_availability: 0,
            next_action: 0,
            next_tick: Timestamp::ZERO,
            traffic_cursor: 0,
            immediate: VecDeque::new(),
            timeouts_now: 0,
            connect_failures_now: 0,
            lines: Vec::new(),
            switches: 0,
            probes: 0,
            checks: 0,
        }
    }

    fn start(&mut self) {
        let plan = self.plan;
        self.feed(Event::Subscriptions(plan.subscriptions.clone()));
        for (server, m) in &plan.history {
            self.feed(Event::Measured {
                server: server.clone(),
                measurement: *m,
            });
        }
        for (server, mbps) in &plan.speeds {
            self.feed(Event::SpeedTest {
                server: server.clone(),
                mbps: *mbps,
            });
        }
        if plan.world.network_at(Timestamp::ZERO) == NetworkState::Absent {
            self.feed(Event::NetworkAvailable(false));
        }
        self.feed(Event::AutoOn {
            subscription: plan.auto.clone(),
        });
    }

    fn run_loop(&mut self) {
        while let Some(t) = self.next_time() {
            if t >= self.plan.until {
                break;
            }
            if t > self.now {
                self.now = t;
                self.timeouts_now = 0;
                self.connect_failures_now = 0;
            }
            self.step();
        }
    }

    /// The earliest time anything happens next (never before `now`).
    fn next_time(&self) -> Option<Timestamp> {
        let timeout = self.policy.poll_timeout().and_then(|t| {
            let t = t.max(self.now);
            (t > self.now || self.timeouts_now < MAX_PER_INSTANT).then_some(t)
        });
        [
            self.availability.get(self.next_availability).map(|a| a.0),
            self.plan.actions.get(self.next_action).map(|a| a.at),
            self.results.keys().next().map(|k| k.0),
            timeout,
            Some(self.next_tick),
        ]
        .into_iter()
        .flatten()
        .min()
        .map(|t| t.max(self.now))
    }

    fn step(&mut self) {
        let now = self.now;
        while let Some(&(t, up)) = self.availability.get(self.next_availability) {
            if t > now {
                break;
            }
            self.next_availability += 1;
            self.feed(Event::NetworkAvailable(up));
        }
        let plan = self.plan;
        while let Some(action) = plan.actions.get(self.next_action) {
            if action.at > now {
                break;
            }
            self.next_action += 1;
            match &action.kind {
                ActionKind::Mark(ids) => self.feed(Event::Mark(ids.clone())),
                ActionKind::Unmark(ids) => self.feed(Event::Unmark(ids.clone())),
                ActionKind::Done => self.feed(Event::MarksDone),
                ActionKind::Update {
                    subscription,
                    speeds,
                } => {
                    self.feed(Event::SubscriptionUpdated(subscription.clone()));
                    for (server, mbps) in speeds {
                        self.feed(Event::SpeedTest {
                            server: server.clone(),
                            mbps: *mbps,
                        });
                    }
                }
                ActionKind::NetworkChange => self.feed(Event::NetworkChanged),
                ActionKind::AutoOn(name) => self.feed(Event::AutoOn {
                    subscription: name.clone(),
                }),
            }
        }
        while let Some(entry) = self.results.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let event = entry.remove();
            self.feed(event);
        }
        if let Some(t) = self.policy.poll_timeout()
            && t <= now
            && self.timeouts_now < MAX_PER_INSTANT
        {
            self.timeouts_now += 1;
            self.policy.handle_timeout(now);
            self.drain();
        }
        if self.next_tick <= now {
            self.next_tick = Timestamp(now.as_millis() + TICK_MS);
            self.tick();
        }
    }

    fn tick(&mut self) {
        let (now, plan) = (self.now, self.plan);
        while plan
            .traffic
            .get(self.traffic_cursor)
            .is_some_and(|&(_, to)| to <= now)
        {
            self.traffic_cursor += 1;
        }
        let active = plan
            .traffic
            .get(self.traffic_cursor)
            .is_some_and(|&(from, _)| from <= now);
        let index = self.current.as_ref().and_then(|c| c.0);
        if active {
            self.sent += BYTES_PER_TICK;
            if plan.world.answers(index, now) {
                self.received += BYTES_PER_TICK;
            }
        }
        self.feed(Event::Traffic {
            sent: self.sent,
            received: self.received,
        });
        if active
            && let Some((Some(i), id)) = &self.current
            && self.refuses(*i)
        {
            let server = id.clone();
            self.feed(Event::ConnectFailed { server });
        }
    }

    /// Whether a connection to the server at `index` fails at once now.
    fn refuses(&self, index: usize) -> bool {
        self.plan.world.network_at(self.now) == NetworkState::Up
            && self.plan.world.server_at(index, self.now) == ServerState::Refuses
    }

    /// Feeds one input, then drains outputs and the inputs they cause.
    fn feed(&mut self, event: Event) {
        self.immediate.push_back(event);
        self.drain();
    }

    fn drain(&mut self) {
        loop {
            while let Some(out) = self.policy.poll_output() {
                self.act(out);
            }
            let Some(event) = self.immediate.pop_front() else {
                break;
            };
            let input = input_name(&event);
            if let Err(e) = self.policy.handle_event(self.now, event) {
                self.line(LineKind::Refused {
                    input,
                    error: e.to_string(),
                });
            }
        }
    }

    fn line(&mut self, kind: LineKind) {
        self.lines.push(Line { t: self.now, kind });
    }

    fn act(&mut self, out: Output) {
        match out {
            Output::Probe(check) => self.probe(check),
            Output::Connect { server, reason } => {
                let index = self.plan.world.index_of(&server);
                self.periods.push((self.now, index));
                self.current = Some((index, server.clone()));
                if index.is_some_and(|i| self.refuses(i))
                    && self.connect_failures_now < MAX_PER_INSTANT
                {
                    self.connect_failures_now += 1;
                    self.immediate.push_back(Event::ConnectFailed {
                        server: server.clone(),
                    });
                }
                self.line(LineKind::Connect { server, reason });
            }
            Output::CheckDone(report) => self.line(LineKind::CheckResult {
                answered: report.answered,
                silent: report.silent,
                outcome: report.outcome,
                held: report.held,
                timed_out: report.timed_out,
            }),
            Output::Switched { from, to, reason } => {
                self.switches += 1;
                self.line(LineKind::Switch { from, to, reason });
            }
            Output::NetworkLost { retry_in } => self.line(LineKind::NetworkLost { retry_in }),
            Output::NoServer {
                subscription,
                deleted,
            } => {
                // The simulated client disconnects: with no server of Auto's, traffic
                // flowing counts as outage until the next `Connect`.
                self.current = None;
                self.periods.push((self.now, None));
                self.line(LineKind::NoServer {
                    subscription,
                    deleted,
                });
            }
        }
    }

    /// Decides every probe of `check` as the world is now and schedules one
    /// `ProbeResults` at the latest completion.
    fn probe(&mut self, check: Check) {
        self.checks += 1;
        self.probes += check.servers.len() as u64;
        let timeout = i64::try_from(check.timeout.as_millis()).unwrap_or(i64::MAX);
        let network = self.plan.world.network_at(self.now);
        let mut last = 0i64;
        let replies: Vec<(ServerId, ProbeReply)> = check
            .servers
            .iter()
            .map(|id| {
                let state = self.plan.world.server_state(id, self.now);
                let (reply, after) = match (network, state) {
                    (NetworkState::Absent, _) => (ProbeReply::NoAnswer, 0),
                    (NetworkState::Down, _) => (ProbeReply::NoAnswer, timeout),
                    (NetworkState::Up, ServerState::Answers { ms }) if i64::from(ms) <= timeout => {
                        (ProbeReply::after(ms), i64::from(ms))
                    }
                    (NetworkState::Up, ServerState::Refuses) => (ProbeReply::NoAnswer, 0),
                    (NetworkState::Up, _) => (ProbeReply::NoAnswer, timeout),
                };
                last = last.max(after);
                (id.clone(), reply)
            })
            .collect();
        self.line(LineKind::Check {
            trigger: check.trigger,
            probes: check.servers,
        });
        let due = Timestamp(self.now.as_millis().saturating_add(last));
        self.seq += 1;
        self.results.insert(
            (due, self.seq),
            Event::ProbeResults {
                check: check.id,
                replies,
            },
        );
    }

    fn finish(self) -> Report {
        let outage_ms =
            self.plan
                .world
                .outage_ms(&self.plan.traffic, &self.periods, self.plan.until);
        Report {
            lines: self.lines,
            summary: Summary {
                policy: self.policy.name(),
                switches: self.switches,
                outage_ms,
                probes: self.probes,
                checks: self.checks,
            },
        }
    }
}
