//! Invariants of the balancer over random pools and long simulated arrivals.

use proptest::prelude::*;
use switchyard_balance::capacity::{Capacity, EstimatorSettings};
use switchyard_balance::{Algorithm, Candidate, Choice, Previous, Reason, Settings, choose};

/// Users arrive one by one as newcomers: each gets `choose`'s inbound, whose users grow
/// by one and traffic by `per_user` bytes/s. Returns each pool entry's arrivals.
fn arrive(
    algorithm: Algorithm,
    pool: &mut [Candidate],
    arrivals: usize,
    per_user: f64,
) -> Vec<usize> {
    let mut got = vec![0; pool.len()];
    for _ in 0..arrivals {
        let c = choose(algorithm, pool, None, &Settings::default()).unwrap();
        let i = pool.iter().position(|p| p.inbound == c.inbound).unwrap();
        pool[i].users += 1;
        pool[i].traffic += per_user;
        got[i] += 1;
    }
    got
}

fn algorithm() -> impl Strategy<Value = Algorithm> {
    prop_oneof![Just(Algorithm::LeastLoaded), Just(Algorithm::RoundRobin)]
}

/// Any f64, odd ones included, often.
fn any_number() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => 0.0..1e9,
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(f64::NEG_INFINITY),
        1 => Just(0.0),
        1 => -1e9..0.0,
        1 => any::<f64>(),
    ]
}

/// A pool of 1–12 inbounds with distinct ids, arbitrary positions (repeats allowed)
/// and arbitrary measurements, odd numbers included.
fn pool() -> impl Strategy<Value = Vec<Candidate>> {
    let candidate = (
        0u32..6,
        any::<bool>(),
        prop::option::weighted(0.8, any_number()),
        any_number(),
        0u64..50,
        prop_oneof![4 => 0.5..4.0, 1 => any_number()],
    );
    prop::collection::vec(candidate, 1..12).prop_map(|raw| {
        raw.into_iter()
            .enumerate()
            .map(
                |(i, (position, available, capacity, traffic, users, coefficient))| Candidate {
                    inbound: 100 + i as i64,
                    position,
                    available,
                    capacity,
                    traffic,
                    users,
                    coefficient,
                },
            )
            .collect()
    })
}

fn previous() -> impl Strategy<Value = Option<Previous>> {
    prop::option::of(
        (95i64..115, any::<bool>()).prop_map(|(inbound, counted)| Previous { inbound, counted }),
    )
}

/// A sane pool for least loaded: 2–6 available inbounds with estimates and room.
fn estimated_pool() -> impl Strategy<Value = Vec<Candidate>> {
    let candidate = (1e6..1e9, 0.0..1.0, 0u64..40);
    prop::collection::vec(candidate, 2..6).prop_map(|raw| {
        raw.into_iter()
            .enumerate()
            .map(
                |(i, (capacity, load, users)): (usize, (f64, f64, u64))| Candidate {
                    capacity: Some(capacity),
                    traffic: capacity * load * 0.9,
                    users,
                    ..Candidate::new(i as i64 + 1, i as u32)
                },
            )
            .collect()
    })
}

