//! Scenario parsing and validation: every error names its field; nothing panics.

use proptest::prelude::*;
use serde_json::{Value, json};
use switchyard_auto_sim::{self as sim, Plan, Scenario, ScenarioError};

/// The scenario of `docs/auto.md, "Simulator scenarios and output"`.
fn base() -> Value {
    json!({
      "platform": "desktop",
      "until": 3600,
      "probe_timeout": 5,
      "subscriptions": [
        {"name": "Main",   "servers": ["fi", "de", {"name": "nl", "speed_mbps": 40}]},
        {"name": "Backup", "servers": ["us", "uk"]}
      ],
      "auto": "Main",
      "history": [
        {"server": "fi", "at": -600, "method": "url", "ms": 60},
        {"server": "nl", "at": -300, "method": "url", "ms": null}
      ],
      "world": [
        {"server": "*",  "ms": 80},
        {"server": "fi", "ms": 60},
        {"server": "fi", "from": 600, "to": 1800, "down": true},
        {"network": "down", "from": 2400, "to": 2700}
      ],
      "traffic": [{"from": 0, "to": 3600}],
      "actions": [
        {"at": 100, "mark": ["de"]},
        {"at": 100, "done": true},
        {"at": 500, "update": {"subscription": "Main", "servers": ["fi", "nl", "se"]}},
        {"at": 900, "network_change": true}
      ]
    })
}

fn validate(v: &Value) -> Result<Plan, ScenarioError> {
    Plan::from_json(&v.to_string())
}

fn with(pointer: &str, value: Value) -> Value {
    base().tap(pointer, value)
}

#[test]
fn the_spec_example_is_valid_and_defaults_apply() {
    let plan = validate(&base()).unwrap();
    assert_eq!(plan.until.as_millis(), 3_600_000);
    assert_eq!(plan.actions.len(), 4);
    let mut minimal = base();
    for key in [
        "platform",
        "probe_timeout",
        "history",
        "world",
        "traffic",
        "actions",
    ] {
        minimal.as_object_mut().unwrap().remove(key);
    }
    let plan = validate(&minimal).unwrap();
    assert_eq!(plan.platform, switchyard_auto::Platform::Desktop);
    assert_eq!(plan.probe_timeout.as_secs(), 5);
    assert!(plan.traffic.is_empty());
}

