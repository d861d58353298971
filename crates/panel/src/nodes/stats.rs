//! The stats round: a node's journal records, read by cursor, checked, and added to
//! users' usage in bounded batches. An enrolled node is still a peer: what it reports
//! is checked as hostile input.
//!
//! - **Only the server's own users.** A record's entry counts only for a user who may
//!   see the server's cluster (the users its config is rendered from, whatever their
//!   status: one cut for a limit or an expiry still carried the bytes recorded before
//!   the cut). Anything else (another cluster's user, a deleted or made-up id, a name
//!   that is no user at all) is refused, counted (`reason="not_this_server"`) and
//!   logged. Only users in the config as rendered now (active or on hold) are marked
//!   online, so a node cannot start an on-hold clock of a user it does not serve.
//! - **An allowance.** A server cannot carry more than a line rate allows:
//!   [`LINE_RATE_BYTES_PER_MS`] (200 Gbit/s, up and down together) for every
//!   millisecond of the panel's clock since it was made, of which at most
//!   [`ALLOWANCE_HORIZON_MS`] (a day) is kept unused; each accepted entry (up + down)
//!   spends it. An entry larger than what is left is refused whole, counted
//!   (`reason="over_allowance"`) and logged, never clipped. A real server is far below
//!   the line rate, so its allowance stays near full and a backlog after the panel was
//!   away passes; a `u64::MAX` entry never does. The allowance is stored with the
//!   cursor, so restarts and reconnects do not refill it.
//! - **Bounded work.** At most [`PAGES_PER_ROUND`] pages of [`STATS_PAGE`] records per
//!   round (the rest waits for the next heartbeat); each page is written in batches of
//!   whole records holding at most [`BATCH_USERS`] users (a single record with more is
//!   a batch of its own, at most the cluster's users), one transaction each, so
//!   SQLite's one writer is never held for long and an admin's write waits at most
//!   one batch.
//! - **Exactly once.** Each batch moves the stored cursor to its last record in the
//!   same transaction as the usage it adds, and only from the cursor the round read
//!   from; the node is acknowledged after a page is stored.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

use http::Method;
use serde::Deserialize;
use switchyard_channel::NodeChannel;

use super::{Nodes, RoundError, call};
use crate::metrics::StatsRefusal;
use crate::model::Id;
use crate::model::snapshot::ServerSnapshot;
use crate::render::panel_user;
use crate::store::{BATCH_USERS, StatsBatch, StatsState};

/// The line rate a server's reported traffic is held to: 25 GB (200 Gbit/s) per second,
/// up and down together, per millisecond. Generous on purpose: it only has to stop
/// what no server can carry.
pub(super) const LINE_RATE_BYTES_PER_MS: u64 = 25_000_000;

/// How much unused allowance a server keeps: one day at the line rate (2.16 PB). A
/// backlog larger than that (a panel away for weeks from a server near its line rate)
/// is refused in part; a hostile node can charge no more than that at once.
pub(super) const ALLOWANCE_HORIZON_MS: i64 = 86_400_000;

/// The most one tunnel's payload counter may grow per round, in bytes: the allowance's
/// cap. Anything past it is no real traffic, and would overflow the usage chart's sums.
pub(super) const MAX_TUNNEL_DELTA: u64 = LINE_RATE_BYTES_PER_MS * ALLOWANCE_HORIZON_MS as u64;

/// Records asked for per stats read (the node's maximum).
pub(super) const STATS_PAGE: usize = 1000;

/// Stats reads per round: 10 pages, a node's whole journal (10,000 records).
pub(super) const PAGES_PER_ROUND: usize = 10;

/// How often refused records are logged, per server (they are counted always).
const LOG_EVERY: Duration = Duration::from_secs(60);

/// One stats read, as the node answers it.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Stats {
    pub(super) records: Vec<Record>,
    pub(super) next_cursor: u64,
    #[serde(default)]
    pub(super) users: HashMap<String, Live>,
}

/// One journal record.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Record {
    pub(super) seq: u64,
    pub(super) users: HashMap<String, Bytes>,
}

/// One user's bytes in a record.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
pub(super) struct Bytes {
    pub(super) up: u64,
    pub(super) down: u64,
}

/// A user's live state on the node.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Live {
    #[serde(default)]
    pub(super) open_connections: u64,
}

/// A server's allowance for reported traffic during one round. Pure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Allowance {
    /// The panel time it accrues from.
    start_ms: i64,
    now_ms: i64,
    /// Bytes spent in this round.
    spent: u64,
}

