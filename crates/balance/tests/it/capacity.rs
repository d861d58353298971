//! The capacity estimator with exact numbers (`docs/routes.md`,
//! "Clarifications": peaks, half-life decay, the floor and warm-up).

use switchyard_balance::capacity::{Capacity, EstimatorSettings};

const HOUR: i64 = 3_600_000;
const DAY: i64 = 24 * HOUR;

fn s() -> EstimatorSettings {
    EstimatorSettings::default()
}

/// A warmed-up estimate of `peak` whose last observation was at `at`.
fn warm(peak: f64, at: i64) -> Capacity {
    Capacity {
        peak,
        above_floor_ms: 60_000,
        last_ms: Some(at),
    }
}

#[test]
fn defaults() {
    let d = s();
    assert_eq!(d.half_life_ms, 86_400_000);
    assert_eq!(d.floor, 125_000.0);
    assert_eq!(d.warmup_ms, 60_000);
    assert_eq!(d.max_step_ms, 10_000);
    assert_eq!(
        Capacity::default(),
        Capacity {
            peak: 0.0,
            above_floor_ms: 0,
            last_ms: None
        }
    );
    assert_eq!(Capacity::default().estimate(&d), None);
}

#[test]
fn the_first_observation_sets_the_peak_and_credits_no_time() {
    let mut c = Capacity::default();
    c.observe(1_000, 5e6, &s());
    assert_eq!(
        c,
        Capacity {
            peak: 5e6,
            above_floor_ms: 0,
            last_ms: Some(1_000)
        }
    );
    assert_eq!(c.estimate(&s()), None);
}

#[test]
fn a_sample_above_the_estimate_raises_it_at_once() {
    let mut c = warm(1e6, 0);
    c.observe(DAY, 7e6, &s());
    assert_eq!(c.peak, 7e6);
    c.observe(DAY, 8e6, &s());
    assert_eq!(c.estimate(&s()), Some(8e6));
}

#[test]
fn after_one_half_life_the_estimate_is_halfway_to_the_sample() {
    let mut c = warm(1000.0, 0);
    c.observe(DAY, 0.0, &s());
    assert_eq!(c.peak, 500.0);
    let mut c = warm(1000.0, 0);
    c.observe(DAY, 200.0, &s());
    assert_eq!(c.peak, 600.0);
    // Two half-lives: a quarter of the excess left.
    let mut c = warm(1000.0, 0);
    c.observe(2 * DAY, 200.0, &s());
    assert_eq!(c.peak, 400.0);
    // A sample equal to the estimate changes nothing.
    let mut c = warm(1000.0, 0);
    c.observe(DAY, 1000.0, &s());
    assert_eq!(c.peak, 1000.0);
}

#[test]
fn decay_over_many_steps_equals_decay_over_the_whole_gap() {
    let mut c = warm(1000.0, 0);
    for h in 1..=24 {
        c.observe(h * HOUR, 0.0, &s());
    }
    assert!((c.peak - 500.0).abs() < 1e-9, "{}", c.peak);
    // A panel down for three days decays over all of them.
    let mut c = warm(800.0, 0);
    c.observe(3 * DAY, 0.0, &s());
    assert_eq!(c.peak, 100.0);
}

#[test]
fn no_time_no_decay() {
    let mut c = warm(1000.0, 5_000);
    c.observe(5_000, 10.0, &s());
    assert_eq!(c.peak, 1000.0);
}

#[test]
fn the_estimate_appears_once_the_warm_up_is_done() {
    let mut c = Capacity::default();
    // At the floor exactly counts; every 10 s from t = 0.
    c.observe(0, 125_000.0, &s());
    for k in 1..=5 {
        c.observe(k * 10_000, 125_000.0, &s());
    }
    assert_eq!(c.above_floor_ms, 50_000);
    assert_eq!(c.estimate(&s()), None);
    c.observe(60_000, 125_000.0, &s());
    assert_eq!(c.above_floor_ms, 60_000);
    assert_eq!(c.estimate(&s()), Some(125_000.0));
}

#[test]
fn samples_below_the_floor_credit_nothing_and_take_nothing_away() {
    let mut c = Capacity {
        peak: 0.0,
        above_floor_ms: 30_000,
        last_ms: Some(0),
    };
    for k in 1..=10 {
        c.observe(k * 10_000, 124_999.0, &s());
    }
    assert_eq!(c.above_floor_ms, 30_000);
    assert_eq!(c.peak, 124_999.0);
    assert_eq!(c.estimate(&s()), None);
}

#[test]
fn a_long_gap_credits_at_most_one_step() {
    let mut c = Capacity::default();
    c.observe(0, 1e6, &s());
    c.observe(HOUR, 1e6, &s());
    assert_eq!(c.above_floor_ms, 10_000);
    // A short step credits what it is.
    c.observe(HOUR + 3_000, 1e6, &s());
    assert_eq!(c.above_floor_ms, 13_000);
}

#[test]
fn time_going_backwards_moves_the_clock_back_and_nothing_else() {
    let mut c = Capacity {
        peak: 1e6,
        above_floor_ms: 20_000,
        last_ms: Some(100_000),
    };
    c.observe(50_000, 9e6, &s());
    assert_eq!(
        c,
        Capacity {
            peak: 1e6,
            above_floor_ms: 20_000,
            last_ms: Some(50_000)
        }
    );
    // The next observation counts from the new clock.
    c.observe(55_000, 9e6, &s());
    assert_eq!(
        c,
        Capacity {
            peak: 9e6,
            above_floor_ms: 25_000,
            last_ms: Some(55_000)
        }
    );
}

#[test]
fn odd_samples_are_ignored() {
    let before = warm(1e6, 0);
    for odd in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -1.0] {
        let mut c = before;
        c.observe(10_000, odd, &s());
        assert_eq!(c, before, "{odd}");
    }
}

#[test]
fn a_zero_half_life_forgets_at_the_first_lower_sample() {
    let settings = EstimatorSettings {
        half_life_ms: 0,
        ..s()
    };
    let mut c = warm(1e6, 0);
    c.observe(0, 10.0, &settings);
    assert_eq!(c.peak, 1e6);
    c.observe(1, 10.0, &settings);
    assert_eq!(c.peak, 10.0);
}

#[test]
fn a_corrupt_stored_peak_is_no_estimate_and_read_as_zero() {
    let mut c = Capacity {
        peak: f64::NAN,
        ..warm(0.0, 0)
    };
    assert_eq!(c.estimate(&s()), None);
    c.observe(1_000, 3e5, &s());
    assert_eq!(c.peak, 3e5);
    let c = Capacity {
        peak: -5.0,
        ..warm(0.0, 0)
    };
    assert_eq!(c.estimate(&s()), None);
}

#[test]
fn extreme_times_do_not_overflow() {
    let mut c = Capacity {
        peak: 1e6,
        above_floor_ms: i64::MAX - 1,
        last_ms: Some(i64::MIN),
    };
    c.observe(i64::MAX, 2e6, &s());
    assert_eq!(
        c,
        Capacity {
            peak: 2e6,
            above_floor_ms: i64::MAX,
            last_ms: Some(i64::MAX)
        }
    );
    c.observe(i64::MIN, 1e6, &s());
    assert_eq!(c.last_ms, Some(i64::MIN));
}
