//! [`Scenario::validate`]: every rule of the scenario format, each failure naming its
//! field.

use core::time::Duration;
use std::collections::{HashMap, HashSet};

use switchyard_auto::config::Platform;
use switchyard_auto::measurement::{Measurement, Method};
use switchyard_auto::server::{Server, ServerId, Subscription};
use switchyard_auto::time::Timestamp;

use super::error::ScenarioError;
use super::plan::{Action, ActionKind, MAX_PROBE_TIMEOUT_S, MAX_UNTIL_S, Plan, merge_intervals};
use super::scenario::{ActionSpec, Scenario, ServerSpec, WorldSpec};
use super::world::{NetworkState, ServerState, World, WorldEntry, WorldTarget};

use super::fields::{
    MAX_ABS_TIME_S, Result, Speeds, duplicate, flag, interval, keyword, latency, ms, number, range,
    speeds_of, unknown_sub,
};

impl Scenario {
    /// Checks every rule of the format and resolves the scenario into a [`Plan`].
    /// The first problem found is returned, naming its field path.
    pub fn validate(&self) -> Result<Plan> {
        let platform = match self.platform.as_str() {
            "desktop" => Platform::Desktop,
            "mobile" => Platform::Mobile,
            other => return Err(keyword("platform", "platform", other, "desktop or mobile")),
        };
        let until_s = number("until", self.until, 0.0, MAX_UNTIL_S, "0 < until ≤ 31 days")?;
        if until_s <= 0.0 {
            return Err(range("until", until_s, "0 < until ≤ 31 days"));
        }
        let until = ms(until_s);
        let timeout_s = number(
            "probe_timeout",
            self.probe_timeout,
            0.0,
            MAX_PROBE_TIMEOUT_S,
            "0 < probe_timeout ≤ 3600",
        )?;
        if timeout_s <= 0.0 {
            return Err(range(
                "probe_timeout",
                timeout_s,
                "0 < probe_timeout ≤ 3600",
            ));
        }
        let mut names = Names::default();
        let (subscriptions, speeds) = self.subscriptions(&mut names)?;
        let auto = subscriptions
            .iter()
            .find(|s| s.name == self.auto)
            .ok_or_else(|| unknown_sub("auto", &self.auto))?;
        if auto.servers.is_empty() {
            return Err(ScenarioError::invalid(
                "auto",
                format!("subscription {:?} has no servers", self.auto),
            ));
        }
        let actions = self.actions(&mut names, until)?;
        let history = self.history(&names)?;
        let world = self.world(&names)?;
        let mut traffic = Vec::with_capacity(self.traffic.len());
        for (i, t) in self.traffic.iter().enumerate() {
            traffic.push(interval(&format!("traffic[{i}]"), t.from, t.to, until)?);
        }
        Ok(Plan {
            platform,
            until,
            probe_timeout: Duration::from_millis(ms(timeout_s).as_millis() as u64),
            auto: self.auto.clone(),
            subscriptions,
            history,
            speeds,
            world: World::new(names.ids, &world),
            traffic: merge_intervals(traffic, until),
            actions,
        })
    }

    fn subscriptions(&self, names: &mut Names) -> Result<(Vec<Subscription>, Speeds)> {
        if self.subscriptions.is_empty() {
            return Err(ScenarioError::invalid("subscriptions", "must not be empty"));
        }
        let mut subs: Vec<Subscription> = Vec::with_capacity(self.subscriptions.len());
        let mut speeds = Vec::new();
        for (i, s) in self.subscriptions.iter().enumerate() {
            let field = format!("subscriptions[{i}]");
            if s.name.is_empty() {
                return Err(ScenarioError::invalid(format!("{field}.name"), "is empty"));
            }
            if subs.iter().any(|x| x.name == s.name) {
                return Err(ScenarioError::Duplicate {
                    field: format!("{field}.name"),
                    what: "subscription",
                    name: s.name.clone(),
                });
            }
            let servers = names.claim(&format!("{field}.servers"), &s.name, &s.servers)?;
            speeds.extend(speeds_of(&format!("{field}.servers"), &s.servers)?);
            subs.push(Subscription {
                name: s.name.clone(),
                servers,
            });
        }
        Ok((subs, speeds))
    }

