//! A step-by-step harness for the engine: the test says what happens and when.
#![allow(dead_code, unreachable_pub)]

use switchyard_auto::{
    AutoConfig, Check, CheckReport, ConnectReason, Engine, Event, InputError, Measurement, Method,
    Outcome, Output, Platform, Policy, ProbeReply, ServerId, Subscription, SwitchReason, Timestamp,
    Trigger,
};

pub struct H {
    pub e: Engine,
    pub now: Timestamp,
    sent: u64,
    received: u64,
    /// Every output so far with its time.
    pub log: Vec<(Timestamp, Output)>,
    /// Outputs not yet taken by the test.
    fresh: Vec<(Timestamp, Output)>,
}

pub fn s(secs: f64) -> Timestamp {
    Timestamp::from_millis((secs * 1000.0).round() as i64)
}

pub fn id(name: &str) -> ServerId {
    ServerId::new(name)
}

impl H {
    pub fn new(subs: &[(&str, &[&str])]) -> Self {
        Self::with(AutoConfig::default(), subs)
    }

    pub fn mobile(subs: &[(&str, &[&str])]) -> Self {
        Self::with(
            AutoConfig {
                platform: Platform::Mobile,
                ..AutoConfig::default()
            },
            subs,
        )
    }

    pub fn with(config: AutoConfig, subs: &[(&str, &[&str])]) -> Self {
        Self::from_engine(Engine::new(config), subs)
    }

    pub fn from_engine(e: Engine, subs: &[(&str, &[&str])]) -> Self {
        let mut h = Self {
            e,
            // History comes in at t = 0, dated before it: a measurement dated after the
            // time of its event would be clamped to that time.
            now: s(0.0),
            sent: 0,
            received: 0,
            log: vec![],
            fresh: vec![],
        };
        let subs = subs
            .iter()
            .map(|(n, list)| Subscription::of_names(n, list))
            .collect();
        h.fire(Event::Subscriptions(subs)).unwrap();
        h
    }

    /// A URL measurement taken `at` seconds (≤ 0) before the run.
    pub fn hist(&mut self, server: &str, at: f64, ms: Option<u32>) -> &mut Self {
        let m = Measurement {
            at: s(at),
            method: Method::Url,
            ms,
        };
        self.fire(Event::Measured {
            server: id(server),
            measurement: m,
        })
        .unwrap();
        self
    }

    /// Several answered measurements, one a minute before t = 0.
    pub fn hist_ms(&mut self, server: &str, ms: &[Option<u32>]) -> &mut Self {
        let n = ms.len() as f64;
        for (i, m) in ms.iter().enumerate() {
            self.hist(server, -60.0 * (n - i as f64), *m);
        }
        self
    }

    pub fn auto_on(&mut self, sub: &str) -> ServerId {
        self.at(0.0);
        self.fire(Event::AutoOn {
            subscription: sub.into(),
        })
        .unwrap();
        self.connected().0
    }

    /// Moves time to `secs`, handling every deadline on the way, in order.
    pub fn at(&mut self, secs: f64) {
        let target = s(secs);
        assert!(
            target >= self.now,
            "time goes forward: {} -> {}",
            self.now,
            target
        );
        while let Some(t) = self.e.poll_timeout() {
            if t > target || t < self.now {
                break;
            }
            self.now = t;
            self.e.handle_timeout(t);
            if self.drain() == 0 && self.e.poll_timeout() == Some(t) {
                break;
            }
        }
        self.now = target;
        self.e.handle_timeout(target);
        self.drain();
    }

    pub fn fire(&mut self, ev: Event) -> Result<(), InputError> {
        let r = self.e.handle_event(self.now, ev);
        self.drain();
        r
    }

    fn drain(&mut self) -> usize {
        let mut n = 0;
        while let Some(o) = self.e.poll_output() {
            self.log.push((self.now, o.clone()));
            self.fresh.push((self.now, o));
            n += 1;
        }
        n
    }

    /// One traffic sample at the current time.
    pub fn sample(&mut self, out: bool, inn: bool) {
        self.sent += u64::from(out) * 1000;
        self.received += u64::from(inn) * 1000;
        let (sent, received) = (self.sent, self.received);
        self.fire(Event::Traffic { sent, received }).unwrap();
    }

    /// One sample a second for every whole second in (now, until].
    pub fn traffic(&mut self, until: f64, out: bool, inn: bool) {
        let mut t = (self.now.as_millis() / 1000) + 1;
        while (t as f64) <= until {
            self.at(t as f64);
            self.sample(out, inn);
            t += 1;
        }
    }

