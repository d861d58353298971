//! A model of mihomo's `fallback` proxy group with its default settings.
//!
//! Followed: `MetaCubeX/mihomo` at `v1.19.2` (commit `ccc3f84d`; identical for these files
//! on the `Alpha` branch at `05e8f13a`): `adapter/outboundgroup/fallback.go` (the group
//! and `findAliveProxy`), `adapter/outboundgroup/groupbase.go` (`onDialFailed`,
//! `healthCheck`, default timeout and failure count), `adapter/outboundgroup/parser.go`
//! (group defaults), `adapter/provider/healthcheck.go` (the periodic, lazy check),
//! `adapter/provider/provider.go` (the check at start), `adapter/adapter.go` (a server's
//! alive flag and its URL test), `common/singledo/singledo.go`, `common/utils/ranges.go`
//! and `hub/executor/executor.go`.
//!
//! The model is a group listing its servers itself (`proxies:`), the case where mihomo
//! applies its group defaults (a group over a `proxy-provider` with `use:` follows the
//! provider's own `health-check` settings instead).
//!
//! Defaults, and where they come from:
//! - test URL `https://www.gstatic.com/generate_204` (`C.DefaultTestURL`,
//!   `constant/adapters.go`), a `HEAD` request, redirects not followed; `expected-status`
//!   empty means any status counts (`newIntRanges` returns no ranges for "" and "*");
//! - health-check interval **300 s** (`parser.go`: `Interval = 300` for every type but
//!   `select` and `relay`);
//! - timeout **5000 ms** per test (`NewHealthCheck` and `NewGroupBase` both default
//!   `timeout` to 5000);
//! - `lazy: true` (`parser.go` decodes into `GroupCommonOption{Lazy: true}`);
//! - `max-failed-times` **5** (`NewGroupBase`);
//! - unified delay off, so the delay is dial plus one request (`UnifiedDelay`).
//!
//! Behaviour modelled:
//! - **Check at start.** The group's provider runs a health check when the configuration
//!   is applied (`hcCompatibleProvider` → `compatibleProvider.Initial`), whatever `lazy`
//!   says, and its ticker starts then.
//! - **Lazy ticks.** Every 300 s the ticker fires; the check runs only if the group was
//!   touched less than one interval before (`time.Since(lastTouch) < interval`). A touch
//!   is any dial through the group (`findAliveProxy(true)`); never touched means skip.
//! - **Alive flag.** Each server starts alive (`NewProxy`); every test sets it from that
//!   test alone: one failure marks it dead, one success alive again. No tolerance, no
//!   history is consulted.
//! - **Selection** (`findAliveProxy`): the first alive server in list order; if none is
//!   alive, the first server. It is evaluated on every dial, so the model re-evaluates
//!   after every check and reports a change as a switch (back to an earlier server that is
//!   alive again: [`SwitchReason::SwitchBack`]; away from a dead one:
//!   [`SwitchReason::CurrentSilent`]).
//! - **Failed dials** never mark a server dead. `onDialFailed` runs a health check at
//!   once when the error says "connection refused"; for other errors it counts failures:
//!   the first sets a start time; a later one more than `timeout` (5 s) after that start
//!   resets the count to zero (and is itself not counted); reaching 5 runs a health check.
//!   A health check does nothing while another failure-triggered one runs, and sets the
//!   count to zero when done. A check requested while one runs joins it, and one requested
//!   less than 1 s after the start of the last finished check reuses its result
//!   (`singledo.NewSingle(time.Second)`).
//! - **Network changes**, marks and speed tests: the group has no hook for them; ignored.
//! - **Subscription update**: modelled as a configuration reload (a mihomo subscription
//!   is usually a whole profile), which builds new servers, all alive, with a new check at
//!   start and a new ticker; a check still running is abandoned (its replies are accepted
//!   and reported, and change nothing). A `proxy-provider` update behaves alike for the
//!   selection: its servers are new objects, alive, and it checks at once (`setProxies`).
//!   If the current server was removed this is reported as a switch
//!   ([`SwitchReason::Removed`]); if it is still listed but the restarted group uses
//!   another, that is the restart's pick ([`ConnectReason::AutoOn`]), not a switch.
//!
//! Approximations: the world's failed connections are refusals, so by default every
//! [`Event::ConnectFailed`] takes the "connection refused" path
//! ([`FallbackConfig::dial_failures_refused`]; set it to `false` for the counting path);
//! with counting, failures arriving while a failure-triggered check runs are dropped
//! (mihomo holds them on a mutex and counts them after the check); the simulator delivers
//! all replies of a check at once; servers are probed concurrently (mihomo: at most 10 at
//! a time); connections are modelled from traffic counters, so every `Traffic` event whose
//! `sent` grew counts as a dial.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Duration;

