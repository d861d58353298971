//! Holding apps' new connections while a failed connect waits for a check's verdict
//! (`Engine::hold_until`): when, until when exactly, and when not.

use std::time::Duration;

use crate::common;

use common::*;
use switchyard_auto::config::HOLD_LIMIT;
use switchyard_auto::{AutoConfig, ConnectReason, Event, Outcome, Trigger};

fn three() -> H {
    let mut h = H::new(&[("Main", &["a", "b", "c"])]);
    h.hist_ms("a", &[Some(10), Some(10)]);
    h.hist_ms("b", &[Some(70), Some(70)]);
    h.hist_ms("c", &[Some(140), Some(140)]);
    assert_eq!(h.auto_on("Main").as_str(), "a");
    h
}

fn fail(h: &mut H, server: &str) {
    h.fire(Event::ConnectFailed { server: id(server) }).unwrap();
}

#[test]
fn nothing_is_held_without_a_failed_connect() {
    let mut h = three();
    assert_eq!(h.e.hold_until(), None);
    h.at(10.0);
    h.traffic(20.0, true, true);
    assert_eq!(h.e.hold_until(), None);
}

#[test]
fn a_refusal_in_the_quiet_time_holds_until_the_deferred_check_can_end_then_the_switch_releases() {
    let mut h = three();
    // A first failure at 10 s: the check starts at once and may run until 16 s.
    h.at(10.0);
    fail(&mut h, "a");
    let c = h.probe();
    assert_eq!(c.trigger, Trigger::ConnectFailure);
    assert_eq!(h.e.hold_until(), Some(s(16.0)));
    // a answers: Auto stays, the round is over, nothing is held any more.
    h.at(10.5);
    h.reply(&c, &[("a", 12), ("b", 70), ("c", 140)]);
    assert_eq!(h.report().outcome, Outcome::Stay);
    assert_eq!(h.e.hold_until(), None);

    // a refuses at 20 s, in the quiet time that ends at 25.5 s: held until the check
    // that starts then can end (25.5 + 5 s probe timeout + 1 s grace).
    h.at(20.0);
    fail(&mut h, "a");
    h.no_probe();
    assert_eq!(h.e.hold_until(), Some(s(31.5)));
    h.at(25.0);
    h.no_probe();
    assert_eq!(h.e.hold_until(), Some(s(31.5)));
    h.at(25.5);
    let c = h.probe();
    assert_eq!(c.trigger, Trigger::ConnectFailure);
    assert_eq!(h.e.hold_until(), Some(s(31.5)));
    // b answers and a does not: the switch ends the hold, with the new server named
    // first (the driver dials the held connections through it).
    h.at(25.7);
    h.reply(&c, &[("b", 70), ("c", 140)]);
    assert_eq!(h.report().outcome, Outcome::Switch);
    assert_eq!(h.connected(), (id("b"), ConnectReason::Switch));
    assert_eq!(h.e.hold_until(), None);
}

#[test]
fn a_round_that_stays_on_the_same_server_ends_the_hold_even_with_a_failure_during_it() {
    let mut h = three();
    h.at(10.0);
    fail(&mut h, "a");
    let c = h.probe();
    h.at(11.0);
    fail(&mut h, "a");
    assert_eq!(h.e.hold_until(), Some(s(16.0)));
    h.at(12.0);
    h.reply(&c, &[("a", 12)]);
    assert_eq!(h.report().outcome, Outcome::Stay);
    // The held connections fail as before; the failure during the check still starts
    // one more check after the quiet time, but nothing is held for it.
    assert_eq!(h.e.hold_until(), None);
    h.at(27.0);
    assert_eq!(h.probe().trigger, Trigger::ConnectFailure);
    assert_eq!(h.e.hold_until(), None);
}

#[test]
fn a_failure_of_another_server_than_the_current_one_holds_nothing() {
    let mut h = three();
    h.at(10.0);
    fail(&mut h, "b");
    h.no_probe();
    assert_eq!(h.e.hold_until(), None);
}

#[test]
fn a_check_that_would_end_past_the_limit_is_not_waited_for() {
    // With a 20 s probe timeout, a refusal 1 s after a check waits for the quiet time
    // (14 s more) and a check of up to 21 s: 35 s > the 25 s limit.
    let mut h = H::with(
        AutoConfig {
            probe_timeout: Duration::from_secs(20),
            ..AutoConfig::default()
        },
        &[("Main", &["a", "b"])],
    );
    h.auto_on("Main");
    h.at(10.0);
    fail(&mut h, "a");
    let c = h.probe();
    // Running: its deadline is 31 s, 21 s away: within the limit.
    assert_eq!(h.e.hold_until(), Some(s(31.0)));
    h.at(11.0);
    h.reply(&c, &[("a", 12)]);
    h.at(12.0);
    fail(&mut h, "a");
    assert_eq!(h.e.hold_until(), None);
    // 4 s later the check would end at 26 + 21 = 47 s, 31 s away: still not held;
    // from 22 s on it is within the limit.
    h.at(16.0);
    assert_eq!(h.e.hold_until(), None);
    h.at(22.0);
    assert_eq!(h.e.hold_until(), Some(s(47.0)));
    assert_eq!(HOLD_LIMIT, Duration::from_secs(25));
}

