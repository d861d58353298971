//! What a password guess costs, and who may make one.
//!
//! - [`LoginLimiter`]: failed logins are counted per client address and per login
//!   name, as token buckets. An attempt takes its slot *before* the password is
//!   hashed (and gets it back if the password was right), so a hundred attempts at
//!   once cannot all slip past a limit that is only updated once they are done.
//! - A name's bucket holds back only the addresses that failed that name: a guesser
//!   spread over many addresses soon gets one try per address instead of a burst
//!   each, and the real admin, from an address that has not failed, still logs in.
//! - [`PasswordChecks`]: argon2 needs about 19 MiB for each check, so at most
//!   `auth.max_password_checks` run at once; a check waits its turn at most
//!   `auth.password_check_wait_s` (and only so many wait), else the login answers 503
//!   with `Retry-After`. Memory for logins is bounded whatever arrives.
//!
//! Time is passed in (`now_ms`), so the limiter is tested without a clock.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use axum::http::StatusCode;
use tokio::sync::Semaphore;

use super::problem::ApiError;

/// Addresses (and, separately, names) tracked at most; past it full buckets are
/// forgotten first, then the longest idle.
const MAX_TRACKED: usize = 10_000;

/// Addresses remembered per name as having failed it; the oldest is forgotten first.
const MAX_FAILED_FROM: usize = 32;

/// Checks that may wait for a turn at once; more are answered 503 at once.
const MAX_WAITING: usize = 64;

/// Bytes of a login name used as its bucket's key (names are at most 64 characters;
/// a longer one is not a name, but still costs its sender).
const NAME_KEY_BYTES: usize = 256;

/// Why an attempt may not be made now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Held {
    /// This address failed too often; seconds to wait.
    Address(u64),
    /// This name failed too often, and this address is among those that failed it.
    Name(u64),
}

impl From<Held> for ApiError {
    fn from(h: Held) -> Self {
        match h {
            Held::Address(s) => Self::too_many(s),
            Held::Name(s) => Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                format!(
                    "too many failed logins for this name from this address; try again in {s} s"
                ),
            )
            .retry_after(s),
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Bucket {
    /// Milliseconds of credit at `at`.
    credit: i64,
    at: i64,
}

#[derive(Debug)]
struct NameBucket {
    bucket: Bucket,
    failed_from: VecDeque<IpAddr>,
}

#[derive(Debug, Default)]
struct Buckets {
    addresses: HashMap<IpAddr, Bucket>,
    names: HashMap<String, NameBucket>,
}

/// Failed logins per client address and per login name: token buckets in milliseconds
/// of credit; an attempt costs `refill` ms, credit grows with time up to
/// `burst × refill`.
#[derive(Debug)]
pub struct LoginLimiter {
    refill_ms: i64,
    cap_ms: i64,
    buckets: Mutex<Buckets>,
}

/// The bucket key of an address: IPv6 clients by their /64 (one host usually has a
/// whole /64 to pick addresses from), IPv4 by the address.
fn address_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => IpAddr::V6((u128::from(v6) & !u128::from(u64::MAX)).into()),
        v4 => v4,
    }
}

fn name_key(name: &str) -> String {
    let mut end = name.len().min(NAME_KEY_BYTES);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end].to_owned()
}

/// Room for one more entry in `map`: drops full buckets, then the longest idle.
fn make_room<K: Clone + Eq + std::hash::Hash, V>(
    map: &mut HashMap<K, V>,
    bucket: impl Fn(&V) -> Bucket,
    full: impl Fn(Bucket) -> bool,
) {
    if map.len() < MAX_TRACKED {
        return;
    }
    map.retain(|_, v| !full(bucket(v)));
    if map.len() >= MAX_TRACKED
        && let Some(oldest) = map
            .iter()
            .min_by_key(|(_, v)| bucket(v).at)
            .map(|(k, _)| k.clone())
    {
        map.remove(&oldest);
    }
}

