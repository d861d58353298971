//! Unit tests of the `urltest` model.

use super::*;

fn ms(ms: i64) -> Timestamp {
    Timestamp::from_millis(ms)
}

fn s(secs: i64) -> Timestamp {
    Timestamp::from_secs(secs)
}

fn id(name: &str) -> ServerId {
    ServerId::new(name)
}

fn drain(p: &mut UrlTest) -> Vec<Output> {
    std::iter::from_fn(|| p.poll_output()).collect()
}

/// A group on `Main` = a, b, c started at t = 0; returns the start test.
fn started(servers: &[&str]) -> (UrlTest, Vec<Output>) {
    let mut p = UrlTest::new();
    let subs = vec![Subscription::of_names("Main", servers)];
    p.handle_event(s(0), Event::Subscriptions(subs)).unwrap();
    p.handle_event(
        s(0),
        Event::AutoOn {
            subscription: "Main".into(),
        },
    )
    .unwrap();
    let out = drain(&mut p);
    (p, out)
}

fn probe(out: &[Output]) -> Check {
    out.iter()
        .find_map(|o| match o {
            Output::Probe(c) => Some(c.clone()),
            _ => None,
        })
        .expect("a probe")
}

/// Answer `check` at `now`: `Some(ms)` answers, `None` fails.
fn answer(p: &mut UrlTest, now: Timestamp, check: &Check, replies: &[(&str, Option<u32>)]) {
    let replies = replies
        .iter()
        .map(|(n, r)| (id(n), r.map_or(ProbeReply::NoAnswer, ProbeReply::after)))
        .collect();
    p.handle_event(
        now,
        Event::ProbeResults {
            check: check.id,
            replies,
        },
    )
    .unwrap();
}

fn traffic(p: &mut UrlTest, now: Timestamp, sent: u64) {
    p.handle_event(now, Event::Traffic { sent, received: 0 })
        .unwrap();
}

fn tick(p: &mut UrlTest, at: Timestamp) -> Vec<Output> {
    assert_eq!(p.poll_timeout(), Some(at));
    p.handle_timeout(at);
    drain(p)
}

fn outcome(out: &[Output]) -> Outcome {
    out.iter()
        .find_map(|o| match o {
            Output::CheckDone(r) => Some(r.outcome),
            _ => None,
        })
        .expect("a report")
}

fn connect(server: &str, reason: ConnectReason) -> Output {
    Output::Connect {
        server: id(server),
        reason,
    }
}

fn switched(from: &str, to: &str, reason: SwitchReason) -> Output {
    Output::Switched {
        from: id(from),
        to: id(to),
        reason,
    }
}

#[test]
fn defaults_are_sing_box_defaults() {
    let c = UrlTest::new().config().clone();
    assert_eq!(c.interval, Duration::from_secs(180));
    assert_eq!(c.tolerance_ms, 50);
    assert_eq!(c.idle_timeout, Duration::from_secs(1800));
    assert_eq!(c.test_timeout, Duration::from_secs(15));
    assert_eq!(UrlTest::new().name(), "urltest");
}

#[test]
fn start_dials_the_first_member_then_picks_after_the_start_test() {
    let (mut p, out) = started(&["a", "b", "c"]);
    assert_eq!(out[0], connect("a", ConnectReason::AutoOn));
    let check = probe(&out);
    assert_eq!(check.servers, vec![id("a"), id("b"), id("c")]);
    assert_eq!(check.timeout, Duration::from_secs(15));
    assert_eq!(check.trigger, Trigger::Scheduled);
    assert_eq!(p.poll_timeout(), None, "no ticker before the group is used");
    // The first recorded member in list order (b) is beaten by c by more than 50 ms.
    answer(
        &mut p,
        ms(200),
        &check,
        &[("a", None), ("b", Some(100)), ("c", Some(40))],
    );
    let out = drain(&mut p);
    assert_eq!(outcome(&out), Outcome::Switch);
    assert_eq!(out[1..], [connect("c", ConnectReason::AutoOn)]);
}

#[test]
fn with_no_current_record_the_first_recorded_member_wins_within_tolerance() {
    let (mut p, out) = started(&["a", "b"]);
    answer(
        &mut p,
        ms(100),
        &probe(&out),
        &[("a", Some(100)), ("b", Some(60))],
    );
    let out = drain(&mut p);
    assert_eq!(outcome(&out), Outcome::Stay);
    assert_eq!(out.len(), 1, "a stays although b is faster: {out:?}");
}

