//! What a check's replies mean: stay, switch, ask the neighbours, network lost,
//! subscription down, switch back.

use crate::config::spec::{
    OWN_SUBSCRIPTION_EVERY, OWN_SUBSCRIPTION_FAILURES, OWN_SUBSCRIPTION_PAUSE, SWITCH_BACK_ANSWERS,
    WIDE_WITHIN, network_lost_pause,
};
use crate::error::InputError;
use crate::event::{
    Check, CheckId, CheckReport, ConnectReason, Outcome, Output, SwitchReason, Trigger,
};
use crate::measurement::{Measurement, ProbeReply};
use crate::score::switch_score;
use crate::server::ServerId;
use crate::time::Timestamp;

use super::{Engine, Kind, NeighbourStay, Pause};

/// Each probed server with its delay, or `None` for no answer, in probe order.
type Delays = [(ServerId, Option<u32>)];

impl Engine {
    /// Takes the replies of the running check.
    pub(super) fn on_replies(
        &mut self,
        now: Timestamp,
        check: CheckId,
        replies: Vec<(ServerId, ProbeReply)>,
    ) -> Result<(), InputError> {
        if self.cancelled == Some(check) {
            self.cancelled = None;
            return Ok(());
        }
        let running = match &self.running {
            Some(r) if r.check.id == check => r,
            _ => return Err(InputError::UnknownCheck { check }),
        };
        if let Some((server, _)) = replies
            .iter()
            .find(|(id, _)| !running.check.servers.contains(id))
        {
            return Err(InputError::UnexpectedReply {
                check,
                server: server.clone(),
            });
        }
        let Some(running) = self.running.take() else {
            return Ok(());
        };
        // A server without a reply did not answer.
        let delays: Vec<(ServerId, Option<u32>)> = running
            .check
            .servers
            .iter()
            .map(|id| {
                let reply = replies
                    .iter()
                    .find(|(r, _)| r == id)
                    .map_or(ProbeReply::NoAnswer, |(_, p)| *p);
                (id.clone(), self.config.probe_rules.delay(reply))
            })
            .collect();
        self.limits.record_check(now);
        self.last_check_end = now;
        self.traffic.restart_windows();
        let check = running.check;
        match running.kind {
            Kind::Own => self.decide_own(now, &check, &delays),
            Kind::Neighbours { own } => self.decide_neighbours(now, &check, &own, &delays),
            Kind::Wide { neighbours } => self.decide_wide(now, &check, &neighbours, &delays),
            Kind::OwnSubscription => self.decide_own_subscription(now, &check, &delays),
        }
        Ok(())
    }

    fn decide_own(&mut self, now: Timestamp, check: &Check, delays: &Delays) {
        let Some(current) = self.state.current.clone() else {
            return self.report(check, delays, Outcome::Stay, false);
        };
        if answered(delays, &current) {
            self.commit(now, delays);
            match self.return_server().cloned() {
                Some(ret) if ret != current && self.return_answers >= SWITCH_BACK_ANSWERS => {
                    self.switch(now, check, delays, ret, SwitchReason::SwitchBack);
                }
                _ => self.report(check, delays, Outcome::Stay, false),
            }
            return;
        }
        if let Some(target) = self.best_own(now, delays, Some(&current)) {
            self.commit(now, delays);
            return self.switch(now, check, delays, target, SwitchReason::CurrentSilent);
        }
        let neighbours = self.neighbour_candidates(now);
        if neighbours.is_empty() {
            // No neighbour to ask: the two causes can't be told apart, so take the one
            // that loses nothing (stay, record nothing).
            return self.network_lost(now, check, delays);
        }
        self.report(check, delays, Outcome::AskNeighbours, false);
        self.launch(
            Trigger::Neighbours,
            Kind::Neighbours {
                own: delays.to_vec(),
            },
            neighbours,
        );
    }

