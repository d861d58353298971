//! A model of sing-box's `urltest` outbound group with its default settings.
//!
//! Followed: `SagerNet/sing-box` at `v1.14.0-alpha.2` (commit `7df171ff`; the files read
//! are unchanged since `v1.13.2`): `protocol/group/urltest.go` (the group, its ticker,
//! `Select` and `performUpdateCheck`), `common/urltest/urltest.go` (the test itself and
//! the history storage), `option/group.go` (the options) and `constant/timeout.go`.
//!
//! Defaults, and where they come from:
//! - test URL `https://www.gstatic.com/generate_204`, a `HEAD` request, redirects not
//!   followed, **any HTTP status counts** (`URLTest` in `common/urltest/urltest.go`). The
//!   delay is dial plus request, which the model takes as the reply's `total_ms`;
//! - interval **3 min** (`C.DefaultURLTestInterval`, used when `interval` is 0);
//! - tolerance **50 ms** (literal in `NewURLTestGroup`);
//! - idle timeout **30 min** (`C.DefaultURLTestIdleTimeout`);
//! - test timeout **15 s**: each test runs under `context.WithTimeout(.., C.TCPTimeout)`
//!   and `C.TCPTimeout` is 15 s (the HTTP client's own timeout is the same constant).
//!
//! Behaviour modelled:
//! - **One latest delay per server.** A test that answers stores `{time, delay}` for the
//!   server, replacing the old one; a test that fails deletes the record.
//! - **Start test.** When the group starts (`PostStart`) it records the time as last
//!   activity and tests every member at once; no ticker runs yet.
//! - **Ticker while in use.** Each dial calls `Touch`: with no ticker it starts one
//!   (period = interval) and, if the last activity is more than one interval ago, marks
//!   activity now and tests at once (the dial that starts the ticker does not otherwise
//!   count as activity); with a ticker running it just marks activity. On a
//!   tick, if the last activity is more than the idle timeout ago, the ticker stops
//!   (tests pause until the next dial); otherwise a test runs.
//! - **Tests skip fresh records.** A periodic test only probes members without a record
//!   or whose record is at least one interval old, so a server that answers is usually
//!   probed every other tick. A test requested while one runs is dropped. Members are
//!   probed concurrently (sing-box: at most 10 at a time; the model probes all at once).
//! - **Selection** (`Select`, run after every test by `performUpdateCheck`): start from
//!   the selected server's delay if it has a record; walk the members in list order and
//!   take one whenever no delay is held yet, or the held delay exceeds its delay plus the
//!   tolerance. So the current server is kept unless another beats it by more than 50 ms;
//!   when the current has no record, the first recorded member in list order is taken
//!   unless a later one beats *it* by more than 50 ms (not simply the fastest). When no
//!   member has a record, a server already selected is kept; with none selected, the
//!   first member in list order is selected.
//! - **Before the first selection** dials use `Select`'s answer without storing it: the
//!   first member in list order, as nothing has a record yet. The model connects there
//!   when the group starts and reports the first selection as the start's pick
//!   ([`ConnectReason::AutoOn`], no switch).
//! - **Failed dial.** `DialContext` deletes the dialed server's record and returns the
//!   error; the selection is *not* recomputed, so the group keeps dialing the same server
//!   until the next test (tick or resumed use), which probes it again (it has no record)
//!   and then moves if it still fails. The model does the same: no immediate move.
//! - **Network changes** are not seen by the group (it implements no interface-update
//!   hook), so the model ignores them, as it ignores marks and speed tests.
//! - **Subscription update**: a sing-box client reloads the configuration, which builds a
//!   new group with empty history (`daemon/instance.go` makes a new history storage per
//!   instance). The model restarts the group: dials go to the first member, a start test
//!   runs, and a check still running is abandoned (its replies are accepted and
//!   reported, and change nothing).
//!   If the current server was removed this is reported as a switch
//!   ([`SwitchReason::Removed`]); if it is still listed but the restarted group uses
//!   another, that is the restart's pick ([`ConnectReason::AutoOn`]), not a switch.
//!
//! Approximations: the simulator delivers all replies of a test at once, so records are
//! stored together, each stamped with the test's start plus its own delay (sing-box
//! stamps each when its probe finishes, which is the same time); the group's UDP
//! selection is not modelled (the world has TCP only); sing-box's pause manager (device
//! sleep) has no event here; connections are modelled from traffic counters, so every
//! `Traffic` event whose `sent` grew counts as a dial.

use std::collections::{HashMap, VecDeque};
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

/// The settings of the modelled `urltest` group; [`Default`] gives sing-box's defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UrlTestConfig {
    /// Period of the test ticker and minimum age of a record before it is re-tested
    /// (sing-box `interval`, default `C.DefaultURLTestInterval` = 3 min).
    pub interval: Duration,
    /// A server replaces the held one only if it is faster by more than this, in
    /// milliseconds (sing-box `tolerance`, default 50).
    pub tolerance_ms: u32,
    /// Tests stop once the group was unused this long, and resume on the next dial
    /// (sing-box `idle_timeout`, default `C.DefaultURLTestIdleTimeout` = 30 min).
    pub idle_timeout: Duration,
    /// Each test fails past this (`C.TCPTimeout` = 15 s; not configurable in sing-box).
    pub test_timeout: Duration,
}

