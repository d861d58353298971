//! The durable traffic journal.
//!
//! Every flush appends one record of per-user byte deltas (since the previous flush)
//! to `journal.jsonl` in the state directory, synced to disk. A reader (the panel,
//! the CLI) reads records after a cursor and acknowledges the last one it stored;
//! acknowledged records are dropped. A restart of the node loses at most the bytes of
//! one flush interval after a crash (none after a clean stop, which flushes), and a
//! restart of the reader re-reads what it had not acknowledged: records carry their
//! sequence number, so a reader that stores the cursor with the counts counts nothing
//! twice.

use std::collections::{BTreeMap, VecDeque};
use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Records kept before unread ones are merged (nothing is lost by merging: bytes add
/// up; only the time resolution of unread history coarsens).
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
    /// Sequence number, increasing by one per record, never reused.
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

/// The journal: records not yet acknowledged, mirrored on disk.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    records: VecDeque<Record>,
    next_seq: u64,
    acked: u64,
    /// The highest sequence number a reader has been given.
    read_high: u64,
    /// Per-user totals at the last record.
    flushed: BTreeMap<String, (u64, u64)>,
    max_records: usize,
}

impl Journal {
    /// Opens (or creates) the journal in `dir`. A torn last line (a crash in the
    /// middle of a write) is dropped.
    pub fn open(dir: &Path) -> Result<Self, JournalError> {
        Self::open_with_cap(dir, MAX_RECORDS)
    }