proptest! {
    #[test]
    fn round_robin_respects_coefficients(
        heavy_users in 0u64..10,
        light_users in 0u64..10,
        arrivals in 300usize..1000,
        per_user in 0.0..1e6,
        fallback in any::<bool>(),
    ) {
        // Asked for round-robin, or least loaded falling back (the light one has no
        // estimate).
        let heavy = Candidate { coefficient: 2.0, users: heavy_users, capacity: Some(1e9), ..Candidate::new(1, 1) };
        let light = Candidate { coefficient: 1.0, users: light_users, ..Candidate::new(2, 0) };
        let algorithm = if fallback { Algorithm::LeastLoaded } else { Algorithm::RoundRobin };
        let mut pool = [heavy, light];
        arrive(algorithm, &mut pool, arrivals, per_user);
        let ratio = pool[0].users as f64 / pool[1].users as f64;
        prop_assert!((ratio - 2.0).abs() <= 0.2, "{} vs {}", pool[0].users, pool[1].users);
    }

    #[test]
    fn a_saturated_server_gets_nobody_while_another_has_room(
        saturated_capacity in 1e6..1e9,
        overload in 1.0..3.0,
        saturated_users in 0u64..3,
        roomy_users in 0u64..200,
        roomy_load in 0.0..0.99,
        per_user in 0.0..1e5,
        arrivals in 50usize..400,
    ) {
        let saturated = Candidate {
            capacity: Some(saturated_capacity),
            traffic: saturated_capacity * overload,
            users: saturated_users,
            ..Candidate::new(1, 0)
        };
        // Room for every arrival's traffic and then some.
        let roomy_capacity = 1e9 + per_user * (arrivals as f64 + 1.0);
        let roomy = Candidate {
            capacity: Some(roomy_capacity),
            traffic: 1e9 * roomy_load,
            users: roomy_users,
            ..Candidate::new(2, 1)
        };
        let mut pool = [saturated, roomy];
        let got = arrive(Algorithm::LeastLoaded, &mut pool, arrivals, per_user);
        prop_assert_eq!(got, vec![0, arrivals]);
    }

    #[test]
    fn a_sticky_user_keeps_its_inbound_while_conditions_are_similar(
        mut pool in estimated_pool(),
        algorithm in algorithm(),
        rounds in prop::collection::vec(prop::collection::vec(0.9f64..1.1, 6), 1..20),
    ) {
        // The user arrives and is counted on its inbound.
        let first = choose(algorithm, &pool, None, &Settings::default()).unwrap();
        let mine = pool.iter().position(|c| c.inbound == first.inbound).unwrap();
        pool[mine].users += 1;
        let previous = Some(Previous { inbound: first.inbound, counted: true });
        // Each round, every other server's metric moves by at most ±10 %: capacity and
        // traffic (free bandwidth) scaled together, users scaled and rounded.
        for factors in rounds {
            let now: Vec<Candidate> = pool
                .iter()
                .zip(&factors)
                .enumerate()
                .map(|(i, (c, &f))| {
                    if i == mine {
                        return c.clone();
                    }
                    Candidate {
                        capacity: c.capacity.map(|x| x * f),
                        traffic: c.traffic * f,
                        users: (c.users as f64 * f).round() as u64,
                        ..c.clone()
                    }
                })
                .collect();
            let again = choose(algorithm, &now, previous, &Settings::default()).unwrap();
            prop_assert_eq!((again.inbound, again.reason), (first.inbound, Reason::Kept));
        }
    }

    #[test]
    fn an_unavailable_inbound_is_never_chosen_while_another_is_available(
        mut pool in pool(),
        algorithm in algorithm(),
        previous in previous(),
        arrivals in 0usize..50,
    ) {
        let available = pool.iter().any(|c| c.available);
        let c = choose(algorithm, &pool, previous, &Settings::default()).unwrap();
        let chosen = pool.iter().find(|p| p.inbound == c.inbound).unwrap();
        if available {
            prop_assert!(chosen.available);
            prop_assert_ne!(c.reason, Reason::LeastBad);
        } else {
            prop_assert_eq!(c.reason, Reason::LeastBad);
        }
        // Over a run of arrivals too.
        let got = arrive(algorithm, &mut pool, arrivals, 1e3);
        for (c, n) in pool.iter().zip(got) {
            if available && !c.available {
                prop_assert_eq!(n, 0);
            }
        }
    }

    #[test]
    fn decisions_are_deterministic_and_ignore_the_slice_order(
        (pool, shuffled) in pool().prop_flat_map(|p| (Just(p.clone()), Just(p).prop_shuffle())),
        algorithm in algorithm(),
        previous in previous(),
        hysteresis in any_number(),
    ) {
        let s = Settings { hysteresis };
        let a = choose(algorithm, &pool, previous, &s).unwrap();
        prop_assert_eq!(choose(algorithm, &pool, previous, &s).unwrap(), a);
        prop_assert_eq!(choose(algorithm, &shuffled, previous, &s).unwrap(), a);
    }

    #[test]
    fn odd_inputs_never_give_a_nan_or_a_stranger(
        pool in pool(),
        algorithm in algorithm(),
        previous in previous(),
        hysteresis in any_number(),
    ) {
        let c: Choice = choose(algorithm, &pool, previous, &Settings { hysteresis }).unwrap();
        prop_assert!(c.metric.is_finite() && c.metric >= 0.0, "{:?}", c);
        prop_assert!(pool.iter().any(|p| p.inbound == c.inbound));
        if algorithm == Algorithm::RoundRobin {
            prop_assert_eq!(c.applied, Algorithm::RoundRobin);
        }
    }

    #[test]
    fn the_estimate_stays_between_the_samples_and_warm_up_never_outgrows_time(
        steps in prop::collection::vec((-20_000i64..60_000, any_number()), 1..200),
    ) {
        let s = EstimatorSettings::default();
        let mut c = Capacity::default();
        let (mut now, mut low, mut high) = (0i64, f64::INFINITY, 0.0f64);
        let mut forward = 0i64;
        for (step, sample) in steps {
            now += step;
            let before = c;
            c.observe(now, sample, &s);
            if sample.is_finite() && sample >= 0.0 {
                low = low.min(sample);
                high = high.max(sample);
                if let Some(last) = before.last_ms {
                    forward += (now - last).max(0);
                }
            }
            prop_assert!(c.above_floor_ms >= before.above_floor_ms);
            prop_assert!(c.above_floor_ms <= forward);
            if c.last_ms.is_some() {
                prop_assert!(c.peak >= low && c.peak <= high, "{} not in [{low}, {high}]", c.peak);
            }
        }
    }
}
