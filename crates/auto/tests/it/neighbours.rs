//! When the whole subscription is silent, and switching back
//! (`docs/auto.md`, "What a check does").

use crate::common;

use common::*;
use switchyard_auto::{ConnectReason, Event, Outcome, Output, SwitchReason, Trigger};

fn four_subscriptions() -> H {
    let mut h = H::new(&[
        ("Far", &["au"]),
        ("Above", &["jp", "kr", "cn"]),
        ("Main", &["fi", "de", "nl"]),
        ("Empty", &[]),
        ("Below", &["us", "uk", "ca"]),
    ]);
    h.hist_ms("fi", &[Some(60), Some(61), Some(62)]);
    h.hist_ms("cn", &[Some(30), Some(30)]); // best of Above
    h.hist_ms("uk", &[Some(90), Some(90)]); // best of Below
    h.auto_on("Main");
    h
}

/// A check at `t` triggered by a failed connection to the current server.
fn fail_at(h: &mut H, t: f64) -> switchyard_auto::Check {
    h.at(t);
    let cur = id(h.current());
    h.fire(Event::ConnectFailed { server: cur }).unwrap();
    h.probe()
}

#[test]
fn nobody_answering_asks_the_2_best_of_the_nearest_subscriptions_above_and_below() {
    let mut h = four_subscriptions();
    let c = fail_at(&mut h, 100.0);
    h.at(105.0);
    h.reply(&c, &[]);
    assert_report(&h.report(), Trigger::ConnectFailure, Outcome::AskNeighbours);
    let n = h.probe();
    assert_eq!(n.trigger, Trigger::Neighbours);
    assert_eq!(
        names(&n),
        ["cn", "jp", "uk", "us"],
        "skips the empty one, not the far one"
    );
}

#[test]
fn the_figure_network_drops_stays_records_nothing_and_retries_after_15_30_60_120_120_seconds() {
    let mut h = four_subscriptions();
    let before: Vec<usize> = ["fi", "de", "cn", "uk"]
        .iter()
        .map(|s| h.history_len(s))
        .collect();
    h.traffic(100.0, true, true);
    let mut c = fail_at(&mut h, 100.0);
    let mut retries = vec![];
    for _ in 0..5 {
        let t = h.now.as_secs_f64() + 5.0;
        h.at(t);
        h.reply(&c, &[]);
        assert_eq!(h.report().outcome, Outcome::AskNeighbours);
        let n = h.probe();
        h.at(t + 5.0);
        h.reply(&n, &[]);
        assert_report(&h.report(), Trigger::Neighbours, Outcome::NetworkLost);
        let lost = h.take();
        let retry_in = lost.iter().find_map(|(_, o)| match o {
            Output::NetworkLost { retry_in } => Some(retry_in.as_secs()),
            _ => None,
        });
        // Traffic keeps failing all along; only the retry may start a check.
        let lost_at = h.now.as_secs_f64();
        // The back-off `status` shows: k and the pause, on the driver's clock.
        let pause =
            h.e.network_pause()
                .expect("paused after the network is gone");
        assert_eq!(
            (pause.attempts, pause.since, pause.until),
            (
                u32::try_from(retries.len() + 1).unwrap(),
                s(lost_at),
                s(lost_at + retry_in.unwrap() as f64)
            )
        );
        h.traffic(lost_at + retry_in.unwrap() as f64 - 1.0, true, false);
        h.no_probe();
        h.traffic(lost_at + retry_in.unwrap() as f64, true, false);
        c = h.probe();
        assert_eq!(c.trigger, Trigger::Retry);
        assert_eq!(h.e.network_pause(), None, "the retry ends the pause");
        retries.push((lost_at, retry_in.unwrap(), h.now.as_secs_f64()));
    }
    assert_eq!(
        retries,
        [
            (110.0, 15, 125.0),
            (135.0, 30, 165.0),
            (175.0, 60, 235.0),
            (245.0, 120, 365.0),
            (375.0, 120, 495.0)
        ]
    );
    assert_eq!(h.current(), "fi", "stays on the server");
    let after: Vec<usize> = ["fi", "de", "cn", "uk"]
        .iter()
        .map(|s| h.history_len(s))
        .collect();
    assert_eq!(
        before, after,
        "no measurement from a network-gone check is recorded"
    );
    // Any answer resets the count: the network is back.
    h.at(500.0);
    h.reply(&c, &[("fi", 70)]);
    assert_eq!(h.report().outcome, Outcome::Stay);
    assert_eq!(h.history_len("fi"), 4);
}