use super::{Inputs, Step, delays, elapsed_more_than, validate_replies};
use switchyard_auto::error::InputError;
use switchyard_auto::event::{
    Check, CheckId, CheckReport, ConnectReason, Event, Outcome, Output, SwitchReason, Trigger,
};
use switchyard_auto::measurement::{Method, ProbeReply};
use switchyard_auto::policy::Policy;
use switchyard_auto::server::{ServerId, Subscription};
use switchyard_auto::time::Timestamp;

/// How long a finished check's result is reused (`singledo.NewSingle(time.Second)` in
/// `NewHealthCheck`).
const REUSE_RESULT: Duration = Duration::from_secs(1);

/// The settings of the modelled `fallback` group; [`Default`] gives mihomo's defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FallbackConfig {
    /// Health-check period (`interval`, default 300 s).
    pub interval: Duration,
    /// Per-test timeout, also the window for counting failed dials (`timeout`, default
    /// 5000 ms).
    pub timeout: Duration,
    /// Skip a periodic check unless the group was used within the last interval (`lazy`,
    /// default true).
    pub lazy: bool,
    /// Failed dials within the window that trigger a health check (`max-failed-times`,
    /// default 5).
    pub max_failed_times: u32,
    /// Treat every failed dial as "connection refused", which triggers a health check at
    /// once (the simulator's failed connections are refusals; default true).
    pub dial_failures_refused: bool,
}

impl Default for FallbackConfig {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(300),
            timeout: Duration::from_millis(5000),
            lazy: true,
            max_failed_times: 5,
            dial_failures_refused: true,
        }
    }
}

/// A model of mihomo's `fallback` group with its defaults; see the module docs.
#[derive(Debug)]
pub struct Fallback {
    config: FallbackConfig,
    inputs: Inputs,
    group: Option<Group>,
    /// The server the driver was last told to use.
    connected: Option<ServerId>,
    /// Checks issued by a group that has since restarted: accepted, then ignored.
    abandoned: HashMap<CheckId, Check>,
    next_check: u64,
    out: VecDeque<Output>,
}

/// A running group with its provider's health check.
#[derive(Debug)]
struct Group {
    servers: Vec<ServerId>,
    /// Servers whose alive flag is false; every other one is alive.
    dead: HashSet<ServerId>,
    last_touch: Option<Timestamp>,
    next_tick: Timestamp,
    running: Option<Running>,
    /// Start of the last finished check (`singledo`'s `last`).
    last_check: Option<Timestamp>,
    failed_times: u32,
    failed_time: Timestamp,
    failed_testing: bool,
}

#[derive(Debug)]
struct Running {
    check: Check,
    started: Timestamp,
    /// Whether a failure-triggered health check waits on this check.
    clears_failures: bool,
}

/// What a request for a check did.
enum Requested {
    /// A new check started, or the request joined the running one.
    Running,
    /// The last result was reused, or there is nothing to check.
    Done,
}

impl Fallback {
    /// A model with mihomo's default settings.
    pub fn new() -> Self {
        Self::with_config(FallbackConfig::default())
    }

    /// A model with other settings.
    pub fn with_config(config: FallbackConfig) -> Self {
        Self {
            config,
            inputs: Inputs::default(),
            group: None,
            connected: None,
            abandoned: HashMap::new(),
            next_check: 0,
            out: VecDeque::new(),
        }
    }

    /// The settings in use.
    pub fn config(&self) -> &FallbackConfig {
        &self.config
    }

