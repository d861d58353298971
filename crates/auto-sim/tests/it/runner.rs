//! The simulator's runner mechanics, driven by a scripted test policy.

use std::collections::VecDeque;
use std::time::Duration;

use switchyard_auto::{
    Check, CheckId, CheckReport, ConnectReason, Event, InputError, Outcome, Output, Policy,
    ProbeReply, ServerId, SwitchReason, Timestamp, Trigger,
};
use switchyard_auto_sim::{self as sim, Plan, ServerState};

/// A policy that records every input and emits scripted outputs at given times.
#[derive(Default)]
struct Scripted {
    log: Vec<(i64, Event)>,
    script: VecDeque<(i64, Output)>,
    out: VecDeque<Output>,
    /// Connect here on `AutoOn`.
    connect_on: Option<&'static str>,
    /// Refuse `Mark` events.
    refuse_marks: bool,
}

impl Scripted {
    fn new(connect_on: &'static str, script: Vec<(f64, Output)>) -> Self {
        Self {
            connect_on: Some(connect_on),
            script: script
                .into_iter()
                .map(|(s, o)| ((s * 1000.0) as i64, o))
                .collect(),
            ..Self::default()
        }
    }

    /// Logged events other than traffic ticks, with their times in ms.
    fn inputs(&self) -> Vec<(i64, Event)> {
        self.log
            .iter()
            .filter(|(_, e)| !matches!(e, Event::Traffic { .. }))
            .cloned()
            .collect()
    }
}

impl Policy for Scripted {
    fn name(&self) -> &'static str {
        "scripted"
    }
    fn handle_event(&mut self, now: Timestamp, event: Event) -> Result<(), InputError> {
        if self.refuse_marks && matches!(event, Event::Mark(_)) {
            return Err(InputError::UnknownServer {
                server: ServerId::new("zz"),
            });
        }
        if let (Event::AutoOn { .. }, Some(s)) = (&event, self.connect_on) {
            self.out.push_back(connect(s));
        }
        self.log.push((now.as_millis(), event));
        Ok(())
    }
    fn handle_timeout(&mut self, now: Timestamp) {
        while self
            .script
            .front()
            .is_some_and(|(t, _)| *t <= now.as_millis())
        {
            let (_, o) = self.script.pop_front().unwrap();
            self.out.push_back(o);
        }
    }
    fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }
    fn poll_timeout(&self) -> Option<Timestamp> {
        self.script.front().map(|(t, _)| Timestamp(*t))
    }
}

fn connect(s: &str) -> Output {
    Output::Connect {
        server: ServerId::new(s),
        reason: ConnectReason::Switch,
    }
}

fn probe(id: u64, servers: &[&str]) -> Output {
    Output::Probe(Check {
        id: CheckId(id),
        trigger: Trigger::Stall,
        servers: servers.iter().map(|s| ServerId::new(*s)).collect(),
        method: switchyard_auto::Method::Url,
        timeout: Duration::from_secs(5),
    })
}

fn plan(json: &str) -> Plan {
    Plan::from_json(json).unwrap_or_else(|e| panic!("{e}"))
}

fn lines(plan: &Plan, policy: &mut dyn Policy) -> Vec<String> {
    let report = sim::run(plan, policy);
    let mut v: Vec<String> = report.lines.iter().map(ToString::to_string).collect();
    v.push(report.summary.to_string());
    v
}

const FOUR: &str = r#""subscriptions": [{"name": "A", "servers": ["a", "b", "c", "d"]},
    {"name": "B", "servers": ["e"]}], "auto": "A""#;

/// Delivered probe results: (time ms, check id, replies by server name).
type Delivered = Vec<(i64, u64, Vec<(String, ProbeReply)>)>;

fn results(p: &Scripted) -> Delivered {
    p.log
        .iter()
        .filter_map(|(t, e)| match e {
            Event::ProbeResults { check, replies } => Some((
                *t,
                check.0,
                replies
                    .iter()
                    .map(|(s, r)| (s.as_str().to_owned(), *r))
                    .collect(),
            )),
            _ => None,
        })
        .collect()
}