/// Two "network gone" in a row: the second, at 135, pauses for T_2 = 30 s (to 165),
/// longer than the 15 s cool-down after that check (to 150).
fn lost_twice(h: &mut H) {
    let c = fail_at(h, 100.0);
    h.at(105.0);
    h.reply(&c, &[]);
    let n = h.probe();
    h.at(110.0);
    h.reply(&n, &[]);
    assert_eq!(h.report().outcome, Outcome::AskNeighbours);
    assert_eq!(h.report().outcome, Outcome::NetworkLost);
    h.traffic(125.0, true, false);
    let c = h.probe();
    assert_eq!(c.trigger, Trigger::Retry);
    h.at(130.0);
    h.reply(&c, &[]);
    let n = h.probe();
    h.at(135.0);
    h.reply(&n, &[]);
    assert_eq!(h.network_lost_pauses(), [15, 30]);
}

#[test]
fn without_a_network_change_the_pause_runs_its_full_30_seconds() {
    let mut h = four_subscriptions();
    lost_twice(&mut h);
    h.traffic(164.0, true, false);
    h.no_probe();
    h.traffic(165.0, true, false);
    assert_eq!(h.probe().trigger, Trigger::Retry);
}

#[test]
fn a_network_change_ends_the_pause_visibly_before_it_would_have_ended() {
    let mut h = four_subscriptions();
    lost_twice(&mut h);
    // A change at 140, inside the cool-down: the retry comes when the cool-down ends
    // (150), 15 s before the pause would have (165).
    h.traffic(140.0, true, false);
    assert!(h.e.network_pause().is_some());
    h.fire(Event::NetworkChanged).unwrap();
    assert_eq!(h.e.network_pause(), None, "a network change ends the pause");
    h.traffic(149.0, true, false);
    h.no_probe();
    h.at(150.0);
    let c = h.probe();
    assert_eq!((h.now, c.trigger), (s(150.0), Trigger::Retry));
    // k restarted: the next "network gone" pauses 15 s, not 60.
    h.at(155.0);
    h.reply(&c, &[]);
    let n = h.probe();
    h.at(160.0);
    h.reply(&n, &[]);
    assert_eq!(h.network_lost_pauses(), [15], "k restarted at 1");
}

#[test]
fn a_network_change_after_the_cool_down_retries_at_once() {
    let mut h = four_subscriptions();
    lost_twice(&mut h);
    h.traffic(155.0, true, false);
    h.no_probe();
    h.fire(Event::NetworkChanged).unwrap();
    let c = h.probe();
    assert_eq!((h.now, c.trigger), (s(155.0), Trigger::Retry));
}

/// Main goes silent at 100 while the neighbours answer; returns the time of the
/// neighbours' result.
fn subscription_down(h: &mut H) -> f64 {
    let c = fail_at(h, 100.0);
    h.at(105.0);
    h.reply(&c, &[]);
    h.report();
    let n = h.probe();
    h.at(105.2);
    h.reply(&n, &[("cn", 40), ("jp", 80), ("uk", 120)]);
    assert_report(&h.report(), Trigger::Neighbours, Outcome::SubscriptionDown);
    105.2
}

#[test]
fn neighbours_answering_means_a_wide_check_then_the_best_neighbour_server() {
    let mut h = four_subscriptions();
    subscription_down(&mut h);
    assert_eq!(h.current(), "fi", "no switch yet");
    // The next failure starts the wide check (after the 15 s cool-down).
    h.at(110.0);
    h.fire(Event::ConnectFailed { server: id("fi") }).unwrap();
    h.at(120.1);
    h.no_probe();
    h.at(120.2);
    let w = h.probe();
    assert_eq!(w.trigger, Trigger::Wide);
    // us went silent in the neighbours' check: ca (never checked) comes before it now.
    assert_eq!(names(&w), ["fi", "de", "nl", "cn", "jp", "uk", "ca"]);
    h.at(125.2);
    h.reply(&w, &[("cn", 45), ("jp", 35), ("uk", 100)]);
    let r = h.report();
    assert_report(&r, Trigger::Wide, Outcome::Switch);
    // cn: 45 + (45 - 30) + 40-ish history: S' = 45 + 15 = 60 (the 40 from the neighbours
    // check widens A to 30..45); jp: 35 + (80 - 35) = 80.
    assert_eq!(
        h.switched(),
        (id("fi"), id("cn"), SwitchReason::SubscriptionDown)
    );
    assert_eq!(h.connected(), (id("cn"), ConnectReason::Neighbour));
}