impl Allowance {
    /// The allowance of a server whose stats stand at `state`, at `now_ms`.
    pub(super) fn at(state: &StatsState, now_ms: i64) -> Self {
        let start_ms = state
            .allowance_ms
            .max(state.created_ms)
            .max(now_ms.saturating_sub(ALLOWANCE_HORIZON_MS))
            .min(now_ms);
        Self {
            start_ms,
            now_ms,
            spent: 0,
        }
    }

    /// Bytes left.
    pub(super) fn left(&self) -> u64 {
        let ms = u64::try_from(self.now_ms.saturating_sub(self.start_ms)).unwrap_or(0);
        ms.saturating_mul(LINE_RATE_BYTES_PER_MS)
            .saturating_sub(self.spent)
    }

    /// Spends `bytes` if that many are left.
    pub(super) fn take(&mut self, bytes: u64) -> bool {
        if bytes > self.left() {
            return false;
        }
        self.spent = self.spent.saturating_add(bytes);
        true
    }

    /// The panel time to store: the start moved past what was spent.
    pub(super) fn stored(&self) -> i64 {
        let ms = self.spent.div_ceil(LINE_RATE_BYTES_PER_MS);
        self.start_ms
            .saturating_add(i64::try_from(ms).unwrap_or(i64::MAX))
            .min(self.now_ms)
    }
}

/// Entries refused, by reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Refused {
    /// Entries of users the server does not serve.
    pub(super) not_this_server: u64,
    /// Entries larger than the allowance left.
    pub(super) over_allowance: u64,
}

impl Refused {
    fn any(&self) -> bool {
        self.not_this_server > 0 || self.over_allowance > 0
    }

    fn add(&mut self, other: Self) {
        self.not_this_server = self.not_this_server.saturating_add(other.not_this_server);
        self.over_allowance = self.over_allowance.saturating_add(other.over_allowance);
    }
}

/// Bytes per user: (user, up, down), each user once.
pub(super) type UserBytes = Vec<(Id, u64, u64)>;

/// A page, checked: batches to store in order, the users seen online, what was
/// refused and a few of the names refused (for the log).
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Intake {
    /// (cursor the batch ends at, bytes per user).
    pub(super) batches: Vec<(u64, UserBytes)>,
    pub(super) online: BTreeSet<Id>,
    pub(super) refused: Refused,
    pub(super) examples: Vec<String>,
}

/// Why a page cannot be taken at all.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub(super) enum PageError {
    /// Sequence numbers must grow, past the cursor, up to `next_cursor`.
    #[error(
        "the node's stats page is out of order (record {seq} after cursor {after}, next cursor {next})"
    )]
    OutOfOrder {
        /// The record's number.
        seq: u64,
        /// The cursor or record before it.
        after: u64,
        /// The page's next cursor.
        next: u64,
    },
}

/// The users a server serves: every user who may see its cluster, and those of them
/// in its config as rendered now.
#[derive(Debug, Default)]
pub(super) struct Served {
    pub(super) members: HashSet<Id>,
    pub(super) rendered: HashSet<Id>,
}

impl Served {
    /// From the server's snapshot at `now_ms`.
    pub(super) fn of(snapshot: &ServerSnapshot, now_ms: i64) -> Self {
        let members = snapshot.users.iter().map(|(u, _)| u.id).collect();
        let rendered = snapshot
            .users
            .iter()
            .filter(|(u, _)| u.standing().status(now_ms).may_connect())
            .map(|(u, _)| u.id)
            .collect();
        Self { members, rendered }
    }
}