#[test]
fn probes_complete_per_world_state_and_results_come_at_the_latest() {
    let plan = plan(&format!(
        r#"{{"until": 60, {FOUR}, "world": [
            {{"server": "a", "ms": 80}}, {{"server": "b", "down": true, "how": "refuse"}},
            {{"server": "c", "down": true}}, {{"server": "d", "ms": 7000}},
            {{"network": "down", "from": 30, "to": 40}}, {{"network": "none", "from": 50}}]}}"#
    ));
    let mut p = Scripted::new(
        "a",
        vec![
            (10.0, probe(1, &["a", "b", "c", "d"])),
            (11.0, probe(2, &["b", "a"])),
            (12.0, probe(3, &["b"])),
            (31.0, probe(4, &["a"])),
            (51.0, probe(5, &["a", "c"])),
        ],
    );
    sim::run(&plan, &mut p);
    let none = ProbeReply::NoAnswer;
    let s = |x: &str| x.to_owned();
    assert_eq!(
        results(&p),
        vec![
            (
                11_080,
                2,
                vec![(s("b"), none), (s("a"), ProbeReply::after(80))]
            ),
            (12_000, 3, vec![(s("b"), none)]),
            (
                15_000,
                1,
                vec![
                    (s("a"), ProbeReply::after(80)),
                    (s("b"), none),
                    (s("c"), none),
                    (s("d"), none)
                ]
            ),
            (36_000, 4, vec![(s("a"), none)]),
            (51_000, 5, vec![(s("a"), none), (s("c"), none)]),
        ]
    );
}

#[test]
fn traffic_counts_replies_only_from_an_answering_server_and_refusal_fails_connects() {
    let plan = plan(&format!(
        r#"{{"until": 40, {FOUR}, "traffic": [{{"to": 30}}], "world": [
            {{"server": "*", "ms": 50}},
            {{"server": "a", "from": 10, "to": 20, "down": true, "how": "refuse"}}]}}"#
    ));
    let mut p = Scripted::new("a", vec![(20.5, connect("a")), (25.5, connect("b"))]);
    sim::run(&plan, &mut p);
    let traffic: Vec<(i64, u64, u64)> = p
        .log
        .iter()
        .filter_map(|(t, e)| match e {
            Event::Traffic { sent, received } => Some((*t, *sent, *received)),
            _ => None,
        })
        .collect();
    assert_eq!(traffic.len(), 40, "one tick a second");
    assert_eq!(traffic[5], (5_000, 6_000, 6_000));
    assert_eq!(traffic[15], (15_000, 16_000, 10_000));
    assert_eq!(traffic[29], (29_000, 30_000, 20_000));
    assert!(
        traffic[30..]
            .iter()
            .all(|&(_, s, r)| (s, r) == (30_000, 20_000))
    );
    let failed: Vec<i64> = p
        .log
        .iter()
        .filter(|(_, e)| matches!(e, Event::ConnectFailed { .. }))
        .map(|(t, _)| *t)
        .collect();
    assert_eq!(failed, (10..20).map(|s| s * 1000).collect::<Vec<_>>());

    // Connecting to a refusing server fails at once.
    let plan2 = plan_refusing_b();
    let mut p = Scripted::new("a", vec![(12.5, connect("b"))]);
    sim::run(&plan2, &mut p);
    let after: Vec<(i64, Event)> = p.inputs().into_iter().filter(|(t, _)| *t > 0).collect();
    assert_eq!(
        after,
        vec![(
            12_500,
            Event::ConnectFailed {
                server: ServerId::new("b")
            }
        )]
    );
}

fn plan_refusing_b() -> Plan {
    plan(&format!(
        r#"{{"until": 13, {FOUR}, "world": [{{"server": "*", "ms": 50}},
            {{"server": "b", "down": true, "how": "refuse"}}]}}"#
    ))
}

#[test]
fn outage_is_exact_on_a_hand_computed_timeline() {
    let plan = plan(&format!(
        r#"{{"until": 100, {FOUR}, "traffic": [{{"from": 10, "to": 60}}, {{"from": 70, "to": 90}}],
            "world": [{{"server": "*", "ms": 50}},
            {{"server": "a", "from": 20, "to": 30, "down": true}},
            {{"server": "b", "from": 40.25, "to": 80, "down": true, "how": "refuse"}},
            {{"network": "down", "from": 85, "to": 95}}]}}"#
    ));
    // a [0, 35.5): 10 s down in traffic; b [35.5, 75): 19.75 + 5; a [75, 100): 5 (network).
    let mut p = Scripted::new("a", vec![(35.5, connect("b")), (75.0, connect("a"))]);
    let out = lines(&plan, &mut p);
    assert_eq!(
        out.last().unwrap(),
        r#"{"event":"summary","policy":"scripted","switches":0,"outage_s":39.75,"probes":0,"checks":0}"#
    );
    assert_eq!(
        out[1],
        r#"{"t":35.5,"event":"connect","server":"b","reason":"switch"}"#
    );
}

