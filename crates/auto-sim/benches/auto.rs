//! Criterion benchmarks for the Auto engine: `cargo xtask bench` runs them and writes
//! `docs/benchmarks.md`. They live beside the simulator because they measure the engine
//! against its models of peers' policies, and a simulated day under each.
//!
//! Convention: in each criterion group the function id `reference` is what we compare
//! against (a peer's simpler policy on the same inputs), the others are ours; the report
//! gives ours / reference. Inputs are deterministic: a pinned "now" and a fixed-seed
//! LCG, so every run measures the same work.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Duration;

use criterion::BatchSize;
use criterion::{Criterion, criterion_group, criterion_main};
use switchyard_auto::history::History;
use switchyard_auto::queue;
use switchyard_auto::{
    AutoConfig, Check, Engine, Event, Measurement, Method, Output, Policy, ProbeReply, Server,
    ServerId, Subscription, Timestamp,
};
use switchyard_auto_sim as sim;

/// The pinned "now": 2025-06-15 08:53:20 UTC in Unix milliseconds, as a real client
/// would pass it.
const NOW: Timestamp = Timestamp::from_secs(1_750_000_000);
const SEED: u64 = 0x5357_4954_4348_5944; // "SWITCHYD"
const SERVERS: usize = 1000;
/// A very large subscription: nothing in the engine may be quadratic in its size.
const MANY_SERVERS: usize = 10_000;
const MEASUREMENTS: i64 = 5;

/// A 64-bit linear congruential generator (Knuth's MMIX constants): enough to spread
/// inputs, and the same numbers on every machine.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u32) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        // The high bits of an LCG are the well-mixed ones.
        (((self.0 >> 32) * u64::from(n)) >> 32) as u32
    }

    fn chance(&mut self, percent: u32) -> bool {
        self.below(100) < percent
    }
}

/// A subscription's worth of servers, each with five URL measurements one minute apart:
/// - 72 % steady: delays around a per-server base, 8 % of probes unanswered;
/// - 10 % flaky: half the probes unanswered;
/// - 8 % unscored, latest silent: at most one early answer;
/// - 6 % unscored with a speed-test result;
/// - 4 % unchecked: measured over a day ago, nothing usable now.
struct Input {
    servers: Vec<Server>,
    histories: BTreeMap<ServerId, History>,
    speeds: BTreeMap<ServerId, f64>,
}

fn input(servers: usize) -> Input {
    let mut rng = Lcg(SEED);
    let mut input = Input {
        servers: Vec::with_capacity(servers),
        histories: BTreeMap::new(),
        speeds: BTreeMap::new(),
    };
    let width = servers.to_string().len().max(4);
    for i in 0..servers {
        let server = Server::named(&format!("server-{i:0width$}", width = width));
        let kind = rng.below(100);
        let base = 20 + rng.below(380);
        // Unchecked servers were measured, but over a day ago.
        let age = if kind >= 96 {
            Duration::from_secs(25 * 3600)
        } else {
            Duration::ZERO
        };
        if (90..96).contains(&kind) {
            let mbps = f64::from(5 + rng.below(200));
            input.speeds.insert(server.id.clone(), mbps);
        }
        let history = History::from_measurements((0..MEASUREMENTS).map(|k| {
            let at = NOW - age - Duration::from_secs(60 * (MEASUREMENTS - k) as u64);
            let answered = match kind {
                0..72 => !rng.chance(8),
                72..82 => !rng.chance(50),
                // Unscored: at most the oldest probe got an answer.
                82..96 => k == 0 && rng.chance(50),
                _ => true,
            };
            if answered {
                Measurement::answered(at, Method::Url, base + rng.below(base / 2 + 1))
            } else {
                Measurement::silent(at, Method::Url)
            }
        }));
        input.histories.insert(server.id.clone(), history);
        input.servers.push(server);
    }
    input
}