#[test]
fn the_wide_check_comes_within_5_minutes_and_probes_up_to_30_servers() {
    let list: Vec<String> = (1..=40).map(|i| format!("m{i:02}")).collect();
    let refs: Vec<&str> = list.iter().map(String::as_str).collect();
    let mut h = H::new(&[("Main", &refs), ("Below", &["us", "uk"])]);
    h.auto_on("Main");
    let c = fail_at(&mut h, 100.0);
    h.at(105.0);
    h.reply(&c, &[]);
    assert_eq!(h.report().outcome, Outcome::AskNeighbours);
    let n = h.probe();
    h.at(106.0);
    h.reply(&n, &[("us", 50)]);
    assert_eq!(h.report().outcome, Outcome::SubscriptionDown);
    // The device is in use but nothing triggers: the wide check comes at 106 + 300.
    h.traffic(405.0, true, true);
    h.no_probe();
    h.traffic(406.0, true, true);
    let w = h.probe();
    assert_eq!((h.now, w.trigger), (s(406.0), Trigger::Wide));
    assert_eq!(w.servers.len(), 30 + 2);
    // m02..m10 went silent in the first check: never-checked servers come first now.
    assert_eq!(names(&w)[..3], ["m01", "m11", "m12"]);
    assert_eq!(names(&w)[30..], ["us", "uk"]);
    // The own subscription answers again: back to normal.
    h.at(407.0);
    h.reply(&w, &[("m01", 50)]);
    assert_eq!(h.report().outcome, Outcome::Stay);
}

/// Moves Main's user onto cn (a neighbour) at 125.2.
fn on_neighbour(h: &mut H) {
    subscription_down(h);
    h.at(110.0);
    h.fire(Event::ConnectFailed { server: id("fi") }).unwrap();
    h.at(120.2);
    let w = h.probe();
    h.at(125.2);
    h.reply(&w, &[("cn", 45)]);
    assert_eq!(h.connected(), (id("cn"), ConnectReason::Neighbour));
    h.take();
}

#[test]
fn on_a_neighbour_the_own_subscription_is_checked_every_minute_and_pauses_after_5_failures() {
    let mut h = four_subscriptions();
    on_neighbour(&mut h);
    let mut starts = vec![];
    for _ in 0..6 {
        let c = loop {
            let t = h.now.as_secs_f64() + 1.0;
            h.traffic(t, true, true);
            if let Some(c) = h.try_probe() {
                break c;
            }
            assert!(t < 3000.0, "no own-subscription check");
        };
        assert_eq!(c.trigger, Trigger::OwnSubscription);
        assert_eq!(names(&c), ["fi", "de", "nl"], "the return server first");
        starts.push(h.now.as_secs_f64());
        let t = h.now.as_secs_f64() + 5.0;
        h.at(t);
        h.reply(&c, &[]);
        assert_eq!(h.report().outcome, Outcome::Stay);
    }
    // 125.2 + 60 = 185.2, then once a minute; after the 5th failure (ending at 430.2)
    // a 15 min pause: 430.2 + 900 = 1330.2, reached by the next traffic sample.
    assert_eq!(starts, [186.0, 246.0, 306.0, 366.0, 426.0, 1331.0]);
    assert_eq!(h.current(), "cn");
}

