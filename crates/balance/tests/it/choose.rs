//! `choose` rule by rule, with exact numbers (`docs/routes.md`, "Load
//! balancing" and "Clarifications").

use switchyard_balance::{Algorithm, Candidate, Choice, Previous, Reason, Settings, choose};

const LL: Algorithm = Algorithm::LeastLoaded;
const RR: Algorithm = Algorithm::RoundRobin;

/// An available inbound `id` at position `id` with a capacity estimate.
fn ll(id: i64, capacity: f64, traffic: f64, users: u64) -> Candidate {
    Candidate {
        capacity: Some(capacity),
        traffic,
        users,
        ..Candidate::new(id, id as u32)
    }
}

/// An available inbound `id` at position `id` with no estimate.
fn rr(id: i64, users: u64, coefficient: f64) -> Candidate {
    Candidate {
        users,
        coefficient,
        ..Candidate::new(id, id as u32)
    }
}

fn down(c: Candidate) -> Candidate {
    Candidate {
        available: false,
        ..c
    }
}

fn choice(inbound: i64, reason: Reason, applied: Algorithm, metric: f64) -> Choice {
    Choice {
        inbound,
        reason,
        applied,
        metric,
    }
}

fn new_user(algorithm: Algorithm, pool: &[Candidate]) -> Choice {
    choose(algorithm, pool, None, &Settings::default()).unwrap()
}

fn returning(algorithm: Algorithm, pool: &[Candidate], inbound: i64, counted: bool) -> Choice {
    let previous = Previous { inbound, counted };
    choose(algorithm, pool, Some(previous), &Settings::default()).unwrap()
}

/// The reason for a user back from `previous` (not counted) with hysteresis `h`.
fn reason_with(h: f64, algorithm: Algorithm, pool: &[Candidate], previous: i64) -> Reason {
    let previous = Previous {
        inbound: previous,
        counted: false,
    };
    let settings = Settings { hysteresis: h };
    choose(algorithm, pool, Some(previous), &settings)
        .unwrap()
        .reason
}

#[test]
fn defaults() {
    assert_eq!(Algorithm::default(), LL);
    assert_eq!(Settings::default().hysteresis, 0.25);
    let c = Candidate::new(7, 3);
    assert_eq!((c.inbound, c.position, c.available), (7, 3, true));
    assert_eq!(
        (c.capacity, c.traffic, c.users, c.coefficient),
        (None, 0.0, 0, 1.0)
    );
}

#[test]
fn reason_names() {
    let names = [Reason::Best, Reason::Kept, Reason::Moved, Reason::LeastBad].map(|r| r.as_str());
    assert_eq!(names, ["best", "kept", "moved", "least_bad"]);
}

#[test]
fn an_empty_pool_has_no_choice() {
    assert_eq!(choose(LL, &[], None, &Settings::default()), None);
    let previous = Some(Previous {
        inbound: 1,
        counted: true,
    });
    assert_eq!(choose(RR, &[], previous, &Settings::default()), None);
}

#[test]
fn least_loaded_metric_is_the_newcomers_share_of_free_bandwidth() {
    // (1000 − 400) / (2 + 1) = 200 beats (900 − 100) / (4 + 1) = 160.
    let pool = [ll(1, 900.0, 100.0, 4), ll(2, 1000.0, 400.0, 2)];
    let c = new_user(LL, &pool);
    assert_eq!(c, choice(2, Reason::Best, LL, 200.0));
    // An empty server: divided by 1, not 0.
    let c = new_user(LL, &[ll(1, 300.0, 50.0, 0)]);
    assert_eq!(c.metric, 250.0);
}

#[test]
fn least_loaded_metric_is_clamped_at_zero() {
    let c = new_user(LL, &[ll(1, 100.0, 150.0, 0)]);
    assert_eq!((c.inbound, c.applied, c.metric), (1, LL, 0.0));
    assert!(c.metric.is_sign_positive());
}

