//! The user's actions and subscription changes: they act at once (no cool-down) but
//! count toward the switch limit.

use std::collections::BTreeSet;

use crate::error::InputError;
use crate::event::{ConnectReason, Output, SwitchReason};
use crate::server::{ServerId, Subscription};
use crate::time::Timestamp;

use super::{Engine, Lost};

impl Engine {
    pub(super) fn set_subscriptions(
        &mut self,
        now: Timestamp,
        subs: Vec<Subscription>,
    ) -> Result<(), InputError> {
        let mut names = BTreeSet::new();
        for sub in &subs {
            validate(sub)?;
            if !names.insert(sub.name.as_str()) {
                return Err(InputError::DuplicateSubscription {
                    name: sub.name.clone(),
                });
            }
        }
        self.subs = subs;
        self.reindex();
        if let Some(name) = self.state.auto.clone()
            && self.sub(&name).is_none()
        {
            // The subscription Auto was on in is gone: Auto is off (and says so).
            self.state.auto = None;
            if std::mem::take(&mut self.on) {
                self.pause_no_server(name, true);
            }
        }
        self.after_change(now);
        Ok(())
    }

    pub(super) fn update_subscription(
        &mut self,
        now: Timestamp,
        sub: Subscription,
    ) -> Result<(), InputError> {
        validate(&sub)?;
        let Some(slot) = self.subs.iter_mut().find(|s| s.name == sub.name) else {
            return Err(InputError::UnknownSubscription { name: sub.name });
        };
        *slot = sub;
        self.reindex();
        self.after_change(now);
        Ok(())
    }

    /// After subscriptions changed: note which remembered servers are gone, forget a
    /// return server that is gone, and replace a current server that is gone at once
    /// with the best remaining one; an emptied subscription pauses Auto, visibly.
    fn after_change(&mut self, now: Timestamp) {
        self.note_absences();
        if let Some(ret) = &self.state.return_to
            && !self.known(ret)
        {
            self.state.return_to = None;
            self.return_answers = 0;
        }
        let Some(own) = self.auto_sub() else { return };
        if own.servers.is_empty() {
            // Even on a neighbour's server: Auto's subscription has nothing to offer,
            // which the user must hear about rather than find out.
            if self.state.current.is_some() {
                let name = own.name.clone();
                self.pause_no_server(name, false);
            }
            return;
        }
        if let Some(current) = &self.state.current
            && (self.in_auto(current) || (self.neighbour.is_some() && self.known(current)))
        {
            // Kept: no ranking (an update of a large subscription need not sort it).
            return;
        }
        let best = self.state.best(own, 1, &[], now).into_iter().next();
        match self.state.current.clone() {
            Some(_) => {
                self.cancel_check();
                if let Some(best) = best {
                    self.move_to(now, best, SwitchReason::Removed);
                }
            }
            // Auto was on in an empty subscription that now has servers.
            None => {
                if let Some(best) = best {
                    self.connect_first(now, best);
                }
            }
        }
    }

    /// Auto has no server in its subscription: it stops using one and reports
    /// [`Output::NoServer`] ("Auto paused: no server").
    fn pause_no_server(&mut self, subscription: String, deleted: bool) {
        self.cancel_check();
        self.state.current = None;
        self.neighbour = None;
        self.wide_due = None;
        self.switch_retry_at = None;
        self.connect_failed_at = None;
        self.lost = Lost::default();
        self.out.push_back(Output::NoServer {
            subscription,
            deleted,
        });
    }

    pub(super) fn auto_on(&mut self, now: Timestamp, name: &str) -> Result<(), InputError> {
        let Some(sub) = self.sub(name) else {
            return Err(InputError::UnknownSubscription {
                name: name.to_owned(),
            });
        };
        let best = self.state.best(sub, 1, &[], now).into_iter().next();
        self.state.auto = Some(name.to_owned());
        self.on = true;
        self.cancel_check();
        self.lost = Lost::default();
        self.wide_due = None;
        self.neighbour = None;
        self.state.return_to = None;
        self.return_answers = 0;
        self.switch_retry_at = None;
        self.last_scheduled = now;
        self.last_check_end = now;
        match best {
            Some(best) => self.connect_first(now, best),
            None => self.pause_no_server(name.to_owned(), false),
        }
        Ok(())
    }

    fn connect_first(&mut self, now: Timestamp, server: ServerId) {
        self.state.current = Some(server.clone());
        self.connect_failed_at = None;
        self.limits.record_switch(now);
        self.traffic.restart_windows();
        self.out.push_back(Output::Connect {
            server,
            reason: ConnectReason::AutoOn,
        });
    }

    /// Marks servers; refused whole if it would leave a subscription without an
    /// unmarked server.
    pub(super) fn mark(&mut self, ids: Vec<ServerId>) -> Result<(), InputError> {
        if let Some(server) = ids.iter().find(|id| !self.known(id)) {
            return Err(InputError::UnknownServer {
                server: server.clone(),
            });
        }
        let mut marks = self.state.marks.clone();
        marks.extend(ids.iter().cloned());
        for sub in &self.subs {
            let had_unmarked = sub
                .servers
                .iter()
                .any(|s| !self.state.marks.contains(&s.id));
            let has_unmarked = sub.servers.iter().any(|s| !marks.contains(&s.id));
            if had_unmarked && !has_unmarked {
                let server = ids
                    .iter()
                    .find(|id| sub.contains(id))
                    .cloned()
                    .unwrap_or_else(|| ServerId::new(""));
                return Err(InputError::LastUnmarked {
                    subscription: sub.name.clone(),
                    server,
                });
            }
        }
        self.state.marks = marks;
        Ok(())
    }

    /// "Done": if the current server is marked, switch to the best of the rest.
    pub(super) fn marks_done(&mut self, now: Timestamp) -> Result<(), InputError> {
        let (Some(own), Some(current)) = (self.auto_sub(), self.state.current.clone()) else {
            return Ok(());
        };
        if !self.state.marks.contains(&current) || self.state.all_marked(own) {
            return Ok(());
        }
        if let Some(best) = self.state.best(own, 1, &[&current], now).into_iter().next() {
            self.cancel_check();
            self.move_to(now, best, SwitchReason::Marked);
        }
        Ok(())
    }

    /// Drops the running check; its replies will be ignored (see `on_replies`).
    fn cancel_check(&mut self) {
        self.running = None;
        self.end_hold();
    }
}

fn validate(sub: &Subscription) -> Result<(), InputError> {
    let mut seen = BTreeSet::new();
    for s in &sub.servers {
        if !seen.insert(&s.id) {
            return Err(InputError::DuplicateServer {
                subscription: sub.name.clone(),
                server: s.id.clone(),
            });
        }
    }
    Ok(())
}
