//! How a check works and what it decides (`docs/auto.md`, "What a check does").

use crate::common;

use common::*;
use switchyard_auto::{
    AutoConfig, ConnectReason, Event, Outcome, ProbeReply, ProbeRules, SwitchReason, Trigger,
    measurement::ExpectedStatus,
};

fn main_with_scores() -> H {
    // Queue: fi (63), se (70), de (305).
    let mut h = H::new(&[("Main", &["de", "se", "fi"]), ("Backup", &["us"])]);
    h.hist_ms("fi", &[Some(60), Some(61), Some(62)]);
    h.hist_ms("de", &[Some(20), Some(25), Some(300)]);
    h.hist_ms("se", &[Some(70), Some(70), Some(70)]);
    h.auto_on("Main");
    h.at(50.0);
    h
}

fn failed_check(h: &mut H) -> switchyard_auto::Check {
    h.fire(Event::ConnectFailed { server: id("fi") }).unwrap();
    h.probe()
}

#[test]
fn a_check_probes_the_current_server_and_up_to_9_best() {
    let list: Vec<String> = (1..=15).map(|i| format!("s{i:02}")).collect();
    let refs: Vec<&str> = list.iter().map(String::as_str).collect();
    let mut h = H::new(&[("Main", &refs)]);
    // s15 is best, then s14, ...: the queue runs backwards through the list.
    for (i, name) in refs.iter().enumerate() {
        h.hist_ms(
            name,
            &[Some(200 - i as u32 * 10), Some(200 - i as u32 * 10)],
        );
    }
    assert_eq!(h.auto_on("Main").as_str(), "s15");
    h.at(10.0);
    h.fire(Event::Mark(vec![id("s14")])).unwrap();
    h.fire(Event::ConnectFailed { server: id("s15") }).unwrap();
    let c = h.probe();
    assert_eq!(
        names(&c),
        [
            "s15", "s13", "s12", "s11", "s10", "s09", "s08", "s07", "s06", "s05"
        ],
        "current, then the 9 best unmarked"
    );
}

#[test]
fn the_current_server_answering_means_stay_even_if_another_is_faster() {
    let mut h = main_with_scores();
    let c = failed_check(&mut h);
    assert_eq!(names(&c), ["fi", "se", "de"]);
    h.at(51.0);
    h.reply(&c, &[("fi", 400), ("se", 10), ("de", 5)]);
    let r = h.report();
    assert_report(&r, Trigger::ConnectFailure, Outcome::Stay);
    assert_eq!(answered(&r), [("fi", 400), ("se", 10), ("de", 5)]);
    assert_eq!(h.current(), "fi");
}

#[test]
fn current_silent_switches_to_the_best_switch_score_not_the_fastest() {
    let mut h = main_with_scores();
    let c = failed_check(&mut h);
    h.at(55.0);
    // de answers in 15 ms but jumped 20..300: S' = 15 + 285 = 300.
    // se answers in 80 ms and is steady:     S' = 80 + 10  = 90.
    h.reply(&c, &[("se", 80), ("de", 15)]);
    let r = h.report();
    assert_report(&r, Trigger::ConnectFailure, Outcome::Switch);
    assert_eq!(r.silent, [id("fi")]);
    assert_eq!(
        h.switched(),
        (id("fi"), id("se"), SwitchReason::CurrentSilent)
    );
    assert_eq!(h.connected(), (id("se"), ConnectReason::Switch));
    assert_eq!(h.current(), "se");
    // The measurements of the check are in the history.
    assert_eq!(h.history_len("fi"), 4);
    assert_eq!(h.history_len("de"), 4);
}

#[test]
fn s_and_s_prime_pick_different_servers() {
    // Queue by S: steady (50) before calm (60) before jumpy (305). In the check steady
    // answers slowly and jumpy fastest; S' = L + (max A - min A) picks calm:
    //   steady: 200 + (200 - 50) = 350, calm: 65 + (65 - 60) = 70, jumpy: 30 + 280 = 310.
    // The best by S (steady) and the fastest (jumpy) both lose.
    let mut h = H::new(&[("Main", &["cur", "jumpy", "calm", "steady"])]);
    h.hist_ms("cur", &[Some(10), Some(10)]);
    h.hist_ms("steady", &[Some(50), Some(50), Some(50)]);
    h.hist_ms("calm", &[Some(60), Some(60), Some(60)]);
    h.hist_ms("jumpy", &[Some(20), Some(25), Some(300)]);
    h.auto_on("Main");
    h.at(10.0);
    h.fire(Event::ConnectFailed { server: id("cur") }).unwrap();
    let c = h.probe();
    assert_eq!(names(&c), ["cur", "steady", "calm", "jumpy"], "the S queue");
    h.reply(&c, &[("steady", 200), ("calm", 65), ("jumpy", 30)]);
    assert_eq!(
        h.switched(),
        (id("cur"), id("calm"), SwitchReason::CurrentSilent)
    );
}