#[test]
fn later_world_entries_override_earlier_ones() {
    let plan = plan(&format!(
        r#"{{"until": 60, {FOUR}, "world": [{{"server": "*", "ms": 80}},
            {{"server": "a", "ms": 60, "from": 10, "to": 20}},
            {{"server": "*", "down": true, "from": 15, "to": 30}},
            {{"server": "a", "ms": 70, "from": 25}}]}}"#
    ));
    let w = &plan.world;
    let at = |s: &str, t: i64| w.server_state(&ServerId::new(s), Timestamp(t));
    assert_eq!(at("a", 5_000), ServerState::Answers { ms: 80 });
    assert_eq!(at("a", 12_000), ServerState::Answers { ms: 60 });
    assert_eq!(at("a", 16_000), ServerState::Blackhole);
    assert_eq!(at("a", 26_000), ServerState::Answers { ms: 70 });
    assert_eq!(at("b", 26_000), ServerState::Blackhole);
    assert_eq!(at("b", 30_000), ServerState::Answers { ms: 80 });
    assert_eq!(at("zz", 30_000), ServerState::Blackhole);
}

#[test]
fn start_sequence_actions_and_equal_time_order() {
    let plan = plan(
        r#"{"until": 30, "platform": "mobile",
        "subscriptions": [{"name": "A", "servers": ["a", {"name": "b", "speed_mbps": 40}]},
                          {"name": "B", "servers": ["e"]}],
        "auto": "A",
        "history": [{"server": "a", "at": -60, "method": "tcp", "ms": 50},
                    {"server": "b", "at": -1.5, "method": "icmp", "ms": null}],
        "world": [{"server": "*", "ms": 40}, {"network": "none", "from": 10, "to": 20}],
        "actions": [{"at": 10, "network_change": true}, {"at": 5, "mark": ["b"]},
                    {"at": 5, "unmark": ["b"]}, {"at": 5, "done": true},
                    {"at": 6, "update": {"subscription": "A", "servers": ["c", {"name": "a", "speed_mbps": 9.5}]}},
                    {"at": 7, "auto_on": "B"}]}"#,
    );
    let mut p = Scripted::new("a", vec![(9.9, probe(1, &["a"])), (10.0, probe(2, &[]))]);
    sim::run(&plan, &mut p);
    let id = ServerId::new;
    let inputs = p.inputs();
    let got: Vec<(i64, &Event)> = inputs.iter().map(|(t, e)| (*t, e)).collect();
    let m = |at, method, ms| switchyard_auto::Measurement {
        at: Timestamp(at),
        method,
        ms,
    };
    use switchyard_auto::Method::{Icmp, Tcp};
    let expected: Vec<(i64, Event)> = vec![
        (0, Event::Subscriptions(plan.subscriptions.clone())),
        (
            0,
            Event::Measured {
                server: id("a"),
                measurement: m(-60_000, Tcp, Some(50)),
            },
        ),
        (
            0,
            Event::Measured {
                server: id("b"),
                measurement: m(-1_500, Icmp, None),
            },
        ),
        (
            0,
            Event::SpeedTest {
                server: id("b"),
                mbps: 40.0,
            },
        ),
        (
            0,
            Event::AutoOn {
                subscription: "A".into(),
            },
        ),
        (5_000, Event::Mark(vec![id("b")])),
        (5_000, Event::Unmark(vec![id("b")])),
        (5_000, Event::MarksDone),
        (
            6_000,
            Event::SubscriptionUpdated(switchyard_auto::Subscription::of_names("A", &["c", "a"])),
        ),
        (
            6_000,
            Event::SpeedTest {
                server: id("a"),
                mbps: 9.5,
            },
        ),
        (
            7_000,
            Event::AutoOn {
                subscription: "B".into(),
            },
        ),
        // At 10 s: the network edge, then the action, then (after the timeout that
        // starts check 2, whose probes complete at once) its results.
        (
            9_940,
            Event::ProbeResults {
                check: CheckId(1),
                replies: vec![(id("a"), ProbeReply::after(40))],
            },
        ),
        (10_000, Event::NetworkAvailable(false)),
        (10_000, Event::NetworkChanged),
        (
            10_000,
            Event::ProbeResults {
                check: CheckId(2),
                replies: vec![],
            },
        ),
        (20_000, Event::NetworkAvailable(true)),
    ];
    let expected: Vec<(i64, &Event)> = expected.iter().map(|(t, e)| (*t, e)).collect();
    assert_eq!(got, expected);
    // The check started by the timeout at 10 s completes at once; its results come
    // after that instant's traffic tick.
    let pos =
        |pred: &dyn Fn(&Event) -> bool| p.log.iter().position(|(t, e)| *t == 10_000 && pred(e));
    let tick = pos(&|e| matches!(e, Event::Traffic { .. })).unwrap();
    let res = pos(&|e| matches!(e, Event::ProbeResults { .. })).unwrap();
    assert!(tick < res);
}

