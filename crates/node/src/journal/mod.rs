//! The durable traffic journal.
//!
//! Every flush appends one record of per-user byte deltas (since the previous record)
//! to `journal.jsonl` in the state directory, synced. A reader (the panel, the CLI)
//! reads records after a cursor and acknowledges the last one it stored; acknowledged
//! records are dropped.
//!
//! What it guarantees:
//! - **Nothing counted twice, nothing reused.** Records carry sequence numbers that
//!   only grow, across restarts too: the highest number handed to a reader is written
//!   down (`read N`) before the records leave, so a restart never renumbers or merges
//!   what a reader may already hold.
//! - **A torn tail is cut.** A crash or a full disk in the middle of a write leaves a
//!   partial last line; it is truncated on open (and after a failed write, before the
//!   next one), so the next record is never glued to it.
//! - **Failures lose nothing.** When a write fails the bytes stay in memory (the next
//!   record carries them) and [`Health`] says so until a write succeeds.
//! - The file is created `0600` and the directory synced after it is created or
//!   replaced. Every method here blocks: the node calls them on the blocking pool.

mod line;
mod store;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use line::{Line, parse_line};
use store::Detached;
pub use store::{FileStore, Store};

/// The journal's file in the state directory.
pub const FILE: &str = "journal.jsonl";

/// Records kept before unread ones are merged (nothing is lost by merging: bytes add
/// up; only the time resolution of unread history coarsens). Merging halves the
/// unread records at once, so the file is rewritten once per `MAX_RECORDS / 2`
/// records, not on every one.
pub const MAX_RECORDS: usize = 10_000;

/// Bytes of one user in one record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bytes {
    /// From the user.
    pub up: u64,
    /// To the user.
    pub down: u64,
}

/// One journal record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// Sequence number, increasing, never reused.
    pub seq: u64,
    /// Unix milliseconds of the flush.
    pub at_ms: i64,
    /// Bytes per user since the previous record.
    pub users: BTreeMap<String, Bytes>,
}

/// A journal failure: the node keeps counting in memory and says so in status.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum JournalError {
    /// The journal file can't be read or written.
    #[error("traffic journal {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// Whether the journal is reaching the disk.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Health {
    /// The last write's error, while writes fail (a full disk); `None` once one
    /// succeeds.
    pub error: Option<String>,
    /// Writes that failed since the node started.
    pub write_failures: u64,
}

/// The journal at a glance, for status and metrics (kept apart so they never wait
/// for a write).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Records waiting for acknowledgement.
    pub pending: usize,
    /// Sequence number of the last acknowledged record.
    pub acked: u64,
    /// Whether writes reach the disk.
    #[serde(flatten)]
    pub health: Health,
}

/// The journal: records not yet acknowledged, mirrored on disk.
#[derive(Debug)]
pub struct Journal {
    store: Box<dyn Store>,
    records: VecDeque<Record>,
    next_seq: u64,
    acked: u64,
    /// The highest sequence number handed to a reader, as written down.
    read_high: u64,
    /// Per-user totals at the last record.
    flushed: BTreeMap<String, (u64, u64)>,
    max_records: usize,
    /// Length of the file's good content; a failed append is cut back to it.
    good_len: u64,
    /// A failed append may have left bytes past `good_len`.
    torn: bool,
    /// An ack or a merge is in memory only; the file still holds the old lines
    /// (harmless: a reader's cursor skips them) until a rewrite succeeds.
    rewrite_owed: bool,
    health: Health,
    /// Another process holds the file ([`Journal::standby`]).
    standby: bool,
}

impl Journal {
    /// Opens (or creates) the journal in `dir`, cutting a torn last line.
    pub fn open(dir: &Path) -> Result<Self, JournalError> {
        crate::state::create_dir(dir).map_err(|e| JournalError::Io {
            path: dir.to_owned(),
            source: std::io::Error::other(e),
        })?;
        Self::with_store(Box::new(FileStore::new(dir)), MAX_RECORDS)
    }

