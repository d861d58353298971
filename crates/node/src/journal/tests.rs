use std::fs::{self, OpenOptions};
use std::io::{self, Write as _};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::*;

fn totals(v: &[(&str, u64, u64)]) -> BTreeMap<String, (u64, u64)> {
    v.iter()
        .map(|(n, u, d)| ((*n).to_owned(), (*u, *d)))
        .collect()
}

fn seqs(j: &mut Journal, cursor: u64) -> Vec<u64> {
    j.read(cursor, usize::MAX).0.iter().map(|r| r.seq).collect()
}

fn up_of(records: &[Record]) -> Vec<u64> {
    records.iter().map(|r| r.users["a"].up).collect()
}

/// A journal kept in memory whose disk can be made full: a write then stores half
/// its bytes and fails, as a real full disk does.
#[derive(Clone, Debug, Default)]
struct MemStore {
    bytes: Arc<Mutex<Vec<u8>>>,
    full: Arc<AtomicBool>,
}

impl MemStore {
    fn full(&self) -> io::Result<()> {
        if self.full.load(Ordering::Relaxed) {
            return Err(io::Error::new(io::ErrorKind::StorageFull, "disk full"));
        }
        Ok(())
    }
}

impl Store for MemStore {
    fn load(&mut self) -> io::Result<Vec<u8>> {
        Ok(self.bytes.lock().unwrap().clone())
    }
    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        let mut b = self.bytes.lock().unwrap();
        if self.full().is_err() {
            b.extend_from_slice(&bytes[..bytes.len() / 2]);
        } else {
            b.extend_from_slice(bytes);
        }
        drop(b);
        self.full()
    }
    fn truncate(&mut self, len: u64) -> io::Result<()> {
        self.bytes.lock().unwrap().truncate(len as usize);
        Ok(())
    }
    fn replace(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.full()?;
        *self.bytes.lock().unwrap() = bytes.to_vec();
        Ok(())
    }
    fn path(&self) -> &Path {
        Path::new("memory")
    }
}

#[test]
fn records_deltas_reads_after_a_cursor_and_drops_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let mut j = Journal::open(dir.path()).unwrap();
    assert_eq!(j.flush(&totals(&[("a", 10, 20)]), 1).unwrap(), Some(1));
    assert_eq!(j.flush(&totals(&[("a", 10, 20)]), 2).unwrap(), None);
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
    let mut j = Journal::open(dir.path()).unwrap();
    assert_eq!(j.acked(), 1);
    assert_eq!(seqs(&mut j, 0), [2]);
    assert_eq!(j.flush(&totals(&[("a", 7, 0)]), 4).unwrap(), Some(3));
    assert_eq!(j.read(2, 100).0[0].users["a"], Bytes { up: 7, down: 0 });
}

#[test]
fn a_torn_last_line_is_cut_so_the_next_record_survives_and_no_number_is_reused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE);
    let mut j = Journal::open(dir.path()).unwrap();
    j.flush(&totals(&[("a", 1, 1)]), 1).unwrap();
    drop(j);
    let mut f = OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(b"{\"seq\":2,\"at_ms\":2,\"us").unwrap();
    let mut j = Journal::open(dir.path()).unwrap();
    assert_eq!(seqs(&mut j, 0), [1]);
    assert_eq!(j.flush(&totals(&[("a", 2, 2)]), 3).unwrap(), Some(2));
    // The record after the torn line is there on the next start, whole, and the
    // next number after it is new.
    let mut j = Journal::open(dir.path()).unwrap();
    let (recs, _) = j.read(0, 10);
    assert_eq!(recs.iter().map(|r| r.seq).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(recs[1].users["a"], Bytes { up: 2, down: 2 });
    assert_eq!(j.flush(&totals(&[("a", 1, 0)]), 4).unwrap(), Some(3));
    assert!(fs::read_to_string(&path).unwrap().ends_with("}\n"));
}

#[test]
fn a_file_with_a_record_glued_to_a_torn_line_gives_the_record_back() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join(FILE),
        "{\"seq\":1,\"at_ms\":1,\"users\":{\"a\":{\"up\":1,\"down\":0}}}\n{\"seq\":2,\"at\
         {\"seq\":2,\"at_ms\":3,\"users\":{\"a\":{\"up\":5,\"down\":0}}}\n",
    )
    .unwrap();
    let mut j = Journal::open(dir.path()).unwrap();
    assert_eq!(up_of(&j.read(0, 10).0), [1, 5]);
    let mut j = Journal::open(dir.path()).unwrap();
    assert_eq!(seqs(&mut j, 0), [1, 2], "written back clean");
}

#[test]
fn numbers_handed_out_before_a_restart_are_never_merged_or_reused() {
    let dir = tempfile::tempdir().unwrap();
    let open = || Journal::with_store(Box::new(FileStore::new(dir.path())), 4).unwrap();
    let mut j = open();
    for i in 1..=4 {
        j.flush(&totals(&[("a", i, 0)]), i as i64).unwrap();
    }
    // The reader stores records 1..=2 with cursor 2, then the node restarts with a
    // backlog at the cap.
    let (given, cursor) = j.read(0, 2);
    assert_eq!(cursor, 2);
    drop(j);
    let mut j = open();
    for i in 1..=3 {
        j.flush(&totals(&[("a", 10 * i, 0)]), 10 + i as i64)
            .unwrap();
    }
    // Records the reader holds are as it got them; what it did not get merged.
    let all: Vec<Record> = j.records.iter().cloned().collect();
    assert_eq!(all[..2], given[..]);
    assert_eq!(all.iter().map(|r| r.seq).collect::<Vec<_>>(), [1, 2, 6, 7]);
    assert_eq!(up_of(&all), [1, 1, 22, 10]);
    // Reading after the stored cursor counts every byte once: 1+1 stored, then 32.
    j.ack(cursor).unwrap();
    let after: u64 = up_of(&j.read(cursor, usize::MAX).0).iter().sum();
    assert_eq!(after, 2 + 30);
}