#[test]
fn reports_every_output_and_refused_inputs_and_counts_them() {
    let plan = plan(&format!(
        r#"{{"until": 120, {FOUR}, "world": [{{"server": "*", "ms": 30}}],
            "actions": [{{"at": 100, "mark": ["a"]}}]}}"#
    ));
    let report = |id| CheckReport {
        id: CheckId(id),
        trigger: Trigger::Stall,
        answered: vec![(ServerId::new("b"), 30), (ServerId::new("a"), 31)],
        silent: vec![ServerId::new("c")],
        outcome: Outcome::Switch,
        held: id == 2,
        timed_out: false,
    };
    let mut p = Scripted::new(
        "a",
        vec![
            (1.0, probe(1, &["a", "b", "c"])),
            (2.0, Output::CheckDone(report(1))),
            (2.0, Output::CheckDone(report(2))),
            (
                2.0,
                Output::Switched {
                    from: ServerId::new("a"),
                    to: ServerId::new("b"),
                    reason: SwitchReason::CurrentSilent,
                },
            ),
            (3.0, probe(2, &["d"])),
            (
                4.0,
                Output::NetworkLost {
                    retry_in: Duration::from_millis(15_500),
                },
            ),
        ],
    );
    p.refuse_marks = true;
    let out = lines(&plan, &mut p);
    assert_eq!(
        out,
        [
            r#"{"t":0,"event":"connect","server":"a","reason":"switch"}"#,
            r#"{"t":1,"event":"check","trigger":"stall","probes":["a","b","c"]}"#,
            r#"{"t":2,"event":"check_result","answered":{"b":30,"a":31},"silent":["c"],"outcome":"switch"}"#,
            r#"{"t":2,"event":"check_result","answered":{"b":30,"a":31},"silent":["c"],"outcome":"switch","held":true}"#,
            r#"{"t":2,"event":"switch","from":"a","to":"b","reason":"current_silent"}"#,
            r#"{"t":3,"event":"check","trigger":"stall","probes":["d"]}"#,
            r#"{"t":4,"event":"network_lost","retry_in":15.5}"#,
            r#"{"t":100,"event":"refused","input":"mark","error":"server zz is in no subscription"}"#,
            r#"{"event":"summary","policy":"scripted","switches":1,"outage_s":0,"probes":4,"checks":2}"#,
        ]
    );
}

#[test]
fn runs_are_byte_identical_and_the_auto_policy_is_made_by_name() {
    let plan = plan(&format!(
        r#"{{"until": 600, {FOUR}, "traffic": [{{}}], "world": [{{"server": "*", "ms": 30}},
            {{"server": "a", "from": 100, "to": 200, "down": true}}]}}"#
    ));
    let once = || {
        let mut policy = sim::make_policy("auto", &plan).unwrap();
        lines(&plan, policy.as_mut())
    };
    let first = once();
    assert_eq!(first, once());
    assert!(
        first
            .last()
            .unwrap()
            .starts_with(r#"{"event":"summary","policy":"auto""#)
    );
    assert!(matches!(
        sim::make_policy("nope", &plan),
        Err(sim::PolicyError::Unknown { .. })
    ));
}