/// Checks a page read after `cursor`: which entries count, spending `allowance`, in
/// batches of whole records. Pure.
pub(super) fn intake(
    cursor: u64,
    page: &Stats,
    served: &Served,
    allowance: &mut Allowance,
) -> Result<Intake, PageError> {
    let mut out = Intake::default();
    let mut after = cursor;
    for r in &page.records {
        if r.seq <= after || r.seq > page.next_cursor {
            return Err(PageError::OutOfOrder {
                seq: r.seq,
                after,
                next: page.next_cursor,
            });
        }
        after = r.seq;
    }
    let mut current: BTreeMap<Id, (u64, u64)> = BTreeMap::new();
    let mut current_end = cursor;
    for r in &page.records {
        let mut these: BTreeMap<Id, (u64, u64)> = BTreeMap::new();
        // In name order, so the same page always spends the allowance the same way.
        let mut entries: Vec<(&String, &Bytes)> = r.users.iter().collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
        for (name, b) in entries {
            let Some(user) = panel_user(name).filter(|u| served.members.contains(u)) else {
                out.refused.not_this_server += 1;
                if out.examples.len() < 3 {
                    out.examples.push(name.chars().take(24).collect());
                }
                continue;
            };
            if !allowance.take(b.up.saturating_add(b.down)) {
                out.refused.over_allowance += 1;
                if out.examples.len() < 3 {
                    out.examples.push(name.clone());
                }
                continue;
            }
            let t = these.entry(user).or_default();
            t.0 = t.0.saturating_add(b.up);
            t.1 = t.1.saturating_add(b.down);
            if served.rendered.contains(&user) {
                out.online.insert(user);
            }
        }
        let union = current.len() + these.keys().filter(|u| !current.contains_key(u)).count();
        if !current.is_empty() && union > BATCH_USERS {
            out.batches
                .push((current_end, flatten(std::mem::take(&mut current))));
        }
        for (user, (up, down)) in these {
            let t = current.entry(user).or_default();
            t.0 = t.0.saturating_add(up);
            t.1 = t.1.saturating_add(down);
        }
        current_end = r.seq;
    }
    if page.next_cursor > cursor {
        out.batches.push((page.next_cursor, flatten(current)));
    }
    for (name, live) in &page.users {
        if live.open_connections > 0
            && let Some(user) = panel_user(name).filter(|u| served.rendered.contains(u))
        {
            out.online.insert(user);
        }
    }
    Ok(out)
}

fn flatten(users: BTreeMap<Id, (u64, u64)>) -> UserBytes {
    users
        .into_iter()
        .map(|(u, (up, down))| (u, up, down))
        .collect()
}

/// A server's refused entries since its last log line.
#[derive(Debug, Default)]
struct Unlogged {
    last: Option<Instant>,
    sum: Refused,
    names: Vec<String>,
}

/// Refused entries not yet logged, per server: logged at most once per [`LOG_EVERY`].
#[derive(Debug, Default)]
pub(super) struct RefusalLog {
    pending: Mutex<HashMap<Id, Unlogged>>,
}

impl RefusalLog {
    fn note(&self, server: Id, refused: Refused, examples: &[String]) {
        if !refused.any() {
            return;
        }
        let mut all = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        let Unlogged { last, sum, names } = all.entry(server).or_default();
        sum.add(refused);
        for e in examples {
            if names.len() < 3 && !names.contains(e) {
                names.push(e.clone());
            }
        }
        if last.is_some_and(|t| t.elapsed() < LOG_EVERY) {
            return;
        }
        tracing::warn!(
            server,
            not_this_server = sum.not_this_server,
            over_allowance = sum.over_allowance,
            examples = ?names,
            "refused traffic records the node reported: for users it does not serve, or \
             more than it can have carried"
        );
        *last = Some(Instant::now());
        *sum = Refused::default();
        names.clear();
    }
}

impl Nodes {
    /// Pulls stats after the stored cursor (at most [`PAGES_PER_ROUND`] pages), stores
    /// what counts in batches and acknowledges each page; returns the users seen
    /// online (an open connection or traffic) among those the server's config has.
    pub(super) async fn collect(
        &self,
        id: Id,
        channel: &NodeChannel,
        snapshot: &ServerSnapshot,
        now: i64,
    ) -> Result<Vec<Id>, RoundError> {
        let served = Served::of(snapshot, now);
        let state = self
            .store
            .stats_state(id)
            .await
            .map_err(|source| RoundError::Store {
                doing: "reading the journal cursor",
                source,
            })?;
        let mut allowance = Allowance::at(&state, now);
        let mut cursor = state.cursor;
        let mut online = BTreeSet::new();
        for _ in 0..PAGES_PER_ROUND {
            let page: Stats = call(
                channel,
                Method::GET,
                &format!("/v1/stats?cursor={cursor}&limit={STATS_PAGE}"),
                None,
            )
            .await?;
            let full = page.records.len() >= STATS_PAGE;
            let taken = intake(cursor, &page, &served, &mut allowance)?;
            self.metrics
                .stats_refused(StatsRefusal::NotThisServer, taken.refused.not_this_server);
            self.metrics
                .stats_refused(StatsRefusal::OverAllowance, taken.refused.over_allowance);
            self.refusals.note(id, taken.refused, &taken.examples);
            online.extend(taken.online);
            for (to, users) in taken.batches {
                let batch = StatsBatch {
                    from: cursor,
                    to,
                    users,
                    allowance_ms: allowance.stored(),
                };
                let stored = self.store.add_traffic(id, &batch).await.map_err(|source| {
                    RoundError::Store {
                        doing: "storing traffic",
                        source,
                    }
                })?;
                if !stored {
                    return Err(RoundError::CursorMoved);
                }
                cursor = to;
            }
            if cursor > state.cursor {
                let ack = serde_json::to_vec(&serde_json::json!({ "cursor": cursor }))
                    .unwrap_or_default();
                let (s, _) = channel
                    .request(Method::POST, "/v1/stats/ack", Some(ack))
                    .await
                    .map_err(RoundError::Ack)?;
                if !s.is_success() {
                    return Err(RoundError::AckStatus(s));
                }
            }
            if !full {
                break;
            }
        }
        let online: Vec<Id> = online.into_iter().collect();
        self.store
            .mark_online(&online, now)
            .await
            .map_err(|source| RoundError::Store {
                doing: "marking users online",
                source,
            })?;
        Ok(online)
    }
}