    /// Apply a configuration with the group on `sub`; `reload` when it replaces one.
    fn start(&mut self, now: Timestamp, sub: Subscription, reload: bool) {
        if let Some(running) = self.group.take().and_then(|g| g.running) {
            self.abandoned.insert(running.check.id, running.check);
        }
        let group = Group {
            servers: sub.servers.into_iter().map(|s| s.id).collect(),
            dead: HashSet::new(),
            last_touch: None,
            next_tick: now + self.config.interval,
            running: None,
            last_check: None,
            failed_times: 0,
            failed_time: now,
            failed_testing: false,
        };
        let first = group.servers.first().cloned();
        let removed = reload
            && self
                .connected
                .as_ref()
                .is_some_and(|c| !group.servers.contains(c));
        self.group = Some(group);
        if let Some(first) = first
            && self.connected.as_ref() != Some(&first)
        {
            match self.connected.clone() {
                Some(from) if removed => {
                    self.out.push_back(Output::Switched {
                        from,
                        to: first.clone(),
                        reason: SwitchReason::Removed,
                    });
                    self.connect(first, ConnectReason::Removed);
                }
                // A fresh start: every server is alive, the first is used.
                _ => self.connect(first, ConnectReason::AutoOn),
            }
        }
        self.request_check(now, Trigger::Scheduled);
    }

    fn connect(&mut self, server: ServerId, reason: ConnectReason) {
        self.connected = Some(server.clone());
        self.out.push_back(Output::Connect { server, reason });
    }

    /// `HealthCheck.check`, behind `singledo`.
    fn request_check(&mut self, now: Timestamp, trigger: Trigger) -> Requested {
        let Some(group) = self.group.as_mut() else {
            return Requested::Done;
        };
        if group.running.is_some() {
            return Requested::Running;
        }
        let reused = group
            .last_check
            .is_some_and(|last| now < last + REUSE_RESULT);
        if reused || group.servers.is_empty() {
            return Requested::Done;
        }
        let check = Check {
            id: CheckId(self.next_check),
            trigger,
            servers: group.servers.clone(),
            method: Method::Url,
            timeout: self.config.timeout,
        };
        self.next_check += 1;
        group.running = Some(Running {
            check: check.clone(),
            started: now,
            clears_failures: false,
        });
        self.out.push_back(Output::Probe(check));
        Requested::Running
    }

    /// `GroupBase.healthCheck`.
    fn health_check(&mut self, now: Timestamp) {
        match self.group.as_mut() {
            Some(group) if !group.failed_testing => group.failed_testing = true,
            _ => return,
        }
        let requested = self.request_check(now, Trigger::ConnectFailure);
        let Some(group) = self.group.as_mut() else {
            return;
        };
        match (requested, group.running.as_mut()) {
            (Requested::Running, Some(running)) => running.clears_failures = true,
            _ => {
                group.failed_testing = false;
                group.failed_times = 0;
            }
        }
    }

    /// `GroupBase.onDialFailed`.
    fn dial_failed(&mut self, now: Timestamp, server: &ServerId) {
        let (window, max) = (self.config.timeout, self.config.max_failed_times);
        let Some(group) = self.group.as_mut() else {
            return;
        };
        if !group.servers.contains(server) {
            return;
        }
        // The dial went through `findAliveProxy(true)`.
        group.last_touch = Some(now);
        if self.config.dial_failures_refused {
            self.health_check(now);
            return;
        }
        if group.failed_testing {
            return;
        }
        group.failed_times += 1;
        if group.failed_times == 1 {
            group.failed_time = now;
            return;
        }
        if elapsed_more_than(now, group.failed_time, window) {
            group.failed_times = 0;
            return;
        }
        if group.failed_times >= max {
            self.health_check(now);
        }
    }

    fn results(
        &mut self,
        id: CheckId,
        replies: Vec<(ServerId, ProbeReply)>,
    ) -> Result<(), InputError> {
        if let Some(check) = self.abandoned.get(&id) {
            validate_replies(check, &replies)?;
            let report = CheckReport::new(check, &delays(check, &replies), Outcome::Stay, false);
            self.abandoned.remove(&id);
            self.out.push_back(Output::CheckDone(report));
            return Ok(());
        }
        let Some(group) = self.group.as_mut() else {
            return Err(InputError::UnknownCheck { check: id });
        };
        let Some(running) = group.running.as_ref().filter(|r| r.check.id == id) else {
            return Err(InputError::UnknownCheck { check: id });
        };
        validate_replies(&running.check, &replies)?;
        let Some(running) = group.running.take() else {
            return Err(InputError::UnknownCheck { check: id });
        };
        let delays = delays(&running.check, &replies);
        for (server, delay) in &delays {
            if delay.is_some() {
                group.dead.remove(server);
            } else {
                group.dead.insert(server.clone());
            }
        }
        // `singledo` stamps the result with the time the check started.
        group.last_check = Some(running.started);
        if running.clears_failures {
            group.failed_testing = false;
            group.failed_times = 0;
        }
        let before = self.out.len();
        let moved = self.reselect();
        let outcome = if moved {
            Outcome::Switch
        } else {
            Outcome::Stay
        };
        self.out.insert(
            before,
            Output::CheckDone(CheckReport::new(&running.check, &delays, outcome, false)),
        );
        Ok(())
    }

