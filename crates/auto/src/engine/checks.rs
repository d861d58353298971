//! When a check starts, which servers it probes, and when it is overdue.

use crate::config::spec::{
    CHECK_BEST, NEIGHBOUR_BEST, NO_INBOUND, OWN_SUBSCRIPTION_EVERY, SCHEDULED_BEST,
    SCHEDULED_EVERY, WIDE_SIZE,
};
use crate::config::{Platform, RESULTS_GRACE};
use crate::event::{Check, CheckId, Output, Trigger};
use crate::server::{ServerId, Subscription};
use crate::time::Timestamp;

use super::{Engine, Kind, Running};

impl Engine {
    /// The earliest time a check wants to start and its trigger, cool-downs included;
    /// `None` when nothing is pending or checks can't start at all.
    pub(super) fn next_check_at(&self) -> Option<(Timestamp, Trigger)> {
        let (want, trigger) = self.wanted()?;
        let from = self.limits.checks_allowed_from().unwrap_or(want);
        Some((want.max(from), trigger))
    }

    /// What wants a check and from when, before cool-downs. Earlier wins; at equal
    /// times the order below decides (failure signals before timers).
    fn wanted(&self) -> Option<(Timestamp, Trigger)> {
        if self.running.is_some() || self.state.current.is_none() || self.auto_sub().is_none() {
            return None;
        }
        // On a phone, no check starts while there is no network at all.
        if self.config.platform == Platform::Mobile && !self.network_available {
            return None;
        }
        let mut best: Option<(Timestamp, Trigger)> = None;
        let mut offer = |at: Option<Timestamp>, trigger: Trigger| {
            if let Some(at) = at
                && best.is_none_or(|(b, _)| at < b)
            {
                best = Some((at, trigger));
            }
        };
        if self.lost.retry_now {
            offer(Some(self.now), Trigger::Retry);
            return best;
        }
        if let Some(pause) = self.lost.paused {
            // While paused only the retry may start, and only on a device in use.
            if self.traffic.sent_after(pause.since) {
                offer(Some(pause.until), Trigger::Retry);
            }
            return best;
        }
        if let Some(at) = self.switch_retry_at {
            // A switch waits for the limit's window: checking before it opens can't
            // change anything, so only the retry looks again, when it opens.
            offer(Some(at), Trigger::Retry);
            return best;
        }
        offer(self.connect_failed_at, Trigger::ConnectFailure);
        offer(
            self.traffic
                .stall_at(self.config.platform.stall_threshold()),
            Trigger::Stall,
        );
        offer(self.traffic.no_inbound_at(NO_INBOUND), Trigger::NoInbound);
        // Timers look only at a device in use: something was sent since the last check.
        if let Some(due) = self.wide_due {
            if self.traffic.sent_after(self.last_check_end) {
                offer(Some(due), Trigger::Wide);
            }
        } else if let Some(stay) = self.neighbour {
            if self.traffic.sent_after(self.last_check_end) {
                offer(Some(stay.next_own), Trigger::OwnSubscription);
            }
        } else if self.traffic.sent_after(self.last_scheduled) {
            offer(
                Some(self.last_scheduled + SCHEDULED_EVERY),
                Trigger::Scheduled,
            );
        }
        best
    }

    /// Starts the check that is due now, if any.
    pub(super) fn start_due_check(&mut self) {
        let Some((at, trigger)) = self.next_check_at() else {
            return;
        };
        if at > self.now {
            return;
        }
        let now = self.now;
        // Consume what fired.
        match trigger {
            Trigger::ConnectFailure => self.connect_failed_at = None,
            Trigger::Retry if self.lost.retry_now || self.lost.paused.is_some() => {
                self.lost.retry_now = false;
                self.lost.paused = None;
            }
            Trigger::Retry => self.switch_retry_at = None,
            Trigger::Scheduled => self.last_scheduled = now,
            Trigger::OwnSubscription => {
                if let Some(stay) = &mut self.neighbour {
                    stay.next_own = now + OWN_SUBSCRIPTION_EVERY;
                }
            }
            _ => {}
        }
        self.connect_failed_at = None;
        self.traffic.restart_windows();
        if let Some((trigger, kind, servers)) = self.plan(trigger, now)
            && !servers.is_empty()
        {
            self.launch(trigger, kind, servers);
        }
        if self.running.is_none() {
            // Nothing to probe: no verdict is coming for held connections.
            self.end_hold();
        }
    }