    fn actions(&self, names: &mut Names, until: Timestamp) -> Result<Vec<Action>> {
        let mut out = Vec::with_capacity(self.actions.len());
        for (i, a) in self.actions.iter().enumerate() {
            let field = format!("actions[{i}]");
            let at_s = number(&format!("{field}.at"), a.at, 0.0, MAX_ABS_TIME_S, "0 ≤ at")?;
            let at = ms(at_s);
            if at >= until {
                return Err(ScenarioError::invalid(
                    format!("{field}.at"),
                    format!("{at_s} is not before until ({})", self.until),
                ));
            }
            let kind = self.action(&field, a, names)?;
            out.push(Action { at, kind });
        }
        // Stable: actions at the same time keep file order.
        out.sort_by_key(|a| a.at);
        Ok(out)
    }

    fn action(&self, field: &str, a: &ActionSpec, names: &mut Names) -> Result<ActionKind> {
        let given: Vec<&str> = [
            ("mark", a.mark.is_some()),
            ("unmark", a.unmark.is_some()),
            ("done", a.done.is_some()),
            ("update", a.update.is_some()),
            ("network_change", a.network_change.is_some()),
            ("auto_on", a.auto_on.is_some()),
        ]
        .iter()
        .filter(|(_, set)| *set)
        .map(|(n, _)| *n)
        .collect();
        // None given: the last branch below says so.
        if let [first, second, ..] = given.as_slice() {
            return Err(ScenarioError::invalid(
                field,
                format!("has both {first} and {second}; give one action per entry"),
            ));
        }
        let resolve = |key: &str, list: &[String]| -> Result<Vec<ServerId>> {
            list.iter()
                .enumerate()
                .map(|(j, n)| names.known(&format!("{field}.{key}[{j}]"), n))
                .collect()
        };
        Ok(if let Some(list) = &a.mark {
            ActionKind::Mark(resolve("mark", list)?)
        } else if let Some(list) = &a.unmark {
            ActionKind::Unmark(resolve("unmark", list)?)
        } else if let Some(done) = a.done {
            flag(&format!("{field}.done"), done)?;
            ActionKind::Done
        } else if let Some(flag_set) = a.network_change {
            flag(&format!("{field}.network_change"), flag_set)?;
            ActionKind::NetworkChange
        } else if let Some(sub) = &a.auto_on {
            self.known_sub(&format!("{field}.auto_on"), sub)?;
            ActionKind::AutoOn(sub.clone())
        } else if let Some(up) = &a.update {
            let f = format!("{field}.update");
            self.known_sub(&format!("{f}.subscription"), &up.subscription)?;
            let servers = names.claim(&format!("{f}.servers"), &up.subscription, &up.servers)?;
            ActionKind::Update {
                speeds: speeds_of(&format!("{f}.servers"), &up.servers)?,
                subscription: Subscription {
                    name: up.subscription.clone(),
                    servers,
                },
            }
        } else {
            return Err(ScenarioError::invalid(
                field,
                "no action: give one of mark, unmark, done, update, network_change, auto_on",
            ));
        })
    }

    fn known_sub(&self, field: &str, name: &str) -> Result<()> {
        if self.subscriptions.iter().any(|s| s.name == name) {
            Ok(())
        } else {
            Err(unknown_sub(field, name))
        }
    }

    fn history(&self, names: &Names) -> Result<Vec<(ServerId, Measurement)>> {
        let mut out = Vec::with_capacity(self.history.len());
        for (i, h) in self.history.iter().enumerate() {
            let field = format!("history[{i}]");
            let id = names.known(&format!("{field}.server"), &h.server)?;
            let at = number(&format!("{field}.at"), h.at, -MAX_ABS_TIME_S, 0.0, "at ≤ 0")?;
            let method: Method = h.method.parse().map_err(|_| {
                keyword(
                    &format!("{field}.method"),
                    "method",
                    &h.method,
                    "tcp, url or icmp",
                )
            })?;
            let delay = match h.ms {
                None => None,
                Some(v) => Some(latency(&format!("{field}.ms"), v)?),
            };
            let m = Measurement {
                at: ms(at),
                method,
                ms: delay,
            };
            out.push((id, m));
        }
        Ok(out)
    }

    fn world(&self, names: &Names) -> Result<Vec<WorldEntry>> {
        let mut out = Vec::with_capacity(self.world.len());
        for (i, w) in self.world.iter().enumerate() {
            let field = format!("world[{i}]");
            let (from, to) = interval(&field, w.from, w.to, Timestamp(i64::MAX))?;
            let target = world_target(&field, w, names)?;
            out.push(WorldEntry { target, from, to });
        }
        Ok(out)
    }
}