impl LoginLimiter {
    /// `burst` failures, then one per `refill_s` seconds (per address, and per name for
    /// the addresses that failed it).
    pub fn new(burst: u32, refill_s: u64) -> Self {
        let refill_ms = i64::try_from(refill_s.saturating_mul(1000)).unwrap_or(i64::MAX / 4);
        Self {
            refill_ms,
            cap_ms: refill_ms.saturating_mul(i64::from(burst.max(1))),
            buckets: Mutex::new(Buckets::default()),
        }
    }

    fn credit(&self, b: Option<Bucket>, now_ms: i64) -> i64 {
        b.map_or(self.cap_ms, |b| {
            b.credit
                .saturating_add(now_ms.saturating_sub(b.at).max(0))
                .min(self.cap_ms)
        })
    }

    fn wait_s(&self, credit: i64) -> u64 {
        let short = self.refill_ms.saturating_sub(credit).max(0);
        u64::try_from(short.saturating_add(999) / 1000).unwrap_or(0)
    }

    /// Takes an attempt's slot for `name` from `ip`, before its password is checked;
    /// the attempt counts as failed unless [`Slot::succeeded`] or [`Slot::unchecked`]
    /// gives it back.
    pub fn begin(&self, ip: IpAddr, name: &str, now_ms: i64) -> Result<Slot<'_>, Held> {
        let key = address_key(ip);
        let name = name_key(name);
        let mut b = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let address_credit = self.credit(b.addresses.get(&key).copied(), now_ms);
        if address_credit < self.refill_ms {
            return Err(Held::Address(self.wait_s(address_credit)));
        }
        let named = b.names.get(&name);
        let name_credit = self.credit(named.map(|n| n.bucket), now_ms);
        if name_credit < self.refill_ms && named.is_some_and(|n| n.failed_from.contains(&key)) {
            return Err(Held::Name(self.wait_s(name_credit)));
        }
        let cap = self.cap_ms;
        let full = |x: Bucket| self.credit(Some(x), now_ms) >= cap;
        if !b.addresses.contains_key(&key) {
            make_room(&mut b.addresses, |x| *x, full);
        }
        b.addresses.insert(
            key,
            Bucket {
                credit: address_credit - self.refill_ms,
                at: now_ms,
            },
        );
        if !b.names.contains_key(&name) {
            make_room(&mut b.names, |n| n.bucket, full);
        }
        let entry = b.names.entry(name.clone()).or_insert_with(|| NameBucket {
            bucket: Bucket {
                credit: cap,
                at: now_ms,
            },
            failed_from: VecDeque::new(),
        });
        // A name's credit may already be spent (by addresses it does not hold back):
        // the slot takes what is left, and gives back no more than it took.
        let name_charged = name_credit.clamp(0, self.refill_ms);
        entry.bucket = Bucket {
            credit: name_credit - name_charged,
            at: now_ms,
        };
        entry.failed_from.retain(|a| *a != key);
        if entry.failed_from.len() >= MAX_FAILED_FROM {
            entry.failed_from.pop_front();
        }
        entry.failed_from.push_back(key);
        Ok(Slot {
            limiter: self,
            key,
            name,
            name_charged,
        })
    }

    fn give_back(&self, key: IpAddr, name: &str, name_charged: i64, forget_failure: bool) {
        let mut b = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let (refill, cap) = (self.refill_ms, self.cap_ms);
        if let Some(a) = b.addresses.get_mut(&key) {
            a.credit = a.credit.saturating_add(refill).min(cap);
        }
        if let Some(n) = b.names.get_mut(name) {
            n.bucket.credit = n.bucket.credit.saturating_add(name_charged).min(cap);
            if forget_failure {
                n.failed_from.retain(|a| *a != key);
            }
        }
    }
}

/// An attempt in progress; dropping it leaves it counted as a failure.
#[derive(Debug)]
#[must_use = "an attempt counts as failed unless it is given back"]
pub struct Slot<'a> {
    limiter: &'a LoginLimiter,
    key: IpAddr,
    name: String,
    name_charged: i64,
}