    /// Ends the running check if its results are overdue: nothing came back by the
    /// probe timeout plus [`RESULTS_GRACE`], so every probed server counts as
    /// unanswered and the check is decided as such. Without this a lost result would
    /// leave Auto waiting forever, as no other check starts while one runs.
    pub(super) fn end_overdue_check(&mut self) {
        let Some(running) = self.running.take_if(|r| r.deadline <= self.now) else {
            return;
        };
        self.finish(self.now, running, &[], true);
    }

    /// The kind and probe set of a check started by `trigger`.
    fn plan(&self, trigger: Trigger, now: Timestamp) -> Option<(Trigger, Kind, Vec<ServerId>)> {
        let current = self.state.current.clone()?;
        let own = self.auto_sub()?;
        let mut servers = vec![current.clone()];
        if self.wide_due.is_some() {
            servers.extend(self.state.best(own, WIDE_SIZE - 1, &[&current], now));
            let neighbours: Vec<ServerId> = self
                .neighbour_candidates(now)
                .into_iter()
                .filter(|id| !servers.contains(id))
                .collect();
            servers.extend(neighbours.iter().cloned());
            return Some((Trigger::Wide, Kind::Wide { neighbours }, servers));
        }
        if trigger == Trigger::OwnSubscription && self.neighbour.is_some() {
            servers.clear();
            if let Some(ret) = self.return_server() {
                servers.push(ret.clone());
            }
            let except: Vec<&ServerId> = servers.iter().collect();
            let best = self.state.best(own, CHECK_BEST, &except, now);
            servers.extend(best);
            return Some((trigger, Kind::OwnSubscription, servers));
        }
        if trigger == Trigger::Scheduled {
            if let Some(ret) = self.return_server()
                && *ret != current
            {
                servers.push(ret.clone());
            }
            let except: Vec<&ServerId> = servers.iter().collect();
            let best = self.state.best(own, SCHEDULED_BEST, &except, now);
            servers.extend(best);
            return Some((trigger, Kind::Own, servers));
        }
        servers.extend(self.state.best(own, CHECK_BEST, &[&current], now));
        Some((trigger, Kind::Own, servers))
    }

    /// The remembered server, when Auto may still switch back to it.
    pub(super) fn return_server(&self) -> Option<&ServerId> {
        let own = self.auto_sub()?;
        self.state
            .return_to
            .as_ref()
            .filter(|id| self.in_auto(id) && self.state.eligible(own, id))
    }

    /// The nearest non-empty subscriptions above and below the Auto one.
    pub(super) fn neighbour_subs(&self) -> Vec<&Subscription> {
        let Some(i) = self
            .subs
            .iter()
            .position(|s| Some(&s.name) == self.state.auto.as_ref())
        else {
            return Vec::new();
        };
        let above = self.subs[..i].iter().rev().find(|s| !s.servers.is_empty());
        let below = self.subs[i + 1..].iter().find(|s| !s.servers.is_empty());
        above.into_iter().chain(below).collect()
    }

    /// The 2 best servers of each neighbouring subscription (never the current one,
    /// which has just been found silent).
    pub(super) fn neighbour_candidates(&self, now: Timestamp) -> Vec<ServerId> {
        let current = self.state.current.as_ref();
        let mut ids = Vec::new();
        for sub in self.neighbour_subs() {
            let except: Vec<&ServerId> = current.into_iter().collect();
            for id in self.state.best(sub, NEIGHBOUR_BEST, &except, now) {
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
        }
        ids
    }

    /// Emits the probe order for a new check.
    pub(super) fn launch(&mut self, trigger: Trigger, kind: Kind, servers: Vec<ServerId>) {
        let check = Check {
            id: CheckId(self.next_check),
            trigger,
            servers,
            method: self.config.method,
            timeout: self.config.probe_timeout,
        };
        self.next_check += 1;
        self.out.push_back(Output::Probe(check.clone()));
        let deadline = self.now + self.config.probe_timeout + RESULTS_GRACE;
        self.running = Some(Running {
            check,
            kind,
            deadline,
        });
    }
}