fn world_target(field: &str, w: &WorldSpec, names: &Names) -> Result<WorldTarget> {
    match (&w.server, &w.network) {
        (Some(_), Some(_)) => Err(ScenarioError::invalid(
            field,
            "has both server and network; give one per entry",
        )),
        (None, None) => Err(ScenarioError::invalid(field, "needs server or network")),
        (None, Some(net)) => {
            if w.ms.is_some() || w.down.is_some() || w.how.is_some() {
                return Err(ScenarioError::invalid(
                    field,
                    "a network entry takes only network, from and to",
                ));
            }
            let state = match net.as_str() {
                "down" => NetworkState::Down,
                "none" => NetworkState::Absent,
                other => {
                    let f = format!("{field}.network");
                    return Err(keyword(&f, "network state", other, "down or none"));
                }
            };
            Ok(WorldTarget::Network(state))
        }
        (Some(server), None) => {
            let index = if server == "*" {
                None
            } else {
                Some(names.index_of(&format!("{field}.server"), server)?)
            };
            let how = match w.how.as_deref() {
                None | Some("blackhole") => ServerState::Blackhole,
                Some("refuse") => ServerState::Refuses,
                Some(other) => {
                    let f = format!("{field}.how");
                    return Err(keyword(&f, "how", other, "blackhole or refuse"));
                }
            };
            let state = match (w.down, w.ms) {
                (Some(true), None) => how,
                (Some(true), Some(_)) => {
                    return Err(ScenarioError::invalid(
                        field,
                        "has both down: true and ms; a down server has no latency",
                    ));
                }
                (_, Some(v)) if w.how.is_none() => ServerState::Answers {
                    ms: latency(&format!("{field}.ms"), v)?,
                },
                (_, Some(_)) => {
                    return Err(ScenarioError::invalid(
                        format!("{field}.how"),
                        "applies only with down: true",
                    ));
                }
                (_, None) => {
                    return Err(ScenarioError::invalid(
                        field,
                        "needs ms (the latency) or down: true",
                    ));
                }
            };
            Ok(WorldTarget::Server(index, state))
        }
    }
}

/// Server names known to the scenario, with the subscription each belongs to. Index
/// order is first appearance: initial subscriptions, then updates in file order.
#[derive(Default)]
struct Names {
    ids: Vec<ServerId>,
    owner: HashMap<String, (usize, String)>,
}

impl Names {
    /// Resolves `servers` of subscription `sub`: new names become its own, names of
    /// another subscription or repeated ones are refused.
    fn claim(&mut self, field: &str, sub: &str, servers: &[ServerSpec]) -> Result<Vec<Server>> {
        let mut out: Vec<Server> = Vec::with_capacity(servers.len());
        // A set, not a scan of `out`: a scan is quadratic in a large subscription.
        let mut seen: HashSet<&str> = HashSet::with_capacity(servers.len());
        for (j, s) in servers.iter().enumerate() {
            let f = format!("{field}[{j}]");
            if s.name.is_empty() || s.name == "*" {
                return Err(ScenarioError::invalid(
                    f,
                    format!("{:?} can't be a server name", s.name),
                ));
            }
            if !seen.insert(&s.name) {
                return Err(duplicate(f, &s.name));
            }
            match self.owner.get(&s.name) {
                Some((_, owner)) if owner != sub => {
                    return Err(if field.starts_with("subscriptions[") {
                        duplicate(f, &s.name)
                    } else {
                        ScenarioError::ForeignServer {
                            field: f,
                            name: s.name.clone(),
                            owner: owner.clone(),
                        }
                    });
                }
                Some(_) => {}
                None => {
                    self.owner
                        .insert(s.name.clone(), (self.ids.len(), sub.to_owned()));
                    self.ids.push(ServerId::new(s.name.clone()));
                }
            }
            out.push(Server::named(&s.name));
        }
        Ok(out)
    }

    fn index_of(&self, field: &str, name: &str) -> Result<usize> {
        self.owner
            .get(name)
            .map(|(i, _)| *i)
            .ok_or_else(|| ScenarioError::UnknownServer {
                field: field.to_owned(),
                name: name.to_owned(),
            })
    }

    fn known(&self, field: &str, name: &str) -> Result<ServerId> {
        self.index_of(field, name).map(|i| self.ids[i].clone())
    }
}