    fn decide_neighbours(&mut self, now: Timestamp, check: &Check, own: &Delays, delays: &Delays) {
        if delays.iter().any(|(_, d)| d.is_some()) {
            self.commit(now, own);
            self.commit(now, delays);
            self.wide_due = Some(now + WIDE_WITHIN);
            self.report(check, delays, Outcome::SubscriptionDown, false);
        } else {
            self.network_lost(now, check, delays);
        }
    }

    fn decide_wide(
        &mut self,
        now: Timestamp,
        check: &Check,
        neighbours: &[ServerId],
        delays: &Delays,
    ) {
        self.wide_due = None;
        let Some(current) = self.state.current.clone() else {
            return self.report(check, delays, Outcome::Stay, false);
        };
        if answered(delays, &current) {
            self.commit(now, delays);
            return self.report(check, delays, Outcome::Stay, false);
        }
        if let Some(target) = self.best_own(now, delays, Some(&current)) {
            self.commit(now, delays);
            return self.switch(now, check, delays, target, SwitchReason::CurrentSilent);
        }
        let candidates: Vec<(ServerId, u32)> = delays
            .iter()
            .filter(|(id, _)| neighbours.contains(id))
            .filter_map(|(id, d)| d.map(|ms| (id.clone(), ms)))
            .collect();
        if let Some(target) = self.best_by_switch_score(now, candidates) {
            self.commit(now, delays);
            return self.switch(now, check, delays, target, SwitchReason::SubscriptionDown);
        }
        self.network_lost(now, check, delays);
    }

    fn decide_own_subscription(&mut self, now: Timestamp, check: &Check, delays: &Delays) {
        let Some(mut stay) = self.neighbour else {
            return self.report(check, delays, Outcome::Stay, false);
        };
        let current = self.state.current.clone();
        let target = match self.return_server().cloned() {
            Some(ret) if answered(delays, &ret) => Some(ret),
            _ => self.best_own(now, delays, current.as_ref()),
        };
        let Some(target) = target else {
            // Silent: can't tell a dead subscription from a dead network here, so record
            // nothing; pause after too many failures in a row.
            stay.answers = 0;
            stay.failures += 1;
            if stay.failures >= OWN_SUBSCRIPTION_FAILURES {
                stay.failures = 0;
                stay.next_own = now + OWN_SUBSCRIPTION_PAUSE;
            }
            self.neighbour = Some(stay);
            return self.report(check, delays, Outcome::Stay, false);
        };
        self.commit(now, delays);
        stay.failures = 0;
        stay.answers += 1;
        self.neighbour = Some(stay);
        if stay.answers >= SWITCH_BACK_ANSWERS {
            self.switch(now, check, delays, target, SwitchReason::SwitchBack);
        } else {
            self.report(check, delays, Outcome::Stay, false);
        }
    }

    /// The best own-subscription server that answered, by S', leaving out `current`.
    fn best_own(
        &self,
        now: Timestamp,
        delays: &Delays,
        current: Option<&ServerId>,
    ) -> Option<ServerId> {
        let own = self.auto_sub()?;
        let candidates: Vec<(ServerId, u32)> = delays
            .iter()
            .filter(|(id, _)| {
                Some(id) != current && self.in_auto(id) && self.state.eligible(own, id)
            })
            .filter_map(|(id, d)| d.map(|ms| (id.clone(), ms)))
            .collect();
        self.best_by_switch_score(now, candidates)
    }

    /// The candidate with the lowest S' over its history before this check; ties go to
    /// subscription order.
    fn best_by_switch_score(
        &self,
        now: Timestamp,
        candidates: Vec<(ServerId, u32)>,
    ) -> Option<ServerId> {
        let empty = crate::history::History::new();
        candidates
            .into_iter()
            .map(|(id, ms)| {
                let history = self.state.history.get(&id).unwrap_or(&empty);
                let s = switch_score(ms, history, self.config.method, now);
                ((s, self.order_of(&id)), id)
            })
            .min_by(|a, b| a.0.cmp(&b.0))
            .map(|(_, id)| id)
    }

