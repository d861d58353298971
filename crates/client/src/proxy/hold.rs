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
//! Failures are numbered as they are reported, and the driver says how many it has
//! taken in ([`HoldState::failures_seen`]): a failed connection waits until Auto has
//! heard of its own failure before it reads whether to hold, so no hold is missed
//! between the report and the driver's answer.

use std::sync::Mutex;

use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

/// The longest an app's connection is held in all (Auto's
/// `switchyard_auto::config::HOLD_LIMIT`), from when its request was read.
pub const HOLD_LIMIT: std::time::Duration = switchyard_auto::config::HOLD_LIMIT;

/// What Auto's driver tells the proxy about holding new connections.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HoldState {
    /// New connections wait until this time at the latest for the verdict of the check
    /// a failed connect started; `None`: dial at once.
    pub until: Option<Instant>,
    /// How many reported failures the driver has taken in so far.
    pub failures_seen: u64,
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

    /// After the failure numbered `n`: waits until the driver has taken it in, then
    /// while connections are held (Auto's verdict), until `cap` at the latest.
    pub(crate) async fn verdict(&self, n: u64, cap: Instant) {
        let mut rx = self.state.subscribe();
        while rx.borrow_and_update().failures_seen < n {
            tokio::select! {
                r = rx.changed() => if r.is_err() { return },
                () = tokio::time::sleep_until(cap) => return,
            }
        }
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
        });
        gate.wait(start + HOLD_LIMIT).await;
        assert_eq!(Instant::now(), start + Duration::from_secs(10));

        // Held for an hour (a driver that misbehaves): the connection's cap ends it.
        let start = Instant::now();
        gate.set(HoldState {
            until: Some(start + Duration::from_secs(3600)),
            failures_seen: 0,
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
        });
        // Then the second, and holds until 8 s; the check decides at 5 s.
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(rx.recv().await.as_deref(), Some("a"));
        gate.set(HoldState {
            until: Some(start + Duration::from_secs(8)),
            failures_seen: 2,
        });
        tokio::time::sleep(Duration::from_secs(3)).await;
        gate.set(HoldState {
            until: None,
            failures_seen: 2,
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
}
