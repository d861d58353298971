//! Criterion benchmarks for the balancer: `cargo bench -p switchyard-balance`.
//!
//! Convention (as in `crates/auto-sim/benches/auto.rs`): in each criterion group the
//! function id `reference` is the floor we compare against, the others are ours; the
//! report gives ours / reference. Inputs are deterministic (fixed spreads, pinned
//! times), so every run measures the same work.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use switchyard_balance::capacity::{Capacity, EstimatorSettings};
use switchyard_balance::{Algorithm, Candidate, Previous, Settings, choose};

const POOL: usize = 50;
const SAMPLES: usize = 1000;
/// The pinned start of the samples: 2025-06-15 08:53:20 UTC in Unix milliseconds.
const START_MS: i64 = 1_750_000_000_000;

/// A fixed spread of `i` over `0..n`: multiplying by a large prime scatters
/// neighbouring indices, the same on every machine, with no generator to seed.
fn spread(i: usize, prime: u64, n: u64) -> u64 {
    (i as u64).wrapping_mul(prime) % n
}

/// A 50-inbound route: capacities from 10 Mbit/s to 10 Gbit/s, 0–95 % loaded, 0–199
/// users, coefficients 1.0–3.0, every tenth server unavailable; all estimated, so least
/// loaded applies.
fn pool() -> Vec<Candidate> {
    (0..POOL)
        .map(|i| {
            let capacity = (10 + spread(i, 7_919, 10_000)) as f64 * 125_000.0;
            Candidate {
                inbound: 1000 + i as i64,
                position: i as u32,
                available: i % 10 != 7,
                capacity: Some(capacity),
                traffic: capacity * spread(i, 104_729, 96) as f64 / 100.0,
                users: spread(i, 1_299_709, 200),
                coefficient: 1.0 + spread(i, 15_485_863, 3) as f64,
            }
        })
        .collect()
}

/// What any balancer pays at least: one pass over the pool for the fewest users per
/// weight, with no availability, fallback, stickiness or tie rules.
fn reference(pool: &[Candidate]) -> Option<i64> {
    pool.iter()
        .min_by(|a, b| {
            (a.users as f64 / a.coefficient).total_cmp(&(b.users as f64 / b.coefficient))
        })
        .map(|c| c.inbound)
}

fn choose_50(c: &mut Criterion) {
    let pool = pool();
    // A returning user, counted on an inbound in the middle of the pool.
    let previous = Some(Previous {
        inbound: 1024,
        counted: true,
    });
    let settings = Settings::default();
    let mut group = c.benchmark_group("balance/choose_50");
    group.bench_function("reference", |b| b.iter(|| reference(black_box(&pool))));
    for (id, algorithm) in [
        ("least_loaded", Algorithm::LeastLoaded),
        ("round_robin", Algorithm::RoundRobin),
    ] {
        group.bench_function(id, |b| {
            b.iter(|| choose(algorithm, black_box(&pool), previous, &settings));
        });
    }
    group.finish();
}

/// 1000 throughput samples one second apart: bursts well above the floor mixed with
/// quieter seconds, so both the raise and the decay run.
fn samples() -> Vec<(i64, f64)> {
    (0..SAMPLES)
        .map(|i| {
            let at = START_MS + i as i64 * 1000;
            (at, spread(i, 32_452_843, 1_000_000) as f64 * 100.0)
        })
        .collect()
}

fn capacity_observe(c: &mut Criterion) {
    let samples = samples();
    let settings = EstimatorSettings::default();
    let mut group = c.benchmark_group("balance/capacity_observe");
    // The floor: keeping a plain running maximum of the same samples.
    group.bench_function("reference", |b| {
        b.iter(|| {
            black_box(&samples)
                .iter()
                .fold(0.0_f64, |peak, &(_, sample)| peak.max(sample))
        });
    });
    group.bench_function("observe", |b| {
        b.iter(|| {
            let mut capacity = Capacity::default();
            for &(at, sample) in black_box(&samples) {
                capacity.observe(at, sample, &settings);
            }
            capacity
        });
    });
    group.finish();
}

// Short runs: the machine is shared; criterion's command-line options (e.g.
// `--measurement-time 10`) still override these.
fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
}

criterion_group! {
    name = benches;
    config = config();
    targets = choose_50, capacity_observe
}
criterion_main!(benches);