    /// `findAliveProxy`, and tell the driver if the server in use changed.
    fn reselect(&mut self) -> bool {
        let Some(group) = self.group.as_ref() else {
            return false;
        };
        let Some(pick) = group
            .servers
            .iter()
            .find(|s| !group.dead.contains(*s))
            .or(group.servers.first())
            .cloned()
        else {
            return false;
        };
        let Some(from) = self.connected.clone() else {
            self.connect(pick, ConnectReason::AutoOn);
            return true;
        };
        if from == pick {
            return false;
        }
        let (reason, connect) = if group.dead.contains(&from) || !group.servers.contains(&from) {
            (SwitchReason::CurrentSilent, ConnectReason::Switch)
        } else {
            (SwitchReason::SwitchBack, ConnectReason::SwitchBack)
        };
        self.out.push_back(Output::Switched {
            from,
            to: pick.clone(),
            reason,
        });
        self.connect(pick, connect);
        true
    }

    fn tick(&mut self, now: Timestamp) {
        let (interval, lazy) = (self.config.interval, self.config.lazy);
        let Some(group) = self.group.as_mut() else {
            return;
        };
        group.next_tick = group.next_tick + interval;
        let touched = group.last_touch.is_some_and(|t| now.since(t) < interval);
        if !lazy || touched {
            self.request_check(now, Trigger::Scheduled);
        }
    }
}

impl Default for Fallback {
    fn default() -> Self {
        Self::new()
    }
}

