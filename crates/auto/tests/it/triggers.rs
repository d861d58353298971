//! When a check starts (`docs/auto.md`, "When Auto checks").

use crate::common;

use common::*;
use switchyard_auto::{Event, Outcome, Trigger};

/// The worked example's three servers, plus a Backup subscription below.
fn example() -> H {
    let mut h = H::new(&[("Main", &["nl", "de", "fi"]), ("Backup", &["us", "uk"])]);
    h.hist_ms("fi", &[Some(60), Some(61), Some(62)]);
    h.hist_ms("de", &[Some(20), Some(25), Some(300)]);
    h.hist_ms("nl", &[Some(15), Some(18), None]);
    h
}

#[test]
fn auto_on_connects_to_the_server_with_the_best_score() {
    let mut h = example();
    assert_eq!(h.auto_on("Main").as_str(), "fi");
    h.no_probe();
}

/// Traffic flows and is answered up to 639; the current server is silent from 640 on
/// (the 640 sample is the first with data out and nothing back). Returns the check and
/// asserts that none started a moment before `expect`.
fn silent_from_640(mut h: H, expect: f64) -> (H, switchyard_auto::Check) {
    h.auto_on("Main");
    for t in 1..=639 {
        h.at(f64::from(t));
        h.sample(true, true);
        // The scheduled checks at 300 and 600 find everyone answering.
        if let Some(c) = h.try_probe() {
            let all: Vec<(&str, u32)> = c.servers.iter().map(|s| (s.as_str(), 50)).collect();
            h.reply(&c, &all);
        }
    }
    h.traffic(expect - 1.0, true, false);
    h.at(expect - 0.001);
    h.no_probe();
    let c = h.stall_until_check(expect + 10.0);
    (h, c)
}

#[test]
fn stall_on_a_computer_checks_5_seconds_after_replies_stop() {
    let (h, c) = silent_from_640(example(), 645.0);
    assert_eq!((h.now, c.trigger), (s(645.0), Trigger::Stall));
    assert_eq!(names(&c), ["fi", "de", "nl"]);
}

#[test]
fn stall_on_a_phone_checks_2_seconds_after_replies_stop() {
    let (h, c) = silent_from_640(H::mobile(&[("Main", &["fi", "de"])]), 642.0);
    assert_eq!((h.now, c.trigger), (s(642.0), Trigger::Stall));
}

#[test]
fn an_idle_second_breaks_the_stall_run() {
    let mut h = example();
    h.auto_on("Main");
    h.traffic(100.0, true, true);
    h.at(101.0);
    h.sample(true, false);
    h.at(102.0);
    h.sample(false, false); // nothing sent: the run starts over at the next sample
    let c = h.stall_until_check(200.0);
    assert_eq!((h.now, c.trigger), (s(108.0), Trigger::Stall));
}

#[test]
fn sporadic_sending_with_nothing_back_checks_30_seconds_after_replies_stop() {
    for platform_is_mobile in [false, true] {
        let mut h = if platform_is_mobile {
            H::mobile(&[("Main", &["fi", "de"])])
        } else {
            example()
        };
        h.auto_on("Main");
        h.traffic(100.0, true, true);
        // Something goes out every other second from 101; nothing comes back. Never
        // 2 s in a row, so no stall: the 30 s count from the 101 sample.
        let mut started = None;
        for t in 101..=140 {
            h.at(f64::from(t));
            h.sample(t % 2 == 1, false);
            if let Some(c) = h.try_probe() {
                started = Some((h.now, c.trigger));
                break;
            }
        }
        assert_eq!(
            started,
            Some((s(131.0), Trigger::NoInbound)),
            "mobile: {platform_is_mobile}"
        );
    }
}

#[test]
fn the_30_seconds_count_from_the_first_unanswered_send_not_the_last_reply() {
    let mut h = example();
    h.auto_on("Main");
    h.traffic(100.0, true, true);
    h.traffic(200.0, false, false); // idle: nothing expected back
    for t in 201..=260 {
        h.at(f64::from(t));
        h.sample(t % 3 == 0, false);
        if let Some(c) = h.try_probe() {
            // The first send is seen at 201 (201 % 3 == 0).
            assert_eq!((h.now, c.trigger), (s(231.0), Trigger::NoInbound));
            return;
        }
    }
    panic!("no check");
}

