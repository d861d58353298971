//! The engine's memory survives a restart; bad input is refused with a clear error
//! and changes nothing.

use crate::common;

use common::*;
use switchyard_auto::{
    AutoConfig, CheckId, Engine, Event, InputError, Policy, ProbeReply, State, Subscription,
    Timestamp,
};

#[test]
fn state_round_trips_through_json_and_a_restarted_engine_resumes() {
    let mut h = H::new(&[("Main", &["a", "b", "c"])]);
    h.hist_ms("a", &[Some(500), Some(500)]);
    h.hist_ms("b", &[Some(10), None, Some(10)]);
    h.fire(Event::SpeedTest {
        server: id("c"),
        mbps: 80.0,
    })
    .unwrap();
    h.fire(Event::Mark(vec![id("a")])).unwrap();
    h.auto_on("Main");
    let json = serde_json::to_string(h.e.state()).unwrap();
    let back: State = serde_json::from_str(&json).unwrap();
    assert_eq!(&back, h.e.state());
    assert_eq!(back.current, Some(id("b")));
    let mut restarted = H::from_engine(
        Engine::with_state(AutoConfig::default(), back),
        &[("Main", &["a", "b", "c"])],
    );
    assert_eq!(restarted.auto_on("Main").as_str(), "b");
    assert!(restarted.e.state().marks.contains(&id("a")));
}

#[test]
fn a_state_file_with_an_unknown_field_is_refused() {
    let err = serde_json::from_str::<State>(r#"{"histroy":{}}"#).unwrap_err();
    assert!(err.to_string().contains("histroy"), "{err}");
}

#[test]
fn bad_input_gets_a_typed_error_and_changes_nothing() {
    let mut e = Engine::new(AutoConfig::default());
    let t = Timestamp::ZERO;
    let subs = vec![
        Subscription::of_names("Main", &["a", "b"]),
        Subscription::of_names("Main", &["c"]),
    ];
    assert_eq!(
        e.handle_event(t, Event::Subscriptions(subs)),
        Err(InputError::DuplicateSubscription {
            name: "Main".into()
        })
    );
    assert_eq!(
        e.handle_event(
            t,
            Event::Subscriptions(vec![Subscription::of_names("Main", &["a", "a"])])
        ),
        Err(InputError::DuplicateServer {
            subscription: "Main".into(),
            server: id("a")
        })
    );
    e.handle_event(
        t,
        Event::Subscriptions(vec![Subscription::of_names("Main", &["a", "b"])]),
    )
    .unwrap();
    assert_eq!(
        e.handle_event(
            t,
            Event::AutoOn {
                subscription: "Nope".into()
            }
        ),
        Err(InputError::UnknownSubscription {
            name: "Nope".into()
        })
    );
    assert_eq!(
        e.handle_event(
            t,
            Event::SubscriptionUpdated(Subscription::of_names("Nope", &["x"]))
        ),
        Err(InputError::UnknownSubscription {
            name: "Nope".into()
        })
    );
    assert_eq!(
        e.handle_event(
            t,
            Event::ProbeResults {
                check: CheckId(7),
                replies: vec![]
            }
        ),
        Err(InputError::UnknownCheck { check: CheckId(7) })
    );
    assert!(matches!(
        e.handle_event(
            t,
            Event::SpeedTest {
                server: id("a"),
                mbps: f64::NAN
            }
        ),
        Err(InputError::InvalidSpeed { .. })
    ));
    assert!(matches!(
        e.handle_event(
            t,
            Event::SpeedTest {
                server: id("a"),
                mbps: -1.0
            }
        ),
        Err(InputError::InvalidSpeed { .. })
    ));
    assert_eq!(
        e.handle_event(t, Event::ConnectFailed { server: id("zz") }),
        Err(InputError::UnknownServer { server: id("zz") })
    );
    e.handle_event(
        t,
        Event::Traffic {
            sent: 10,
            received: 10,
        },
    )
    .unwrap();
    assert!(matches!(
        e.handle_event(
            t,
            Event::Traffic {
                sent: 5,
                received: 10
            }
        ),
        Err(InputError::CountersWentBack { field: "sent", .. })
    ));
    assert_eq!(e.state(), &State::default());
    // Every error message names what was wrong.
    let msg = InputError::LastUnmarked {
        subscription: "Main".into(),
        server: id("b"),
    }
    .to_string();
    assert!(msg.contains("Main") && msg.contains('b'), "{msg}");
}

#[test]
fn replies_for_a_server_the_check_did_not_probe_are_refused() {
    let mut h = H::new(&[("Main", &["a", "b"]), ("Other", &["x"])]);
    h.auto_on("Main");
    h.at(10.0);
    h.fire(Event::ConnectFailed { server: id("a") }).unwrap();
    let c = h.probe();
    let err = h
        .fire(Event::ProbeResults {
            check: c.id,
            replies: vec![(id("x"), ProbeReply::after(5))],
        })
        .unwrap_err();
    assert_eq!(
        err,
        InputError::UnexpectedReply {
            check: c.id,
            server: id("x")
        }
    );
    // The check is still running and takes the right replies.
    h.reply(&c, &[("a", 20)]);
    assert_eq!(h.report().outcome, switchyard_auto::Outcome::Stay);
}

#[test]
fn replies_to_a_check_a_user_action_made_moot_are_dropped_quietly() {
    let mut h = H::new(&[("Main", &["a", "b", "c"])]);
    h.auto_on("Main");
    h.at(10.0);
    h.fire(Event::ConnectFailed { server: id("a") }).unwrap();
    let c = h.probe();
    h.fire(Event::Mark(vec![id("a")])).unwrap();
    h.fire(Event::MarksDone).unwrap();
    assert_eq!(h.current(), "b");
    h.reply(&c, &[("c", 5)]);
    assert_eq!(h.current(), "b");
}

#[test]
fn a_state_file_with_too_many_or_unordered_measurements_is_read_safely() {
    // Seven measurements of a, out of order: the score code used to index past its
    // buffer of five and panic when the queue was ranked.
    let json = r#"{"history":{"a":[
        {"at":7000,"method":"url","ms":70},{"at":1000,"method":"url","ms":10},
        {"at":6000,"method":"url","ms":60},{"at":2000,"method":"url","ms":20},
        {"at":5000,"method":"url","ms":50},{"at":3000,"method":"url","ms":30},
        {"at":4000,"method":"url","ms":40}]}}"#;
    let state: State = serde_json::from_str(json).unwrap();
    assert_eq!(state.history[&id("a")].iter().count(), 5);
    let mut h = H::from_engine(
        Engine::with_state(AutoConfig::default(), state),
        &[("Main", &["b", "a"])],
    );
    assert_eq!(h.auto_on("Main").as_str(), "a");
}
