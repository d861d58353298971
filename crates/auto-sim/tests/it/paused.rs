//! "Auto paused: no server" in the simulator: the pause is printed, and the simulator
//! disconnects, so the pause counts as outage while traffic flows.

use switchyard_auto_sim::{self as sim, Plan};

#[test]
fn the_simulator_prints_auto_paused_no_server() {
    let scenario = serde_json::json!({
        "until": 100,
        "subscriptions": [
            {"name": "Main", "servers": ["fi", "de"]},
            {"name": "Backup", "servers": ["us"]}
        ],
        "auto": "Main",
        "world": [{"server": "*", "ms": 50}],
        "traffic": [{}],
        "actions": [{"at": 40, "update": {"subscription": "Main", "servers": []}}]
    });
    let plan = Plan::from_json(&scenario.to_string()).unwrap();
    let mut policy = sim::make_policy("auto", &plan).unwrap();
    let mut out = Vec::new();
    sim::run(&plan, policy.as_mut())
        .write_json_lines(&mut out)
        .unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains(
            r#"{"t":40,"event":"auto_paused","reason":"no_server","subscription":"Main"}"#
        ),
        "{text}"
    );
}

#[test]
fn in_the_simulator_a_pause_disconnects_and_counts_as_outage() {
    let scenario = serde_json::json!({
        "until": 100,
        "subscriptions": [
            {"name": "Main", "servers": ["fi"]},
            {"name": "Backup", "servers": ["us"]}
        ],
        "auto": "Main",
        "world": [{"server": "*", "ms": 50}, {"server": "fi", "down": true, "how": "refuse", "from": 40}],
        "traffic": [{}],
        "actions": [
            {"at": 40, "update": {"subscription": "Main", "servers": []}},
            {"at": 70, "update": {"subscription": "Main", "servers": ["de"]}}
        ]
    });
    let plan = Plan::from_json(&scenario.to_string()).unwrap();
    let mut policy = sim::make_policy("auto", &plan).unwrap();
    let report = sim::run(&plan, policy.as_mut());
    // No refused inputs (the removed fi is no longer dialled) and 30 s without a server.
    let refused = report
        .lines
        .iter()
        .filter(|l| matches!(l.kind, sim::LineKind::Refused { .. }))
        .count();
    assert_eq!(refused, 0);
    assert_eq!(report.summary.outage_ms, 30_000);
}
