//! The old process's side: [`prepare`] starts the new process and hands it the
//! sockets (reversible), [`Prepared::commit`] releases accepting, the journal and
//! the channel, [`Draining::run`] serves the open connections to their end or the
//! deadline, sending their counts across.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use super::{Handed, HandoverError, SOCKET_FILE};
use crate::node::Node;
use switchyard_channel::handover::{
    Command, Conn, Message, Offered, USAGE_BUDGET, USAGE_ENTRY, blocking, offer,
};

/// What an upgrade did, as `POST /v1/upgrade` answers it.
#[derive(Clone, Debug, Serialize)]
pub struct Upgraded {
    /// The old process, now draining.
    pub old_pid: u32,
    /// The new process, now serving.
    pub new_pid: u32,
    /// The new process's version.
    pub version: String,
}

/// A new process started and serving on the handed sockets; the old one still
/// accepts too, and still holds the journal and the channel.
#[derive(Debug)]
pub struct Prepared {
    offered: Offered,
}

/// The old process after the commit: it serves its open connections only.
#[derive(Debug)]
pub struct Draining {
    conn: Option<Conn>,
    /// Per-user totals the journal or the new process already has.
    sent: BTreeMap<String, (u64, u64)>,
    upgraded: Upgraded,
    /// Never waited for: the new process outlives this one.
    _child: std::process::Child,
}

/// Starts the new process with `command` and hands it the node's listening sockets
/// and `extra` ones (the control API's). On error the new process is stopped and
/// this one goes on as before.
pub async fn prepare(
    node: &Arc<Node>,
    command: &Command,
    extra: Vec<Handed>,
) -> Result<Prepared, HandoverError> {
    let mut sockets = node.handed_sockets().await;
    sockets.extend(extra);
    let path = node.state_dir().join(SOCKET_FILE);
    let command = command.clone();
    let offered = blocking(move || offer(path, &command, &sockets)).await?;
    Ok(Prepared { offered })
}

impl Prepared {
    /// What the upgrade does once committed.
    pub fn upgraded(&self) -> Upgraded {
        Upgraded {
            old_pid: std::process::id(),
            new_pid: self.offered.child.id(),
            version: self.offered.version.clone(),
        }
    }

    /// Stops accepting, takes the last journal record, lets the journal go and tells
    /// the new process (whose PID the caller then gives systemd). The channel is the
    /// caller's to close before. An error here leaves this process unable to accept:
    /// it should exit (systemd starts the service again).
    pub async fn commit(self, node: &Arc<Node>) -> Result<Draining, HandoverError> {
        let sent = node.release().await;
        let offered = self.offered;
        let (conn, child, version) = blocking(move || offered.release()).await?;
        let upgraded = Upgraded {
            old_pid: std::process::id(),
            new_pid: child.id(),
            version,
        };
        tracing::info!(
            new_pid = upgraded.new_pid,
            version = %upgraded.version,
            "upgrade: the new process serves; draining open connections"
        );
        Ok(Draining {
            conn: Some(conn),
            sent,
            upgraded,
            _child: child,
        })
    }
}

impl Draining {
    /// What the upgrade did.
    pub fn upgraded(&self) -> &Upgraded {
        &self.upgraded
    }

    /// Serves the open connections until they end or `deadline` passes (the rest are
    /// closed then), sending their counts each second; returns how many were closed.
    pub async fn run(mut self, node: &Arc<Node>, deadline: Duration) -> usize {
        let until = tokio::time::Instant::now() + deadline;
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let closed = loop {
            tick.tick().await;
            self.send_usage(node).await;
            let open = node.open_connections();
            if open == 0 {
                break 0;
            }
            if tokio::time::Instant::now() >= until {
                tracing::info!(
                    connections = open,
                    "upgrade: drain deadline reached; closing the rest"
                );
                node.shutdown().await;
                break open;
            }
        };
        self.send_usage(node).await;
        if let Some(conn) = self.conn.take() {
            let _ = blocking(move || conn.send(&Message::Drained { closed }, None)).await;
        }
        tracing::info!(closed, "upgrade: drained; this process ends");
        closed
    }

