//! Holding apps' new connections while Auto waits for a check's verdict.
//!
//! A connection that cannot be made through the current server is reported to Auto
//! (its "the core couldn't connect"), which starts a check, possibly only after the
//! spec's quiet time. Meanwhile the driver says the proxy should hold new connections
//! ([`HoldState::until`], from `Engine::hold_until`): they wait instead of failing
//! against a server that refuses, and are dialled through the server the check settles
//! on. The connection whose dial failed waits for the same verdict and is dialled once
//! more if Auto moved to another server; if the check stays on the same server, it
//! fails as it would have. No connection waits longer than [`HOLD_LIMIT`] in all.
//!
//! A connection held longer than [`BRIDGE_AFTER`] (the check waits for the spec's
//! quiet time, up to 21 s, longer than most apps wait) is carried by a server standing
//! by ([`HoldState::standby`], from `Engine::standby`: the best others in Auto's
//! queue), the first that takes it within [`STANDBY_DIAL`]. Auto stays where it is;
//! only that connection goes elsewhere, and a switch does not close it.
//!
//! Failures are numbered as they are reported, and the driver says how many it has
//! taken in ([`HoldState::failures_seen`]): a failed connection waits until Auto has
//! heard of its own failure before it reads whether to hold, so no hold is missed
//! between the report and the driver's answer.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use crate::outbound::Outbound;

/// The longest an app's connection is held in all (Auto's
/// `switchyard_auto::config::HOLD_LIMIT`), from when its request was read.
pub const HOLD_LIMIT: std::time::Duration = switchyard_auto::config::HOLD_LIMIT;

/// How long a held connection waits for the verdict before a server standing by
/// carries it. A check that starts at once decides within its probes' round trips
/// (a refusing server answers "no" at once); one second leaves it that, and leaves
/// an app with a 5 s timeout four seconds for the standby.
pub const BRIDGE_AFTER: Duration = Duration::from_secs(1);

/// The longest a server standing by is given to take a held connection before the
/// next one is tried: a standby that is silent too must not spend the app's patience.
pub const STANDBY_DIAL: Duration = Duration::from_secs(3);

/// What Auto's driver tells the proxy about holding new connections.
#[derive(Clone, Debug, Default)]
pub struct HoldState {
    /// New connections wait until this time at the latest for the verdict of the check
    /// a failed connect started; `None`: dial at once.
    pub until: Option<Instant>,
    /// How many reported failures the driver has taken in so far.
    pub failures_seen: u64,
    /// While held: the servers that may carry a connection held longer than
    /// [`BRIDGE_AFTER`], in the order to try them (`Engine::standby`).
    pub standby: Vec<Arc<Outbound>>,
}

impl PartialEq for HoldState {
    fn eq(&self, other: &Self) -> bool {
        self.until == other.until
            && self.failures_seen == other.failures_seen
            && self.standby.len() == other.standby.len()
            && self
                .standby
                .iter()
                .zip(&other.standby)
                .all(|(a, b)| Arc::ptr_eq(a, b))
    }
}

/// Reports failed connects to Auto, numbered, and tells connections when to go.
#[derive(Debug)]
pub(crate) struct Gate {
    /// Told the identity of a server a connection could not be made through.
    failed: Option<mpsc::UnboundedSender<String>>,
    /// Failures reported so far; the lock keeps the numbering in the channel's order.
    reported: Mutex<u64>,
    state: watch::Sender<HoldState>,
}

impl Gate {
    pub(crate) fn new(failed: Option<mpsc::UnboundedSender<String>>) -> Self {
        Self {
            failed,
            reported: Mutex::new(0),
            state: watch::channel(HoldState::default()).0,
        }
    }

    /// Sets what the driver says; wakes the waiting connections only on a change.
    pub(crate) fn set(&self, state: HoldState) {
        self.state.send_if_modified(|s| {
            let changed = *s != state;
            *s = state;
            changed
        });
    }