impl Default for UrlTestConfig {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(3 * 60),
            tolerance_ms: 50,
            idle_timeout: Duration::from_secs(30 * 60),
            test_timeout: Duration::from_secs(15),
        }
    }
}

/// A model of sing-box's `urltest` group with its defaults; see the module docs.
#[derive(Debug)]
pub struct UrlTest {
    config: UrlTestConfig,
    inputs: Inputs,
    group: Option<Group>,
    /// The server the driver was last told to use.
    connected: Option<ServerId>,
    /// Checks issued by a group that has since restarted: accepted, then ignored.
    abandoned: HashMap<CheckId, Check>,
    next_check: u64,
    out: VecDeque<Output>,
}

/// One server's latest successful test (`adapter.URLTestHistory`).
#[derive(Clone, Copy, Debug)]
struct Record {
    at: Timestamp,
    delay_ms: u32,
}

/// A running group (`URLTestGroup`).
#[derive(Debug)]
struct Group {
    servers: Vec<ServerId>,
    history: HashMap<ServerId, Record>,
    /// `selectedOutboundTCP`.
    selected: Option<ServerId>,
    last_active: Timestamp,
    /// The ticker's next tick; `None` while no ticker runs.
    next_tick: Option<Timestamp>,
    /// The test in flight (`checking`), with its start.
    running: Option<(Check, Timestamp)>,
}

impl UrlTest {
    /// A model with sing-box's default settings.
    pub fn new() -> Self {
        Self::with_config(UrlTestConfig::default())
    }