impl Slot<'_> {
    /// The password was right: the attempt costs nothing, and this address is no
    /// longer held back by the name's failures.
    pub fn succeeded(self) {
        self.limiter
            .give_back(self.key, &self.name, self.name_charged, true);
    }

    /// The password was never checked (no turn for it): the attempt costs nothing.
    pub fn unchecked(self) {
        self.limiter
            .give_back(self.key, &self.name, self.name_charged, false);
    }
}

/// No turn for a password check came in time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("too many logins at once; try again in {retry_after_s} s")]
pub struct Busy {
    /// Seconds to suggest in `Retry-After`.
    pub retry_after_s: u64,
}

impl From<Busy> for ApiError {
    fn from(b: Busy) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, b.to_string()).retry_after(b.retry_after_s)
    }
}

/// Password checks (argon2), at most so many at once.
#[derive(Debug)]
pub struct PasswordChecks {
    turns: Arc<Semaphore>,
    wait: Duration,
    waiting: AtomicUsize,
    done: Arc<AtomicU64>,
    running: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
}

impl PasswordChecks {
    /// At most `at_once` checks run; one waits at most `wait` for its turn.
    pub fn new(at_once: u32, wait: Duration) -> Self {
        Self {
            turns: Arc::new(Semaphore::new(usize::try_from(at_once.max(1)).unwrap_or(1))),
            wait,
            waiting: AtomicUsize::new(0),
            done: Arc::new(AtomicU64::new(0)),
            running: Arc::new(AtomicUsize::new(0)),
            peak: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Whether `password` matches `hash`, checked on the blocking pool once a turn is
    /// free.
    pub async fn verify(&self, password: String, hash: String) -> Result<bool, Busy> {
        self.run(move || super::auth::verify_password(&password, &hash))
            .await
            .map(|ok| ok.unwrap_or(false))
    }

    /// Runs `work` (an argon2 hash or check) on the blocking pool once a turn is free;
    /// `None` if it panicked.
    pub async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<Option<T>, Busy> {
        let busy = Busy {
            retry_after_s: self.wait.as_secs().max(1),
        };
        if self.waiting.fetch_add(1, Ordering::SeqCst) >= MAX_WAITING {
            self.waiting.fetch_sub(1, Ordering::SeqCst);
            return Err(busy);
        }
        let turn = tokio::time::timeout(self.wait, self.turns.clone().acquire_owned()).await;
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        let Ok(Ok(turn)) = turn else {
            return Err(busy);
        };
        let (done, running, peak) = (self.done.clone(), self.running.clone(), self.peak.clone());
        // The turn moves into the blocking task: it is held until the hash is done,
        // even if the request that asked for it is gone.
        let check = tokio::task::spawn_blocking(move || {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            done.fetch_add(1, Ordering::SeqCst);
            let out = work();
            running.fetch_sub(1, Ordering::SeqCst);
            drop(turn);
            out
        });
        Ok(check.await.ok())
    }

    /// Password checks made since the start (the metric
    /// `switchyard_panel_password_checks_total`).
    pub fn count(&self) -> u64 {
        self.done.load(Ordering::SeqCst)
    }

    /// The most checks that ran at once since the start.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }
}

/// The password checks' lines of `/metrics`.
pub fn render_metrics(checks: &PasswordChecks) -> String {
    format!(
        "# HELP switchyard_panel_password_checks_total Password checks (argon2) made.\n\
         # TYPE switchyard_panel_password_checks_total counter\n\
         switchyard_panel_password_checks_total {}\n",
        checks.count()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn an_address_gets_a_burst_then_one_per_refill() {
        let l = LoginLimiter::new(3, 30);
        let a = ip("10.0.0.1");
        for name in ["admin", "root", "x"] {
            drop(l.begin(a, name, 0).unwrap());
        }
        assert_eq!(l.begin(a, "y", 0).unwrap_err(), Held::Address(30));
        assert_eq!(l.begin(a, "y", 20_000).unwrap_err(), Held::Address(10));
        drop(l.begin(a, "y", 30_000).unwrap());
        // Other addresses have their own.
        l.begin(ip("10.0.0.2"), "y", 30_000).unwrap().succeeded();
    }

    #[test]
    fn a_slot_is_taken_before_the_check_and_given_back_when_right() {
        let l = LoginLimiter::new(2, 30);
        let a = ip("192.0.2.1");
        // Two attempts in flight spend the burst: a third waits, before any is checked.
        let first = l.begin(a, "admin", 0).unwrap();
        let second = l.begin(a, "admin", 0).unwrap();
        assert!(l.begin(a, "admin", 0).is_err());
        first.succeeded();
        second.unchecked();
        // Neither cost anything.
        l.begin(a, "admin", 0).unwrap().succeeded();
        l.begin(a, "admin", 0).unwrap().succeeded();
    }

    #[test]
    fn a_name_holds_back_only_the_addresses_that_failed_it() {
        let l = LoginLimiter::new(3, 30);
        // A guesser spread over addresses: each has credit of its own, but after the
        // name's burst every address that failed it waits.
        for i in 0..3 {
            drop(l.begin(ip(&format!("203.0.113.{i}")), "admin", 0).unwrap());
        }
        drop(l.begin(ip("203.0.113.9"), "admin", 0).unwrap());
        for i in [0, 1, 2, 9] {
            assert_eq!(
                l.begin(ip(&format!("203.0.113.{i}")), "admin", 1000)
                    .unwrap_err(),
                Held::Name(29),
                "{i}"
            );
        }
        // Those addresses may still try other names.
        drop(l.begin(ip("203.0.113.0"), "root", 1000).unwrap());
        // The admin, from an address that never failed, logs in.
        l.begin(ip("198.51.100.5"), "admin", 1000)
            .unwrap()
            .succeeded();
        // After a refill, one more try.
        drop(l.begin(ip("203.0.113.1"), "admin", 31_000).unwrap());
        assert!(l.begin(ip("203.0.113.2"), "admin", 31_000).is_err());
    }

    #[test]
    fn ipv6_clients_share_their_64() {
        let l = LoginLimiter::new(1, 30);
        drop(l.begin(ip("2001:db8:1:2::1"), "a", 0).unwrap());
        assert!(l.begin(ip("2001:db8:1:2::ffff"), "b", 0).is_err());
        drop(l.begin(ip("2001:db8:1:3::1"), "b", 0).unwrap());
    }

    #[test]
    fn tracking_is_bounded() {
        let l = LoginLimiter::new(1, 30);
        for i in 0..(MAX_TRACKED as u32 + 50) {
            let a = IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + i));
            drop(l.begin(a, &format!("n{i}"), i64::from(i)));
        }
        let b = l.buckets.lock().unwrap();
        assert!(b.addresses.len() <= MAX_TRACKED);
        assert!(b.names.len() <= MAX_TRACKED);
    }

    #[tokio::test(start_paused = true)]
    async fn checks_beyond_the_limit_wait_a_bounded_time() {
        let checks = Arc::new(PasswordChecks::new(1, Duration::from_secs(5)));
        // Hold the only turn.
        let turn = checks.turns.clone().acquire_owned().await.unwrap();
        let c = checks.clone();
        let waiting = tokio::spawn(async move { c.verify("x".into(), "y".into()).await });
        tokio::time::sleep(Duration::from_secs(6)).await;
        assert_eq!(waiting.await.unwrap(), Err(Busy { retry_after_s: 5 }));
        drop(turn);
        assert_eq!(
            checks.verify("x".into(), "not a hash".into()).await,
            Ok(false)
        );
        assert_eq!(checks.count(), 1);
    }
}