#[test]
fn the_own_subscription_answering_twice_in_a_row_brings_auto_back() {
    let mut h = four_subscriptions();
    on_neighbour(&mut h);
    h.traffic(186.0, true, true);
    let c = h.probe();
    h.at(187.0);
    h.reply(&c, &[("fi", 70), ("de", 50)]);
    assert_eq!(
        h.report().outcome,
        Outcome::Stay,
        "one answer is not enough"
    );
    h.traffic(246.0, true, true);
    let c = h.probe();
    h.at(247.0);
    h.reply(&c, &[("fi", 70), ("de", 50)]);
    assert_eq!(h.report().outcome, Outcome::Switch);
    assert_eq!(h.switched(), (id("cn"), id("fi"), SwitchReason::SwitchBack));
    assert_eq!(h.connected(), (id("fi"), ConnectReason::SwitchBack));
}

#[test]
fn the_figure_server_stops_then_switch_back_after_two_answers() {
    // The spec's first timeline: Finland is silent -> Netherlands; scheduled checks find
    // Finland answering once (stay), then again (back).
    let mut h = H::new(&[("Main", &["fi", "nl", "de"]), ("Backup", &["us"])]);
    h.hist_ms("fi", &[Some(60), Some(61), Some(62)]);
    h.hist_ms("nl", &[Some(80), Some(80), Some(80)]);
    h.hist_ms("de", &[Some(120), Some(120), Some(120)]);
    h.auto_on("Main");
    h.traffic(240.0, true, true);
    let c = h.stall_until_check(400.0);
    assert_eq!((h.now, c.trigger), (s(246.0), Trigger::Stall));
    h.at(250.0);
    h.reply(&c, &[("nl", 80), ("de", 120)]);
    assert_eq!(h.report().outcome, Outcome::Switch);
    assert_eq!(
        h.switched(),
        (id("fi"), id("nl"), SwitchReason::CurrentSilent)
    );
    assert_eq!(h.connected(), (id("nl"), ConnectReason::Switch));
    // Scheduled every 5 minutes, counted from the last scheduled one (t = 0: Auto on).
    h.traffic(300.0, true, true);
    let c = h.probe();
    assert_eq!(c.trigger, Trigger::Scheduled);
    assert_eq!(
        names(&c),
        ["nl", "fi", "de"],
        "current, return server, best"
    );
    h.at(305.0);
    h.reply(&c, &[("nl", 80), ("de", 120)]); // fi still silent
    assert_eq!(h.report().outcome, Outcome::Stay);
    h.traffic(600.0, true, true);
    let c = h.probe();
    h.at(601.0);
    h.reply(&c, &[("nl", 80), ("fi", 60), ("de", 120)]);
    assert_eq!(
        h.report().outcome,
        Outcome::Stay,
        "answered 1 time out of 2"
    );
    h.traffic(900.0, true, true);
    let c = h.probe();
    h.at(901.0);
    h.reply(&c, &[("nl", 80), ("fi", 61), ("de", 120)]);
    assert_eq!(h.report().outcome, Outcome::Switch, "answered again: back");
    assert_eq!(h.switched(), (id("nl"), id("fi"), SwitchReason::SwitchBack));
    assert_eq!(h.connected(), (id("fi"), ConnectReason::SwitchBack));
    // Nothing to return to any more.
    h.traffic(1200.0, true, true);
    assert_eq!(names(&h.probe()), ["fi", "nl", "de"]);
}

#[test]
fn one_silent_answer_resets_the_switch_back_count() {
    let mut h = H::new(&[("Main", &["fi", "nl", "de"])]);
    h.hist_ms("fi", &[Some(60), Some(61)]);
    h.hist_ms("nl", &[Some(80), Some(80)]);
    h.auto_on("Main");
    let c = fail_at(&mut h, 10.0);
    h.reply(&c, &[("nl", 80)]);
    assert_eq!(h.current(), "nl");
    h.take();
    let mut outcomes = vec![];
    for (t, fi_answers) in [(300.0, true), (600.0, false), (900.0, true), (1200.0, true)] {
        h.traffic(t, true, true);
        let c = h.probe();
        let answers: Vec<(&str, u32)> = if fi_answers {
            vec![("nl", 80), ("fi", 60)]
        } else {
            vec![("nl", 80)]
        };
        h.reply(&c, &answers);
        outcomes.push(h.report().outcome);
    }
    assert_eq!(
        outcomes,
        [Outcome::Stay, Outcome::Stay, Outcome::Stay, Outcome::Switch]
    );
}