    /// Opens the journal kept in `store`, merging unread records past `max_records`.
    pub fn with_store(mut store: Box<dyn Store>, max_records: usize) -> Result<Self, JournalError> {
        let io = |store: &dyn Store, source| JournalError::Io {
            path: store.path().to_owned(),
            source,
        };
        let bytes = store.load().map_err(|e| io(&*store, e))?;
        let (mut records, mut acked, mut read_high, mut top) = (VecDeque::new(), 0, 0, 0);
        let (mut good, mut pos, mut unclean) = (0usize, 0usize, false);
        for piece in bytes.split_inclusive(|&b| b == b'\n') {
            pos += piece.len();
            let Some(text) = piece.strip_suffix(b"\n") else {
                break; // torn: no newline
            };
            match std::str::from_utf8(text).ok().and_then(parse_line) {
                Some(Line::Ack(n)) => acked = acked.max(n),
                Some(Line::Read(n)) => read_high = read_high.max(n),
                Some(Line::Record(r)) => {
                    unclean |= !text.starts_with(b"{");
                    top = top.max(r.seq);
                    records.push_back(r);
                }
                None => {
                    tracing::warn!(path = %store.path().display(), "skipping a broken journal line");
                    unclean = true;
                    continue;
                }
            }
            good = pos;
        }
        records.retain(|r| r.seq > acked);
        let mut journal = Self {
            next_seq: top.max(acked).max(read_high) + 1,
            store,
            records,
            acked,
            read_high,
            flushed: BTreeMap::new(),
            max_records,
            good_len: good as u64,
            torn: false,
            rewrite_owed: false,
            health: Health::default(),
            standby: false,
        };
        // A repair that fails (a full disk at start) is owed, not fatal: the next
        // write tries again first, and health says so meanwhile.
        if unclean {
            if let Err(e) = journal.rewrite() {
                tracing::error!("{e}; rewriting the journal later");
            }
        } else if good < bytes.len() {
            tracing::warn!(
                path = %journal.store.path().display(),
                bytes = bytes.len() - good,
                "cutting a torn last journal line"
            );
            if let Err(e) = journal.store.truncate(good as u64) {
                journal.torn = true;
                let e = journal.fail(e);
                tracing::error!("{e}; cutting it before the next write");
            }
        }
        Ok(journal)
    }

    /// A journal that is not this process's yet, or any more: another process holds
    /// the file across an upgrade ([`crate::handover`]). It records nothing, so
    /// counted bytes stay unrecorded and the first record of the journal opened later
    /// carries them; it hands out nothing.
    pub fn standby() -> Self {
        Self {
            store: Box::new(Detached),
            records: VecDeque::new(),
            next_seq: 1,
            acked: 0,
            read_high: 0,
            flushed: BTreeMap::new(),
            max_records: MAX_RECORDS,
            good_len: 0,
            torn: false,
            rewrite_owed: false,
            health: Health::default(),
            standby: true,
        }
    }

    /// Whether it is a [`Journal::standby`].
    pub fn is_standby(&self) -> bool {
        self.standby
    }

    /// Per-user totals the records so far account for (as the last flush saw them).
    pub fn recorded_totals(&self) -> &BTreeMap<String, (u64, u64)> {
        &self.flushed
    }

    fn fail(&mut self, source: std::io::Error) -> JournalError {
        let e = JournalError::Io {
            path: self.store.path().to_owned(),
            source,
        };
        self.health.error = Some(e.to_string());
        self.health.write_failures += 1;
        e
    }

    /// Appends `line`, first cutting what a failed append left and catching up on an
    /// owed rewrite.
    fn append(&mut self, line: &str) -> Result<(), JournalError> {
        if self.rewrite_owed {
            self.rewrite()?;
        } else if self.torn {
            if let Err(e) = self.store.truncate(self.good_len) {
                return Err(self.fail(e));
            }
            self.torn = false;
        }
        if let Err(e) = self.store.append(line.as_bytes()) {
            self.torn = true;
            return Err(self.fail(e));
        }
        self.good_len += line.len() as u64;
        self.health.error = None;
        Ok(())
    }

    /// Appends a record of what `totals` (per-user bytes counted since the node
    /// started) add to the previous record; returns its sequence number, or `None`
    /// when nothing changed. On error nothing is recorded: the next flush carries the
    /// bytes.
    pub fn flush(
        &mut self,
        totals: &BTreeMap<String, (u64, u64)>,
        at_ms: i64,
    ) -> Result<Option<u64>, JournalError> {
        if self.standby {
            return Ok(None);
        }
        let mut users = BTreeMap::new();
        for (name, &(up, down)) in totals {
            let (fu, fd) = self.flushed.get(name).copied().unwrap_or((0, 0));
            let delta = Bytes {
                up: up.saturating_sub(fu),
                down: down.saturating_sub(fd),
            };
            if delta != Bytes::default() {
                users.insert(name.clone(), delta);
            }
        }
        if users.is_empty() {
            // Nothing new, but a failed write still owes the disk a repair.
            if self.rewrite_owed {
                self.rewrite()?;
            }
            return Ok(None);
        }
        let record = Record {
            seq: self.next_seq,
            at_ms,
            users,
        };
        let mut line = serde_json::to_string(&record).unwrap_or_default();
        line.push('\n');
        self.append(&line)?;
        self.flushed = totals.clone();
        self.next_seq += 1;
        self.records.push_back(record);
        if self.records.len() > self.max_records {
            self.merge_unread();
            if let Err(e) = self.rewrite() {
                // Recorded all the same: the file holds the unmerged lines until a
                // rewrite succeeds.
                tracing::error!("{e}; merged in memory only");
            }
        }
        Ok(Some(self.next_seq - 1))
    }