    /// Traffic that stops with nothing answered until a check starts; returns it.
    pub fn stall_until_check(&mut self, limit: f64) -> Check {
        let mut t = (self.now.as_millis() / 1000) + 1;
        while (t as f64) <= limit {
            self.at(t as f64);
            self.sample(true, false);
            if let Some(c) = self.try_probe() {
                return c;
            }
            t += 1;
        }
        panic!("no check by {limit}; log: {:#?}", self.log);
    }

    pub fn take(&mut self) -> Vec<(Timestamp, Output)> {
        std::mem::take(&mut self.fresh)
    }

    pub fn try_probe(&mut self) -> Option<Check> {
        let pos = self
            .fresh
            .iter()
            .position(|(_, o)| matches!(o, Output::Probe(_)))?;
        match self.fresh.remove(pos).1 {
            Output::Probe(c) => Some(c),
            _ => None,
        }
    }

    /// The probe order emitted since the last take; panics if none.
    pub fn probe(&mut self) -> Check {
        self.try_probe()
            .unwrap_or_else(|| panic!("expected a probe at {}; fresh: {:#?}", self.now, self.fresh))
    }

    pub fn no_probe(&mut self) {
        assert!(
            self.try_probe().is_none(),
            "no check expected at {}",
            self.now
        );
    }

    /// Replies to `check` at the current time: named servers answer, the rest are silent.
    pub fn reply(&mut self, check: &Check, answers: &[(&str, u32)]) {
        let replies = check
            .servers
            .iter()
            .map(|sid| {
                let r = answers
                    .iter()
                    .find(|(n, _)| id(n) == *sid)
                    .map_or(ProbeReply::NoAnswer, |(_, ms)| ProbeReply::after(*ms));
                (sid.clone(), r)
            })
            .collect();
        self.fire(Event::ProbeResults {
            check: check.id,
            replies,
        })
        .unwrap();
    }

    /// The check report emitted since the last take.
    pub fn report(&mut self) -> CheckReport {
        let pos = self
            .fresh
            .iter()
            .position(|(_, o)| matches!(o, Output::CheckDone(_)))
            .unwrap_or_else(|| panic!("expected a check report; fresh: {:#?}", self.fresh));
        match self.fresh.remove(pos).1 {
            Output::CheckDone(r) => r,
            _ => unreachable!(),
        }
    }

    pub fn connected(&mut self) -> (ServerId, ConnectReason) {
        let pos = self
            .fresh
            .iter()
            .position(|(_, o)| matches!(o, Output::Connect { .. }))
            .unwrap_or_else(|| panic!("expected a connect; fresh: {:#?}", self.fresh));
        match self.fresh.remove(pos).1 {
            Output::Connect { server, reason } => (server, reason),
            _ => unreachable!(),
        }
    }

    pub fn switched(&mut self) -> (ServerId, ServerId, SwitchReason) {
        let pos = self
            .fresh
            .iter()
            .position(|(_, o)| matches!(o, Output::Switched { .. }))
            .unwrap_or_else(|| panic!("expected a switch; fresh: {:#?}", self.fresh));
        match self.fresh.remove(pos).1 {
            Output::Switched { from, to, reason } => (from, to, reason),
            _ => unreachable!(),
        }
    }

    /// The pauses (`retry_in`, whole seconds) of every `NetworkLost` since the last
    /// take; takes every output.
    pub fn network_lost_pauses(&mut self) -> Vec<u64> {
        self.take()
            .into_iter()
            .filter_map(|(_, o)| match o {
                Output::NetworkLost { retry_in } => Some(retry_in.as_secs()),
                _ => None,
            })
            .collect()
    }

    pub fn current(&self) -> &str {
        self.e.current().map_or("", |c| c.as_str())
    }

    pub fn history_len(&self, server: &str) -> usize {
        self.e
            .state()
            .history
            .get(&id(server))
            .map_or(0, |h| h.iter().count())
    }
}

pub fn names(check: &Check) -> Vec<&str> {
    check.servers.iter().map(|s| s.as_str()).collect()
}

pub fn answered(r: &CheckReport) -> Vec<(&str, u32)> {
    r.answered.iter().map(|(s, ms)| (s.as_str(), *ms)).collect()
}

pub fn assert_report(r: &CheckReport, trigger: Trigger, outcome: Outcome) {
    assert_eq!((r.trigger, r.outcome), (trigger, outcome), "{r:#?}");
}