#[test]
fn a_saturated_server_gets_nobody_even_with_fewer_users() {
    // Inbound 1: empty but saturated (metric 0); inbound 2: 50 users, 1 free byte/s.
    let pool = [ll(1, 1000.0, 1000.0, 0), ll(2, 1000.0, 949.0, 50)];
    let c = new_user(LL, &pool);
    assert_eq!((c.inbound, c.metric), (2, 51.0 / 51.0));
}

#[test]
fn round_robin_metric_is_users_per_coefficient() {
    // 6 / 2 = 3 beats 4 / 1 = 4; the estimates do not matter.
    let pool = [
        ll(1, 1e9, 0.0, 4),
        Candidate {
            coefficient: 2.0,
            ..ll(2, 1.0, 1.0, 6)
        },
    ];
    let c = new_user(RR, &pool);
    assert_eq!(c, choice(2, Reason::Best, RR, 3.0));
}

#[test]
fn least_loaded_falls_back_to_round_robin_when_one_has_no_estimate() {
    // By free bandwidth inbound 1 would win (1000 vs 0); with inbound 3 unestimated the
    // route goes by users: inbound 3 (0 users).
    let pool = [ll(1, 1000.0, 0.0, 5), ll(2, 10.0, 10.0, 2), rr(3, 0, 1.0)];
    let c = new_user(LL, &pool);
    assert_eq!(c, choice(3, Reason::Best, RR, 0.0));
    // Once it has an estimate, least loaded applies again.
    let pool = [
        ll(1, 1000.0, 0.0, 5),
        ll(2, 10.0, 10.0, 2),
        ll(3, 100.0, 0.0, 0),
    ];
    let c = new_user(LL, &pool);
    assert_eq!((c.inbound, c.applied, c.metric), (1, LL, 1000.0 / 6.0));
}

#[test]
fn an_unavailable_server_without_estimate_does_not_force_the_fallback() {
    let pool = [
        ll(1, 1000.0, 0.0, 5),
        ll(2, 600.0, 0.0, 2),
        down(rr(3, 0, 1.0)),
    ];
    let c = new_user(LL, &pool);
    assert_eq!((c.inbound, c.applied, c.metric), (2, LL, 200.0));
}

#[test]
fn with_every_server_down_a_missing_estimate_forces_the_fallback() {
    let pool = [down(ll(1, 1000.0, 0.0, 5)), down(rr(2, 3, 1.0))];
    let c = new_user(LL, &pool);
    assert_eq!(c, choice(2, Reason::LeastBad, RR, 3.0));
}

#[test]
fn unavailable_candidates_are_excluded() {
    let pool = [down(ll(1, 1e9, 0.0, 0)), ll(2, 100.0, 90.0, 9)];
    assert_eq!(new_user(LL, &pool).inbound, 2);
    let pool = [down(rr(1, 0, 1.0)), rr(2, 100, 1.0)];
    assert_eq!(new_user(RR, &pool).inbound, 2);
}

#[test]
fn an_unavailable_previous_choice_is_left_for_the_best() {
    let pool = [down(rr(1, 0, 1.0)), rr(2, 7, 1.0), rr(3, 5, 1.0)];
    let c = returning(RR, &pool, 1, true);
    assert_eq!(c, choice(3, Reason::Best, RR, 5.0));
}

#[test]
fn a_previous_choice_gone_from_the_pool_is_left_for_the_best() {
    let pool = [rr(2, 7, 1.0), rr(3, 5, 1.0)];
    let c = returning(RR, &pool, 1, true);
    assert_eq!((c.inbound, c.reason), (3, Reason::Best));
}

#[test]
fn all_unavailable_keeps_the_previous_choice_even_if_worse() {
    let pool = [down(ll(1, 1000.0, 0.0, 0)), down(ll(2, 100.0, 80.0, 9))];
    let c = returning(LL, &pool, 2, true);
    // Judged without the user: 20 / (8 + 1).
    assert_eq!(c, choice(2, Reason::LeastBad, LL, 20.0 / 9.0));
}