    /// Merges unread records pairwise (each pair into the later one's number), halving
    /// them.
    fn merge_unread(&mut self) {
        let Some(i) = self.records.iter().position(|r| r.seq > self.read_high) else {
            return;
        };
        let unread: Vec<Record> = self.records.drain(i..).collect();
        let mut pairs = unread.into_iter();
        while let Some(mut first) = pairs.next() {
            if let Some(second) = pairs.next() {
                for (name, b) in second.users {
                    let e = first.users.entry(name).or_default();
                    // Saturating: a journal edited on disk may hold any value.
                    e.up = e.up.saturating_add(b.up);
                    e.down = e.down.saturating_add(b.down);
                }
                first.seq = second.seq;
                first.at_ms = second.at_ms;
            }
            self.records.push_back(first);
        }
        self.rewrite_owed = true;
    }

    /// Records after `cursor` (at most `limit`), and the cursor to acknowledge once
    /// they are stored. Records are handed out only once their number is written
    /// down; while the disk refuses, only those already written down are. At most
    /// half the cap is out unacknowledged at once (records handed out can't be
    /// merged), so a reader that never acknowledges can't make the journal grow
    /// without bound: it gets nothing new until it does.
    pub fn read(&mut self, cursor: u64, limit: usize) -> (Vec<Record>, u64) {
        if self.standby {
            return (Vec::new(), cursor);
        }
        let handed = self
            .records
            .iter()
            .take_while(|r| r.seq <= self.read_high)
            .count();
        let mut room = (self.max_records / 2).saturating_sub(handed);
        let read_high = self.read_high;
        let mut out: Vec<Record> = self
            .records
            .iter()
            .filter(|r| r.seq > cursor)
            .take_while(|r| {
                if r.seq <= read_high {
                    return true;
                }
                if room == 0 {
                    return false;
                }
                room -= 1;
                true
            })
            .take(limit)
            .cloned()
            .collect();
        if let Some(high) = out.last().map(|r| r.seq)
            && high > self.read_high
        {
            match self.append(&format!("read {high}\n")) {
                Ok(()) => self.read_high = high,
                Err(e) => {
                    tracing::error!("{e}; handing out only records read before");
                    out.retain(|r| r.seq <= self.read_high);
                }
            }
        }
        let next = out.last().map_or(cursor.max(self.acked), |r| r.seq);
        (out, next)
    }

    /// Drops records up to and including `cursor`. On error they are dropped in
    /// memory and the file catches up on the next write.
    pub fn ack(&mut self, cursor: u64) -> Result<(), JournalError> {
        if self.standby || cursor <= self.acked {
            return Ok(());
        }
        let cursor = cursor.min(self.next_seq - 1);
        self.acked = cursor;
        while self.records.front().is_some_and(|r| r.seq <= cursor) {
            self.records.pop_front();
        }
        self.rewrite_owed = true;
        self.rewrite()
    }

    /// Writes the file anew (atomically).
    fn rewrite(&mut self) -> Result<(), JournalError> {
        let mut text = format!("ack {}\nread {}\n", self.acked, self.read_high);
        for r in &self.records {
            text.push_str(&serde_json::to_string(r).unwrap_or_default());
            text.push('\n');
        }
        if let Err(e) = self.store.replace(text.as_bytes()) {
            self.rewrite_owed = true;
            return Err(self.fail(e));
        }
        self.good_len = text.len() as u64;
        self.torn = false;
        self.rewrite_owed = false;
        self.health.error = None;
        Ok(())
    }

    /// Sequence number of the last acknowledged record.
    pub fn acked(&self) -> u64 {
        self.acked
    }

    /// Records waiting for acknowledgement.
    pub fn pending(&self) -> usize {
        self.records.len()
    }

    /// Puts `wrap` around the journal's medium (tests make the disk full this way).
    pub fn wrap_store(&mut self, wrap: impl FnOnce(Box<dyn Store>) -> Box<dyn Store>) {
        let inner = std::mem::replace(&mut self.store, Box::new(Detached));
        self.store = wrap(inner);
    }

    /// Whether writes reach the disk.
    pub fn health(&self) -> Health {
        self.health.clone()
    }

    /// Pending, acknowledged and health together.
    pub fn summary(&self) -> Summary {
        Summary {
            pending: self.pending(),
            acked: self.acked,
            health: self.health(),
        }
    }
}
