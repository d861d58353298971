//! Invariants that hold whatever the world does (proptest).

use std::collections::BTreeMap;

use proptest::prelude::*;
use switchyard_auto::history::History;
use switchyard_auto::queue::rank;
use switchyard_auto::score::{Standing, switch_score};
use switchyard_auto::{
    AutoConfig, CheckId, Engine, Event, Measurement, Method, Outcome, Output, Platform, Policy,
    ProbeReply, Server, ServerId, Subscription, Timestamp, Trigger,
};

fn measurement() -> impl Strategy<Value = (u8, Option<u32>)> {
    // (age in hours 0..30, delay or no answer)
    (0u8..30, prop::option::weighted(0.8, 1u32..2000))
}

fn history(ms: &[(u8, Option<u32>)], now: Timestamp) -> History {
    let mut v: Vec<Measurement> = ms
        .iter()
        .map(|&(h, ms)| Measurement {
            at: now - std::time::Duration::from_secs(u64::from(h) * 3600),
            method: Method::Url,
            ms,
        })
        .collect();
    v.sort_by_key(|m| m.at);
    History::from_measurements(v)
}

const NOW: Timestamp = Timestamp::from_secs(200_000);

proptest! {
    #[test]
    fn the_queue_is_a_total_order(
        servers in prop::collection::vec((prop::collection::vec(measurement(), 0..7), prop::option::of(0.0f64..500.0)), 1..40)
    ) {
        let list: Vec<Server> = (0..servers.len()).map(|i| Server::named(&format!("s{i}"))).collect();
        let mut histories = BTreeMap::new();
        let mut speeds = BTreeMap::new();
        for (i, (ms, speed)) in servers.iter().enumerate() {
            histories.insert(list[i].id.clone(), history(ms, NOW));
            if let Some(sp) = speed { speeds.insert(list[i].id.clone(), *sp); }
        }
        let q = rank(&list, &histories, &speeds, NOW);
        // A permutation ...
        let mut positions: Vec<usize> = q.iter().map(|p| p.position).collect();
        positions.sort_unstable();
        prop_assert_eq!(positions, (0..list.len()).collect::<Vec<_>>());
        // ... sorted by standing, ties in subscription order ...
        for w in q.windows(2) {
            let ord = w[0].standing.queue_cmp(&w[1].standing);
            prop_assert!(ord.is_lt() || (ord.is_eq() && w[0].position < w[1].position), "{:?}", w);
        }
        // ... by a comparison that is antisymmetric and transitive.
        for a in &q { for b in &q {
            prop_assert_eq!(a.standing.queue_cmp(&b.standing), b.standing.queue_cmp(&a.standing).reverse());
            for c in &q {
                if a.standing.queue_cmp(&b.standing).is_le() && b.standing.queue_cmp(&c.standing).is_le() {
                    prop_assert!(a.standing.queue_cmp(&c.standing).is_le());
                }
            }
        }}
    }

    /// With fewer than 5 kept measurements nothing falls out of the window, so one
    /// more failure can only move a server back in the queue and raise S'.
    #[test]
    fn adding_a_failure_never_lowers_a_score(ms in prop::collection::vec(measurement(), 0..4), l in 1u32..2000) {
        let before = history(&ms, NOW);
        let mut after = before.clone();
        after.record(Measurement::silent(NOW, Method::Url));
        let (b, a) = (Standing::of(&before, None, NOW), Standing::of(&after, None, NOW));
        prop_assert!(a.queue_cmp(&b).is_ge(), "before {:?}, after {:?}", b, a);
        prop_assert!(switch_score(l, &after, Method::Url, NOW) >= switch_score(l, &before, Method::Url, NOW));
    }
}