#[test]
fn every_validation_error_names_its_field() {
    let cases: Vec<(Value, &str)> = vec![
        (
            with("/world/2/to", json!(600)).tap("/world/2/from", json!(900)),
            "world[2]: from (900) must be before to (600)",
        ),
        (
            with("/history/0/server", json!("xx")),
            r#"history[0].server: unknown server "xx""#,
        ),
        (
            with("/actions/2/update/subscription", json!("Foo")),
            r#"actions[2].update.subscription: unknown subscription "Foo""#,
        ),
        (
            with("/subscriptions/1/servers/0", json!("fi")),
            r#"subscriptions[1].servers[0]: server name "fi" is used twice"#,
        ),
        (
            with("/subscriptions/0/servers/1", json!("fi")),
            r#"subscriptions[0].servers[1]: server name "fi" is used twice"#,
        ),
        (
            with("/subscriptions/1/name", json!("Main")),
            r#"subscriptions[1].name: subscription name "Main" is used twice"#,
        ),
        (
            with("/subscriptions", json!([])),
            "subscriptions: must not be empty",
        ),
        (
            with("/auto", json!("Nope")),
            r#"auto: unknown subscription "Nope""#,
        ),
        (
            with("/until", json!(-5)),
            "until: -5 is out of range: 0 < until ≤ 31 days",
        ),
        (
            with("/until", json!(0)),
            "until: 0 is out of range: 0 < until ≤ 31 days",
        ),
        (
            with("/until", json!(1e12)),
            "until: 1000000000000 is out of range: 0 < until ≤ 31 days",
        ),
        (
            with("/probe_timeout", json!(0)),
            "probe_timeout: 0 is out of range: 0 < probe_timeout ≤ 3600",
        ),
        (
            with("/platform", json!("tv")),
            r#"platform: unknown platform "tv": expected desktop or mobile"#,
        ),
        (
            with("/history/0/at", json!(10)),
            "history[0].at: 10 is out of range: at ≤ 0",
        ),
        (
            with("/history/1/method", json!("ping")),
            r#"history[1].method: unknown method "ping": expected tcp, url or icmp"#,
        ),
        (
            with("/history/0/ms", json!(-1)),
            "history[0].ms: -1 is out of range: 0 ≤ ms ≤ 4294967295",
        ),
        (
            with("/world/0/ms", json!(80.5)),
            "world[0].ms: 80.5 is out of range: a whole number of milliseconds",
        ),
        (
            with("/world/1/server", json!("xx")),
            r#"world[1].server: unknown server "xx""#,
        ),
        (
            with("/world/2/from", json!(-1)),
            "world[2].from: -1 is out of range: 0 ≤ from",
        ),
        (
            with("/world/2/how", json!("drop")),
            r#"world[2].how: unknown how "drop": expected blackhole or refuse"#,
        ),
        (
            with("/world/3/network", json!("up")),
            r#"world[3].network: unknown network state "up": expected down or none"#,
        ),
        (
            with("/world/0", json!({"server": "fi", "network": "down"})),
            "world[0]: has both server and network; give one per entry",
        ),
        (
            with("/world/0", json!({"from": 3})),
            "world[0]: needs server or network",
        ),
        (
            with("/world/0", json!({"server": "fi"})),
            "world[0]: needs ms (the latency) or down: true",
        ),
        (
            with("/world/0", json!({"server": "fi", "ms": 3, "down": true})),
            "world[0]: has both down: true and ms; a down server has no latency",
        ),
        (
            with(
                "/world/0",
                json!({"server": "fi", "ms": 3, "how": "refuse"}),
            ),
            "world[0].how: applies only with down: true",
        ),
        (
            with("/world/3", json!({"network": "none", "ms": 3})),
            "world[3]: a network entry takes only network, from and to",
        ),
        (
            with("/traffic/0", json!({"from": 10, "to": 5})),
            "traffic[0]: from (10) must be before to (5)",
        ),
        (
            with("/subscriptions/0/servers/2/speed_mbps", json!(-1)),
            "subscriptions[0].servers[2].speed_mbps: -1 is out of range: a speed ≥ 0 Mbit/s",
        ),
        (
            with("/subscriptions/0/servers/0", json!("")),
            r#"subscriptions[0].servers[0]: "" can't be a server name"#,
        ),
        (
            with("/actions/0/mark/0", json!("xx")),
            r#"actions[0].mark[0]: unknown server "xx""#,
        ),
        (
            with("/actions/0", json!({"at": 1, "mark": ["fi"], "done": true})),
            "actions[0]: has both mark and done; give one action per entry",
        ),
        (
            with("/actions/0", json!({"at": 1})),
            "actions[0]: no action: give one of mark, unmark, done, update, network_change, auto_on",
        ),
        (
            with("/actions/1/done", json!(false)),
            "actions[1].done: must be true (leave the action out instead)",
        ),
        (
            with("/actions/3/at", json!(3600)),
            "actions[3].at: 3600 is not before until (3600)",
        ),
        (
            with("/actions/3/at", json!(-2)),
            "actions[3].at: -2 is out of range: 0 ≤ at",
        ),
        (
            with("/actions/3", json!({"at": 1, "auto_on": "X"})),
            r#"actions[3].auto_on: unknown subscription "X""#,
        ),
        (
            with("/actions/2/update/servers", json!(["fi", "us"])),
            r#"actions[2].update.servers[1]: server "us" belongs to subscription "Backup"; server names are unique across the scenario"#,
        ),
        (
            with("/actions/2/update/servers", json!(["fi", "fi"])),
            r#"actions[2].update.servers[1]: server name "fi" is used twice"#,
        ),
    ];
    for (scenario, expected) in cases {
        let err = validate(&scenario).expect_err(expected);
        assert_eq!(err.to_string(), expected);
        let field = err.field().expect("a validation error names a field");
        assert!(expected.starts_with(&format!("{field}: ")), "{expected}");
    }
}