    /// A model with other settings.
    pub fn with_config(config: UrlTestConfig) -> Self {
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
    pub fn config(&self) -> &UrlTestConfig {
        &self.config
    }

    /// `PostStart` of a new group on `sub`; `reload` when it replaces a running one.
    fn start(&mut self, now: Timestamp, sub: Subscription, reload: bool) {
        self.abandon();
        let servers: Vec<ServerId> = sub.servers.into_iter().map(|s| s.id).collect();
        let group = Group {
            servers,
            history: HashMap::new(),
            selected: None,
            last_active: now,
            next_tick: None,
            running: None,
        };
        // Until the start test selects a server, dials go where `Select` points.
        let first = group.select(self.config.tolerance_ms).0;
        self.group = Some(group);
        if let Some(first) = first
            && self.connected.as_ref() != Some(&first)
        {
            let removed = reload && self.connected.as_ref().is_some_and(|c| !self.group_has(c));
            if let (true, Some(from)) = (removed, self.connected.clone()) {
                self.out.push_back(Output::Switched {
                    from,
                    to: first.clone(),
                    reason: SwitchReason::Removed,
                });
                self.connect(first, ConnectReason::Removed);
            } else {
                // A fresh start (or a restart keeping the server): not a switch.
                self.connect(first, ConnectReason::AutoOn);
            }
        }
        self.run_test(now, Trigger::Scheduled);
    }

    fn group_has(&self, server: &ServerId) -> bool {
        self.group
            .as_ref()
            .is_some_and(|g| g.servers.contains(server))
    }

    fn abandon(&mut self) {
        if let Some((check, _)) = self.group.take().and_then(|g| g.running) {
            self.abandoned.insert(check.id, check);
        }
    }

    fn connect(&mut self, server: ServerId, reason: ConnectReason) {
        self.connected = Some(server.clone());
        self.out.push_back(Output::Connect { server, reason });
    }

    /// `Touch`: a dial through the group at `now`.
    fn touch(&mut self, now: Timestamp) {
        let interval = self.config.interval;
        let Some(group) = self.group.as_mut() else {
            return;
        };
        if group.next_tick.is_some() {
            group.last_active = now;
            return;
        }
        group.next_tick = Some(now + interval);
        // The start of `loopCheck`.
        if elapsed_more_than(now, group.last_active, interval) {
            group.last_active = now;
            self.run_test(now, Trigger::Scheduled);
        }
    }

    /// `urlTest(force = false)`: probe the members without a fresh record.
    fn run_test(&mut self, now: Timestamp, trigger: Trigger) {
        let interval = self.config.interval;
        let Some(group) = self.group.as_mut() else {
            return;
        };
        if group.running.is_some() {
            return;
        }
        let servers: Vec<ServerId> = group
            .servers
            .iter()
            .filter(|s| {
                group
                    .history
                    .get(*s)
                    .is_none_or(|r| now.since(r.at) >= interval)
            })
            .cloned()
            .collect();
        if servers.is_empty() {
            // Nothing to probe; `performUpdateCheck` still runs.
            self.update_selection(&[]);
            return;
        }
        let check = Check {
            id: CheckId(self.next_check),
            trigger,
            servers,
            method: Method::Url,
            timeout: self.config.test_timeout,
        };
        self.next_check += 1;
        group.running = Some((check.clone(), now));
        self.out.push_back(Output::Probe(check));
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
        let Some((check, started)) = group.running.as_ref().filter(|(c, _)| c.id == id) else {
            return Err(InputError::UnknownCheck { check: id });
        };
        validate_replies(check, &replies)?;
        let (check, started) = (check.clone(), *started);
        group.running = None;
        let delays = delays(&check, &replies);
        for (server, delay) in &delays {
            match delay {
                Some(ms) => {
                    let at = started + Duration::from_millis(u64::from(*ms));
                    group
                        .history
                        .insert(server.clone(), Record { at, delay_ms: *ms });
                }
                None => {
                    group.history.remove(server);
                }
            }
        }
        let silent: Vec<ServerId> = delays
            .iter()
            .filter(|(_, d)| d.is_none())
            .map(|(id, _)| id.clone())
            .collect();
        let before = self.out.len();
        let moved = self.update_selection(&silent);
        let outcome = if moved {
            Outcome::Switch
        } else {
            Outcome::Stay
        };
        // The report comes before the switch it caused.
        self.out.insert(
            before,
            Output::CheckDone(CheckReport::new(&check, &delays, outcome, false)),
        );
        Ok(())
    }

    /// `performUpdateCheck`, then tell the driver if the server in use changed. Returns
    /// whether it did; `silent` are the servers the finished test found silent.
    fn update_selection(&mut self, silent: &[ServerId]) -> bool {
        let tolerance = self.config.tolerance_ms;
        let Some(group) = self.group.as_mut() else {
            return false;
        };
        let (pick, exists) = group.select(tolerance);
        let Some(pick) = pick else {
            return false;
        };
        let previous = group.selected.clone();
        if previous.is_none() || (exists && previous.as_ref() != Some(&pick)) {
            group.selected = Some(pick);
        }
        let Some(selected) = group.selected.clone() else {
            return false;
        };
        if self.connected.as_ref() == Some(&selected) {
            return false;
        }
        match previous {
            Some(from) if from != selected => {
                let reason = if group.history.contains_key(&from) {
                    SwitchReason::Faster
                } else if silent.contains(&from) {
                    SwitchReason::CurrentSilent
                } else {
                    SwitchReason::ConnectFailed
                };
                self.out.push_back(Output::Switched {
                    from,
                    to: selected.clone(),
                    reason,
                });
                self.connect(selected, ConnectReason::Switch);
            }
            // The first selection of a (re)started group: its pick, not a switch.
            _ => self.connect(selected, ConnectReason::AutoOn),
        }
        true
    }

    fn tick(&mut self, now: Timestamp) {
        let (interval, idle) = (self.config.interval, self.config.idle_timeout);
        let Some(group) = self.group.as_mut() else {
            return;
        };
        let Some(at) = group.next_tick.filter(|at| *at <= now) else {
            return;
        };
        group.next_tick = Some(at + interval);
        if elapsed_more_than(now, group.last_active, idle) {
            group.next_tick = None;
            return;
        }
        self.run_test(now, Trigger::Scheduled);
    }
}

impl Group {
    /// `Select(tcp)`: the chosen member and whether it has a record.
    fn select(&self, tolerance_ms: u32) -> (Option<ServerId>, bool) {
        let mut held: Option<(&ServerId, u32)> = self
            .selected
            .as_ref()
            .and_then(|s| self.history.get(s).map(|r| (s, r.delay_ms)));
        for server in &self.servers {
            let Some(record) = self.history.get(server) else {
                continue;
            };
            // A held delay of 0 counts as none, as in sing-box.
            let min_delay = held.map_or(0, |(_, d)| d);
            if min_delay == 0 || min_delay > record.delay_ms.saturating_add(tolerance_ms) {
                held = Some((server, record.delay_ms));
            }
        }
        match held {
            Some((server, _)) => (Some(server.clone()), true),
            None => (self.servers.first().cloned(), false),
        }
    }
}

impl Default for UrlTest {
    fn default() -> Self {
        Self::new()
    }
}

impl Policy for UrlTest {
    fn name(&self) -> &'static str {
        "urltest"
    }

    fn handle_event(&mut self, now: Timestamp, event: Event) -> Result<(), InputError> {
        if let Event::ProbeResults { check, replies } = event {
            return self.results(check, replies);
        }
        match self.inputs.accept(event)? {
            Step::Start(sub) => self.start(now, sub, false),
            Step::Reload(sub) => self.start(now, sub, true),
            Step::Stop => {
                self.abandon();
                self.connected = None;
            }
            Step::InUse => self.touch(now),
            Step::DialFailed(server) => {
                self.touch(now);
                if let Some(group) = self.group.as_mut() {
                    group.history.remove(&server);
                }
            }
            Step::Ignored => {}
        }
        Ok(())
    }

    fn handle_timeout(&mut self, now: Timestamp) {
        while self
            .group
            .as_ref()
            .and_then(|g| g.next_tick)
            .is_some_and(|at| at <= now)
        {
            self.tick(now);
        }
    }

    fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    fn poll_timeout(&self) -> Option<Timestamp> {
        self.group.as_ref().and_then(|g| g.next_tick)
    }
}

#[cfg(test)]
#[path = "urltest_tests.rs"]
mod tests;
