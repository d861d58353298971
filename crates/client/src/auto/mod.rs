//! Auto on real traffic: the driver around `switchyard-auto`'s [`Engine`] (pure, no
//! I/O, no clock). It feeds the engine the subscriptions, the proxy's traffic meter
//! once a second, the connections that could not be made, the network's changes and
//! the replies of the probes it runs for every check; it acts on the engine's outputs:
//! a [`Output::Connect`] switches the proxy (closing the connections through the old
//! server, unless told to keep them), a [`Output::Probe`] runs the check's probes
//! concurrently, the reports are logged and kept for `status`.
//!
//! Time is the wall clock in Unix milliseconds, what the engine's state expects.

mod clock;
mod command;
mod memory;
mod subs;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use switchyard_auto::event::{Check, CheckId, CheckReport};
use switchyard_auto::{
    AutoConfig, Engine, Event, Output, Policy, ProbeReply, ServerId, Subscription, Timestamp,
};
use tokio::sync::{mpsc, oneshot};

use crate::network::NetworkEvent;
use crate::outbound::Outbound;
use crate::probe::{ProbeUrl, probe};
use crate::proxy::Proxy;
pub use clock::Clock;
pub use subs::SubscriptionServers;

/// How often the traffic meter is read.
pub const TRAFFIC_EVERY: Duration = Duration::from_secs(1);

/// How often a subscription is fetched again when its server does not say
/// (`profile-update-interval`).
pub const DEFAULT_REFRESH: Duration = Duration::from_secs(12 * 3600);

/// Auto's memory in the data directory.
pub const STATE_FILE: &str = "auto-state.json";

/// The subscriptions added with `switchyard client add`, in the data directory.
pub const SUBSCRIPTIONS_FILE: &str = "subscriptions.json";

/// The subscription URLs added with `add`, kept in the data directory `dir`.
pub fn saved_subscriptions(dir: &std::path::Path) -> Vec<String> {
    memory::load_subscriptions(&dir.join(SUBSCRIPTIONS_FILE))
}

/// Keeps `urls` as the subscriptions added with `add` in the data directory `dir`.
pub fn save_subscriptions(dir: &std::path::Path, urls: &[String]) {
    memory::save_subscriptions(&dir.join(SUBSCRIPTIONS_FILE), urls);
}

/// What the driver needs besides the servers.
#[derive(Clone, Debug)]
pub struct AutoSettings {
    /// The engine's settings (platform, probe method and timeout, ...).
    pub config: AutoConfig,
    /// The test URL of URL probes.
    pub probe_url: ProbeUrl,
    /// Keep the connections open through the old server on a switch (default: close
    /// them, so apps reconnect through the working server).
    pub keep_connections: bool,
    /// Fetch every subscription again this often, whatever its server advertises
    /// (tests; `None` follows each subscription's `profile-update-interval`, else
    /// [`DEFAULT_REFRESH`]).
    pub refresh_every: Option<Duration>,
    /// The data directory: Auto's memory ([`STATE_FILE`]: history, marks, speeds,
    /// current and return servers), written whenever it changes (atomically) and read
    /// at start, and the subscriptions added later ([`SUBSCRIPTIONS_FILE`]). `None`
    /// keeps nothing.
    pub data_dir: Option<PathBuf>,
    /// The time (the wall clock; tests skip it ahead).
    pub clock: Clock,
    /// What `speedtest` downloads.
    pub speedtest_url: ProbeUrl,
}

impl AutoSettings {
    /// The defaults with this engine config and probe URL: connections closed on a
    /// switch, subscriptions refreshed on their own interval, nothing kept on disk, the
    /// wall clock, the default speed-test URL.
    pub fn new(config: AutoConfig, probe_url: ProbeUrl) -> Self {
        Self {
            config,
            probe_url,
            keep_connections: false,
            refresh_every: None,
            data_dir: None,
            clock: Clock::default(),
            speedtest_url: ProbeUrl::parse(crate::speedtest::DEFAULT_URL)
                .unwrap_or_else(|e| unreachable!("the default speed-test URL reads: {e}")),
        }
    }
}

/// What `status` shows besides the engine's state: the current server, the last
/// check and the last events.
#[derive(Clone, Debug, Default)]
pub struct Status {
    /// The current server's name.
    pub current: Option<String>,
    /// The last check's report, as `status` shows it.
    pub last_check: Option<Value>,
    /// The last reports, newest last (at most 50).
    pub log: Vec<String>,
}

/// A finished speed test: the server, its speed, where the answer goes.
type SpeedResult = (ServerId, crate::speedtest::Speed, oneshot::Sender<Value>);