#[test]
fn unread_records_merge_past_the_cap_and_keep_every_byte() {
    let dir = tempfile::tempdir().unwrap();
    let mut j = Journal::with_store(Box::new(FileStore::new(dir.path())), 10).unwrap();
    for i in 1..=3 {
        j.flush(&totals(&[("a", i, 0)]), i as i64).unwrap();
    }
    let (seen, cursor) = j.read(0, usize::MAX);
    assert_eq!(cursor, 3);
    for i in 4..=15 {
        j.flush(&totals(&[("a", i, 0)]), i as i64).unwrap();
    }
    // 4..=11 merged into 4 at the 11th record, then those and 12..=15 into 4 again.
    assert_eq!(j.pending(), 7);
    let recs: Vec<Record> = j.records.iter().cloned().collect();
    assert_eq!(recs[..3], seen[..]);
    assert_eq!(up_of(&recs).iter().sum::<u64>(), 15);
    let j = Journal::open(dir.path()).unwrap();
    let recs: Vec<Record> = j.records.iter().cloned().collect();
    assert_eq!(up_of(&recs).iter().sum::<u64>(), 15);
}

#[test]
fn a_full_disk_is_reported_counting_goes_on_and_reaches_the_journal_when_space_returns() {
    let disk = MemStore::default();
    let mut j = Journal::with_store(Box::new(disk.clone()), MAX_RECORDS).unwrap();
    assert_eq!(j.flush(&totals(&[("a", 10, 0)]), 1).unwrap(), Some(1));
    disk.full.store(true, Ordering::Relaxed);
    let e = j.flush(&totals(&[("a", 30, 0)]), 2).unwrap_err();
    assert_eq!(e.to_string(), "traffic journal memory: disk full");
    assert!(j.flush(&totals(&[("a", 70, 0)]), 3).is_err());
    assert_eq!(
        j.health(),
        Health {
            error: Some("traffic journal memory: disk full".into()),
            write_failures: 2,
        }
    );
    // A reader still gets what was written; nothing new is handed out unrecorded.
    assert_eq!(
        j.read(0, 10).0.len(),
        0,
        "record 1 was never written down as read"
    );
    disk.full.store(false, Ordering::Relaxed);
    assert_eq!(j.flush(&totals(&[("a", 100, 0)]), 4).unwrap(), Some(2));
    assert_eq!(j.health().error, None);
    assert_eq!(
        j.health().write_failures,
        3,
        "the read's attempt counted too"
    );
    // The disk holds clean lines only: every byte, once.
    let mut again = Journal::with_store(Box::new(disk.clone()), MAX_RECORDS).unwrap();
    assert_eq!(up_of(&again.read(0, 10).0), [10, 90]);
}

#[test]
fn a_reader_that_never_acknowledges_gets_half_the_cap_and_the_journal_stays_bounded() {
    let mut j = Journal::with_store(Box::new(MemStore::default()), 10).unwrap();
    for i in 1..=8 {
        j.flush(&totals(&[("a", i, 0)]), i as i64).unwrap();
    }
    let (first, cursor) = j.read(0, 100);
    assert_eq!(
        first.iter().map(|r| r.seq).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5]
    );
    assert_eq!(j.read(cursor, 100), (vec![], 5), "nothing new until an ack");
    assert_eq!(j.read(0, 100).0, first, "what it has, again");
    for i in 9..=200 {
        j.flush(&totals(&[("a", i, 0)]), i as i64).unwrap();
        assert!(j.pending() <= 10, "{} records at {i}", j.pending());
    }
    // Once it acknowledges, it reads the rest, merged: every byte, once.
    let mut total: u64 = up_of(&first).iter().sum();
    let mut cursor = cursor;
    loop {
        j.ack(cursor).unwrap();
        let (recs, next) = j.read(cursor, 100);
        if recs.is_empty() {
            break;
        }
        total += up_of(&recs).iter().sum::<u64>();
        cursor = next;
    }
    assert_eq!(total, 200);
    assert_eq!(j.pending(), 0);
}

#[test]
fn merging_records_edited_to_huge_values_saturates_instead_of_overflowing() {
    // A journal edited on disk (or written by a broken build) may carry any number;
    // merging unread records must neither panic nor wrap around.
    let disk = MemStore::default();
    let max = u64::MAX;
    let lines: String = (1..=4)
        .map(|seq| {
            format!("{{\"seq\":{seq},\"at_ms\":{seq},\"users\":{{\"a\":{{\"up\":{max},\"down\":{max}}}}}}}\n")
        })
        .collect();
    disk.bytes
        .lock()
        .unwrap()
        .extend_from_slice(lines.as_bytes());
    let mut j = Journal::with_store(Box::new(disk), 4).unwrap();
    assert_eq!(j.pending(), 4, "the edited lines are read back");
    j.flush(&totals(&[("a", 1, 1)]), 5).unwrap();
    let (recs, _) = j.read(0, 100);
    assert!(recs.len() < 5, "the records were merged: {}", recs.len());
    assert!(up_of(&recs).contains(&u64::MAX), "{:?}", up_of(&recs));
}