/// The naive queue of a sing-box-style `urltest`: by the latest delay only, servers
/// whose latest probe got no answer (or that have none) last, ties in subscription
/// order. Same inputs and same owned output as ours, so the ratio is the score's cost.
fn urltest_rank(
    servers: &[Server],
    histories: &BTreeMap<ServerId, History>,
) -> Vec<(ServerId, Option<u32>)> {
    let mut ranked: Vec<(ServerId, Option<u32>)> = servers
        .iter()
        .map(|s| {
            let latest = histories
                .get(&s.id)
                .and_then(History::latest)
                .and_then(|m| m.ms);
            (s.id.clone(), latest)
        })
        .collect();
    // Stable: equal delays keep subscription order.
    ranked.sort_by_key(|&(_, ms)| (ms.is_none(), ms));
    ranked
}

fn rank_1000x5(c: &mut Criterion) {
    rank_group(c, "rank_1000x5", &input(SERVERS));
}

fn rank_10000x5(c: &mut Criterion) {
    rank_group(c, "rank_10000x5", &input(MANY_SERVERS));
}

fn rank_group(c: &mut Criterion, name: &str, input: &Input) {
    let mut group = c.benchmark_group(name);
    group.bench_function("reference", |b| {
        b.iter(|| urltest_rank(black_box(&input.servers), black_box(&input.histories)));
    });
    group.bench_function("score", |b| {
        b.iter(|| {
            queue::rank(
                black_box(&input.servers),
                black_box(&input.histories),
                black_box(&input.speeds),
                black_box(NOW),
            )
        });
    });
    group.finish();
}

/// An engine at [`NOW`] with Auto on in `Main` (the input's servers, their histories and
/// speed results), `Backup` below it.
fn auto_on_in(input: &Input) -> Engine {
    let mut e = Engine::new(AutoConfig::default());
    let main = Subscription {
        name: "Main".into(),
        servers: input.servers.clone(),
    };
    let backup = Subscription::of_names("Backup", &["b1", "b2"]);
    e.handle_event(NOW, Event::Subscriptions(vec![main, backup]))
        .unwrap();
    for (id, h) in &input.histories {
        for m in h.iter() {
            let measurement = *m;
            let server = id.clone();
            e.handle_event(
                NOW,
                Event::Measured {
                    server,
                    measurement,
                },
            )
            .unwrap();
        }
    }
    for (id, mbps) in &input.speeds {
        let (server, mbps) = (id.clone(), *mbps);
        e.handle_event(NOW, Event::SpeedTest { server, mbps })
            .unwrap();
    }
    let on = Event::AutoOn {
        subscription: "Main".into(),
    };
    e.handle_event(NOW, on).unwrap();
    while e.poll_output().is_some() {}
    e
}