/// The inputs of a running driver besides its subscriptions.
#[derive(Debug)]
pub struct Inputs {
    /// Identities of servers a connection could not be made through (the proxy's).
    pub failed: mpsc::UnboundedReceiver<String>,
    /// Requests from the control socket.
    pub control: mpsc::UnboundedReceiver<crate::control::Call>,
    /// The network's changes (`crate::network::watch`), if watched.
    pub network: Option<mpsc::UnboundedReceiver<NetworkEvent>>,
}

/// The driver's state between inputs.
struct Driver {
    engine: Engine,
    proxy: Proxy,
    settings: AutoSettings,
    status: Arc<Mutex<Status>>,
    /// Every server Auto may name, by identity.
    by_id: HashMap<ServerId, Arc<Outbound>>,
    /// The subscriptions as Auto knows them, in order.
    known: Vec<Subscription>,
    /// Their URLs, in the same order (a subscription without one is never fetched).
    urls: Vec<Option<String>>,
    updates: mpsc::UnboundedSender<SubscriptionServers>,
    added: mpsc::UnboundedSender<(SubscriptionServers, oneshot::Sender<Value>)>,
    speeds: mpsc::UnboundedSender<SpeedResult>,
    results: mpsc::UnboundedSender<(CheckId, Vec<(ServerId, ProbeReply)>)>,
    /// The last network state reported.
    network_up: bool,
    saved: String,
    /// Failed connects taken in from the proxy (see `crate::proxy::hold`).
    failures_seen: u64,
}

