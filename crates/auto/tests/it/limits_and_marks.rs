//! Limits and servers Auto skips (`docs/auto.md`, "What a check does", "Servers Auto skips (marks)").

use crate::common;

use common::*;
use switchyard_auto::{
    ConnectReason, Event, InputError, Outcome, Subscription, SwitchReason, Trigger,
};

fn five() -> H {
    let mut h = H::new(&[("Main", &["a", "b", "c", "d", "e"])]);
    for (n, ms) in [("a", 10), ("b", 20), ("c", 30), ("d", 40), ("e", 50)] {
        h.hist_ms(n, &[Some(ms), Some(ms)]);
    }
    h.auto_on("Main");
    h
}

/// The current server fails at `t`; every other server answers.
fn fail_and_answer(h: &mut H, t: f64) -> switchyard_auto::CheckReport {
    h.at(t);
    let cur = id(h.current());
    h.fire(Event::ConnectFailed {
        server: cur.clone(),
    })
    .unwrap();
    let c = h.probe();
    let answers: Vec<(&str, u32)> = c
        .servers
        .iter()
        .filter(|s| **s != cur)
        .map(|s| (s.as_str(), 30))
        .collect();
    h.reply(&c, &answers);
    h.report()
}

#[test]
fn no_more_than_3_switches_in_3_minutes_then_retry_when_the_window_allows() {
    let mut h = five();
    // Auto on at 0 counts as the first switch.
    // Everyone answers in 30 ms: S' prefers the steadiest history (c: 30, 30 -> 30).
    assert_eq!(fail_and_answer(&mut h, 20.0).outcome, Outcome::Switch); // a -> c
    assert_eq!(fail_and_answer(&mut h, 40.0).outcome, Outcome::Switch); // c -> b
    let held = fail_and_answer(&mut h, 60.0); // b -> ? : 0, 20, 40 in the window
    assert_eq!((held.outcome, held.held), (Outcome::Stay, true));
    assert_eq!(h.current(), "b");
    h.take();
    // The window frees at 0 + 180: a retry check then, and nothing before it.
    h.at(100.0);
    h.fire(Event::ConnectFailed { server: id("b") }).unwrap();
    h.traffic(179.0, true, false);
    h.at(179.9);
    h.no_probe();
    h.at(180.0);
    let c = h.probe();
    assert_eq!(c.trigger, Trigger::Retry);
    h.reply(&c, &[("d", 30)]);
    assert_eq!(h.report().outcome, Outcome::Switch);
    let switches: Vec<_> = h
        .take()
        .into_iter()
        .filter(|(_, o)| matches!(o, switchyard_auto::Output::Switched { .. }))
        .collect();
    assert_eq!(switches.len(), 1);
    assert_eq!(h.current(), "d");
}

#[test]
fn the_last_unmarked_server_cannot_be_marked_and_nothing_changes() {
    let mut h = H::new(&[("Main", &["a", "b", "c"])]);
    h.fire(Event::Mark(vec![id("a")])).unwrap();
    let err = h.fire(Event::Mark(vec![id("b"), id("c")])).unwrap_err();
    assert_eq!(
        err,
        InputError::LastUnmarked {
            subscription: "Main".into(),
            server: id("b")
        }
    );
    assert_eq!(h.e.state().marks.len(), 1, "refused whole");
    h.fire(Event::Mark(vec![id("b")])).unwrap();
    assert!(h.fire(Event::Mark(vec![id("c")])).is_err());
    assert_eq!(
        h.fire(Event::Mark(vec![id("zz")])).unwrap_err(),
        InputError::UnknownServer { server: id("zz") }
    );
}

#[test]
fn marking_the_current_server_switches_on_done_to_the_best_of_the_rest() {
    let mut h = five();
    h.at(2.0); // inside the 5 s after Auto on: user actions don't wait
    h.fire(Event::Mark(vec![id("a"), id("b")])).unwrap();
    h.no_probe();
    assert_eq!(h.current(), "a", "nothing happens before Done");
    h.fire(Event::MarksDone).unwrap();
    assert_eq!(h.switched(), (id("a"), id("c"), SwitchReason::Marked));
    assert_eq!(h.connected(), (id("c"), ConnectReason::Marked));
}

#[test]
fn marked_servers_are_never_candidates_but_the_current_one_is_probed() {
    let mut h = five();
    h.at(10.0);
    h.fire(Event::Mark(vec![id("a"), id("b"), id("d")]))
        .unwrap();
    h.fire(Event::ConnectFailed { server: id("a") }).unwrap();
    let c = h.probe();
    assert_eq!(names(&c), ["a", "c", "e"]);
}

#[test]
fn user_switches_count_toward_the_limit() {
    let mut h = five(); // Auto on at 0: 1
    h.at(1.0);
    h.fire(Event::Mark(vec![id("a")])).unwrap();
    h.fire(Event::MarksDone).unwrap(); // 2
    h.fire(Event::Mark(vec![id("b")])).unwrap();
    h.fire(Event::MarksDone).unwrap(); // 3
    assert_eq!(h.current(), "c");
    let r = fail_and_answer(&mut h, 30.0);
    assert!(r.held, "a 4th switch within 180 s is held: {r:?}");
}

#[test]
fn only_marked_servers_left_after_an_update_auto_picks_from_them() {
    let mut h = five();
    h.at(1.0);
    h.fire(Event::Mark(vec![id("d"), id("e")])).unwrap();
    h.fire(Event::SubscriptionUpdated(Subscription::of_names(
        "Main",
        &["d", "e"],
    )))
    .unwrap();
    assert_eq!(h.switched(), (id("a"), id("d"), SwitchReason::Removed));
    // Marks survive the update, and with all marked both are candidates.
    assert_eq!(h.e.state().marks.len(), 2);
    let r = fail_and_answer(&mut h, 20.0);
    assert_eq!(r.outcome, Outcome::Switch);
    assert_eq!(h.current(), "e");
}

#[test]
fn marks_and_history_are_kept_across_updates_by_identity() {
    let mut h = five();
    h.at(1.0);
    h.fire(Event::Mark(vec![id("e")])).unwrap();
    h.fire(Event::SubscriptionUpdated(Subscription::of_names(
        "Main",
        &["x", "a"],
    )))
    .unwrap();
    h.fire(Event::SubscriptionUpdated(Subscription::of_names(
        "Main",
        &["e", "a", "b"],
    )))
    .unwrap();
    assert!(h.e.state().marks.contains(&id("e")));
    assert_eq!(h.history_len("b"), 2);
    assert_eq!(h.current(), "a");
}
