//! The user's requests through the control socket, answered from the driver's state.

use serde_json::{Value, json};
use switchyard_auto::history::History;
use switchyard_auto::score::{self, Standing};
use switchyard_auto::{Event, Policy, ServerId};
use tokio::sync::oneshot;

use super::{Driver, SubscriptionServers};
use crate::control::Request;

/// Why a control request names nothing this client knows (answered as its `error`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum NamingError {
    /// No server of any subscription has this name.
    #[error("no server named {0:?}")]
    UnknownServer(String),
    /// No subscription has this URL or number.
    #[error("no subscription {which:?}: name its URL or its number (1 to {known})")]
    UnknownSubscription {
        /// What the request named.
        which: String,
        /// How many subscriptions there are.
        known: usize,
    },
    /// A speed test that names no server while none is current.
    #[error("no current server: name one")]
    NoCurrent,
}

impl Driver {
    /// Answers `request`: at once (the answer and where it goes), or later for one
    /// that waits on the network (`add`), which answers through `reply` itself.
    pub(super) fn command(
        &mut self,
        request: Request,
        reply: oneshot::Sender<Value>,
    ) -> Option<(Value, oneshot::Sender<Value>)> {
        let answer = match request {
            Request::Status => self.status(),
            Request::Mark { servers } => match self.ids(&servers) {
                Ok(ids) => self.feed_answer(Event::Mark(ids)),
                Err(e) => json!({"ok": false, "error": e.to_string()}),
            },
            Request::Unmark { servers } => match self.ids(&servers) {
                Ok(ids) => self.feed_answer(Event::Unmark(ids)),
                Err(e) => json!({"ok": false, "error": e.to_string()}),
            },
            Request::Done => self.feed_answer(Event::MarksDone),
            Request::AutoOn { subscription } => match self.subscription_named(&subscription) {
                Ok(name) => self.feed_answer(Event::AutoOn { subscription: name }),
                Err(e) => json!({"ok": false, "error": e.to_string()}),
            },
            Request::Update => {
                let urls: Vec<String> = self.urls.iter().flatten().cloned().collect();
                for url in &urls {
                    let (url, updates) = (url.clone(), self.updates.clone());
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
            Request::Speedtest { server } => {
                let found = match &server {
                    Some(name) => self
                        .ids(std::slice::from_ref(name))
                        .map(|mut v| v.remove(0)),
                    None => self
                        .engine
                        .state()
                        .current
                        .clone()
                        .ok_or(NamingError::NoCurrent),
                };
                match found.map(|id| (self.by_id.get(&id).cloned(), id)) {
                    Ok((Some(outbound), id)) => {
                        let (url, speeds) =
                            (self.settings.speedtest_url.clone(), self.speeds.clone());
                        tokio::spawn(async move {
                            match crate::speedtest::run(&outbound, &url).await {
                                Ok(speed) => {
                                    let _ = speeds.send((id, speed, reply));
                                }
                                Err(e) => {
                                    let _ =
                                        reply.send(json!({"ok": false, "error": e.to_string()}));
                                }
                            }
                        });
                        return None;
                    }
                    Ok((None, id)) => {
                        json!({"ok": false, "error": format!("server {} is in no subscription", id.as_str())})
                    }
                    Err(e) => json!({"ok": false, "error": e.to_string()}),
                }
            }
            Request::Add { url } => {
                if self.urls.iter().flatten().any(|u| *u == url) {
                    json!({"ok": false, "error": format!("{url} is already a subscription")})
                } else {
                    let added = self.added.clone();
                    tokio::spawn(async move {
                        match crate::subscription::fetch(&url).await {
                            Ok(sub) => {
                                let _ = added
                                    .send((SubscriptionServers::from_fetched(&url, sub), reply));
                            }
                            Err(e) => {
                                let _ = reply.send(json!({"ok": false, "error": e.to_string()}));
                            }
                        }
                    });
                    return None;
                }
            }
        };
        Some((answer, reply))
    }

    fn feed_answer(&mut self, event: Event) -> Value {
        let now = self.now();
        match self.engine.handle_event(now, event) {
            Ok(()) => json!({"ok": true}),
            Err(e) => json!({"ok": false, "error": e.to_string()}),
        }
    }

    /// The identities of servers named `names`.
    fn ids(&self, names: &[String]) -> Result<Vec<ServerId>, NamingError> {
        names
            .iter()
            .map(|n| {
                self.known
                    .iter()
                    .flat_map(|s| &s.servers)
                    .find(|s| &s.name == n)
                    .map(|s| s.id.clone())
                    .ok_or_else(|| NamingError::UnknownServer(n.clone()))
            })
            .collect()
    }

    /// The subscription `which` names: its URL or its place in the list (1 is the
    /// first).
    fn subscription_named(&self, which: &str) -> Result<String, NamingError> {
        if let Some(s) = self.known.iter().find(|s| s.name == which) {
            return Ok(s.name.clone());
        }
        match which.parse::<usize>() {
            Ok(n) if (1..=self.known.len()).contains(&n) => Ok(self.known[n - 1].name.clone()),
            _ => Err(NamingError::UnknownSubscription {
                which: which.to_owned(),
                known: self.known.len(),
            }),
        }
    }

    /// The queue of every subscription with each server's score and its parts, the
    /// current and return servers, the back-off, the last check and events.
    fn status(&self) -> Value {
        let state = self.engine.state();
        let at = self.now();
        let empty = History::new();
        let subscriptions: Vec<Value> = self
            .known
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let queue =
                    switchyard_auto::queue::rank(&s.servers, &state.history, &state.speeds, at);
                let servers: Vec<Value> = queue
                    .iter()
                    .map(|place| {
                        let srv = &s.servers[place.position];
                        let history = state.history.get(&srv.id).unwrap_or(&empty);
                        let parts = score::parts(history, at);
                        json!({
                            "name": srv.name,
                            "score": score::score(history, at),
                            "standing": standing(place.standing),
                            "typical_ms": parts.and_then(|p| p.typical_ms),
                            "jumps_ms": parts.map(|p| p.jumps_ms),
                            "failures": parts.map(|p| p.failures),
                            "measurements": parts.map_or(0, |p| p.measurements),
                            "speed_mbps": state.speeds.get(&srv.id),
                            "marked": state.marks.contains(&srv.id),
                            "current": state.current.as_ref() == Some(&srv.id),
                            "return_to": state.return_to.as_ref() == Some(&srv.id),
                        })
                    })
                    .collect();
                json!({
                    "number": i + 1,
                    "name": s.name,
                    "auto": state.auto.as_deref() == Some(s.name.as_str()),
                    "servers": servers,
                })
            })
            .collect();
        let back_off = self.engine.network_pause().map(|p| {
            json!({
                "attempts": p.attempts,
                "since_ms": p.since.0,
                "retry_in_ms": (p.until.0 - at.0).max(0),
            })
        });
        let s = self.status.lock().unwrap_or_else(|p| p.into_inner());
        json!({
            "ok": true,
            "current": state.current.as_ref().map(|id| self.name_of(id)),
            "return_to": state.return_to.as_ref().map(|id| self.name_of(id)),
            "network": if self.network_up { "up" } else { "down" },
            "back_off": back_off,
            "last_check": s.last_check,
            "subscriptions": subscriptions,
            "log": s.log,
        })
    }
}

/// A standing in words: `scored`, `speed_tested`, `unchecked` or `latest_silent`.
fn standing(s: Standing) -> &'static str {
    match s {
        Standing::Scored(_) => "scored",
        Standing::SpeedTested(_) => "speed_tested",
        Standing::Unchecked => "unchecked",
        Standing::LatestSilent => "latest_silent",
    }
}