#[test]
fn new_servers_of_an_update_are_known_to_later_entries() {
    let mut v = base();
    v["world"]
        .as_array_mut()
        .unwrap()
        .push(json!({"server": "se", "ms": 30}));
    v["history"]
        .as_array_mut()
        .unwrap()
        .push(json!({"server": "se", "at": 0, "method": "tcp", "ms": 30}));
    assert!(validate(&v).is_ok());
}

#[test]
fn non_finite_numbers_are_refused_by_name() {
    let mut s: Scenario = serde_json::from_value(base()).unwrap();
    s.until = f64::NAN;
    assert_eq!(
        s.validate().unwrap_err().to_string(),
        "until: NaN is not a finite number"
    );
    let mut s: Scenario = serde_json::from_value(base()).unwrap();
    s.world[2].to = Some(f64::INFINITY);
    assert_eq!(
        s.validate().unwrap_err().to_string(),
        "world[2].to: inf is not a finite number"
    );
}

#[test]
fn malformed_json_gives_line_and_column() {
    let unknown = with("/world/0", json!({"server": "*", "ms": 80, "comment": "x"}));
    let err = validate(&unknown).unwrap_err();
    assert!(matches!(err, ScenarioError::Json(_)));
    assert!(err.to_string().contains("unknown field `comment`"), "{err}");
    assert!(err.to_string().contains("line 1 column"), "{err}");
    let err = Plan::from_json("{\n  \"until\": 3600,\n  oops\n}").unwrap_err();
    assert!(err.to_string().contains("line 3 column 3"), "{err}");
    assert_eq!(err.field(), None);
}

trait Tap {
    fn tap(self, pointer: &str, value: Value) -> Self;
}

impl Tap for Value {
    /// Sets the value at `pointer`, adding the last key to its object if missing.
    fn tap(mut self, pointer: &str, value: Value) -> Self {
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        match self.pointer_mut(parent) {
            Some(Self::Object(map)) => {
                map.insert(key.to_owned(), value);
            }
            Some(Self::Array(list)) => list[key.parse::<usize>().unwrap()] = value,
            _ => panic!("no {parent} in the base scenario"),
        }
        self
    }
}

/// JSON values a careless hand might write: numbers of every sign and size, names the
/// format uses in the wrong places, and nested arrays and objects.
fn garbage() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e4..1e4f64).prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        prop::sample::select(vec![
            "fi",
            "*",
            "Main",
            "Backup",
            "down",
            "none",
            "refuse",
            "blackhole",
            "url",
            "mobile",
            "",
            "se",
        ])
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "name", "servers", "server", "at", "ms", "from", "to", "down", "mark"
                ]),
                inner,
                0..4
            )
            .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())),
        ]
    })
}

const POINTERS: &[&str] = &[
    "/platform",
    "/until",
    "/probe_timeout",
    "/subscriptions",
    "/subscriptions/0",
    "/subscriptions/0/servers",
    "/subscriptions/0/servers/2",
    "/subscriptions/1/name",
    "/auto",
    "/history",
    "/history/0",
    "/history/0/at",
    "/history/1/ms",
    "/history/0/method",
    "/world",
    "/world/0",
    "/world/1/ms",
    "/world/2",
    "/world/2/from",
    "/world/2/how",
    "/world/3/network",
    "/traffic",
    "/traffic/0/from",
    "/actions",
    "/actions/0",
    "/actions/0/mark",
    "/actions/1/done",
    "/actions/2/update",
    "/actions/2/update/servers",
    "/actions/3/at",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn arbitrary_text_never_panics(text in ".{0,200}") {
        let _ = Plan::from_json(&text);
    }

    #[test]
    fn mutated_scenarios_never_panic_and_valid_ones_run(
        edits in prop::collection::vec((prop::sample::select(POINTERS), garbage()), 1..4),
        until in 1u32..400,
    ) {
        let mut v = base();
        v["until"] = json!(until);
        for (pointer, value) in edits {
            if let Some(slot) = v.pointer_mut(pointer) {
                *slot = value;
            }
        }
        if let Ok(plan) = validate(&v)
            && plan.until.as_millis() <= 4_000_000
        {
            for name in sim::POLICIES {
                let mut policy = sim::make_policy(name, &plan).unwrap();
                let report = sim::run(&plan, policy.as_mut());
                prop_assert!(report.summary.outage_ms <= plan.until.as_millis());
            }
        }
    }
}
