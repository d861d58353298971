//! Auto's memory stays bounded: history, marks and speed results of a server absent from
//! every subscription for more than a day are forgotten.

use crate::common;

use common::*;
use switchyard_auto::{AutoConfig, Engine, Event, Policy, State, Subscription, Timestamp};

const DAY: f64 = 86_400.0;

/// Main [a, b, c] with history for a and b, b marked, a speed result for c; Auto on a.
fn remembered() -> H {
    let mut h = H::new(&[("Main", &["a", "b", "c"]), ("Other", &["x"])]);
    h.hist_ms("a", &[Some(50), Some(50)]);
    h.hist_ms("b", &[Some(60), Some(60)]);
    h.fire(Event::Mark(vec![id("b")])).unwrap();
    h.fire(Event::SpeedTest {
        server: id("c"),
        mbps: 90.0,
    })
    .unwrap();
    h.auto_on("Main");
    h
}

fn update(h: &mut H, sub: &str, servers: &[&str]) {
    h.fire(Event::SubscriptionUpdated(Subscription::of_names(
        sub, servers,
    )))
    .unwrap();
}

/// Whether anything is remembered of `server`.
fn remembers(h: &H, server: &str) -> bool {
    let st = h.e.state();
    let s = id(server);
    st.history.contains_key(&s) || st.marks.contains(&s) || st.speeds.contains_key(&s)
}

#[test]
fn servers_absent_from_every_subscription_for_over_a_day_are_forgotten() {
    let mut h = remembered();
    h.at(100.0);
    update(&mut h, "Main", &["a"]);
    assert_eq!(h.e.state().absent_since.get(&id("b")), Some(&s(100.0)));
    // Exactly a day: still remembered.
    h.at(100.0 + DAY);
    assert!(remembers(&h, "b") && remembers(&h, "c"));
    // Over a day: history, mark and speed result are gone; a is untouched.
    h.at(100.0 + DAY + 0.001);
    assert!(!remembers(&h, "b"), "{:?}", h.e.state());
    assert!(!remembers(&h, "c"));
    assert!(h.e.state().absent_since.is_empty());
    assert_eq!(h.history_len("a"), 2);
}

#[test]
fn a_server_back_within_the_day_keeps_everything() {
    let mut h = remembered();
    h.at(100.0);
    update(&mut h, "Main", &["a"]);
    h.at(100.0 + DAY - 1.0);
    update(&mut h, "Main", &["a", "b", "c"]);
    h.at(100.0 + 3.0 * DAY);
    assert!(remembers(&h, "b") && remembers(&h, "c"));
    assert!(h.e.state().marks.contains(&id("b")));
    // Gone again: the day counts afresh from then.
    update(&mut h, "Main", &["a"]);
    h.at(100.0 + 4.0 * DAY);
    assert!(remembers(&h, "b"));
    h.at(100.0 + 4.0 * DAY + 0.001);
    assert!(!remembers(&h, "b"));
}

#[test]
fn a_server_listed_in_another_subscription_is_not_absent() {
    let mut h = remembered();
    h.at(100.0);
    update(&mut h, "Other", &["x", "b"]);
    update(&mut h, "Main", &["a"]);
    h.at(100.0 + 2.0 * DAY);
    assert!(remembers(&h, "b"));
    assert!(!remembers(&h, "c"));
}

#[test]
fn results_for_a_server_in_no_subscription_are_forgotten_after_a_day() {
    let mut h = H::new(&[("Main", &["a"])]);
    h.at(10.0);
    h.fire(Event::SpeedTest {
        server: id("ghost"),
        mbps: 10.0,
    })
    .unwrap();
    h.hist("phantom", 0.0, Some(30));
    h.at(10.0 + DAY);
    assert!(remembers(&h, "ghost") && remembers(&h, "phantom"));
    h.at(10.0 + DAY + 0.001);
    assert!(!remembers(&h, "ghost") && !remembers(&h, "phantom"));
}

#[test]
fn the_day_keeps_counting_across_a_restart() {
    let mut h = remembered();
    h.at(100.0);
    update(&mut h, "Main", &["a"]);
    h.at(50_000.0);
    let json = serde_json::to_string(h.e.state()).unwrap();
    let saved: State = serde_json::from_str(&json).unwrap();
    assert_eq!(saved.absent_since.get(&id("b")), Some(&s(100.0)));
    let mut e = Engine::with_state(AutoConfig::default(), saved);
    let subs = vec![
        Subscription::of_names("Main", &["a"]),
        Subscription::of_names("Other", &["x"]),
    ];
    e.handle_event(s(50_000.0), Event::Subscriptions(subs))
        .unwrap();
    e.handle_timeout(s(100.0 + DAY));
    assert!(e.state().history.contains_key(&id("b")));
    e.handle_timeout(Timestamp::from_millis(100_000 + 86_400_000 + 1));
    assert!(!e.state().history.contains_key(&id("b")));
    assert!(!e.state().marks.contains(&id("b")));
}

#[test]
fn a_state_file_from_before_pruning_still_loads() {
    let old =
        r#"{"history":{},"marks":["a"],"speeds":{},"auto":"Main","current":"a","return_to":null}"#;
    let st: State = serde_json::from_str(old).unwrap();
    assert!(st.absent_since.is_empty());
}

#[test]
fn a_result_for_a_server_removed_during_its_check_is_forgotten_a_day_later() {
    let mut h = H::new(&[("Main", &["a", "b", "c"])]);
    h.hist_ms("a", &[Some(50), Some(50)]);
    h.auto_on("Main");
    h.at(10.0);
    h.fire(Event::ConnectFailed { server: id("a") }).unwrap();
    let check = h.probe();
    assert_eq!(names(&check), ["a", "b", "c"]);
    // c leaves while the check runs (a stays, so the check goes on) ...
    update(&mut h, "Main", &["a", "b"]);
    h.at(12.0);
    h.reply(&check, &[("a", 50), ("c", 40)]);
    // ... and its result, recorded at 12, is forgotten like any absent server's.
    assert!(remembers(&h, "c"));
    h.at(12.0 + DAY);
    assert!(remembers(&h, "c"));
    h.at(12.0 + DAY + 0.001);
    assert!(!remembers(&h, "c"));
}
