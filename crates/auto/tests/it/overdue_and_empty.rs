//! Auto never waits forever and never goes quiet: a check whose results are lost ends on
//! its deadline, and a subscription with no server left says so ("Auto paused: no
//! server").

use crate::common;

use common::*;
use switchyard_auto::config::RESULTS_GRACE;
use switchyard_auto::{
    CheckId, ConnectReason, Event, Outcome, Output, Policy, ProbeReply, Subscription, Trigger,
};

fn main_and_backup() -> H {
    let mut h = H::new(&[("Main", &["fi", "de"]), ("Backup", &["us"])]);
    h.hist_ms("fi", &[Some(60), Some(61)]);
    h.auto_on("Main");
    h
}

/// An update leaves Main without servers.
fn empty_main(h: &mut H) {
    let empty = Subscription::of_names("Main", &[]);
    h.fire(Event::SubscriptionUpdated(empty)).unwrap();
}

/// Outputs of kind `NoServer` since the last take, as (subscription, deleted).
fn no_server(h: &mut H) -> Vec<(String, bool)> {
    h.take()
        .into_iter()
        .filter_map(|(_, o)| match o {
            Output::NoServer {
                subscription,
                deleted,
            } => Some((subscription, deleted)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_check_whose_results_never_come_ends_after_its_timeout_with_every_server_unanswered() {
    let mut h = main_and_backup();
    h.at(10.0);
    h.fire(Event::ConnectFailed { server: id("fi") }).unwrap();
    let c = h.probe();
    // Probe timeout 5 s plus the 1 s grace for the driver's report.
    assert_eq!(RESULTS_GRACE.as_secs(), 1);
    assert_eq!(h.e.poll_timeout(), Some(s(16.0)));
    h.at(15.999);
    assert!(h.take().is_empty(), "still waiting at 15.999");
    h.at(16.0);
    let r = h.report();
    assert_report(&r, Trigger::ConnectFailure, Outcome::AskNeighbours);
    assert_eq!(r.silent, [id("fi"), id("de")]);
    assert!(r.answered.is_empty());
    // Auto goes on: the neighbours are asked, and when their results are lost too the
    // network looks gone and the usual pause follows.
    let n = h.probe();
    assert_eq!(names(&n), ["us"]);
    h.at(22.0);
    assert_report(&h.report(), Trigger::Neighbours, Outcome::NetworkLost);
    h.traffic(36.0, true, false);
    h.no_probe();
    h.traffic(37.0, true, false);
    assert_eq!(h.probe().trigger, Trigger::Retry);
    // The lost results turning up late are dropped quietly.
    h.reply(&c, &[("fi", 50)]);
    h.reply(&n, &[("us", 50)]);
    assert_eq!(h.current(), "fi");
}

#[test]
fn a_check_that_ended_on_its_deadline_says_so() {
    let mut h = main_and_backup();
    h.at(10.0);
    h.fire(Event::ConnectFailed { server: id("fi") }).unwrap();
    h.probe();
    h.at(16.0);
    assert!(h.report().timed_out);
    // Results in time are not "timed out", even when every probe timed out.
    let n = h.probe();
    h.at(21.0);
    h.reply(&n, &[]);
    assert!(!h.report().timed_out);
}

#[test]
fn replies_to_any_earlier_check_are_late_not_wrong() {
    // Two checks made moot in a row: the first one's replies are dropped quietly too
    // (only the last cancelled check used to be remembered), while a check that was
    // never started is still refused.
    let mut h = H::new(&[("Main", &["a", "b", "c", "d"])]);
    h.auto_on("Main");
    h.at(10.0);
    h.fire(Event::ConnectFailed { server: id("a") }).unwrap();
    let first = h.probe();
    h.fire(Event::Mark(vec![id("a")])).unwrap();
    h.fire(Event::MarksDone).unwrap(); // a -> b, the check is moot
    h.at(20.0);
    h.fire(Event::ConnectFailed { server: id("b") }).unwrap();
    let second = h.probe();
    h.fire(Event::Mark(vec![id("b")])).unwrap();
    h.fire(Event::MarksDone).unwrap(); // b -> c
    assert_eq!(h.current(), "c");
    h.take();
    h.reply(&second, &[("d", 5)]);
    h.reply(&first, &[("d", 5)]);
    assert!(h.take().is_empty());
    assert_eq!(h.current(), "c");
    let never = h.fire(Event::ProbeResults {
        check: CheckId(99),
        replies: vec![(id("a"), ProbeReply::after(5))],
    });
    assert!(never.is_err());
}

#[test]
fn an_update_that_empties_auto_s_subscription_pauses_auto_visibly() {
    let mut h = main_and_backup();
    h.at(50.0);
    h.take();
    empty_main(&mut h);
    assert_eq!(no_server(&mut h), [("Main".to_owned(), false)]);
    assert_eq!(h.current(), "");
    // Paused: traffic failing all along starts no check, and a second empty update says
    // nothing new.
    h.traffic(100.0, true, false);
    empty_main(&mut h);
    assert!(h.take().is_empty());
    // Servers come back: Auto connects to the best at once.
    h.fire(Event::SubscriptionUpdated(Subscription::of_names(
        "Main",
        &["de", "fi"],
    )))
    .unwrap();
    assert_eq!(h.connected(), (id("fi"), ConnectReason::AutoOn));
}

#[test]
fn deleting_auto_s_subscription_pauses_auto_visibly() {
    let mut h = main_and_backup();
    h.at(50.0);
    h.take();
    h.fire(Event::Subscriptions(vec![Subscription::of_names(
        "Backup",
        &["us"],
    )]))
    .unwrap();
    assert_eq!(no_server(&mut h), [("Main".to_owned(), true)]);
    assert_eq!(h.current(), "");
    assert_eq!(h.e.state().auto, None);
    // Auto is off: a subscription of that name coming back does not turn it on.
    h.fire(Event::Subscriptions(vec![
        Subscription::of_names("Main", &["fi"]),
        Subscription::of_names("Backup", &["us"]),
    ]))
    .unwrap();
    h.traffic(400.0, true, false);
    assert!(h.take().is_empty());
}

#[test]
fn auto_on_in_an_empty_subscription_says_there_is_no_server() {
    let mut h = H::new(&[("Main", &[]), ("Backup", &["us"])]);
    h.at(5.0);
    h.fire(Event::AutoOn {
        subscription: "Main".into(),
    })
    .unwrap();
    assert_eq!(no_server(&mut h), [("Main".to_owned(), false)]);
}

#[test]
fn emptied_while_on_a_neighbour_s_server_pauses_too() {
    // Main is down and Auto moved to Backup's us; then Main's update empties it. Auto
    // used to stay there silently, probing nothing once a minute.
    let mut h = main_and_backup();
    h.at(10.0);
    h.fire(Event::ConnectFailed { server: id("fi") }).unwrap();
    let c = h.probe();
    h.reply(&c, &[]);
    let n = h.probe();
    h.reply(&n, &[("us", 50)]);
    h.at(30.0);
    h.fire(Event::ConnectFailed { server: id("fi") }).unwrap();
    let w = h.probe();
    assert_eq!(w.trigger, Trigger::Wide);
    h.reply(&w, &[("us", 50)]);
    assert_eq!(h.current(), "us");
    h.take();
    empty_main(&mut h);
    assert_eq!(no_server(&mut h), [("Main".to_owned(), false)]);
    h.traffic(400.0, true, true);
    h.no_probe();
}