#[test]
fn all_unavailable_without_a_previous_choice_gives_the_best_of_all() {
    let pool = [
        down(rr(1, 4, 1.0)),
        down(rr(2, 6, 2.0)),
        down(rr(3, 9, 3.0)),
    ];
    let c = new_user(RR, &pool);
    assert_eq!(c, choice(2, Reason::LeastBad, RR, 3.0));
    // A previous choice no longer in the pool is the same as none.
    let c = returning(RR, &pool, 99, true);
    assert_eq!((c.inbound, c.reason), (2, Reason::LeastBad));
}

#[test]
fn least_loaded_keeps_until_beaten_by_more_than_25_percent() {
    let kept = ll(1, 100.0, 0.0, 0);
    // Exactly 25 % better (125 = 100 × 1.25) is not more: kept.
    let c = returning(LL, &[kept.clone(), ll(2, 125.0, 0.0, 0)], 1, false);
    assert_eq!(c, choice(1, Reason::Kept, LL, 100.0));
    let c = returning(LL, &[kept.clone(), ll(2, 125.001, 0.0, 0)], 1, false);
    assert_eq!(c, choice(2, Reason::Moved, LL, 125.001));
    // The previous choice is kept when it is itself the best.
    let c = returning(LL, &[kept, ll(2, 50.0, 0.0, 0)], 1, false);
    assert_eq!((c.inbound, c.reason), (1, Reason::Kept));
}

#[test]
fn least_loaded_kept_at_zero_loses_to_any_challenger_above_zero() {
    let saturated = ll(1, 100.0, 100.0, 0);
    let c = returning(LL, &[saturated.clone(), ll(2, 1.0, 0.999, 0)], 1, false);
    assert_eq!((c.inbound, c.reason), (2, Reason::Moved));
    // Both at 0: nobody is better, kept although inbound 0 is earlier in the pool.
    let c = returning(LL, &[ll(0, 5.0, 9.0, 0), saturated], 1, false);
    assert_eq!((c.inbound, c.reason, c.metric), (1, Reason::Kept, 0.0));
}

#[test]
fn round_robin_keeps_until_beaten_by_more_than_25_percent() {
    // Kept: 10 users / coefficient 2 = 5.
    let kept = rr(1, 10, 2.0);
    // 4 × 1.25 = 5, not below 5: kept.
    let c = returning(RR, &[kept.clone(), rr(2, 4, 1.0)], 1, false);
    assert_eq!(c, choice(1, Reason::Kept, RR, 5.0));
    // 3.9 × 1.25 = 4.875 < 5: moved.
    let c = returning(RR, &[kept, rr(2, 39, 10.0)], 1, false);
    assert_eq!(c, choice(2, Reason::Moved, RR, 3.9));
}

#[test]
fn round_robin_kept_at_zero_is_never_beaten() {
    let pool = [rr(0, 0, 1.0), rr(1, 0, 1.0), rr(2, 0, 5.0)];
    let c = returning(RR, &pool, 2, false);
    assert_eq!((c.inbound, c.reason, c.metric), (2, Reason::Kept, 0.0));
    assert_eq!(reason_with(0.0, RR, &pool, 2), Reason::Kept);
}

#[test]
fn moving_picks_the_best_challenger() {
    let pool = [rr(1, 20, 1.0), rr(2, 10, 1.0), rr(3, 2, 1.0), rr(4, 8, 1.0)];
    let c = returning(RR, &pool, 1, true);
    assert_eq!(c, choice(3, Reason::Moved, RR, 2.0));
}

#[test]
fn hysteresis_is_a_setting() {
    let cases = [
        // No margin: any strict improvement moves, equality keeps.
        (0.0, [10, 9], Reason::Moved),
        (0.0, [9, 9], Reason::Kept),
        // A 100 % margin: 5 × 2 = 10 is not below 10, 4 × 2 = 8 is.
        (1.0, [10, 5], Reason::Kept),
        (1.0, [10, 4], Reason::Moved),
    ];
    for (h, [kept, challenger], reason) in cases {
        let pool = [rr(1, kept, 1.0), rr(2, challenger, 1.0)];
        assert_eq!(
            reason_with(h, RR, &pool, 1),
            reason,
            "{h}: {kept} vs {challenger}"
        );
    }
}

