//! The journal on a disk that fails or hangs: reported in status and metrics,
//! counting goes on in memory, and the control API never waits for a write.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use axum::http::StatusCode;
use common::control::*;
use common::*;
use serde_json::{Value, json};
use switchyard_node::journal::Store;

/// The journal's file on a disk that, while `full` is set, takes half a line and
/// fails (counting the refusals); while `hang` is set, hangs inside `append` (saying
/// so in `entered`) until `hang` is cleared, 10 s at most; while `panic` is set,
/// panics there.
#[derive(Debug, Default, Clone)]
struct Switches {
    full: Arc<AtomicBool>,
    refused: Arc<AtomicU64>,
    hang: Arc<AtomicBool>,
    entered: Arc<AtomicBool>,
    panic: Arc<AtomicBool>,
}

#[derive(Debug)]
struct TestDisk {
    inner: Box<dyn Store>,
    s: Switches,
}

impl TestDisk {
    /// Puts a test disk under the fixture's journal.
    fn under(f: &Fixture) -> Switches {
        let s = Switches::default();
        let switches = s.clone();
        f.node
            .journal()
            .wrap_store(move |inner| Box::new(Self { inner, s: switches }));
        s
    }

    fn check(&self) -> std::io::Result<()> {
        if self.s.full.load(Ordering::Relaxed) {
            self.s.refused.fetch_add(1, Ordering::Relaxed);
            return Err(std::io::Error::from(std::io::ErrorKind::StorageFull));
        }
        Ok(())
    }
}

impl Store for TestDisk {
    fn load(&mut self) -> std::io::Result<Vec<u8>> {
        self.inner.load()
    }
    fn append(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        assert!(
            !self.s.panic.load(Ordering::Relaxed),
            "the test disk panics"
        );
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while self.s.hang.load(Ordering::Relaxed) && std::time::Instant::now() < deadline {
            self.s.entered.store(true, Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(1));
        }
        // `full` is read once: a disk that tears a line reports the failure, even
        // when the test clears `full` in between.
        if self.s.full.load(Ordering::Relaxed) {
            let _ = self.inner.append(&bytes[..bytes.len() / 2]);
            self.s.refused.fetch_add(1, Ordering::Relaxed);
            return Err(std::io::Error::from(std::io::ErrorKind::StorageFull));
        }
        self.inner.append(bytes)
    }
    fn truncate(&mut self, len: u64) -> std::io::Result<()> {
        self.inner.truncate(len)
    }
    fn replace(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.check()?;
        self.inner.replace(bytes)
    }
    fn path(&self) -> &std::path::Path {
        self.inner.path()
    }
}

#[tokio::test]
async fn a_full_disk_shows_in_status_and_metrics_and_the_bytes_arrive_when_space_returns() {
    let f = start("protocol = \"vless\"").await;
    let disk = TestDisk::under(&f);
    let (full, refused) = (&disk.full, &disk.refused);
    full.store(true, Ordering::Relaxed);
    let alice = alice_connection(&f);
    alice.add(1000, 2000);
    assert!(f.node.flush_journal().await.is_err());
    alice.add(5, 5);
    assert!(f.node.flush_journal().await.is_err());
    let path = f.dir.path().join("journal.jsonl");
    let error = format!(
        "traffic journal {}: {}",
        path.display(),
        std::io::Error::from(std::io::ErrorKind::StorageFull)
    );
    // The node's own flush, every second, may fail too, at any moment: each count
    // read lies between what the disk had refused before it and after it.
    let before = refused.load(Ordering::Relaxed);
    let status = json(&f, "/v1/status").await;
    let metrics = call(&f, "GET", "/metrics", None).await.1;
    let after = refused.load(Ordering::Relaxed);
    assert!(before >= 2);
    let failures = status["journal"]["write_failures"].as_u64().unwrap();
    assert!(
        (before..=after).contains(&failures),
        "{before} <= {failures} <= {after}"
    );
    assert_eq!(
        status["journal"],
        json!({"pending": 0, "acked": 0, "error": error, "write_failures": failures})
    );
    assert!(
        metrics.contains("\nswitchyard_journal_writable 0\n"),
        "{metrics}"
    );
    let counted: u64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("switchyard_journal_write_failures_total "))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{metrics}"));
    assert!(
        (failures..=after).contains(&counted),
        "{failures} <= {counted} <= {after}"
    );
    // Live counters go on meanwhile.
    assert_eq!(f.alice(), (1005, 2005));
    full.store(false, Ordering::Relaxed);
    f.node.flush_journal().await.unwrap();
    assert_eq!(
        json(&f, "/v1/status").await["journal"]["error"],
        Value::Null
    );
    // On disk: clean records with every byte once (the torn half lines are gone).
    // One record, or two when the node's own flush read the totals before the
    // second count and wrote them once the disk had room again.
    drop(alice);
    let again = restart(&f).await;
    let (records, _) = again.read_journal(0, 10).await.unwrap();
    assert!((1..=2).contains(&records.len()), "{records:?}");
    let sum = records.iter().fold((0, 0), |(up, down), r| {
        let b = &r.users["alice"];
        (up + b.up, down + b.down)
    });
    assert_eq!(sum, (1005, 2005), "{records:?}");
    assert!(
        records
            .iter()
            .enumerate()
            .all(|(i, r)| r.seq == i as u64 + 1),
        "numbered from 1 without a gap: {records:?}"
    );
}

#[tokio::test]
async fn a_hanging_disk_never_stalls_the_control_api() {
    let f = start("protocol = \"vless\"").await;
    let disk = TestDisk::under(&f);
    disk.hang.store(true, Ordering::Relaxed);
    let alice = alice_connection(&f);
    alice.add(10, 20);
    let node = f.node.clone();
    let flush = tokio::spawn(async move { node.flush_journal().await });
    while !disk.entered.load(Ordering::Relaxed) {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    // A write hangs with the journal locked: status and metrics answer all the same.
    let began = std::time::Instant::now();
    assert_eq!(json(&f, "/v1/status").await["journal"]["pending"], 0);
    assert_eq!(call(&f, "GET", "/metrics", None).await.0, StatusCode::OK);
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "{:?}",
        began.elapsed()
    );
    disk.hang.store(false, Ordering::Relaxed);
    flush.await.unwrap().unwrap();
    assert_eq!(json(&f, "/v1/status").await["journal"]["pending"], 1);
}

/// Waits up to 5 s for `done`.
async fn until(mut done: impl FnMut() -> bool) {
    for _ in 0..500 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("not reached in 5 s");
}

#[tokio::test]
async fn a_flusher_that_panics_is_counted_and_starts_again() {
    let f = start("protocol = \"vless\"").await;
    let disk = TestDisk::under(&f);
    disk.panic.store(true, Ordering::Relaxed);
    let alice = alice_connection(&f);
    alice.add(3, 4);
    until(|| f.node.task_restarts() == 1).await;
    disk.panic.store(false, Ordering::Relaxed);
    // The restarted flusher takes the record on its own.
    until(|| f.node.journal_summary().pending == 1).await;
    let metrics = call(&f, "GET", "/metrics", None).await.1;
    assert!(
        metrics.contains("\nswitchyard_node_task_restarts_total 1\n"),
        "{metrics}"
    );
}
