//! A restored engine waits for an explicit Auto on, and odd clocks can't stall Auto:
//! drivers pass a monotonic clock, but a step back never freezes the triggers and a
//! measurement dated in the future is clamped.

use crate::common;

use common::*;
use switchyard_auto::history::History;
use switchyard_auto::score::score;
use switchyard_auto::{
    AutoConfig, ConnectReason, Engine, Event, Measurement, Method, Output, Policy, State,
    Subscription, Timestamp, Trigger,
};

/// What a client saved after turning Auto on in Main (current: a).
fn saved() -> State {
    let mut h = H::new(&[("Main", &["a", "b", "c"])]);
    h.hist_ms("a", &[Some(50), Some(50)]);
    h.auto_on("Main");
    h.e.state().clone()
}

#[test]
fn restoring_saved_state_starts_nothing_until_auto_on() {
    let state = saved();
    assert_eq!(state.auto.as_deref(), Some("Main"));
    assert_eq!(state.current, Some(id("a")));
    let engine = Engine::with_state(AutoConfig::default(), state);
    let mut h = H::from_engine(engine, &[("Main", &["a", "b", "c"])]);
    // Stalled traffic, a failed connection, an update removing the saved current
    // server, a network change: a restored engine does none of its own accord.
    h.traffic(100.0, true, false);
    h.fire(Event::ConnectFailed { server: id("a") }).unwrap();
    h.traffic(200.0, true, true);
    h.fire(Event::SubscriptionUpdated(Subscription::of_names(
        "Main",
        &["b", "c"],
    )))
    .unwrap();
    h.fire(Event::NetworkChanged).unwrap();
    h.traffic(400.0, true, false);
    assert!(h.take().is_empty(), "{:#?}", h.log);
    assert_eq!(h.e.poll_timeout(), None);
    // Only the event turns Auto on ...
    h.fire(Event::AutoOn {
        subscription: "Main".into(),
    })
    .unwrap();
    assert_eq!(h.connected(), (id("b"), ConnectReason::AutoOn));
    // ... and the first scheduled check comes 5 minutes later, not at once.
    h.traffic(699.0, true, true);
    h.no_probe();
    h.traffic(700.0, true, true);
    assert_eq!(h.probe().trigger, Trigger::Scheduled);
}

/// A driver whose wall clock is stepped back an hour at 1100 s.
#[test]
fn a_clock_step_back_never_freezes_the_triggers() {
    let mut e = Engine::new(AutoConfig::default());
    let t = Timestamp::from_secs;
    let probes = std::cell::RefCell::new(vec![]);
    let feed = |e: &mut Engine, at: Timestamp, ev: Event| {
        e.handle_event(at, ev).unwrap();
        while let Some(o) = e.poll_output() {
            if let Output::Probe(c) = o {
                probes.borrow_mut().push((at, c.trigger));
            }
        }
    };
    let subs = vec![Subscription::of_names("Main", &["a", "b"])];
    feed(&mut e, t(1000), Event::Subscriptions(subs));
    let on = Event::AutoOn {
        subscription: "Main".into(),
    };
    feed(&mut e, t(1000), on);
    let (mut sent, mut received) = (0, 0);
    for s in 1001..=1100 {
        (sent, received) = (sent + 1000, received + 1000);
        feed(&mut e, t(s), Event::Traffic { sent, received });
    }
    // From here the driver's times read an hour earlier; the server no longer answers.
    let step = 3600;
    for s in 1101..=1200 {
        let now = t(s - step);
        if let Some(due) = e.poll_timeout()
            && due <= now
        {
            e.handle_timeout(now);
        }
        sent += 1000;
        feed(&mut e, now, Event::Traffic { sent, received });
        if !probes.borrow().is_empty() {
            break;
        }
    }
    // The first silent sample is the one right after the step (driver time 1101 - step;
    // no time passed for the engine), so the stall check starts 5 s of the driver's
    // clock after it.
    assert_eq!(probes.into_inner(), [(t(1106 - step), Trigger::Stall)]);
    // Deadlines are on the driver's clock: the check's results are due 5 s + 1 s on.
    assert_eq!(e.poll_timeout(), Some(t(1112 - step)));
}

#[test]
fn a_measurement_dated_in_the_future_is_clamped_to_now() {
    let mut h = H::new(&[("Main", &["a", "b"])]);
    h.at(1000.0);
    let month = 30.0 * 86_400.0;
    h.fire(Event::Measured {
        server: id("a"),
        measurement: Measurement::answered(s(1000.0 + month), Method::Url, 10),
    })
    .unwrap();
    let history = |h: &H| h.e.state().history[&id("a")].clone();
    assert_eq!(history(&h).latest().unwrap().at, s(1000.0));
    // Newer measurements come after it, so they decide the method and the score ...
    h.at(1060.0);
    h.fire(Event::Measured {
        server: id("a"),
        measurement: Measurement::answered(s(1060.0), Method::Tcp, 70),
    })
    .unwrap();
    assert_eq!(history(&h).latest().unwrap().at, s(1060.0));
    assert_eq!(score(&history(&h), s(1060.0)), Some(70));
    // ... and it ages out with the day like any other.
    let day_later = s(1000.0 + 86_400.0 + 1.0);
    let url_only = History::from_measurements(history(&h).iter().copied().take(1));
    assert_eq!(score(&url_only, day_later), None);
}

#[test]
fn a_restored_measurement_dated_in_the_future_is_clamped_when_time_first_comes_in() {
    // Saved before the clock was set back across a restart.
    let mut state = State::default();
    let future = Measurement::answered(Timestamp::from_secs(864_000), Method::Url, 40);
    state
        .history
        .insert(id("a"), History::from_measurements([future]));
    let h = H::from_engine(
        Engine::with_state(AutoConfig::default(), state),
        &[("Main", &["a", "b"])],
    );
    let at = h.e.state().history[&id("a")].latest().unwrap().at;
    assert_eq!(at, s(0.0));
}
