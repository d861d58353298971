//! What a check's replies mean: stay, switch, ask the neighbours, network lost,
//! subscription down, switch back.

use crate::config::spec::{
    OWN_SUBSCRIPTION_FAILURES, OWN_SUBSCRIPTION_PAUSE, SWITCH_BACK_ANSWERS, WIDE_WITHIN,
};
use crate::error::InputError;
use crate::event::{Check, CheckId, Outcome, SwitchReason, Trigger};
use crate::measurement::{Measurement, ProbeReply};
use crate::score::switch_score;
use crate::server::ServerId;
use crate::time::Timestamp;

use super::{Engine, Kind, Running};

/// Each probed server with its delay, or `None` for no answer, in probe order.
pub(super) type Delays = [(ServerId, Option<u32>)];

/// A check that ended: what its reports name.
pub(super) struct Ended {
    pub(super) check: Check,
    /// It ended on its deadline, without results.
    pub(super) timed_out: bool,
}

impl Engine {
    /// Takes the replies of the running check.
    pub(super) fn on_replies(
        &mut self,
        now: Timestamp,
        check: CheckId,
        replies: Vec<(ServerId, ProbeReply)>,
    ) -> Result<(), InputError> {
        let running = match &self.running {
            Some(r) if r.check.id == check => r,
            // Issued earlier and no longer running: it ended on its deadline, or a user's
            // action made it moot. Its replies are late, not wrong.
            _ if check.0 < self.next_check => return Ok(()),
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
        self.finish(now, running, &replies, false);
        Ok(())
    }

    /// Ends `running` with these replies (a server without one did not answer) and
    /// decides what they mean.
    pub(super) fn finish(
        &mut self,
        now: Timestamp,
        running: Running,
        replies: &[(ServerId, ProbeReply)],
        timed_out: bool,
    ) {
        // Past the probe timeout a probe counts as no answer, whatever the driver says.
        let limit = running.check.timeout.as_millis();
        let delays: Vec<(ServerId, Option<u32>)> = running
            .check
            .servers
            .iter()
            .map(|id| {
                let reply = replies
                    .iter()
                    .find(|(r, _)| r == id)
                    .map_or(ProbeReply::NoAnswer, |(_, p)| *p);
                let delay = self.config.probe_rules.delay(reply);
                (id.clone(), delay.filter(|&ms| u128::from(ms) <= limit))
            })
            .collect();
        self.limits.record_check(now);
        self.last_check_end = now;
        self.traffic.restart_windows();
        let check = Ended {
            check: running.check,
            timed_out,
        };
        match running.kind {
            Kind::Own => self.decide_own(now, &check, &delays),
            Kind::Neighbours { own } => self.decide_neighbours(now, &check, &own, &delays),
            Kind::Wide { neighbours } => self.decide_wide(now, &check, &neighbours, &delays),
            Kind::OwnSubscription => self.decide_own_subscription(now, &check, &delays),
        }
        if self.running.is_none() {
            // The round is over (no follow-up check): connections held for it go.
            self.end_hold();
        }
    }

    fn decide_own(&mut self, now: Timestamp, check: &Ended, delays: &Delays) {
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

    fn decide_neighbours(&mut self, now: Timestamp, check: &Ended, own: &Delays, delays: &Delays) {
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
        check: &Ended,
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

    fn decide_own_subscription(&mut self, now: Timestamp, check: &Ended, delays: &Delays) {
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
        let all_marked = self.state.all_marked(self.auto_sub()?);
        let candidates: Vec<(ServerId, u32)> = delays
            .iter()
            .filter(|(id, _)| {
                Some(id) != current && self.in_auto(id) && self.state.eligible_with(all_marked, id)
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
            // An update during the check may have removed it from every subscription.
            self.note_absent(id);
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
}

fn answered(delays: &Delays, id: &ServerId) -> bool {
    delays.iter().any(|(x, d)| x == id && d.is_some())
}