/// An update of a 10,000-server subscription that drops the current server and every
/// tenth other one: the engine validates it, re-indexes, notes 1,000 servers absent and
/// moves to the best remaining server. The first fifth of the list is marked (a user
/// who marked a whole country), so finding the best server Auto may use skips marked
/// ones and asks whether every server is marked. The reference is the sing-box
/// `urltest` model taking the same update (a reload: every member tested at once).
fn update_10000(c: &mut Criterion) {
    let input = input(MANY_SERVERS);
    let mut engine = auto_on_in(&input);
    let current = engine.current().cloned().unwrap();
    let marks: Vec<ServerId> = input
        .servers
        .iter()
        .map(|s| s.id.clone())
        .filter(|id| *id != current)
        .take(MANY_SERVERS / 5)
        .collect();
    engine.handle_event(NOW, Event::Mark(marks)).unwrap();
    let kept: Vec<Server> = input
        .servers
        .iter()
        .enumerate()
        .filter(|(i, s)| s.id != current && i % 10 != 3)
        .map(|(_, s)| s.clone())
        .collect();
    let update = Event::SubscriptionUpdated(Subscription {
        name: "Main".into(),
        servers: kept,
    });
    let at = NOW + Duration::from_secs(60);
    // The model is not `Clone`; building it is setup, so not timed.
    let reference = || {
        let mut p = sim::policies::UrlTest::new();
        let main = Subscription {
            name: "Main".into(),
            servers: input.servers.clone(),
        };
        p.handle_event(NOW, Event::Subscriptions(vec![main]))
            .unwrap();
        let on = Event::AutoOn {
            subscription: "Main".into(),
        };
        p.handle_event(NOW, on).unwrap();
        while p.poll_output().is_some() {}
        p
    };
    let mut group = c.benchmark_group("update_10000");
    group.sample_size(20);
    group.bench_function("reference", |b| {
        b.iter_batched(
            || (reference(), update.clone()),
            |(mut p, update)| {
                p.handle_event(at, update).unwrap();
                let n = core::iter::from_fn(|| p.poll_output()).count();
                (p, n)
            },
            BatchSize::LargeInput,
        );
    });
    group.bench_function("update", |b| {
        b.iter_batched(
            || (engine.clone(), update.clone()),
            |(mut e, update)| {
                e.handle_event(at, update).unwrap();
                let n = core::iter::from_fn(|| e.poll_output()).count();
                // Returned, so dropping the engine's memory is not timed.
                (e, n)
            },
            BatchSize::LargeInput,
        );
    });
    group.finish();
}

/// An engine whose subscription (the 1,000 servers above) was found down with the
/// neighbours answering, now waiting for the replies of its wide check: the current
/// server and 29 others of its subscription, plus 2 neighbours.
fn wide_check_pending(input: &Input) -> (Engine, Check) {
    fn probe(e: &mut Engine) -> Check {
        let mut check = None;
        while let Some(o) = e.poll_output() {
            if let Output::Probe(c) = o {
                check = Some(c);
            }
        }
        check.expect("the engine asked for a check")
    }
    fn reply(e: &mut Engine, at: Timestamp, check: &Check, answer: impl Fn(&ServerId) -> bool) {
        let replies = check
            .servers
            .iter()
            .map(|id| {
                (
                    id.clone(),
                    if answer(id) {
                        ProbeReply::after(80)
                    } else {
                        ProbeReply::NoAnswer
                    },
                )
            })
            .collect();
        e.handle_event(
            at,
            Event::ProbeResults {
                check: check.id,
                replies,
            },
        )
        .unwrap();
    }
    let mut e = auto_on_in(input);
    let mut t = NOW;
    let current = e.current().cloned().unwrap();
    t = t + Duration::from_secs(10);
    e.handle_event(
        t,
        Event::ConnectFailed {
            server: current.clone(),
        },
    )
    .unwrap();
    let own = probe(&mut e);
    reply(&mut e, t, &own, |_| false);
    let neighbours = probe(&mut e);
    reply(&mut e, t, &neighbours, |_| true);
    t = t + Duration::from_secs(20);
    e.handle_event(
        t,
        Event::ConnectFailed {
            server: current.clone(),
        },
    )
    .unwrap();
    let wide = probe(&mut e);
    assert_eq!(wide.servers.len(), 32);
    (e, wide)
}