/// One step of a random world.
#[derive(Clone, Debug)]
enum Step {
    /// Time passes (1..=6 s), with or without traffic, and pending probe replies arrive.
    Tick { secs: u8, out: bool },
    /// A server goes down or comes back.
    Toggle(u8),
    /// The whole network goes down or comes back.
    Network,
    /// The device moves to another network.
    NetworkChanged,
    /// The driver loses the running check's results: they never arrive.
    Lose,
    /// The driver's clock steps back this many seconds (breaking its contract).
    ClockBack(u16),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (1u8..=6, any::<bool>()).prop_map(|(secs, out)| Step::Tick { secs, out }),
        3 => (0u8..14).prop_map(Step::Toggle),
        1 => Just(Step::Network),
        1 => Just(Step::NetworkChanged),
    ]
}

/// Steps of a driver that loses results and whose clock jumps back.
fn hostile_step() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => step(),
        2 => Just(Step::Lose),
        1 => (1u16..=7200).prop_map(Step::ClockBack),
    ]
}

/// A check ends within the probe timeout plus the grace for the driver's report.
const CHECK_MAX_MS: i64 = 5_000 + 1_000;

struct World {
    e: Engine,
    now: Timestamp,
    /// Time passed in ticks, whatever the driver's clock says, except the tick right
    /// after a step back: the engine can't tell that second from the step and counts
    /// neither (no time passes on a step back).
    elapsed_ms: i64,
    stepped_back: bool,
    /// Running checks by id, with `elapsed_ms` at their start.
    started: BTreeMap<CheckId, i64>,
    up: Vec<bool>,
    ids: Vec<ServerId>,
    network: bool,
    sent: u64,
    received: u64,
    pending: Option<(CheckId, Vec<ServerId>)>,
    connects: Vec<Timestamp>,
    /// History before the latest check that was not a neighbours' check.
    before_check: BTreeMap<ServerId, History>,
    violations: Vec<String>,
}

impl World {
    fn new(platform: Platform) -> Self {
        let names = [
            ["a1", "a2", "a3", "a4"].as_slice(),
            ["b1", "b2", "b3", "b4", "b5", "b6"].as_slice(),
            ["c1", "c2", "c3", "c4"].as_slice(),
        ];
        let subs: Vec<Subscription> = ["A", "B", "C"]
            .iter()
            .zip(names)
            .map(|(n, s)| Subscription::of_names(n, s))
            .collect();
        let ids = names
            .iter()
            .flat_map(|s| s.iter().map(|n| ServerId::new(*n)))
            .collect();
        let mut w = Self {
            e: Engine::new(AutoConfig {
                platform,
                ..AutoConfig::default()
            }),
            now: Timestamp::ZERO,
            elapsed_ms: 0,
            stepped_back: false,
            started: BTreeMap::new(),
            up: vec![true; 14],
            ids,
            network: true,
            sent: 0,
            received: 0,
            pending: None,
            connects: vec![],
            before_check: BTreeMap::new(),
            violations: vec![],
        };
        w.event(Event::Subscriptions(subs));
        w.event(Event::AutoOn {
            subscription: "B".into(),
        });
        w
    }

    fn answers(&self, id: &ServerId) -> bool {
        let i = self.ids.iter().position(|x| x == id).unwrap();
        self.network && self.up[i]
    }

    fn event(&mut self, ev: Event) {
        self.e.handle_event(self.now, ev).unwrap();
        self.drain();
    }

    fn drain(&mut self) {
        while let Some(o) = self.e.poll_output() {
            match o {
                Output::Connect { .. } => self.connects.push(self.now),
                Output::Probe(c) => {
                    self.started.insert(c.id, self.elapsed_ms);
                    if c.trigger != Trigger::Neighbours {
                        self.before_check = self.e.state().history.clone();
                    }
                    self.pending = Some((c.id, c.servers));
                }
                Output::CheckDone(r) if self.overdue(r.id) => {
                    self.violations
                        .push(format!("check {:?} ended after {CHECK_MAX_MS} ms", r.id));
                }
                Output::CheckDone(r)
                    if r.outcome == Outcome::NetworkLost
                        && self.e.state().history != self.before_check =>
                {
                    self.violations.push(format!(
                        "measurements recorded from network-lost check {:?}",
                        r.id
                    ));
                }
                _ => {}
            }
        }
    }

