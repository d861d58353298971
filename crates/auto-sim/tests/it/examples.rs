//! Auto on the example scenarios: the timelines of `docs/auto.md` (its figure included)
//! replayed through the simulator, with exact virtual times.

use serde_json::Value;
use switchyard_auto_sim::{self as sim, Plan};

/// An example scenario's text.
fn scenario(example: &str) -> String {
    let path = format!(
        "{}/../../examples/auto/{example}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap()
}

/// The JSON lines of `policy` on an example, parsed.
fn run(example: &str, policy: &str) -> Vec<Value> {
    run_text(&scenario(example), policy)
}

/// The JSON lines of `policy` on a scenario, parsed.
fn run_text(text: &str, policy: &str) -> Vec<Value> {
    let plan = Plan::from_json(text).unwrap();
    let mut p = sim::make_policy(policy, &plan).unwrap();
    let mut out = Vec::new();
    sim::run(&plan, p.as_mut())
        .write_json_lines(&mut out)
        .unwrap();
    String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `(t, from, to, reason)` of every switch.
fn switches(lines: &[Value]) -> Vec<(f64, String, String, String)> {
    lines
        .iter()
        .filter(|l| l["event"] == "switch")
        .map(|l| {
            let s = |k: &str| l[k].as_str().unwrap().to_owned();
            (l["t"].as_f64().unwrap(), s("from"), s("to"), s("reason"))
        })
        .collect()
}

fn summary(lines: &[Value]) -> &Value {
    lines.last().unwrap()
}

fn sw(t: f64, from: &str, to: &str, reason: &str) -> (f64, String, String, String) {
    (t, from.into(), to.into(), reason.into())
}

#[test]
fn server_stops_and_comes_back_switch_then_switch_back_after_two_answers() {
    let lines = run("server-stops", "auto");
    // fi goes silent at 640: stall check at 645 (5 s of data out and nothing back,
    // counted from the 640 sample, the first to see nothing come back), silent after
    // the 5 s probe timeout, switch to de (best S').
    // fi answers again from 1500: scheduled checks at 1500 (1 of 2) and 1800 (2 of 2).
    assert_eq!(
        switches(&lines),
        [
            sw(650.0, "fi", "de", "current_silent"),
            sw(1800.12, "de", "fi", "switch_back")
        ]
    );
    let check = lines
        .iter()
        .find(|l| l["event"] == "check" && l["trigger"] == "stall")
        .unwrap();
    assert_eq!(check["t"], 645);
    assert_eq!(check["probes"], serde_json::json!(["fi", "de", "nl", "se"]));
    assert_eq!(summary(&lines)["outage_s"], 10);
}

#[test]
fn the_stall_check_starts_5_s_after_replies_stop_on_a_computer_and_2_s_on_a_phone() {
    // server-stops: fi, with traffic flowing, answers until 640 and not from 640 on.
    for (platform, at) in [("desktop", 645), ("mobile", 642)] {
        let mut v: Value = serde_json::from_str(&scenario("server-stops")).unwrap();
        v["platform"] = platform.into();
        let lines = run_text(&v.to_string(), "auto");
        let stall: Vec<&Value> = lines
            .iter()
            .filter(|l| l["event"] == "check" && l["trigger"] == "stall")
            .collect();
        assert_eq!(stall[0]["t"], at, "{platform}");
        // The probes time out 5 s later and Auto moves on.
        assert_eq!(
            switches(&lines)[0],
            sw(f64::from(at + 5), "fi", "de", "current_silent")
        );
    }
}

#[test]
fn elevator_network_gone_stays_and_backs_off_15_30_60_120() {
    let lines = run("elevator", "auto");
    assert!(switches(&lines).is_empty());
    let lost: Vec<(f64, u64)> = lines
        .iter()
        .filter(|l| l["event"] == "network_lost")
        .map(|l| (l["t"].as_f64().unwrap(), l["retry_in"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        lost,
        [
            (910.0, 15),
            (935.0, 30),
            (975.0, 60),
            (1045.0, 120),
            (1175.0, 120)
        ]
    );
    // The network is back at 1200; the retry at 1295 finds the servers and stays.
    let back = lines
        .iter()
        .find(|l| l["event"] == "check_result" && l["t"].as_f64().unwrap() > 1200.0)
        .unwrap();
    assert_eq!(
        (
            back["t"].as_f64().unwrap(),
            back["outcome"].as_str().unwrap()
        ),
        (1295.11, "stay")
    );
}

#[test]
fn subscription_down_moves_to_the_best_neighbour_and_pauses_own_checks() {
    let lines = run("subscription-down", "auto");
    let outcomes: Vec<(f64, &str)> = lines
        .iter()
        .filter(|l| l["event"] == "check_result")
        .take(4)
        .map(|l| (l["t"].as_f64().unwrap(), l["outcome"].as_str().unwrap()))
        .collect();
    // de and nl are down from 600 but fi answers: stay. fi goes silent at 610; the stall
    // at 615 waits out the 15 s after the 600 check.
    assert_eq!(
        outcomes[1..],
        [
            (605.0, "stay"),
            (625.0, "ask_neighbours"),
            (625.14, "subscription_down")
        ]
    );
    let wide = lines.iter().find(|l| l["trigger"] == "wide").unwrap();
    assert_eq!(wide["t"], 640.14);
    let connects: Vec<(&str, &str)> = lines
        .iter()
        .filter(|l| l["event"] == "connect")
        .map(|l| (l["server"].as_str().unwrap(), l["reason"].as_str().unwrap()))
        .collect();
    assert_eq!(connects[1], ("uk", "neighbour"));
    // Own-subscription checks once a minute, then a 15-minute pause after 5 failures.
    let own: Vec<f64> = lines
        .iter()
        .filter(|l| l["trigger"] == "own_subscription")
        .map(|l| l["t"].as_f64().unwrap())
        .take(6)
        .collect();
    assert_eq!(own, [705.14, 765.14, 825.14, 885.14, 945.14, 1850.14]);
}

#[test]
fn a_faster_server_appearing_is_no_reason_to_switch() {
    let lines = run("faster-server", "auto");
    assert!(switches(&lines).is_empty());
    assert_eq!(summary(&lines)["outage_s"], 0);
}

#[test]
fn servers_failing_one_after_another_hit_the_switch_limit() {
    let lines = run("cascade", "auto");
    let s = switches(&lines);
    assert_eq!(
        s[..3].iter().map(|x| x.0).collect::<Vec<_>>(),
        [300.07, 340.0, 365.0]
    );
    // The 4th waits for the window (300.07 + 180) and the 15 s after the held check.
    let held: Vec<f64> = lines
        .iter()
        .filter(|l| l["held"] == true)
        .map(|l| l["t"].as_f64().unwrap())
        .collect();
    assert_eq!(held, [400.0]);
    assert_eq!(s[3], sw(485.07, "se", "pl", "current_silent"));
}

#[test]
fn marks_move_off_the_marked_server_on_done_and_all_marked_falls_back() {
    let lines = run("marks", "auto");
    assert_eq!(
        switches(&lines),
        [
            sw(300.0, "fi", "de", "marked"),
            sw(600.0, "de", "se", "marked"),
            sw(1200.0, "se", "fi", "removed"),
            sw(1800.0, "fi", "nl", "marked"),
        ]
    );
}

#[test]
fn an_update_that_removes_the_current_server_replaces_it_at_once() {
    let lines = run("update-removes-current", "auto");
    assert_eq!(switches(&lines), [sw(900.0, "fi", "de", "removed")]);
}

#[test]
fn every_example_runs_under_every_policy_and_ends_with_a_summary() {
    for entry in std::fs::read_dir(format!(
        "{}/../../examples/auto",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
    {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let stem = path.file_stem().unwrap().to_str().unwrap().to_owned();
            for policy in sim::POLICIES {
                let lines = run(&stem, policy);
                assert_eq!(summary(&lines)["event"], "summary", "{stem} {policy}");
                assert_eq!(summary(&lines)["policy"], policy);
            }
        }
    }
}