fn check_30(c: &mut Criterion) {
    let input = input(SERVERS);
    let (engine, wide) = wide_check_pending(&input);
    let current = engine.current().cloned().unwrap();
    // Everyone answers but the current server, with spread-out delays.
    let mut rng = Lcg(SEED ^ 30);
    let replies: Vec<(ServerId, ProbeReply)> = wide
        .servers
        .iter()
        .map(|id| {
            let reply = if *id == current {
                ProbeReply::NoAnswer
            } else {
                ProbeReply::after(20 + rng.below(400))
            };
            (id.clone(), reply)
        })
        .collect();
    let at = NOW + Duration::from_secs(35);
    let mut group = c.benchmark_group("check_30");
    // The reference is a urltest-style decision on the same replies: the fastest answer.
    group.bench_function("reference", |b| {
        b.iter(|| {
            black_box(&replies)
                .iter()
                .filter_map(|(id, r)| match r {
                    ProbeReply::Answered { total_ms, .. } => Some((*total_ms, id)),
                    ProbeReply::NoAnswer => None,
                })
                .min()
                .map(|(_, id)| id.clone())
        });
    });
    group.bench_function("decide", |b| {
        b.iter_batched(
            || (engine.clone(), replies.clone()),
            |(mut e, replies)| {
                e.handle_event(
                    at,
                    Event::ProbeResults {
                        check: wide.id,
                        replies,
                    },
                )
                .unwrap();
                let mut last = None;
                while let Some(o) = e.poll_output() {
                    last = Some(o);
                }
                // Returned, so dropping the engine's memory is not timed.
                (e, last)
            },
            BatchSize::SmallInput,
        );
    });
    group.finish();
}

/// A day with 100 servers in three subscriptions (Auto in the middle one of 60): every
/// server goes down now and then (blackholed or refusing), the network drops a few
/// times, and the user is active most of the day with idle gaps.
fn day_with_100_servers() -> sim::Plan {
    let mut rng = Lcg(SEED ^ 24);
    let names = |prefix: &str, n: usize| -> Vec<String> {
        (0..n).map(|i| format!("{prefix}{i:02}")).collect()
    };
    let subs = [
        ("Above", names("a", 20)),
        ("Main", names("m", 60)),
        ("Below", names("b", 20)),
    ];
    let mut world = vec![serde_json::json!({"server": "*", "ms": 150})];
    for (_, servers) in &subs {
        for name in servers {
            world.push(serde_json::json!({"server": name, "ms": 20 + rng.below(300)}));
            for _ in 0..20 {
                let from = rng.below(86_000);
                let how = if rng.chance(30) {
                    "refuse"
                } else {
                    "blackhole"
                };
                world.push(serde_json::json!({
                    "server": name, "from": from, "to": from + 30 + rng.below(1800),
                    "down": true, "how": how
                }));
            }
        }
    }
    for _ in 0..6 {
        let from = rng.below(86_000);
        world.push(
            serde_json::json!({"network": "down", "from": from, "to": from + 60 + rng.below(300)}),
        );
    }
    let traffic: Vec<_> = (0..24)
        .map(|h| serde_json::json!({"from": h * 3600, "to": h * 3600 + 3000}))
        .collect();
    let scenario = serde_json::json!({
        "until": 86_400,
        "subscriptions": subs.iter().map(|(n, s)| serde_json::json!({"name": n, "servers": s})).collect::<Vec<_>>(),
        "auto": "Main",
        "world": world,
        "traffic": traffic,
    });
    sim::Plan::from_json(&scenario.to_string()).expect("the generated scenario is valid")
}

fn simulate_24h_100(c: &mut Criterion) {
    let plan = day_with_100_servers();
    let mut group = c.benchmark_group("simulate_24h_100");
    group.sample_size(10);
    // The reference replays the same day with the sing-box urltest model.
    for (id, policy) in [
        ("reference", "urltest"),
        ("auto", "auto"),
        ("fallback", "fallback"),
    ] {
        group.bench_function(id, |b| {
            b.iter(|| {
                let mut p = sim::make_policy(policy, &plan).unwrap();
                sim::run(black_box(&plan), p.as_mut()).summary
            });
        });
    }
    group.finish();
}

// Short runs keep `cargo xtask bench` within a couple of minutes on a 2-core machine;
// criterion's command-line options (e.g. `--measurement-time 10`) still override these.
fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
}

criterion_group! {
    name = benches;
    config = config();
    targets = rank_1000x5, rank_10000x5, check_30, update_10000, simulate_24h_100
}
criterion_main!(benches);
