//! Auto on real traffic: the driver around `switchyard-auto`'s [`Engine`] (pure, no
//! I/O, no clock). It feeds the engine the subscriptions, the proxy's traffic meter
//! once a second, the connections that could not be made, and the replies of the
//! probes it runs for every check; it acts on the engine's outputs: a
//! [`Output::Connect`] switches the proxy (closing the connections through the old
//! server, unless told to keep them), a [`Output::Probe`] runs the check's probes
//! concurrently, the reports are logged and kept for `status`.
//!
//! Time is the wall clock in Unix milliseconds, what the engine's state expects.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use switchyard_auto::event::{Check, CheckId};
use switchyard_auto::{
    AutoConfig, Engine, Event, Output, Policy, ProbeReply, Server, ServerId, Subscription,
    Timestamp,
};

use tokio::sync::mpsc;

use crate::outbound::Outbound;
use crate::probe::{ProbeUrl, probe};
use crate::proxy::Proxy;

/// How often the traffic meter is read.
pub const TRAFFIC_EVERY: Duration = Duration::from_secs(1);

/// How often a subscription is fetched again when its server does not say
/// (`profile-update-interval`).
pub const DEFAULT_REFRESH: Duration = Duration::from_secs(12 * 3600);

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
    /// Where Auto's memory (history, marks, speeds, current and return servers) is
    /// kept across restarts; written whenever it changes (atomically), read at start.
    pub state_file: Option<std::path::PathBuf>,
}

/// Auto's memory from `path`: empty when there is none; a file that does not read is
/// set aside (`.bad`) with a warning, so a damaged file never stops the client.
fn load_state(path: &std::path::Path) -> switchyard_auto::State {
    let Ok(text) = std::fs::read_to_string(path) else {
        return switchyard_auto::State::default();
    };
    match serde_json::from_str(&text) {
        Ok(state) => state,
        Err(e) => {
            let aside = path.with_extension("bad");
            tracing::warn!(
                "{}: {e}; set aside as {} and starting afresh",
                path.display(),
                aside.display()
            );
            let _ = std::fs::rename(path, aside);
            switchyard_auto::State::default()
        }
    }
}

/// Writes `text` to `path` so that a crash leaves the old file or the new one, never
/// a torn one: a synced temporary file (`0600`), a rename, the directory synced (as
/// the node's `state::write_atomic`, which this crate does not depend on).
fn save_state(path: &std::path::Path, text: &str) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("tmp");
    let dir = path.parent().unwrap_or(std::path::Path::new("."));
    let done = (|| -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    if let Err(e) = done {
        let _ = std::fs::remove_file(&tmp);
        tracing::warn!("saving Auto's memory to {}: {e}", path.display());
    }
}

/// One subscription's usable servers, in order.
#[derive(Clone, Debug)]
pub struct SubscriptionServers {
    /// Its name: the URL it is fetched from again (`None`: never refreshed).
    pub name: String,
    /// Where to fetch it again, if anywhere.
    pub url: Option<String>,
    /// How often its server asks to be fetched again.
    pub update_interval: Option<Duration>,
    /// The servers.
    pub servers: Vec<Arc<Outbound>>,
}

impl SubscriptionServers {
    /// The usable servers of a fetched subscription, the others logged and left out.
    pub fn from_fetched(url: &str, sub: crate::subscription::Subscription) -> Self {
        let mut servers = Vec::new();
        for entry in sub.entries {
            let name = entry.name.clone();
            match Outbound::new(entry) {
                Ok(o) => servers.push(Arc::new(o)),
                Err(e) => tracing::warn!(server = %name, "left out: {e}"),
            }
        }
        Self {
            name: url.to_owned(),
            url: Some(url.to_owned()),
            update_interval: sub
                .update_interval_hours
                .map(|h| Duration::from_secs(u64::from(h.max(1)) * 3600)),
            servers,
        }
    }

    fn auto(&self, by_id: &mut HashMap<ServerId, Arc<Outbound>>) -> Subscription {
        let mut servers = Vec::new();
        for o in &self.servers {
            let id = ServerId::new(o.identity());
            by_id.insert(id.clone(), o.clone());
            servers.push(Server {
                id,
                name: o.entry().name.clone(),
            });
        }
        Subscription {
            name: self.name.clone(),
            servers,
        }
    }
}

/// Fetches `url` again every `every` and sends what it got; a failed fetch is logged
/// and the old servers stay.
async fn refresh(
    url: String,
    every: Duration,
    updates: mpsc::UnboundedSender<SubscriptionServers>,
) {
    loop {
        tokio::time::sleep(every).await;
        match crate::subscription::fetch(&url).await {
            Ok(sub) => {
                if updates
                    .send(SubscriptionServers::from_fetched(&url, sub))
                    .is_err()
                {
                    return;
                }
            }
            Err(e) => tracing::warn!("refreshing the subscription: {e}"),
        }
    }
}