#[test]
fn switch_score_failures_cost_1000_each() {
    let mut h = H::new(&[("Main", &["cur", "flaky", "slow"])]);
    h.hist_ms("cur", &[Some(10), Some(10)]);
    h.hist_ms("flaky", &[Some(20), None, Some(20)]); // S' = L + 0 + 1000
    h.hist_ms("slow", &[Some(500), Some(500)]); // S' = L + 0
    h.auto_on("Main");
    h.at(10.0);
    h.fire(Event::ConnectFailed { server: id("cur") }).unwrap();
    let c = h.probe();
    h.reply(&c, &[("flaky", 20), ("slow", 600)]);
    // flaky: 20 + 0 + 1000 = 1020; slow: 600 + 100 = 700.
    assert_eq!(h.switched().1, id("slow"));
}

#[test]
fn equal_switch_scores_keep_subscription_order() {
    let mut h = H::new(&[("Main", &["cur", "b", "a"])]);
    h.hist_ms("cur", &[Some(10), Some(10)]);
    h.auto_on("Main");
    h.at(10.0);
    h.fire(Event::ConnectFailed { server: id("cur") }).unwrap();
    let c = h.probe();
    h.reply(&c, &[("a", 50), ("b", 50)]);
    assert_eq!(h.switched().1, id("b"));
}

#[test]
fn an_unexpected_http_status_counts_as_no_answer() {
    let config = AutoConfig {
        probe_rules: ProbeRules {
            expected_status: ExpectedStatus::Success,
            ..ProbeRules::default()
        },
        ..AutoConfig::default()
    };
    let mut h = H::with(config, &[("Main", &["a", "b"]), ("Other", &["x"])]);
    h.hist_ms("a", &[Some(10), Some(10)]);
    h.auto_on("Main");
    h.at(10.0);
    h.fire(Event::ConnectFailed { server: id("a") }).unwrap();
    let c = h.probe();
    let status = |code| ProbeReply::Answered {
        total_ms: 30,
        request_ms: Some(10),
        status: Some(code),
    };
    h.fire(Event::ProbeResults {
        check: c.id,
        replies: vec![(id("a"), status(502)), (id("b"), status(204))],
    })
    .unwrap();
    let r = h.report();
    assert_eq!(r.silent, [id("a")]);
    assert_eq!(answered(&r), [("b", 30)]);
    assert_eq!(r.outcome, Outcome::Switch);
}

#[test]
fn a_removed_current_server_is_replaced_at_once() {
    let mut h = main_with_scores();
    h.traffic(52.0, true, true);
    h.fire(Event::SubscriptionUpdated(
        switchyard_auto::Subscription::of_names("Main", &["de", "se", "nl"]),
    ))
    .unwrap();
    assert_eq!(h.switched(), (id("fi"), id("se"), SwitchReason::Removed));
    assert_eq!(h.connected(), (id("se"), ConnectReason::Removed));
    // History follows identity: fi's is kept although it left the subscription.
    assert_eq!(h.history_len("fi"), 3);
}

#[test]
fn auto_is_on_in_one_subscription_at_a_time() {
    let mut h = main_with_scores();
    h.fire(Event::AutoOn {
        subscription: "Backup".into(),
    })
    .unwrap();
    assert_eq!(h.connected(), (id("us"), ConnectReason::AutoOn));
    h.fire(Event::ConnectFailed { server: id("us") }).unwrap();
    h.at(56.0);
    let c = h.probe();
    assert_eq!(
        names(&c),
        ["us"],
        "only Backup's servers are candidates now"
    );
}

#[test]
fn an_answer_past_the_probe_timeout_counts_as_no_answer() {
    // The spec: each probe "counts as 'no answer' past" its timeout (5 s by default),
    // even if the driver reports the late answer.
    let mut h = H::new(&[("Main", &["a", "b", "c"])]);
    h.hist_ms("a", &[Some(10), Some(10)]);
    h.auto_on("Main");
    h.at(10.0);
    h.fire(Event::ConnectFailed { server: id("a") }).unwrap();
    let c = h.probe();
    h.reply(&c, &[("a", 5001), ("b", 5000), ("c", 4000)]);
    let r = h.report();
    assert_eq!(r.silent, [id("a")]);
    assert_eq!(answered(&r), [("b", 5000), ("c", 4000)]);
    assert_eq!(r.outcome, Outcome::Switch);
}