    fn open_with_cap(dir: &Path, max_records: usize) -> Result<Self, JournalError> {
        let path = dir.join("journal.jsonl");
        let io = |source| JournalError::Io {
            path: path.clone(),
            source,
        };
        fs::create_dir_all(dir).map_err(io)?;
        let mut records = VecDeque::new();
        let mut acked = 0;
        match File::open(&path) {
            Ok(f) => {
                for line in BufReader::new(f).lines() {
                    let line = line.map_err(io)?;
                    if let Some(rest) = line.strip_prefix("ack ") {
                        acked = rest.trim().parse().unwrap_or(acked);
                    } else if let Ok(r) = serde_json::from_str::<Record>(&line) {
                        records.push_back(r);
                    } else {
                        tracing::warn!(path = %path.display(), "dropping a torn journal line");
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(e)),
        }
        records.retain(|r| r.seq > acked);
        let next_seq = records.back().map_or(acked, |r| r.seq) + 1;
        Ok(Self {
            path,
            records,
            next_seq,
            acked,
            read_high: acked,
            flushed: BTreeMap::new(),
            max_records,
        })
    }

    /// Appends a record of what `totals` (per-user bytes counted since the node
    /// started) add to the previous record; returns its sequence number, or `None`
    /// when nothing changed.
    pub fn flush(
        &mut self,
        totals: &BTreeMap<String, (u64, u64)>,
        at_ms: i64,
    ) -> Result<Option<u64>, JournalError> {
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
            return Ok(None);
        }
        let record = Record {
            seq: self.next_seq,
            at_ms,
            users,
        };
        let mut line = serde_json::to_string(&record).unwrap_or_default();
        line.push('\n');
        self.append(line.as_bytes())?;
        self.flushed = totals.clone();
        self.next_seq += 1;
        self.records.push_back(record);
        if self.records.len() > self.max_records {
            self.merge_unread()?;
        }
        Ok(Some(self.next_seq - 1))
    }

    fn append(&self, bytes: &[u8]) -> Result<(), JournalError> {
        let io = |source| JournalError::Io {
            path: self.path.clone(),
            source,
        };
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .map_err(io)?;
        f.write_all(bytes).map_err(io)?;
        f.sync_data().map_err(io)
    }

    /// Merges the two oldest records no reader has seen.
    fn merge_unread(&mut self) -> Result<(), JournalError> {
        let Some(i) = self.records.iter().position(|r| r.seq > self.read_high) else {
            return Ok(());
        };
        if i + 1 >= self.records.len() {
            return Ok(());
        }
        if let Some(first) = self.records.remove(i) {
            let second = &mut self.records[i];
            for (name, b) in first.users {
                let e = second.users.entry(name).or_default();
                e.up += b.up;
                e.down += b.down;
            }
        }
        self.rewrite()
    }

    /// Records after `cursor` (at most `limit`), and the cursor to acknowledge once
    /// they are stored.
    pub fn read(&mut self, cursor: u64, limit: usize) -> (Vec<Record>, u64) {
        let out: Vec<Record> = self
            .records
            .iter()
            .filter(|r| r.seq > cursor)
            .take(limit)
            .cloned()
            .collect();
        let next = out.last().map_or(cursor.max(self.acked), |r| r.seq);
        self.read_high = self.read_high.max(next);
        (out, next)
    }

    /// Drops records up to and including `cursor`.
    pub fn ack(&mut self, cursor: u64) -> Result<(), JournalError> {
        if cursor <= self.acked {
            return Ok(());
        }
        let cursor = cursor.min(self.next_seq - 1);
        self.acked = cursor;
        while self.records.front().is_some_and(|r| r.seq <= cursor) {
            self.records.pop_front();
        }
        self.rewrite()
    }

    /// Writes the file anew (atomically: a temporary file renamed over it).
    fn rewrite(&self) -> Result<(), JournalError> {
        let io = |source| JournalError::Io {
            path: self.path.clone(),
            source,
        };
        let tmp = self.path.with_extension("jsonl.tmp");
        let mut f = File::create(&tmp).map_err(io)?;
        writeln!(f, "ack {}", self.acked).map_err(io)?;
        for r in &self.records {
            writeln!(f, "{}", serde_json::to_string(r).unwrap_or_default()).map_err(io)?;
        }
        f.sync_all().map_err(io)?;
        fs::rename(&tmp, &self.path).map_err(io)
    }

    /// Sequence number of the last acknowledged record.
    pub fn acked(&self) -> u64 {
        self.acked
    }

    /// Records waiting for acknowledgement.
    pub fn pending(&self) -> usize {
        self.records.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals(v: &[(&str, u64, u64)]) -> BTreeMap<String, (u64, u64)> {
        v.iter()
            .map(|(n, u, d)| ((*n).to_owned(), (*u, *d)))
            .collect()
    }

    fn tempdir(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("switchyard-journal-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn records_deltas_reads_after_a_cursor_and_drops_acknowledged() {
        let dir = tempdir("basic");
        let mut j = Journal::open(&dir).unwrap();
        assert_eq!(j.flush(&totals(&[("a", 10, 20)]), 1).unwrap(), Some(1));
        assert_eq!(
            j.flush(&totals(&[("a", 10, 20)]), 2).unwrap(),
            None,
            "nothing new"
        );
        assert_eq!(
            j.flush(&totals(&[("a", 15, 20), ("b", 1, 1)]), 3).unwrap(),
            Some(2)
        );
        let (recs, next) = j.read(0, 100);
        assert_eq!(next, 2);
        assert_eq!(recs[0].users["a"], Bytes { up: 10, down: 20 });
        assert_eq!(recs[1].users["a"], Bytes { up: 5, down: 0 });
        assert_eq!(recs[1].users["b"], Bytes { up: 1, down: 1 });
        assert_eq!(j.read(1, 100).0.len(), 1);
        j.ack(1).unwrap();
        assert_eq!(j.pending(), 1);
        // A restarted node (counters from zero) keeps the unacknowledged record and
        // numbers on.
        let mut j = Journal::open(&dir).unwrap();
        assert_eq!(j.acked(), 1);
        assert_eq!(
            j.read(0, 100).0.iter().map(|r| r.seq).collect::<Vec<_>>(),
            [2]
        );
        assert_eq!(j.flush(&totals(&[("a", 7, 0)]), 4).unwrap(), Some(3));
        assert_eq!(j.read(2, 100).0[0].users["a"], Bytes { up: 7, down: 0 });
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_torn_last_line_is_dropped() {
        let dir = tempdir("torn");
        let mut j = Journal::open(&dir).unwrap();
        j.flush(&totals(&[("a", 1, 1)]), 1).unwrap();
        let path = dir.join("journal.jsonl");
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"seq\":2,\"at_ms\":2,\"us").unwrap();
        let mut j = Journal::open(&dir).unwrap();
        assert_eq!(j.read(0, 10).0.len(), 1);
        assert_eq!(j.flush(&totals(&[("a", 2, 2)]), 3).unwrap(), Some(2));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn unread_records_merge_past_the_cap_and_keep_every_byte() {
        let dir = tempdir("merge");
        let mut j = Journal::open_with_cap(&dir, 10).unwrap();
        for i in 1..=3 {
            j.flush(&totals(&[("a", i, 0)]), i as i64).unwrap();
        }
        let (seen, cursor) = j.read(0, usize::MAX);
        assert_eq!(cursor, 3);
        for i in 4..=15 {
            j.flush(&totals(&[("a", i, 0)]), i as i64).unwrap();
        }
        assert_eq!(j.pending(), 10);
        // What the reader was given is untouched; later records merged.
        let (recs, _) = j.read(0, usize::MAX);
        assert_eq!(recs[..3], seen[..]);
        let up: u64 = recs.iter().map(|r| r.users["a"].up).sum();
        assert_eq!(up, 15);
        // And the file says the same after a restart.
        let mut j = Journal::open(&dir).unwrap();
        let up: u64 = j
            .read(0, usize::MAX)
            .0
            .iter()
            .map(|r| r.users["a"].up)
            .sum();
        assert_eq!(up, 15);
        fs::remove_dir_all(&dir).unwrap();
    }
}