impl Policy for Fallback {
    fn name(&self) -> &'static str {
        "fallback"
    }

    fn handle_event(&mut self, now: Timestamp, event: Event) -> Result<(), InputError> {
        if let Event::ProbeResults { check, replies } = event {
            return self.results(check, replies);
        }
        match self.inputs.accept(event)? {
            Step::Start(sub) => self.start(now, sub, false),
            Step::Reload(sub) => self.start(now, sub, true),
            Step::Stop => {
                if let Some(running) = self.group.take().and_then(|g| g.running) {
                    self.abandoned.insert(running.check.id, running.check);
                }
                self.connected = None;
            }
            Step::InUse => {
                if let Some(group) = self.group.as_mut() {
                    group.last_touch = Some(now);
                }
            }
            Step::DialFailed(server) => self.dial_failed(now, &server),
            Step::Ignored => {}
        }
        Ok(())
    }

    fn handle_timeout(&mut self, now: Timestamp) {
        while self.group.as_ref().is_some_and(|g| g.next_tick <= now) {
            self.tick(now);
        }
    }

    fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    fn poll_timeout(&self) -> Option<Timestamp> {
        self.group.as_ref().map(|g| g.next_tick)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: i64) -> Timestamp {
        Timestamp::from_secs(secs)
    }

    fn id(name: &str) -> ServerId {
        ServerId::new(name)
    }

    fn drain(p: &mut Fallback) -> Vec<Output> {
        std::iter::from_fn(|| p.poll_output()).collect()
    }

    fn started_with(config: FallbackConfig, servers: &[&str]) -> (Fallback, Vec<Output>) {
        let mut p = Fallback::with_config(config);
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

    fn started(servers: &[&str]) -> (Fallback, Vec<Output>) {
        started_with(FallbackConfig::default(), servers)
    }

    fn probe(out: &[Output]) -> Option<Check> {
        out.iter().find_map(|o| match o {
            Output::Probe(c) => Some(c.clone()),
            _ => None,
        })
    }

    fn answer(p: &mut Fallback, now: Timestamp, check: &Check, replies: &[(&str, Option<u32>)]) {
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

    fn traffic(p: &mut Fallback, now: Timestamp, sent: u64) {
        p.handle_event(now, Event::Traffic { sent, received: 0 })
            .unwrap();
    }

    fn fail(p: &mut Fallback, now: Timestamp, server: &str) -> Vec<Output> {
        p.handle_event(now, Event::ConnectFailed { server: id(server) })
            .unwrap();
        drain(p)
    }

    fn tick(p: &mut Fallback, at: Timestamp) -> Vec<Output> {
        assert_eq!(p.poll_timeout(), Some(at));
        p.handle_timeout(at);
        drain(p)
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

    /// Started on a, b, c with the start check answered by all.
    fn settled() -> Fallback {
        let (mut p, out) = started(&["a", "b", "c"]);
        let all = [("a", Some(90)), ("b", Some(50)), ("c", Some(70))];
        answer(&mut p, s(1), &probe(&out).unwrap(), &all);
        drain(&mut p);
        p
    }

    #[test]
    fn defaults_are_mihomo_defaults() {
        let c = Fallback::new().config().clone();
        assert_eq!(c.interval, Duration::from_secs(300));
        assert_eq!(c.timeout, Duration::from_millis(5000));
        assert!(c.lazy);
        assert_eq!(c.max_failed_times, 5);
        assert_eq!(Fallback::new().name(), "fallback");
    }

    #[test]
    fn checks_at_start_and_uses_the_first_alive_server_in_list_order() {
        let (mut p, out) = started(&["a", "b", "c"]);
        assert_eq!(out[0], connect("a", ConnectReason::AutoOn));
        let check = probe(&out).unwrap();
        assert_eq!(check.servers, vec![id("a"), id("b"), id("c")]);
        assert_eq!(check.timeout, Duration::from_secs(5));
        assert_eq!(check.trigger, Trigger::Scheduled);
        assert_eq!(p.poll_timeout(), Some(s(300)));
        // b is slower than c but earlier in the list.
        answer(
            &mut p,
            s(5),
            &check,
            &[("a", None), ("b", Some(300)), ("c", Some(40))],
        );
        let out = drain(&mut p);
        assert!(matches!(&out[0], Output::CheckDone(r) if r.outcome == Outcome::Switch));
        assert_eq!(
            out[1..],
            [
                switched("a", "b", SwitchReason::CurrentSilent),
                connect("b", ConnectReason::Switch)
            ]
        );
    }

    #[test]
    fn moves_when_the_first_dies_and_back_when_it_revives() {
        let mut p = settled();
        traffic(&mut p, s(10), 1);
        let out = tick(&mut p, s(300));
        let check = probe(&out).unwrap();
        // One failed check is enough to mark a server dead.
        answer(
            &mut p,
            s(305),
            &check,
            &[("a", None), ("b", Some(50)), ("c", Some(70))],
        );
        let out = drain(&mut p);
        assert_eq!(out[1], switched("a", "b", SwitchReason::CurrentSilent));
        traffic(&mut p, s(400), 2);
        let out = tick(&mut p, s(600));
        answer(
            &mut p,
            s(601),
            &probe(&out).unwrap(),
            &[("a", Some(900)), ("b", Some(50)), ("c", None)],
        );
        let out = drain(&mut p);
        assert_eq!(
            out[1..],
            [
                switched("b", "a", SwitchReason::SwitchBack),
                connect("a", ConnectReason::SwitchBack)
            ]
        );
    }

    #[test]
    fn uses_the_first_server_when_none_is_alive() {
        let mut p = settled();
        traffic(&mut p, s(10), 1);
        let out = tick(&mut p, s(300));
        answer(
            &mut p,
            s(305),
            &probe(&out).unwrap(),
            &[("a", None), ("b", Some(50)), ("c", None)],
        );
        drain(&mut p);
        traffic(&mut p, s(310), 2);
        let out = tick(&mut p, s(600));
        answer(
            &mut p,
            s(605),
            &probe(&out).unwrap(),
            &[("a", None), ("b", None), ("c", None)],
        );
        let out = drain(&mut p);
        assert_eq!(out[1], switched("b", "a", SwitchReason::CurrentSilent));
    }

    #[test]
    fn lazy_checks_skip_unless_used_within_the_last_interval() {
        let mut p = settled();
        assert!(tick(&mut p, s(300)).is_empty(), "never used");
        traffic(&mut p, s(300), 1);
        // Used exactly one interval before the tick: not "less than", skipped.
        assert!(tick(&mut p, s(600)).is_empty());
        traffic(&mut p, s(601), 2);
        assert!(probe(&tick(&mut p, s(900))).is_some());
    }

    #[test]
    fn without_lazy_every_tick_checks() {
        let config = FallbackConfig {
            lazy: false,
            ..FallbackConfig::default()
        };
        let (mut p, out) = started_with(config, &["a"]);
        answer(&mut p, s(1), &probe(&out).unwrap(), &[("a", Some(5))]);
        drain(&mut p);
        assert!(probe(&tick(&mut p, s(300))).is_some());
    }

    #[test]
    fn a_refused_dial_checks_at_once_and_does_not_mark_the_server() {
        let mut p = settled();
        let out = fail(&mut p, s(20), "a");
        let check = probe(&out).expect("a health check");
        assert_eq!(check.trigger, Trigger::ConnectFailure);
        assert_eq!(out.len(), 1, "the dial alone moves nothing: {out:?}");
        // Further failures while it runs start nothing.
        assert!(fail(&mut p, s(20), "a").is_empty());
        answer(
            &mut p,
            s(20),
            &check,
            &[("a", None), ("b", Some(50)), ("c", Some(70))],
        );
        assert_eq!(
            drain(&mut p)[1],
            switched("a", "b", SwitchReason::CurrentSilent)
        );
        // Within 1 s of that check's start its result is reused.
        assert!(fail(&mut p, Timestamp::from_millis(20_999), "b").is_empty());
        assert!(probe(&fail(&mut p, s(21), "b")).is_some());
    }

    #[test]
    fn counted_dial_failures_check_at_the_fifth_within_five_seconds() {
        let config = FallbackConfig {
            dial_failures_refused: false,
            ..FallbackConfig::default()
        };
        let (mut p, out) = started_with(config, &["a", "b"]);
        answer(
            &mut p,
            s(1),
            &probe(&out).unwrap(),
            &[("a", Some(10)), ("b", Some(10))],
        );
        drain(&mut p);
        for t in 10..14 {
            assert!(fail(&mut p, s(t), "a").is_empty());
        }
        let out = fail(&mut p, s(14), "a");
        let check = probe(&out).expect("fifth failure within 5 s checks");
        assert_eq!(check.trigger, Trigger::ConnectFailure);
        answer(&mut p, s(15), &check, &[("a", Some(10)), ("b", Some(10))]);
        drain(&mut p);
        // The count restarted; a failure more than 5 s after the first resets it
        // without counting itself.
        assert!(fail(&mut p, s(20), "a").is_empty());
        assert!(fail(&mut p, Timestamp::from_millis(25_001), "a").is_empty());
        for t in 26..30 {
            assert!(fail(&mut p, s(t), "a").is_empty(), "failure {t} counted");
        }
        assert!(probe(&fail(&mut p, s(30), "a")).is_some());
    }

    #[test]
    fn an_update_reloads_with_all_servers_alive() {
        let (mut p, out) = started(&["a", "b"]);
        answer(
            &mut p,
            s(1),
            &probe(&out).unwrap(),
            &[("a", None), ("b", Some(10))],
        );
        drain(&mut p);
        let sub = Subscription::of_names("Main", &["c", "a"]);
        p.handle_event(s(50), Event::SubscriptionUpdated(sub))
            .unwrap();
        let out = drain(&mut p);
        assert_eq!(out[0], switched("b", "c", SwitchReason::Removed));
        assert_eq!(out[1], connect("c", ConnectReason::Removed));
        assert_eq!(probe(&out).unwrap().servers, vec![id("c"), id("a")]);
        assert_eq!(p.poll_timeout(), Some(s(350)));
    }

    #[test]
    fn unknown_checks_are_refused() {
        let mut p = settled();
        assert_eq!(
            p.handle_event(
                s(2),
                Event::ProbeResults {
                    check: CheckId(7),
                    replies: vec![]
                }
            ),
            Err(InputError::UnknownCheck { check: CheckId(7) })
        );
        for ev in [Event::NetworkChanged, Event::NetworkAvailable(false)] {
            p.handle_event(s(3), ev).unwrap();
        }
        assert!(drain(&mut p).is_empty());
    }
}