#[test]
fn keeps_the_current_within_tolerance_and_skips_fresh_records() {
    let (mut p, out) = started(&["a", "b"]);
    answer(
        &mut p,
        ms(100),
        &probe(&out),
        &[("a", Some(100)), ("b", None)],
    );
    drain(&mut p);
    traffic(&mut p, s(1), 10);
    // Tick at 181 s: a's record (0.1 s) is 180.9 s old, b has none: both tested.
    let out = tick(&mut p, s(181));
    let check = probe(&out);
    assert_eq!(check.servers, vec![id("a"), id("b")]);
    answer(
        &mut p,
        s(181) + Duration::from_millis(100),
        &check,
        &[("a", Some(100)), ("b", Some(60))],
    );
    let out = drain(&mut p);
    assert_eq!(outcome(&out), Outcome::Stay, "60 + 50 is not below 100");
    // Tick at 361 s: both records are younger than 3 min, nothing is probed.
    assert!(tick(&mut p, s(361)).is_empty());
    let out = tick(&mut p, s(541));
    answer(
        &mut p,
        s(541) + Duration::from_millis(100),
        &probe(&out),
        &[("a", Some(100)), ("b", Some(40))],
    );
    let out = drain(&mut p);
    assert_eq!(outcome(&out), Outcome::Switch);
    assert_eq!(
        out[1..],
        [
            switched("a", "b", SwitchReason::Faster),
            connect("b", ConnectReason::Switch)
        ]
    );
}

#[test]
fn a_failed_test_drops_the_record_and_moves() {
    let (mut p, out) = started(&["a", "b"]);
    answer(
        &mut p,
        ms(100),
        &probe(&out),
        &[("a", Some(50)), ("b", Some(100))],
    );
    drain(&mut p);
    traffic(&mut p, s(1), 10);
    let out = tick(&mut p, s(181));
    answer(
        &mut p,
        s(196),
        &probe(&out),
        &[("a", None), ("b", Some(100))],
    );
    let out = drain(&mut p);
    assert_eq!(
        out[1..],
        [
            switched("a", "b", SwitchReason::CurrentSilent),
            connect("b", ConnectReason::Switch)
        ]
    );
}

#[test]
fn a_failed_dial_drops_the_record_and_the_move_waits_for_the_next_test() {
    let (mut p, out) = started(&["a", "b"]);
    answer(
        &mut p,
        ms(100),
        &probe(&out),
        &[("a", Some(50)), ("b", Some(100))],
    );
    drain(&mut p);
    traffic(&mut p, s(1), 10);
    p.handle_event(s(10), Event::ConnectFailed { server: id("a") })
        .unwrap();
    assert!(drain(&mut p).is_empty(), "sing-box keeps the selection");
    let out = tick(&mut p, s(181));
    let check = probe(&out);
    assert!(
        check.servers.contains(&id("a")),
        "a has no record, so it is tested"
    );
    answer(&mut p, s(181), &check, &[("a", None), ("b", Some(100))]);
    let out = drain(&mut p);
    assert_eq!(out[1], switched("a", "b", SwitchReason::CurrentSilent));
}

#[test]
fn a_failed_dial_on_a_server_that_answers_again_changes_nothing() {
    let (mut p, out) = started(&["a", "b"]);
    answer(
        &mut p,
        ms(100),
        &probe(&out),
        &[("a", Some(50)), ("b", Some(100))],
    );
    drain(&mut p);
    traffic(&mut p, s(1), 10);
    p.handle_event(s(10), Event::ConnectFailed { server: id("a") })
        .unwrap();
    let out = tick(&mut p, s(181));
    answer(
        &mut p,
        s(181),
        &probe(&out),
        &[("a", Some(50)), ("b", Some(100))],
    );
    assert_eq!(outcome(&drain(&mut p)), Outcome::Stay);
}

#[test]
fn keeps_the_last_choice_when_nothing_answers() {
    let (mut p, out) = started(&["a", "b"]);
    answer(
        &mut p,
        ms(100),
        &probe(&out),
        &[("a", None), ("b", Some(50))],
    );
    assert_eq!(drain(&mut p)[1..], [connect("b", ConnectReason::AutoOn)]);
    traffic(&mut p, s(1), 10);
    let out = tick(&mut p, s(181));
    answer(&mut p, s(196), &probe(&out), &[("a", None), ("b", None)]);
    let out = drain(&mut p);
    assert_eq!(outcome(&out), Outcome::Stay);
    assert_eq!(out.len(), 1, "b is kept, not the first member: {out:?}");
}