#[test]
fn a_round_that_asks_the_neighbours_holds_on_until_it_ends() {
    let mut h = H::new(&[("Main", &["a", "b"]), ("Other", &["x"])]);
    h.auto_on("Main");
    h.at(10.0);
    fail(&mut h, "a");
    let c = h.probe();
    h.at(10.5);
    h.reply(&c, &[]);
    assert_eq!(h.report().outcome, Outcome::AskNeighbours);
    let n = h.probe();
    assert_eq!(n.trigger, Trigger::Neighbours);
    assert_eq!(h.e.hold_until(), Some(s(16.5)));
    h.at(11.0);
    h.reply(&n, &[("x", 30)]);
    assert_eq!(h.report().outcome, Outcome::SubscriptionDown);
    assert_eq!(h.e.hold_until(), None);
}

#[test]
fn nothing_is_held_in_a_network_loss_pause() {
    let mut h = H::new(&[("Main", &["a", "b"])]);
    h.auto_on("Main");
    h.at(10.0);
    fail(&mut h, "a");
    let c = h.probe();
    h.at(11.0);
    h.reply(&c, &[]);
    assert_eq!(h.report().outcome, Outcome::NetworkLost);
    h.at(12.0);
    h.traffic(14.0, true, false);
    fail(&mut h, "a");
    assert_eq!(h.e.hold_until(), None);
}

#[test]
fn a_users_action_during_the_round_ends_the_hold() {
    let mut h = three();
    h.at(10.0);
    fail(&mut h, "a");
    let _ = h.probe();
    assert_eq!(h.e.hold_until(), Some(s(16.0)));
    h.fire(Event::Mark(vec![id("a")])).unwrap();
    h.fire(Event::MarksDone).unwrap();
    assert_eq!(h.connected(), (id("b"), ConnectReason::Marked));
    assert_eq!(h.e.hold_until(), None);
}

#[test]
fn while_held_the_best_two_others_stand_by_in_queue_order_and_marked_ones_never() {
    let mut h = H::new(&[("Main", &["a", "b", "c", "d"])]);
    h.hist_ms("a", &[Some(10), Some(10)]);
    h.hist_ms("b", &[Some(70), Some(70)]);
    h.hist_ms("c", &[Some(140), Some(140)]);
    h.hist_ms("d", &[Some(40), Some(40)]);
    assert_eq!(h.auto_on("Main").as_str(), "a");
    // Nothing held: nobody stands by.
    assert!(h.e.standby().is_empty());
    h.at(10.0);
    fail(&mut h, "a");
    let c = h.probe();
    h.at(10.5);
    h.reply(&c, &[("a", 12), ("b", 70), ("c", 140), ("d", 40)]);
    assert_eq!(h.report().outcome, Outcome::Stay);
    assert!(h.e.standby().is_empty());
    // A refusal in the quiet time: held until 31.5 s, d (score 40) then b (70) stand
    // by; c, third, does not.
    h.at(20.0);
    fail(&mut h, "a");
    assert_eq!(h.e.hold_until(), Some(s(31.5)));
    assert_eq!(h.e.standby(), vec![id("d"), id("b")]);
    // A marked server never stands by: b and c remain.
    h.fire(Event::Mark(vec![id("d")])).unwrap();
    assert_eq!(h.e.standby(), vec![id("b"), id("c")]);
    // The verdict ends the hold, and the standby with it.
    h.at(25.5);
    let c = h.probe();
    h.at(25.7);
    h.reply(&c, &[("b", 70), ("c", 140)]);
    assert_eq!(h.report().outcome, Outcome::Switch);
    assert_eq!(h.connected(), (id("b"), ConnectReason::Switch));
    assert!(h.e.standby().is_empty());
}

#[test]
fn a_hold_with_no_other_server_has_nobody_standing_by() {
    let mut h = H::new(&[("Main", &["a"])]);
    h.auto_on("Main");
    h.at(10.0);
    fail(&mut h, "a");
    let _ = h.probe();
    assert_eq!(h.e.hold_until(), Some(s(16.0)));
    assert!(h.e.standby().is_empty());
}