    /// Whether check `id` (ending now) ran past its deadline; forgets it.
    fn overdue(&mut self, id: CheckId) -> bool {
        self.started
            .remove(&id)
            .is_some_and(|at| self.elapsed_ms - at > CHECK_MAX_MS)
    }

    /// Checks still running past their deadline.
    fn stuck(&self) -> Vec<CheckId> {
        self.started
            .iter()
            .filter(|&(_, &at)| self.elapsed_ms - at > CHECK_MAX_MS)
            .map(|(&id, _)| id)
            .collect()
    }

    fn run(&mut self, steps: &[Step]) {
        for s in steps {
            match s {
                Step::Tick { secs, out } => {
                    for _ in 0..*secs {
                        let tick = std::time::Duration::from_secs(1);
                        self.now = self.now + tick;
                        if !std::mem::take(&mut self.stepped_back) {
                            self.elapsed_ms += 1000;
                        }
                        while let Some(t) = self.e.poll_timeout() {
                            if t > self.now {
                                break;
                            }
                            // At the deadline if it fell in this tick, else now.
                            let at = t.clamp(self.now - tick, self.now);
                            self.e.handle_timeout(at);
                            self.drain();
                            if let Some(next) = self.e.poll_timeout()
                                && next <= at
                            {
                                // A deadline that handling does not move would make a
                                // driver spin.
                                self.violations
                                    .push(format!("poll_timeout stays at {next} after {at}"));
                                break;
                            }
                        }
                        if let Some((check, servers)) = self.pending.take() {
                            let replies = servers
                                .iter()
                                .map(|id| {
                                    (
                                        id.clone(),
                                        if self.answers(id) {
                                            ProbeReply::after(50)
                                        } else {
                                            ProbeReply::NoAnswer
                                        },
                                    )
                                })
                                .collect();
                            self.event(Event::ProbeResults { check, replies });
                        }
                        let current = self.e.current().cloned();
                        let ok = current.as_ref().is_some_and(|c| self.answers(c));
                        if *out {
                            self.sent += 100;
                            if ok {
                                self.received += 100;
                            }
                        }
                        let (sent, received) = (self.sent, self.received);
                        self.event(Event::Traffic { sent, received });
                        if *out
                            && !ok
                            && let Some(c) = current
                        {
                            self.event(Event::ConnectFailed { server: c });
                        }
                    }
                }
                Step::Toggle(i) => self.up[*i as usize] = !self.up[*i as usize],
                Step::Network => self.network = !self.network,
                Step::NetworkChanged => self.event(Event::NetworkChanged),
                Step::Lose => self.pending = None,
                Step::ClockBack(secs) => {
                    self.now = self.now - std::time::Duration::from_secs(u64::from(*secs));
                    self.stepped_back = true;
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn never_more_than_3_switches_in_any_180_seconds(steps in prop::collection::vec(step(), 50..600), mobile in any::<bool>()) {
        let mut w = World::new(if mobile { Platform::Mobile } else { Platform::Desktop });
        w.run(&steps);
        for (i, t) in w.connects.iter().enumerate() {
            if let Some(t4) = w.connects.get(i + 3) {
                prop_assert!(t4.since(*t).as_secs() >= 180, "switches at {:?}", w.connects);
            }
        }
    }

    /// Results lost by the driver and clock steps back never leave a check running past
    /// its deadline (it used to wait forever; a step back froze its deadline).
    #[test]
    fn every_check_ends_by_its_deadline_whatever_the_driver_loses(steps in prop::collection::vec(hostile_step(), 50..600), mobile in any::<bool>()) {
        let mut w = World::new(if mobile { Platform::Mobile } else { Platform::Desktop });
        w.run(&steps);
        prop_assert!(w.violations.is_empty(), "{:?}", w.violations);
        prop_assert!(w.stuck().is_empty(), "running past the deadline: {:?}", w.stuck());
    }

    #[test]
    fn no_measurement_is_recorded_from_a_network_gone_check(steps in prop::collection::vec(step(), 50..600)) {
        let mut w = World::new(Platform::Desktop);
        w.run(&steps);
        prop_assert!(w.violations.is_empty(), "{:?}", w.violations);
    }
}