#[test]
fn ties_go_to_the_earlier_position_then_the_smaller_id() {
    let at = |id: i64, position: u32| Candidate {
        users: 3,
        ..Candidate::new(id, position)
    };
    // Same metric: position 1 (id 9) beats position 2 (id 1).
    let pool = [at(1, 2), at(9, 1), at(5, 3)];
    assert_eq!(new_user(RR, &pool).inbound, 9);
    // Same position too: the smaller id.
    let pool = [at(8, 1), at(9, 1), at(7, 1)];
    assert_eq!(new_user(RR, &pool).inbound, 7);
    // The same under least loaded.
    let with = |c: Candidate| Candidate {
        capacity: Some(100.0),
        ..c
    };
    let pool = [with(at(1, 2)), with(at(9, 1)), with(at(5, 1))];
    assert_eq!(new_user(LL, &pool).inbound, 5);
    // And whatever the slice order.
    let reversed: Vec<_> = pool.iter().rev().cloned().collect();
    assert_eq!(new_user(LL, &reversed).inbound, 5);
}

#[test]
fn a_counted_user_alone_on_a_server_does_not_flap_to_an_empty_one() {
    // Round-robin: alone on 1, 2 empty.
    let pool = [rr(1, 1, 1.0), rr(2, 0, 1.0)];
    let c = returning(RR, &pool, 1, true);
    assert_eq!((c.inbound, c.reason, c.metric), (1, Reason::Kept, 0.0));
    // Not counted (offline for a while): 0 × 1.25 < 1, moved.
    let c = returning(RR, &pool, 1, false);
    assert_eq!((c.inbound, c.reason, c.metric), (2, Reason::Moved, 0.0));

    // Least loaded: two equal servers, the user alone on 1.
    let pool = [ll(1, 100.0, 10.0, 1), ll(2, 100.0, 10.0, 0)];
    let c = returning(LL, &pool, 1, true);
    assert_eq!((c.inbound, c.reason, c.metric), (1, Reason::Kept, 90.0));
    // Not counted: 90 > 45 × 1.25, moved.
    let c = returning(LL, &pool, 1, false);
    assert_eq!((c.inbound, c.reason, c.metric), (2, Reason::Moved, 90.0));
}

#[test]
fn counting_saturates_at_zero_users() {
    let c = returning(RR, &[rr(1, 0, 1.0), rr(2, 0, 1.0)], 1, true);
    assert_eq!((c.inbound, c.reason, c.metric), (1, Reason::Kept, 0.0));
    let c = returning(LL, &[ll(1, 10.0, 0.0, 0)], 1, true);
    assert_eq!((c.inbound, c.reason, c.metric), (1, Reason::Kept, 10.0));
}

#[test]
fn counting_applies_only_to_the_previous_inbound() {
    // 2 has 4 users; the user was on 1 (3 users, counted → 2). 2 is not reduced.
    let pool = [rr(1, 3, 1.0), rr(2, 4, 1.0)];
    let c = returning(RR, &pool, 1, true);
    assert_eq!((c.inbound, c.metric), (1, 2.0));
    let c = new_user(RR, &pool);
    assert_eq!((c.inbound, c.metric), (1, 3.0));
}

#[test]
fn a_nan_capacity_is_no_estimate() {
    let pool = [ll(1, 1000.0, 0.0, 3), ll(2, f64::NAN, 0.0, 1)];
    let c = new_user(LL, &pool);
    assert_eq!((c.inbound, c.applied, c.metric), (2, RR, 1.0));
}

