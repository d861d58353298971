//! Moving to another server, and the reports of what a check decided.

use crate::config::spec::{OWN_SUBSCRIPTION_EVERY, network_lost_pause};
use crate::event::{CheckReport, ConnectReason, Outcome, Output, SwitchReason};
use crate::server::ServerId;
use crate::time::Timestamp;

use super::decide::{Delays, Ended};
use super::{Engine, NeighbourStay, Pause};

impl Engine {
    /// Every probe silent, neighbours included: stay, record nothing, pause `T_k`.
    pub(super) fn network_lost(&mut self, now: Timestamp, check: &Ended, delays: &Delays) {
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
    pub(super) fn switch(
        &mut self,
        now: Timestamp,
        check: &Ended,
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
        self.end_hold();
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

    /// Reports what a check decided.
    pub(super) fn report(&mut self, check: &Ended, delays: &Delays, outcome: Outcome, held: bool) {
        let report = CheckReport {
            timed_out: check.timed_out,
            ..CheckReport::new(&check.check, delays, outcome, held)
        };
        self.out.push_back(Output::CheckDone(report));
    }
}