    /// Records a check's measurements and counts the return server's answers in a row.
    fn commit(&mut self, now: Timestamp, delays: &Delays) {
        let method = self.config.method;
        for (id, ms) in delays {
            self.state.record(
                id,
                Measurement {
                    at: now,
                    method,
                    ms: *ms,
                },
            );
            if self.state.return_to.as_ref() == Some(id) {
                self.return_answers = if ms.is_some() {
                    self.return_answers + 1
                } else {
                    0
                };
            }
            if ms.is_some() {
                self.lost.k = 0;
            }
        }
    }

    /// Every probe silent, neighbours included: stay, record nothing, pause `T_k`.
    fn network_lost(&mut self, now: Timestamp, check: &Check, delays: &Delays) {
        self.lost.k += 1;
        let retry_in = network_lost_pause(self.lost.k);
        self.lost.paused = Some(Pause {
            since: now,
            until: now + retry_in,
        });
        self.wide_due = None;
        self.report(check, delays, Outcome::NetworkLost, false);
        self.out.push_back(Output::NetworkLost { retry_in });
    }

    /// A switch a check decided: within the switch limit, or held until the window
    /// allows and re-checked then.
    fn switch(
        &mut self,
        now: Timestamp,
        check: &Check,
        delays: &Delays,
        to: ServerId,
        reason: SwitchReason,
    ) {
        if !self.limits.switch_allowed(now) {
            self.switch_retry_at = Some(self.limits.next_switch_allowed(now));
            return self.report(check, delays, Outcome::Stay, true);
        }
        self.report(check, delays, Outcome::Switch, false);
        self.move_to(now, to, reason);
    }

    /// Moves to `to` now (checks' switches and the user's actions alike).
    pub(super) fn move_to(&mut self, now: Timestamp, to: ServerId, reason: SwitchReason) {
        let from = self.state.current.replace(to.clone());
        let leaving_own = from.as_ref().is_some_and(|f| self.in_auto(f));
        let to_own = self.in_auto(&to);
        match reason {
            SwitchReason::CurrentSilent | SwitchReason::SubscriptionDown if leaving_own => {
                self.state.return_to = from.clone();
                self.return_answers = 0;
            }
            SwitchReason::SwitchBack => {
                self.state.return_to = None;
                self.return_answers = 0;
            }
            _ => {}
        }
        if self.state.return_to.as_ref() == Some(&to) {
            self.state.return_to = None;
            self.return_answers = 0;
        }
        self.neighbour = if to_own {
            None
        } else {
            Some(self.neighbour.unwrap_or(NeighbourStay {
                next_own: now + OWN_SUBSCRIPTION_EVERY,
                failures: 0,
                answers: 0,
            }))
        };
        self.wide_due = None;
        self.switch_retry_at = None;
        self.connect_failed_at = None;
        self.limits.record_switch(now);
        self.traffic.restart_windows();
        if let Some(from) = from.filter(|f| *f != to) {
            self.out.push_back(Output::Switched {
                from,
                to: to.clone(),
                reason,
            });
        }
        let reason = match reason {
            SwitchReason::SwitchBack => ConnectReason::SwitchBack,
            SwitchReason::SubscriptionDown => ConnectReason::Neighbour,
            SwitchReason::Marked => ConnectReason::Marked,
            SwitchReason::Removed => ConnectReason::Removed,
            SwitchReason::CurrentSilent | SwitchReason::ConnectFailed | SwitchReason::Faster => {
                ConnectReason::Switch
            }
        };
        self.out.push_back(Output::Connect { server: to, reason });
    }

    fn report(&mut self, check: &Check, delays: &Delays, outcome: Outcome, held: bool) {
        let answered = delays
            .iter()
            .filter_map(|(id, d)| d.map(|ms| (id.clone(), ms)))
            .collect();
        let silent = delays
            .iter()
            .filter(|(_, d)| d.is_none())
            .map(|(id, _)| id.clone())
            .collect();
        self.out.push_back(Output::CheckDone(CheckReport {
            id: check.id,
            trigger: check.trigger,
            answered,
            silent,
            outcome,
            held,
        }));
    }
}

fn answered(delays: &Delays, id: &ServerId) -> bool {
    delays.iter().any(|(x, d)| x == id && d.is_some())
}