/// Runs Auto over `subs` (on in the subscription Auto's memory names, else the first)
/// on `proxy` until the runtime ends.
pub async fn run(
    proxy: Proxy,
    subs: Vec<SubscriptionServers>,
    settings: AutoSettings,
    inputs: Inputs,
    status: Arc<Mutex<Status>>,
) {
    let Inputs {
        mut failed,
        mut control,
        mut network,
    } = inputs;
    let engine = match &settings.data_dir {
        Some(dir) => Engine::with_state(
            settings.config.clone(),
            memory::load_state(&dir.join(STATE_FILE)),
        ),
        None => Engine::new(settings.config.clone()),
    };
    let (updates, mut updates_rx) = mpsc::unbounded_channel();
    let (added, mut added_rx) = mpsc::unbounded_channel();
    let (results, mut results_rx) = mpsc::unbounded_channel();
    let (speeds, mut speeds_rx) = mpsc::unbounded_channel();
    let mut d = Driver {
        engine,
        proxy,
        settings,
        status,
        by_id: HashMap::new(),
        known: Vec::new(),
        urls: Vec::new(),
        updates,
        added,
        speeds,
        results,
        network_up: true,
        saved: String::new(),
        failures_seen: 0,
    };
    for s in &subs {
        d.track(s);
    }
    d.known = subs.iter().map(|s| s.auto(&mut d.by_id)).collect();
    let Some(on) = d.auto_subscription() else {
        return;
    };
    d.feed(Event::Subscriptions(d.known.clone()));
    d.feed(Event::AutoOn { subscription: on });
    let mut tick = tokio::time::interval(TRAFFIC_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        d.flush();
        d.publish_hold();
        let wake = d.engine.poll_timeout().map(|t| {
            let wait = t.0.saturating_sub(d.now().0).max(0);
            tokio::time::Instant::now() + Duration::from_millis(u64::try_from(wait).unwrap_or(0))
        });
        tokio::select! {
            _ = tick.tick() => {
                let (sent, received) = d.proxy.meter().totals();
                d.feed(Event::Traffic { sent, received });
            }
            () = async {
                match wake {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            } => {
                let now = d.now();
                d.engine.handle_timeout(now);
            }
            Some(identity) = failed.recv() => {
                d.failures_seen = d.failures_seen.saturating_add(1);
                d.feed(Event::ConnectFailed { server: ServerId::new(identity) });
            }
            Some((check, replies)) = results_rx.recv() => {
                d.feed(Event::ProbeResults { check, replies });
            }
            Some(update) = updates_rx.recv() => d.updated(&update),
            Some((server, speed, reply)) = speeds_rx.recv() => {
                let answer = d.speed(server, speed);
                let _ = reply.send(answer);
            }
            Some((sub, reply)) = added_rx.recv() => {
                let answer = d.add(&sub);
                let _ = reply.send(answer);
            }
            Some(event) = async {
                match network.as_mut() {
                    Some(n) => n.recv().await,
                    None => std::future::pending().await,
                }
            } => d.network(event),
            Some((request, reply)) = control.recv() => {
                let answer = d.command(request, reply);
                if let Some((answer, reply)) = answer {
                    let _ = reply.send(answer);
                }
            }
        }
    }
}

impl Driver {
    fn now(&self) -> Timestamp {
        self.settings.clock.now()
    }

    fn feed(&mut self, event: Event) {
        let now = self.now();
        if let Err(e) = self.engine.handle_event(now, event) {
            tracing::warn!("Auto refused an input: {e}");
        }
    }

    /// The subscription to turn Auto on in: the one Auto's memory names when it is
    /// still there, else the first.
    fn auto_subscription(&self) -> Option<String> {
        let remembered = self.engine.state().auto.as_deref();
        self.known
            .iter()
            .find(|s| Some(s.name.as_str()) == remembered)
            .or_else(|| self.known.first())
            .map(|s| s.name.clone())
    }

    /// Starts fetching `s` again on its interval, and remembers its URL.
    fn track(&mut self, s: &SubscriptionServers) {
        if let Some(url) = &s.url {
            let every = self
                .settings
                .refresh_every
                .or(s.update_interval)
                .unwrap_or(DEFAULT_REFRESH);
            let (url, updates) = (url.clone(), self.updates.clone());
            // Restarted if it ever fails: one bad answer must not end the refreshes.
            switchyard_tunnel::supervise::supervise(
                format!("refreshing the subscription {url}"),
                tokio_util::sync::CancellationToken::new(),
                std::sync::Arc::default(),
                move || subs::refresh(url.clone(), every, updates.clone()),
            );
        }
        self.urls.push(s.url.clone());
    }

    /// Acts on the engine's outputs, then keeps its memory when it changed.
    fn flush(&mut self) {
        while let Some(output) = self.engine.poll_output() {
            self.act(output);
        }
        if let Some(dir) = &self.settings.data_dir {
            let text = serde_json::to_string(self.engine.state()).unwrap_or_default();
            if text != self.saved {
                memory::save_state(&dir.join(STATE_FILE), &text);
                self.saved = text;
            }
        }
    }

    /// Tells the proxy whether to hold new connections, and until when: while a
    /// failed connect waits for a check's verdict (`Engine::hold_until`). Called after
    /// the outputs are acted on, so a switch is in place before the hold ends.
    fn publish_hold(&self) {
        let until = self.engine.hold_until().map(|t| {
            let wait = u64::try_from(t.0.saturating_sub(self.now().0)).unwrap_or(0);
            tokio::time::Instant::now() + Duration::from_millis(wait)
        });
        let standby = self
            .engine
            .standby()
            .iter()
            .filter_map(|id| self.by_id.get(id).cloned())
            .collect();
        self.proxy.set_hold(crate::proxy::hold::HoldState {
            until,
            failures_seen: self.failures_seen,
            standby,
        });
    }

    fn updated(&mut self, update: &SubscriptionServers) {
        let sub = update.auto(&mut self.by_id);
        if let Some(k) = self.known.iter_mut().find(|k| k.name == sub.name) {
            *k = sub.clone();
        }
        self.follow_current();
        self.feed(Event::SubscriptionUpdated(sub));
    }

    /// When the current server is still there but its entry changed (a route whose
    /// balancer moved the user: same identity, another address), new connections go
    /// to the new address at once; the open ones stay (the old inbound still serves
    /// them). Auto sees the same server: nothing is removed, no check is needed.
    fn follow_current(&mut self) {
        let Some(current) = self.engine.state().current.clone() else {
            return;
        };
        let (Some(new), Some(old)) = (self.by_id.get(&current), self.proxy.server()) else {
            return;
        };
        if old.identity() == current.as_str() && old.entry() != new.entry() {
            let (from, to) = (old.entry(), new.entry());
            self.note(format!(
                "{} moved from {}:{} to {}:{}",
                to.name, from.server, from.port, to.server, to.port
            ));
            self.proxy.switch(new.clone(), false);
            self.status
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .current = Some(to.name.clone());
        }
    }

    /// A subscription added by the user: it joins the end of the list (a neighbour of
    /// the last one) and the saved list.
    fn add(&mut self, sub: &SubscriptionServers) -> Value {
        if self.known.iter().any(|k| k.name == sub.name) {
            return json!({"ok": false, "error": format!("{} is already a subscription", sub.name)});
        }
        self.track(sub);
        let auto = sub.auto(&mut self.by_id);
        let servers = auto.servers.len();
        self.known.push(auto);
        self.feed(Event::Subscriptions(self.known.clone()));
        if let Some(dir) = &self.settings.data_dir {
            let mut saved = saved_subscriptions(dir);
            if let Some(url) = &sub.url
                && !saved.contains(url)
            {
                saved.push(url.clone());
                save_subscriptions(dir, &saved);
            }
        }
        json!({"ok": true, "subscription": sub.name, "servers": servers})
    }

    /// A speed test's result: to Auto, and to the user.
    fn speed(&mut self, server: ServerId, speed: crate::speedtest::Speed) -> Value {
        let name = self.name_of(&server);
        self.note(format!("speed test of {name}: {:.1} Mbit/s", speed.mbps));
        self.feed(Event::SpeedTest {
            server,
            mbps: speed.mbps,
        });
        json!({
            "ok": true,
            "server": name,
            "mbps": speed.mbps,
            "bytes": speed.bytes,
            "seconds": speed.elapsed.as_secs_f64(),
        })
    }

    /// What the network watch saw: its loss and return, and moves between networks.
    fn network(&mut self, event: NetworkEvent) {
        let up = event.available;
        if up != self.network_up {
            self.network_up = up;
            self.note(format!("network {}", if up { "back" } else { "gone" }));
            self.feed(Event::NetworkAvailable(up));
        } else if up {
            self.feed(Event::NetworkChanged);
        }
    }

    fn note(&self, line: String) {
        tracing::info!("{line}");
        let mut s = self.status.lock().unwrap_or_else(|p| p.into_inner());
        s.log.push(line);
        let len = s.log.len();
        if len > 50 {
            s.log.drain(..len - 50);
        }
    }

    fn name_of(&self, id: &ServerId) -> String {
        self.by_id
            .get(id)
            .map_or_else(|| id.as_str().to_owned(), |o| o.entry().name.clone())
    }

    fn act(&mut self, output: Output) {
        match output {
            Output::Probe(check) => self.spawn_check(check),
            Output::Connect { server, reason } => {
                let Some(o) = self.by_id.get(&server) else {
                    tracing::warn!(server = %server.as_str(), "Auto chose a server the client does not know");
                    return;
                };
                self.proxy
                    .switch(o.clone(), !self.settings.keep_connections);
                let name = o.entry().name.clone();
                self.status
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .current = Some(name.clone());
                // The line the CLI prints and tests read.
                println!("server: {name} ({reason:?})");
                self.note(format!("connected to {name} ({reason:?})"));
            }
            Output::CheckDone(report) => {
                let shown = self.report(&report);
                self.note(format!(
                    "check {} ({}): {}{}",
                    report.id,
                    report.trigger.as_str(),
                    report.outcome.as_str(),
                    if report.held {
                        ", held by the switch limit"
                    } else {
                        ""
                    }
                ));
                self.status
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .last_check = Some(shown);
            }
            Output::Switched { from, to, reason } => {
                let (from, to) = (self.name_of(&from), self.name_of(&to));
                self.note(format!("switched from {from} to {to} ({reason:?})"));
            }
            Output::NetworkLost { retry_in } => self.note(format!(
                "every server is silent, neighbours included: the network looks gone; \
                 staying on the server, recording nothing, next attempt in {} s",
                retry_in.as_secs()
            )),
            Output::NoServer {
                subscription,
                deleted,
            } => self.note(if deleted {
                format!("Auto is off: subscription {subscription} is gone")
            } else {
                format!("Auto paused: subscription {subscription} has no server")
            }),
        }
    }

    /// A check's report with server names, as `status` shows it.
    fn report(&self, r: &CheckReport) -> Value {
        json!({
            "id": r.id.0,
            "at_ms": self.now().0,
            "trigger": r.trigger.as_str(),
            "outcome": r.outcome.as_str(),
            "answered": r.answered.iter().map(|(id, ms)| json!({"server": self.name_of(id), "ms": ms})).collect::<Vec<_>>(),
            "silent": r.silent.iter().map(|id| self.name_of(id)).collect::<Vec<_>>(),
            "held": r.held,
            "timed_out": r.timed_out,
        })
    }

    /// Probes every server of `check` at once, each within the check's timeout, and
    /// sends the replies back in the check's order.
    fn spawn_check(&self, check: Check) {
        let tasks: Vec<(ServerId, Option<tokio::task::JoinHandle<ProbeReply>>)> = check
            .servers
            .iter()
            .map(|id| {
                let task = self.by_id.get(id).map(|o| {
                    let (o, url, method, timeout) = (
                        o.clone(),
                        self.settings.probe_url.clone(),
                        check.method,
                        check.timeout,
                    );
                    tokio::spawn(async move { probe(&o, method, &url, timeout).await })
                });
                (id.clone(), task)
            })
            .collect();
        let (id, results) = (check.id, self.results.clone());
        tokio::spawn(async move {
            let mut replies = Vec::with_capacity(tasks.len());
            for (server, task) in tasks {
                let reply = match task {
                    Some(t) => t.await.unwrap_or(ProbeReply::NoAnswer),
                    None => ProbeReply::NoAnswer,
                };
                replies.push((server, reply));
            }
            let _ = results.send((id, replies));
        });
    }
}