/// The payload counters of the enabled tunnels `server` relays, read from its node
/// (`GET /v1/tunnels`; empty when it relays none, without asking); none when the node
/// did not answer.
pub(super) async fn relayed_bytes(
    server: Id,
    channel: &NodeChannel,
    snapshot: &ServerSnapshot,
) -> Option<Vec<(Id, u64)>> {
    let relayed: Vec<(&str, Id)> = snapshot
        .tunnels
        .iter()
        .filter(|t| t.tunnel.enabled && t.tunnel.relay_server_id == server)
        .map(|t| (t.tunnel.name.as_str(), t.tunnel.id))
        .collect();
    if relayed.is_empty() {
        return Some(Vec::new());
    }
    #[derive(Deserialize)]
    struct Halves {
        tunnels: Vec<serde_json::Value>,
    }
    let halves = match call::<Halves>(channel, Method::GET, "/v1/tunnels", None).await {
        Ok(v) => v.tunnels,
        Err(e) => {
            tracing::warn!(server, "reading the tunnels' counters: {e}");
            return None;
        }
    };
    Some(
        halves
            .iter()
            .filter(|h| h["role"] == "relay")
            .filter_map(|h| {
                let name = h["name"].as_str()?;
                let id = relayed.iter().find(|(n, _)| *n == name)?.1;
                Some((id, h["payload_bytes"].as_u64()?))
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_796_121_000_000;

    type Entries<'a> = Vec<(&'a str, u64, u64)>;

    fn page(cursor_end: u64, records: Vec<(u64, Entries<'_>)>) -> Stats {
        Stats {
            records: records
                .into_iter()
                .map(|(seq, users)| Record {
                    seq,
                    users: users
                        .into_iter()
                        .map(|(n, up, down)| (n.to_owned(), Bytes { up, down }))
                        .collect(),
                })
                .collect(),
            next_cursor: cursor_end,
            users: HashMap::new(),
        }
    }

    fn served(members: &[Id], rendered: &[Id]) -> Served {
        Served {
            members: members.iter().copied().collect(),
            rendered: rendered.iter().copied().collect(),
        }
    }

    fn full() -> Allowance {
        Allowance::at(&StatsState::default(), NOW)
    }

    #[test]
    fn an_allowance_accrues_from_creation_up_to_a_day_and_is_spent() {
        let state = StatsState {
            cursor: 0,
            allowance_ms: 0,
            created_ms: NOW - 2_000,
        };
        let mut a = Allowance::at(&state, NOW);
        assert_eq!(a.left(), 2_000 * LINE_RATE_BYTES_PER_MS, "two seconds old");
        assert!(!a.take(u64::MAX));
        assert!(a.take(LINE_RATE_BYTES_PER_MS + 1));
        assert_eq!(a.stored(), NOW - 2_000 + 2, "rounded up to the millisecond");
        let old = Allowance::at(&StatsState::default(), NOW);
        assert_eq!(
            old.left(),
            ALLOWANCE_HORIZON_MS as u64 * LINE_RATE_BYTES_PER_MS,
            "at most a day"
        );
        // A clock stepped back: nothing accrues until it passes the stored point.
        let ahead = StatsState {
            cursor: 0,
            allowance_ms: NOW + 5_000,
            created_ms: 0,
        };
        assert_eq!(Allowance::at(&ahead, NOW).left(), 0);
        assert_eq!(Allowance::at(&ahead, NOW).stored(), NOW);
    }

    #[test]
    fn only_the_servers_users_count_and_only_rendered_ones_are_online() {
        let p = page(
            7,
            vec![
                (5, vec![("u1", 10, 20), ("u2", 1, 1), ("u99", 5, 5)]),
                (7, vec![("u1", 1, 2), ("admin", 1, 1), ("u3", 4, 4)]),
            ],
        );
        let mut a = full();
        let got = intake(3, &p, &served(&[1, 2, 3], &[1, 3]), &mut a).unwrap();
        assert_eq!(
            got.batches,
            vec![(7, vec![(1, 11, 22), (2, 1, 1), (3, 4, 4)])]
        );
        assert_eq!(
            got.online,
            BTreeSet::from([1, 3]),
            "2 is not in the config now"
        );
        assert_eq!(got.refused.not_this_server, 2);
        assert_eq!(got.examples, vec!["u99".to_owned(), "admin".to_owned()]);
    }

    #[test]
    fn an_entry_past_the_allowance_is_refused_whole() {
        let p = page(2, vec![(1, vec![("u1", u64::MAX, 0), ("u2", 100, 0)])]);
        let mut a = full();
        let got = intake(0, &p, &served(&[1, 2], &[1, 2]), &mut a).unwrap();
        assert_eq!(got.batches, vec![(2, vec![(2, 100, 0)])]);
        assert_eq!(got.refused.over_allowance, 1);
        let p = page(3, vec![(3, vec![("u1", u64::MAX / 2, u64::MAX / 2 + 10)])]);
        let got = intake(2, &p, &served(&[1], &[1]), &mut a).unwrap();
        assert_eq!(
            got.refused.over_allowance, 1,
            "up + down saturate, then refused"
        );
        assert_eq!(got.batches, vec![(3, vec![])], "the cursor still moves");
    }

    #[test]
    fn batches_are_whole_records_of_at_most_the_batch_size() {
        let names: Vec<String> = (1..=BATCH_USERS as i64 + 10)
            .map(|i| format!("u{i}"))
            .collect();
        let members: Vec<Id> = (1..=BATCH_USERS as i64 + 10).collect();
        let a_record = |from: usize, to: usize| -> Vec<(&str, u64, u64)> {
            names[from..to].iter().map(|n| (n.as_str(), 1, 1)).collect()
        };
        let p = page(
            40,
            vec![
                (10, a_record(0, 300)),
                (20, a_record(0, 300)),
                (30, a_record(300, BATCH_USERS + 10)),
                (40, a_record(0, 1)),
            ],
        );
        let mut a = full();
        let got = intake(0, &p, &served(&members, &members), &mut a).unwrap();
        let shape: Vec<(u64, usize)> = got.batches.iter().map(|(c, u)| (*c, u.len())).collect();
        // The last record adds one user already in the first batch, not in this one.
        assert_eq!(shape, vec![(20, 300), (40, BATCH_USERS + 10 - 300 + 1)]);
        assert!(got.batches.iter().all(|(_, u)| u.len() <= BATCH_USERS));
        // One record with more users than a batch is a batch of its own.
        let p = page(
            50,
            vec![(45, a_record(0, 3)), (50, a_record(0, BATCH_USERS + 10))],
        );
        let got = intake(40, &p, &served(&members, &members), &mut a).unwrap();
        let shape: Vec<(u64, usize)> = got.batches.iter().map(|(c, u)| (*c, u.len())).collect();
        assert_eq!(shape, vec![(45, 3), (50, BATCH_USERS + 10)]);
    }

    #[test]
    fn a_page_out_of_order_is_refused() {
        let mut a = full();
        let s = served(&[1], &[1]);
        for (cursor, p) in [
            (5, page(9, vec![(5, vec![])])),
            (0, page(9, vec![(3, vec![]), (3, vec![])])),
            (0, page(2, vec![(3, vec![])])),
        ] {
            assert!(matches!(
                intake(cursor, &p, &s, &mut a),
                Err(PageError::OutOfOrder { .. })
            ));
        }
        assert_eq!(
            intake(4, &page(4, vec![]), &s, &mut a).unwrap(),
            Intake::default(),
            "nothing new: nothing to store"
        );
    }
}