#[test]
fn tests_stop_when_idle_past_30_minutes_and_resume_on_use() {
    let (mut p, out) = started(&["a"]);
    answer(&mut p, ms(100), &probe(&out), &[("a", Some(50))]);
    drain(&mut p);
    // The dial that starts the ticker does not mark activity; the next one does.
    traffic(&mut p, s(1), 10);
    traffic(&mut p, s(2), 11);
    // Last use at 2 s; ticks at 1 + 180 k s. Records are re-tested every other tick.
    for k in 1..=10 {
        let at = s(1 + 180 * k);
        let out = tick(&mut p, at);
        if let Some(Output::Probe(check)) = out.first() {
            answer(&mut p, at, check, &[("a", Some(50))]);
            drain(&mut p);
        }
    }
    // At 1981 s the last use is 1979 s ago, more than 30 min: the ticker stops.
    assert_eq!(p.poll_timeout(), Some(s(1981)));
    p.handle_timeout(s(1981));
    assert!(drain(&mut p).is_empty());
    assert_eq!(p.poll_timeout(), None);
    // Use resumes: the last activity is over 3 min old, so it tests at once.
    traffic(&mut p, s(2500), 20);
    let out = drain(&mut p);
    assert_eq!(probe(&out).servers, vec![id("a")]);
    assert_eq!(p.poll_timeout(), Some(s(2680)));
}

#[test]
fn first_use_within_an_interval_of_the_start_does_not_test_at_once() {
    let (mut p, out) = started(&["a"]);
    answer(&mut p, ms(100), &probe(&out), &[("a", Some(50))]);
    drain(&mut p);
    traffic(&mut p, s(180), 10);
    assert!(
        drain(&mut p).is_empty(),
        "180 s is not more than the interval"
    );
    assert_eq!(p.poll_timeout(), Some(s(360)));
}

#[test]
fn a_test_requested_while_one_runs_is_dropped() {
    let (mut p, _start) = started(&["a"]);
    // The start test never answers; use begins late, so loopCheck wants a test.
    traffic(&mut p, s(200), 10);
    assert!(drain(&mut p).is_empty());
}

#[test]
fn network_changes_marks_and_speed_tests_are_ignored() {
    let (mut p, out) = started(&["a", "b"]);
    answer(
        &mut p,
        ms(100),
        &probe(&out),
        &[("a", Some(50)), ("b", Some(100))],
    );
    drain(&mut p);
    for ev in [
        Event::NetworkChanged,
        Event::NetworkAvailable(false),
        Event::Mark(vec![id("a")]),
        Event::MarksDone,
        Event::SpeedTest {
            server: id("b"),
            mbps: 10.0,
        },
    ] {
        p.handle_event(s(5), ev).unwrap();
    }
    assert!(drain(&mut p).is_empty());
}

#[test]
fn an_update_restarts_the_group() {
    let (mut p, out) = started(&["a", "b"]);
    let check = probe(&out);
    answer(&mut p, ms(100), &check, &[("a", None), ("b", Some(50))]);
    drain(&mut p);
    // b is removed: dials go to the new first member, and a start test runs.
    let sub = Subscription::of_names("Main", &["c", "a"]);
    p.handle_event(s(10), Event::SubscriptionUpdated(sub))
        .unwrap();
    let out = drain(&mut p);
    assert_eq!(out[0], switched("b", "c", SwitchReason::Removed));
    assert_eq!(out[1], connect("c", ConnectReason::Removed));
    let restart = probe(&out);
    assert_eq!(restart.servers, vec![id("c"), id("a")]);
    // An update while the start test runs abandons it: its replies change nothing.
    let sub = Subscription::of_names("Main", &["c", "a", "d"]);
    p.handle_event(s(11), Event::SubscriptionUpdated(sub))
        .unwrap();
    let out = drain(&mut p);
    let again = probe(&out);
    answer(&mut p, s(12), &restart, &[("c", None), ("a", Some(10))]);
    assert_eq!(outcome(&drain(&mut p)), Outcome::Stay);
    answer(
        &mut p,
        s(12),
        &again,
        &[("c", None), ("a", Some(10)), ("d", None)],
    );
    assert_eq!(drain(&mut p)[1..], [connect("a", ConnectReason::AutoOn)]);
}

#[test]
fn refused_replies_change_nothing() {
    let (mut p, out) = started(&["a", "b"]);
    let check = probe(&out);
    let stray = Event::ProbeResults {
        check: check.id,
        replies: vec![(id("z"), ProbeReply::after(5))],
    };
    assert!(matches!(
        p.handle_event(ms(50), stray),
        Err(InputError::UnexpectedReply { .. })
    ));
    let unknown = Event::ProbeResults {
        check: CheckId(99),
        replies: vec![],
    };
    assert_eq!(
        p.handle_event(ms(50), unknown),
        Err(InputError::UnknownCheck { check: CheckId(99) })
    );
    // The check still runs and takes its replies.
    answer(&mut p, ms(100), &check, &[("a", Some(50)), ("b", None)]);
    assert_eq!(outcome(&drain(&mut p)), Outcome::Stay);
}