    /// Tells Auto that a connection could not be made through the server `identity`;
    /// the failure's number, when Auto hears it.
    pub(crate) fn report(&self, identity: String) -> Option<u64> {
        let tx = self.failed.as_ref()?;
        let mut reported = self.reported.lock().unwrap_or_else(|p| p.into_inner());
        tx.send(identity).ok()?;
        *reported = reported.saturating_add(1);
        Some(*reported)
    }

    /// Waits while new connections are held: until the driver releases them, the
    /// hold's end, or `cap`, whichever comes first.
    pub(crate) async fn wait(&self, cap: Instant) {
        let mut rx = self.state.subscribe();
        loop {
            let until = match rx.borrow_and_update().until {
                Some(until) => until.min(cap),
                None => return,
            };
            if until <= Instant::now() {
                return;
            }
            tokio::select! {
                r = rx.changed() => if r.is_err() { return },
                () = tokio::time::sleep_until(until) => return,
            }
        }
    }

    /// Waits while new connections are held, until `by` at the latest; then, if they
    /// still are, the servers standing by (empty when released).
    pub(crate) async fn standby_after(&self, by: Instant) -> Vec<Arc<Outbound>> {
        self.wait(by).await;
        let state = self.state.borrow();
        match state.until {
            Some(until) if until > Instant::now() => state.standby.clone(),
            _ => Vec::new(),
        }
    }

    /// After the failure numbered `n`: waits until the driver has taken it in (so
    /// whether to hold is known), until `cap` at the latest.
    pub(crate) async fn heard(&self, n: u64, cap: Instant) {
        let mut rx = self.state.subscribe();
        while rx.borrow_and_update().failures_seen < n {
            tokio::select! {
                r = rx.changed() => if r.is_err() { return },
                () = tokio::time::sleep_until(cap) => return,
            }
        }
    }

