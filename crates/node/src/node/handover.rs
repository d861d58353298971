//! The node's part in an upgrade ([`crate::handover`]): the sockets it hands over,
//! releasing them with its journal, taking over from a predecessor, and the
//! requests `POST /v1/upgrade` makes.

use std::collections::BTreeMap;

use tokio::sync::{mpsc, oneshot};

use super::{Node, lock};
use crate::handover::{Handed, HandoverError, Inherited, Upgraded};
use crate::journal::{Journal, JournalError};

/// How a node starts.
#[derive(Debug, Default)]
pub struct Start {
    /// Sockets handed over by the process this one takes over from: the node binds
    /// on them, reads no UDP socket and records nothing in its journal until
    /// [`Node::take_over`].
    pub inherited: Option<Inherited>,
}

/// An upgrade asked for through the control API; the binary that runs the node
/// carries it out and answers.
#[derive(Debug)]
pub struct UpgradeRequest {
    /// How long the old process serves its open connections at most.
    pub drain: std::time::Duration,
    /// The binary to start instead of the one at the path this process was started
    /// from (one the panel handed over), if any.
    pub program: Option<std::path::PathBuf>,
    /// Where the answer goes.
    pub reply: oneshot::Sender<Result<Upgraded, String>>,
}

impl Node {
    /// Duplicates of every inbound's listening sockets, to hand to a process (or a
    /// node) taking over ([`Inherited::from`]).
    pub async fn handed_sockets(&self) -> Vec<Handed> {
        let running = self.running.lock().await;
        let mut out = Vec::new();
        for (tag, inbound) in &running.inbounds {
            match inbound.handed() {
                Ok(h) => out.extend(h),
                Err(e) => tracing::warn!(inbound = %tag, "not handing over its sockets: {e}"),
            }
        }
        out
    }

    /// Connections this process still serves: users' sessions and the streams its
    /// origin halves carry.
    pub fn open_connections(&self) -> usize {
        self.shared.sessions.len()
            + self
                .shared
                .origin_streams
                .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The state directory.
    pub fn state_dir(&self) -> &std::path::Path {
        &self.state_dir
    }

    /// Hands over: stops accepting (open connections go on), tunnel halves make no
    /// new links and say `GoAway` on theirs, stops the background tasks, takes a last
    /// journal record and lets the journal go. Returns the
    /// per-user totals the journal accounts for: what users move from now on is the
    /// new process's to record.
    pub async fn release(&self) -> BTreeMap<String, (u64, u64)> {
        self.shared.stop_accepting.cancel();
        self.stop.cancel();
        for tunnel in self.running.lock().await.tunnels.values() {
            crate::tunnels::hand_over(tunnel);
        }
        if let Err(e) = self.flush_journal().await {
            tracing::error!(
                "last journal record before the handover: {e}; the new process records those bytes"
            );
        }
        let mut journal = lock(&self.journal);
        let recorded = journal.recorded_totals().clone();
        *journal = Journal::standby();
        *lock(&self.journal_summary) = journal.summary();
        recorded
    }

    /// Takes over from the predecessor, which has released: opens the journal and
    /// starts reading the UDP sockets.
    pub async fn take_over(&self) -> Result<(), JournalError> {
        let dir = self.state_dir.clone();
        let opened = crate::state::blocking(move || Journal::open(&dir))
            .await
            .map_err(|source| JournalError::Io {
                path: self.state_dir.join(crate::journal::FILE),
                source,
            });
        // UDP first: whatever the journal says, the sockets are this process's now.
        self.shared.udp_released.cancel();
        let journal = opened??;
        *lock(&self.journal_summary) = journal.summary();
        *lock(&self.journal) = journal;
        Ok(())
    }

    /// Adds bytes the predecessor's users moved while it drained.
    pub fn absorb(&self, users: &BTreeMap<String, [u64; 2]>) {
        for (name, [up, down]) in users {
            self.shared.accounting.absorb(name, *up, *down);
        }
    }

    /// A socket the predecessor handed over for a TCP listener on `addr` that no
    /// inbound took (the control API's).
    pub fn take_inherited_tcp(
        &self,
        addr: std::net::SocketAddr,
    ) -> Option<std::io::Result<std::net::TcpListener>> {
        self.shared.inherited(|i| i.take_tcp(addr))
    }

    /// Where `POST /v1/upgrade` requests go from now on (the binary running the node
    /// carries them out).
    pub fn accept_upgrades(&self) -> mpsc::Receiver<UpgradeRequest> {
        let (tx, rx) = mpsc::channel(1);
        *lock(&self.upgrades) = Some(tx);
        rx
    }

    /// Asks for an upgrade (the old process drains for `drain` at most; the new one
    /// runs `program`, else the binary at this one's path) and waits for its outcome.
    pub async fn request_upgrade(
        &self,
        drain: std::time::Duration,
        program: Option<std::path::PathBuf>,
    ) -> Result<Upgraded, HandoverError> {
        let Some(tx) = lock(&self.upgrades).clone() else {
            return Err(HandoverError::Unsupported);
        };
        // One at a time: a request while another waits for its outcome is refused
        // at once (not queued behind it).
        if self
            .upgrading
            .compare_exchange(
                false,
                true,
                std::sync::atomic::Ordering::AcqRel,
                std::sync::atomic::Ordering::Acquire,
            )
            .is_err()
        {
            return Err(HandoverError::Busy);
        }
        struct Done<'a>(&'a std::sync::atomic::AtomicBool);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                self.0.store(false, std::sync::atomic::Ordering::Release);
            }
        }
        let _done = Done(&self.upgrading);
        let (reply, answer) = oneshot::channel();
        tx.try_send(UpgradeRequest {
            drain,
            program,
            reply,
        })
        .map_err(|_| HandoverError::Busy)?;
        match answer.await {
            Ok(Ok(upgraded)) => Ok(upgraded),
            Ok(Err(problem)) => Err(HandoverError::Failed(problem)),
            Err(_) => Err(HandoverError::Busy),
        }
    }
}