#[test]
fn a_failed_connection_checks_at_once() {
    let mut h = example();
    h.auto_on("Main");
    h.traffic(50.0, true, true);
    h.fire(Event::ConnectFailed { server: id("de") }).unwrap(); // not the current one
    h.no_probe();
    h.fire(Event::ConnectFailed { server: id("fi") }).unwrap();
    let c = h.probe();
    assert_eq!((h.now, c.trigger), (s(50.0), Trigger::ConnectFailure));
}

#[test]
fn scheduled_check_every_5_minutes_with_traffic_looks_at_current_and_2_best() {
    let mut h = H::new(&[("Main", &["a", "b", "c", "d", "e"])]);
    h.auto_on("Main");
    h.traffic(299.0, true, true);
    h.no_probe();
    h.traffic(300.0, true, true);
    let c = h.probe();
    assert_eq!((h.now, c.trigger), (s(300.0), Trigger::Scheduled));
    assert_eq!(names(&c), ["a", "b", "c"]);
    h.at(301.0);
    h.reply(&c, &[("a", 50), ("b", 10), ("c", 20)]);
    assert_report(&h.report(), Trigger::Scheduled, Outcome::Stay);
    h.traffic(599.0, true, true);
    h.no_probe();
    h.traffic(600.0, true, true);
    assert_eq!(h.probe().trigger, Trigger::Scheduled);
}

#[test]
fn an_idle_device_is_left_alone() {
    let mut h = H::new(&[("Main", &["a", "b", "c"])]);
    h.auto_on("Main");
    h.traffic(10.0, true, true);
    // Traffic in the first 5 minutes: a scheduled check at 300.
    h.traffic(300.0, false, false);
    let c = h.probe();
    assert_eq!(h.now, s(300.0));
    h.reply(&c, &[("a", 50), ("b", 50), ("c", 50)]);
    // Idle from then on: nothing, however long.
    h.traffic(2000.0, false, false);
    h.at(5000.0);
    h.no_probe();
    // Use resumes: more than 5 minutes passed since the last scheduled check.
    h.at(5001.0);
    h.sample(true, true);
    let c = h.probe();
    assert_eq!((h.now, c.trigger), (s(5001.0), Trigger::Scheduled));
}

#[test]
fn no_check_for_15_seconds_after_a_check() {
    let mut h = example();
    h.auto_on("Main");
    h.traffic(50.0, true, true);
    h.fire(Event::ConnectFailed { server: id("fi") }).unwrap();
    let c = h.probe();
    h.at(52.0);
    h.reply(&c, &[("fi", 60)]);
    assert_report(&h.report(), Trigger::ConnectFailure, Outcome::Stay);
    h.at(53.0);
    h.fire(Event::ConnectFailed { server: id("fi") }).unwrap();
    h.at(66.9);
    h.no_probe();
    h.at(67.0);
    let c = h.probe();
    assert_eq!(c.trigger, Trigger::ConnectFailure);
}

#[test]
fn no_check_for_5_seconds_after_a_switch() {
    // Turning Auto on connects, which counts as a switch: a failure right after it
    // waits the 5 s out (the reconnect itself looks like a failure).
    let mut h = example();
    h.auto_on("Main");
    h.fire(Event::ConnectFailed { server: id("fi") }).unwrap();
    h.no_probe();
    h.at(4.9);
    h.no_probe();
    h.at(5.0);
    assert_eq!(h.probe().trigger, Trigger::ConnectFailure);
}

#[test]
fn a_phone_without_any_network_starts_no_check() {
    let mut h = H::mobile(&[("Main", &["a", "b"])]);
    h.auto_on("Main");
    h.at(50.0);
    h.fire(Event::NetworkAvailable(false)).unwrap();
    h.fire(Event::ConnectFailed { server: id("a") }).unwrap();
    h.at(59.0);
    h.no_probe();
    h.at(60.0);
    h.fire(Event::NetworkAvailable(true)).unwrap();
    assert_eq!(h.probe().trigger, Trigger::ConnectFailure);
}

#[test]
fn a_computer_without_network_still_checks() {
    let mut h = H::new(&[("Main", &["a", "b"])]);
    h.auto_on("Main");
    h.at(50.0);
    h.fire(Event::NetworkAvailable(false)).unwrap();
    h.fire(Event::ConnectFailed { server: id("a") }).unwrap();
    assert_eq!(h.probe().trigger, Trigger::ConnectFailure);
}