    /// Sends what users moved since the last message. If the new process is gone the
    /// counts stay here: nobody could record them.
    async fn send_usage(&mut self, node: &Arc<Node>) {
        let totals = node.shared().accounting.user_totals();
        let users = usage_since(&mut self.sent, &totals);
        if users.is_empty() {
            return;
        }
        let Some(conn) = self.conn.take() else {
            return;
        };
        let sent = blocking(move || {
            for chunk in chunks(users) {
                conn.send(&Message::Usage { users: chunk }, None)?;
            }
            Ok(conn)
        })
        .await;
        match sent {
            Ok(conn) => self.conn = Some(conn),
            Err(e) => tracing::error!("upgrade: the new process takes no more counts: {e}"),
        }
    }
}

/// What `totals` add to `sent` (per user, `[up, down]`), and `sent` brought up to
/// them.
pub(crate) fn usage_since(
    sent: &mut BTreeMap<String, (u64, u64)>,
    totals: &BTreeMap<String, (u64, u64)>,
) -> BTreeMap<String, [u64; 2]> {
    let mut users = BTreeMap::new();
    for (name, &(up, down)) in totals {
        let before = sent.entry(name.clone()).or_default();
        let delta = [up.saturating_sub(before.0), down.saturating_sub(before.1)];
        if delta != [0, 0] {
            users.insert(name.clone(), delta);
        }
        *before = (up, down);
    }
    users
}

/// `users` cut into `usage` messages of at most [`USAGE_BUDGET`] each (a user whose
/// name alone is longer goes alone).
fn chunks(users: BTreeMap<String, [u64; 2]>) -> Vec<BTreeMap<String, [u64; 2]>> {
    let mut out = Vec::new();
    let (mut chunk, mut size) = (BTreeMap::new(), 0usize);
    for (name, bytes) in users {
        let cost = name.len().saturating_add(USAGE_ENTRY);
        if !chunk.is_empty() && size.saturating_add(cost) > USAGE_BUDGET {
            out.push(std::mem::take(&mut chunk));
            size = 0;
        }
        size = size.saturating_add(cost);
        chunk.insert(name, bytes);
    }
    if !chunk.is_empty() {
        out.push(chunk);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_is_what_was_not_sent_yet() {
        let mut sent = BTreeMap::from([("a".to_owned(), (10, 20))]);
        let totals = BTreeMap::from([("a".to_owned(), (15, 20)), ("b".to_owned(), (0, 7))]);
        let usage = usage_since(&mut sent, &totals);
        assert_eq!(
            usage,
            BTreeMap::from([("a".to_owned(), [5, 0]), ("b".to_owned(), [0, 7])])
        );
        assert_eq!(sent, totals);
        assert!(usage_since(&mut sent, &totals).is_empty(), "nothing twice");
    }

    #[test]
    fn usage_travels_in_messages_that_fit() {
        let long = "x".repeat(200);
        let users: BTreeMap<String, [u64; 2]> = (0..1000)
            .map(|i| (format!("{long}{i:04}"), [u64::MAX, u64::MAX]))
            .collect();
        let chunks = chunks(users);
        // 252 estimated bytes a user: 260 of them in 64 KiB.
        let sizes: Vec<usize> = chunks.iter().map(BTreeMap::len).collect();
        assert_eq!(sizes, [260, 260, 260, 220]);
        for chunk in chunks {
            let bytes = serde_json::to_vec(&Message::Usage { users: chunk }).unwrap();
            assert!(bytes.len() <= USAGE_BUDGET, "{} bytes", bytes.len());
        }
        let alone = chunks_of_one("y".repeat(100_000));
        assert_eq!(alone, [1, 1], "a name over the budget goes alone");
    }

    fn chunks_of_one(name: String) -> Vec<usize> {
        let users = BTreeMap::from([(name, [1, 1]), ("a".to_owned(), [1, 1])]);
        chunks(users).iter().map(BTreeMap::len).collect()
    }
}