#[test]
fn odd_capacities_and_traffic_are_read_safely() {
    // Negative capacity: no room.
    let c = new_user(LL, &[ll(1, -50.0, 0.0, 0), ll(2, 10.0, 9.0, 0)]);
    assert_eq!((c.inbound, c.metric), (2, 1.0));
    // Infinite capacity: f64::MAX, the most room there is.
    let c = new_user(LL, &[ll(1, 1e12, 0.0, 0), ll(2, f64::INFINITY, 0.0, 1)]);
    assert_eq!((c.inbound, c.metric), (2, f64::MAX / 2.0));
    // Infinite traffic saturates; infinite on both sides is no room, not NaN.
    let c = new_user(
        LL,
        &[
            ll(1, 1e12, f64::INFINITY, 0),
            ll(2, f64::INFINITY, f64::INFINITY, 0),
        ],
    );
    assert_eq!((c.inbound, c.metric), (1, 0.0));
    // NaN and negative traffic are 0.
    let c = new_user(LL, &[ll(1, 100.0, f64::NAN, 0), ll(2, 50.0, -1e9, 0)]);
    assert_eq!((c.inbound, c.metric), (1, 100.0));
    let c = new_user(LL, &[ll(1, 100.0, f64::NAN, 2), ll(2, 50.0, -1e9, 0)]);
    assert_eq!((c.inbound, c.metric), (2, 50.0));
}

#[test]
fn a_bad_coefficient_is_the_smallest_weight() {
    for bad in [0.0, -0.0, -2.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        // One user on a badly weighted server weighs more than 1000 on a normal one.
        let pool = [rr(1, 1, bad), rr(2, 1000, 1.0)];
        let c = new_user(RR, &pool);
        assert_eq!((c.inbound, c.metric), (2, 1000.0), "coefficient {bad}");
        // Many users: the metric stops at f64::MAX instead of becoming infinite.
        let c = new_user(RR, &[rr(1, 1_000_000, bad)]);
        assert_eq!(c.metric, f64::MAX, "coefficient {bad}");
        // Empty, it is still 0 and ties by position.
        let pool = [rr(1, 0, bad), rr(2, 0, 1.0)];
        assert_eq!(new_user(RR, &pool).inbound, 1, "coefficient {bad}");
    }
}

#[test]
fn odd_hysteresis_values_are_read_safely() {
    // NaN and negative are 0: any strict improvement moves.
    let pool = [rr(1, 10, 1.0), rr(2, 9, 1.0)];
    for h in [f64::NAN, -0.5, f64::NEG_INFINITY] {
        assert_eq!(reason_with(h, RR, &pool, 1), Reason::Moved, "{h}");
    }
    let inf = f64::INFINITY;
    let cases = [
        // Infinite: never moves off a metric the challenger merely improves on...
        (RR, [rr(1, 10, 1.0), rr(2, 1, 1.0)], Reason::Kept),
        (
            LL,
            [ll(1, 10.0, 9.0, 0), ll(2, 1e300, 0.0, 0)],
            Reason::Kept,
        ),
        // ...but a round-robin challenger at 0 and a least-loaded kept at 0 still move.
        (RR, [rr(1, 10, 1.0), rr(2, 0, 1.0)], Reason::Moved),
        (
            LL,
            [ll(1, 10.0, 10.0, 0), ll(2, 1.0, 0.0, 0)],
            Reason::Moved,
        ),
    ];
    for (algorithm, pool, reason) in cases {
        assert_eq!(reason_with(inf, algorithm, &pool, 1), reason, "{pool:?}");
    }
}

#[test]
fn duplicate_inbound_ids_do_not_panic() {
    let pool = [
        rr(1, 5, 1.0),
        Candidate {
            users: 2,
            ..rr(1, 0, 1.0)
        },
        rr(2, 3, 1.0),
    ];
    let c = returning(RR, &pool, 1, false);
    // The previous inbound is the better of its two entries (2 users): kept.
    assert_eq!((c.inbound, c.reason, c.metric), (1, Reason::Kept, 2.0));
    let reversed: Vec<_> = pool.iter().rev().cloned().collect();
    assert_eq!(returning(RR, &reversed, 1, false), c);
}