/// What `status` shows: the current server and the last events.
#[derive(Clone, Debug, Default)]
pub struct Status {
    /// The current server's name.
    pub current: Option<String>,
    /// The last reports, newest last (at most 50).
    pub log: Vec<String>,
}

fn now() -> Timestamp {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    Timestamp(ms)
}

/// Runs Auto over `subs` (on in the first) on `proxy` until the runtime ends; `failed`
/// brings the identities of servers a connection could not be made through.
pub async fn run(
    proxy: Proxy,
    subs: Vec<SubscriptionServers>,
    settings: AutoSettings,
    mut failed: mpsc::UnboundedReceiver<String>,
    status: Arc<Mutex<Status>>,
    mut control: mpsc::UnboundedReceiver<crate::control::Call>,
) {
    let mut by_id: HashMap<ServerId, Arc<Outbound>> = HashMap::new();
    let auto_subs: Vec<Subscription> = subs.iter().map(|s| s.auto(&mut by_id)).collect();
    let (updates_tx, mut updates) = mpsc::unbounded_channel();
    for s in &subs {
        if let Some(url) = &s.url {
            let every = settings
                .refresh_every
                .or(s.update_interval)
                .unwrap_or(DEFAULT_REFRESH);
            tokio::spawn(refresh(url.clone(), every, updates_tx.clone()));
        }
    }
    let urls: Vec<String> = subs.iter().filter_map(|s| s.url.clone()).collect();
    let mut known: Vec<Subscription> = auto_subs.clone();
    let Some(first) = auto_subs.first().map(|s| s.name.clone()) else {
        return;
    };
    let mut engine = match &settings.state_file {
        Some(path) => Engine::with_state(settings.config.clone(), load_state(path)),
        None => Engine::new(settings.config.clone()),
    };
    let mut saved = String::new();
    let feed = |engine: &mut Engine, event: Event| {
        if let Err(e) = engine.handle_event(now(), event) {
            tracing::warn!("Auto refused an input: {e}");
        }
    };
    feed(&mut engine, Event::Subscriptions(auto_subs));
    feed(
        &mut engine,
        Event::AutoOn {
            subscription: first,
        },
    );
    let (results_tx, mut results) =
        mpsc::unbounded_channel::<(CheckId, Vec<(ServerId, ProbeReply)>)>();
    let mut tick = tokio::time::interval(TRAFFIC_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        while let Some(output) = engine.poll_output() {
            act(output, &proxy, &by_id, &settings, &results_tx, &status);
        }
        if let Some(path) = &settings.state_file {
            let text = serde_json::to_string(engine.state()).unwrap_or_default();
            if text != saved {
                save_state(path, &text);
                saved = text;
            }
        }
        let wake = engine.poll_timeout().map(|t| {
            let wait = t.0.saturating_sub(now().0).max(0);
            tokio::time::Instant::now() + Duration::from_millis(u64::try_from(wait).unwrap_or(0))
        });
        tokio::select! {
            _ = tick.tick() => {
                let (sent, received) = proxy.meter().totals();
                feed(&mut engine, Event::Traffic { sent, received });
            }
            () = async {
                match wake {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            } => engine.handle_timeout(now()),
            Some(identity) = failed.recv() => {
                feed(&mut engine, Event::ConnectFailed { server: ServerId::new(identity) });
            }
            Some((check, replies)) = results.recv() => {
                feed(&mut engine, Event::ProbeResults { check, replies });
            }
            Some(update) = updates.recv() => {
                let sub = update.auto(&mut by_id);
                if let Some(k) = known.iter_mut().find(|k| k.name == sub.name) {
                    *k = sub.clone();
                }
                feed(&mut engine, Event::SubscriptionUpdated(sub));
            }
            Some((request, reply)) = control.recv() => {
                let answer = command(request, &mut engine, &known, &status, &urls, &updates_tx);
                let _ = reply.send(answer);
            }
        }
    }
}

/// A user's request through the control socket.
fn command(
    request: crate::control::Request,
    engine: &mut Engine,
    known: &[Subscription],
    status: &Arc<Mutex<Status>>,
    urls: &[String],
    updates: &mpsc::UnboundedSender<SubscriptionServers>,
) -> serde_json::Value {
    use crate::control::Request;
    use serde_json::json;
    let ids = |names: &[String]| -> Result<Vec<ServerId>, String> {
        names
            .iter()
            .map(|n| {
                known
                    .iter()
                    .flat_map(|s| &s.servers)
                    .find(|s| &s.name == n)
                    .map(|s| s.id.clone())
                    .ok_or_else(|| format!("no server named {n:?}"))
            })
            .collect()
    };
    let mut feed = |event| match engine.handle_event(now(), event) {
        Ok(()) => json!({"ok": true}),
        Err(e) => json!({"ok": false, "error": e.to_string()}),
    };
    match request {
        Request::Status => {
            let state = engine.state();
            let at = now();
            let name_of = |id: &ServerId| {
                known
                    .iter()
                    .flat_map(|s| &s.servers)
                    .find(|s| &s.id == id)
                    .map(|s| s.name.clone())
            };
            let subscriptions: Vec<serde_json::Value> = known
                .iter()
                .map(|s| {
                    let servers: Vec<serde_json::Value> = s
                        .servers
                        .iter()
                        .map(|srv| {
                            let score = state
                                .history
                                .get(&srv.id)
                                .and_then(|h| switchyard_auto::score::score(h, at));
                            json!({
                                "name": srv.name,
                                "score": score,
                                "marked": state.marks.contains(&srv.id),
                                "current": state.current.as_ref() == Some(&srv.id),
                            })
                        })
                        .collect();
                    json!({"name": s.name, "auto": state.auto.as_deref() == Some(s.name.as_str()), "servers": servers})
                })
                .collect();
            let s = status.lock().unwrap_or_else(|p| p.into_inner());
            json!({
                "ok": true,
                "current": state.current.as_ref().and_then(name_of),
                "return_to": state.return_to.as_ref().and_then(name_of),
                "subscriptions": subscriptions,
                "log": s.log,
            })
        }
        Request::Mark { servers } => match ids(&servers) {
            Ok(ids) => feed(Event::Mark(ids)),
            Err(e) => json!({"ok": false, "error": e}),
        },
        Request::Unmark { servers } => match ids(&servers) {
            Ok(ids) => feed(Event::Unmark(ids)),
            Err(e) => json!({"ok": false, "error": e}),
        },
        Request::Done => feed(Event::MarksDone),
        Request::Update => {
            for url in urls {
                let (url, updates) = (url.clone(), updates.clone());
                tokio::spawn(async move {
                    match crate::subscription::fetch(&url).await {
                        Ok(sub) => {
                            let _ = updates.send(SubscriptionServers::from_fetched(&url, sub));
                        }
                        Err(e) => tracing::warn!("updating the subscription: {e}"),
                    }
                });
            }
            json!({"ok": true, "updating": urls.len()})
        }
    }
}

fn act(
    output: Output,
    proxy: &Proxy,
    by_id: &HashMap<ServerId, Arc<Outbound>>,
    settings: &AutoSettings,
    results: &mpsc::UnboundedSender<(CheckId, Vec<(ServerId, ProbeReply)>)>,
    status: &Arc<Mutex<Status>>,
) {
    let note = |line: String| {
        tracing::info!("{line}");
        let mut s = status.lock().unwrap_or_else(|p| p.into_inner());
        s.log.push(line);
        let len = s.log.len();
        if len > 50 {
            s.log.drain(..len - 50);
        }
    };
    match output {
        Output::Probe(check) => spawn_check(check, by_id, settings, results.clone()),
        Output::Connect { server, reason } => {
            let Some(o) = by_id.get(&server) else {
                tracing::warn!(server = %server.as_str(), "Auto chose a server the client does not know");
                return;
            };
            proxy.switch(o.clone(), !settings.keep_connections);
            status.lock().unwrap_or_else(|p| p.into_inner()).current = Some(o.entry().name.clone());
            // The line the CLI prints and tests read.
            println!("server: {} ({reason:?})", o.entry().name);
            note(format!("connected to {} ({reason:?})", o.entry().name));
        }
        other => note(format!("{other:?}")),
    }
}

/// Probes every server of `check` at once, each within the check's timeout, and sends
/// the replies back in the check's order.
fn spawn_check(
    check: Check,
    by_id: &HashMap<ServerId, Arc<Outbound>>,
    settings: &AutoSettings,
    results: mpsc::UnboundedSender<(CheckId, Vec<(ServerId, ProbeReply)>)>,
) {
    let tasks: Vec<(ServerId, Option<tokio::task::JoinHandle<ProbeReply>>)> = check
        .servers
        .iter()
        .map(|id| {
            let task = by_id.get(id).map(|o| {
                let (o, url, method, timeout) = (
                    o.clone(),
                    settings.probe_url.clone(),
                    check.method,
                    check.timeout,
                );
                tokio::spawn(async move { probe(&o, method, &url, timeout).await })
            });
            (id.clone(), task)
        })
        .collect();
    let id = check.id;
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