    /// [`Self::heard`], then waits while connections are held (Auto's verdict),
    /// until `cap` at the latest.
    #[cfg(test)]
    pub(crate) async fn verdict(&self, n: u64, cap: Instant) {
        self.heard(n, cap).await;
        self.wait(cap).await;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_held_connection_goes_when_released_or_at_the_hold_or_its_own_cap() {
        let gate = Arc::new(Gate::new(None));
        let start = Instant::now();
        // Nothing held: at once.
        gate.wait(start + HOLD_LIMIT).await;
        assert_eq!(Instant::now(), start);

        // Held for 10 s, released by the driver after 3 s.
        gate.set(HoldState {
            until: Some(start + Duration::from_secs(10)),
            failures_seen: 0,
            standby: Vec::new(),
        });
        let g = gate.clone();
        let waiter = tokio::spawn(async move {
            g.wait(Instant::now() + HOLD_LIMIT).await;
            Instant::now()
        });
        tokio::time::sleep(Duration::from_secs(3)).await;
        gate.set(HoldState::default());
        assert_eq!(waiter.await.unwrap(), start + Duration::from_secs(3));

        // Held for 10 s, never released: it goes at the hold's end.
        let start = Instant::now();
        gate.set(HoldState {
            until: Some(start + Duration::from_secs(10)),
            failures_seen: 0,
            standby: Vec::new(),
        });
        gate.wait(start + HOLD_LIMIT).await;
        assert_eq!(Instant::now(), start + Duration::from_secs(10));

        // Held for an hour (a driver that misbehaves): the connection's cap ends it.
        let start = Instant::now();
        gate.set(HoldState {
            until: Some(start + Duration::from_secs(3600)),
            failures_seen: 0,
            standby: Vec::new(),
        });
        gate.wait(start + HOLD_LIMIT).await;
        assert_eq!(Instant::now(), start + HOLD_LIMIT);
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_connection_waits_for_the_driver_to_hear_of_it_then_for_the_verdict() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let gate = Arc::new(Gate::new(Some(tx)));
        let start = Instant::now();
        assert_eq!(gate.report("a".into()), Some(1));
        assert_eq!(gate.report("a".into()), Some(2));
        let g = gate.clone();
        let waiter = tokio::spawn(async move {
            g.verdict(2, start + HOLD_LIMIT).await;
            Instant::now()
        });
        // The driver takes in the first failure: no hold yet, the second waits on.
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(rx.recv().await.as_deref(), Some("a"));
        gate.set(HoldState {
            until: None,
            failures_seen: 1,
            standby: Vec::new(),
        });
        // Then the second, and holds until 8 s; the check decides at 5 s.
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(rx.recv().await.as_deref(), Some("a"));
        gate.set(HoldState {
            until: Some(start + Duration::from_secs(8)),
            failures_seen: 2,
            standby: Vec::new(),
        });
        tokio::time::sleep(Duration::from_secs(3)).await;
        gate.set(HoldState {
            until: None,
            failures_seen: 2,
            standby: Vec::new(),
        });
        assert_eq!(waiter.await.unwrap(), start + Duration::from_secs(5));

        // A driver that never answers: the cap.
        let start = Instant::now();
        assert_eq!(gate.report("a".into()), Some(3));
        gate.verdict(3, start + HOLD_LIMIT).await;
        assert_eq!(Instant::now(), start + HOLD_LIMIT);

        // Nobody listening: not reported, nothing to wait for.
        drop(rx);
        assert_eq!(gate.report("a".into()), None);
    }

    fn outbound(name: &str) -> Arc<Outbound> {
        Arc::new(
            Outbound::new(switchyard_proto::entry::Entry {
                name: name.into(),
                server: "127.0.0.1".into(),
                port: 9,
                protocol: switchyard_proto::entry::EntryProtocol::Vless {
                    uuid: "0b5a5a1e-8c1f-4b38-9d2e-6f1e2d3c4b5a".into(),
                    flow: None,
                },
                transport: switchyard_proto::entry::EntryTransport::Tcp,
                tls: None,
                route: None,
            })
            .unwrap(),
        )
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_held_past_its_patience_is_given_the_servers_standing_by() {
        let gate = Arc::new(Gate::new(None));
        let (b, c) = (outbound("B"), outbound("C"));
        let start = Instant::now();
        // Nothing held: nobody stands by, at once.
        assert!(gate.standby_after(start + BRIDGE_AFTER).await.is_empty());
        assert_eq!(Instant::now(), start);

        // Held for 15 s with B and C standing by: after its patience, B then C.
        gate.set(HoldState {
            until: Some(start + Duration::from_secs(15)),
            failures_seen: 0,
            standby: vec![b.clone(), c.clone()],
        });
        let given = gate.standby_after(start + BRIDGE_AFTER).await;
        assert_eq!(Instant::now(), start + BRIDGE_AFTER);
        assert_eq!(given.len(), 2);
        assert!(Arc::ptr_eq(&given[0], &b) && Arc::ptr_eq(&given[1], &c));

        // The verdict comes within the patience: nobody stands by, the connection
        // goes when released.
        let start = Instant::now();
        let g = gate.clone();
        let waiter = tokio::spawn(async move {
            let given = g.standby_after(Instant::now() + BRIDGE_AFTER).await;
            (given.len(), Instant::now())
        });
        tokio::time::sleep(Duration::from_millis(400)).await;
        gate.set(HoldState::default());
        assert_eq!(
            waiter.await.unwrap(),
            (0, start + Duration::from_millis(400))
        );

        // A hold that ends before the patience does: nobody stands by at its end.
        let start = Instant::now();
        gate.set(HoldState {
            until: Some(start + Duration::from_millis(300)),
            failures_seen: 0,
            standby: vec![b.clone()],
        });
        assert!(gate.standby_after(start + BRIDGE_AFTER).await.is_empty());
        assert_eq!(Instant::now(), start + Duration::from_millis(300));
        assert_eq!(BRIDGE_AFTER, Duration::from_secs(1));
    }
}
