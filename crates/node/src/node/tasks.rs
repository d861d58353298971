//! The node's background tasks, supervised: a task that panics is logged, counted
//! and started again (after a second, so a task that panics at once can't spin).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{JOURNAL_EVERY, Node, Shared};

/// How long a panicked task waits before it starts again.
const RESTART_AFTER: Duration = Duration::from_secs(1);

/// Starts the throughput sampler and the journal's flusher.
pub(super) fn start(node: &Arc<Node>) {
    let (shared, stop) = (node.shared.clone(), node.stop.clone());
    supervise(node, "throughput sampler", move || {
        Node::sample_throughput(shared.clone(), stop.clone())
    });
    let n = node.clone();
    supervise(node, "journal flusher", move || {
        Node::journal_loop(n.clone())
    });
}

/// Runs what `make` makes until it returns or the node stops; starts it again when it
/// panics.
fn supervise<F, Fut>(node: &Arc<Node>, name: &'static str, make: F)
where
    F: Fn() -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let (stop, restarts): (CancellationToken, _) = (node.stop.clone(), node.task_restarts.clone());
    tokio::spawn(async move {
        loop {
            match tokio::spawn(make()).await {
                Err(e) if e.is_panic() && !stop.is_cancelled() => {
                    restarts.fetch_add(1, Ordering::Relaxed);
                    tracing::error!("{name} panicked; starting it again");
                    tokio::select! {
                        () = tokio::time::sleep(RESTART_AFTER) => {}
                        () = stop.cancelled() => return,
                    }
                }
                _ => return,
            }
        }
    });
}

impl Node {
    async fn sample_throughput(shared: Arc<Shared>, stop: CancellationToken) {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        let mut last = shared.accounting.node().totals();
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                () = stop.cancelled() => return,
            }
            let now = shared.accounting.node().totals();
            shared.throughput.0.store(now.0 - last.0, Ordering::Relaxed);
            shared.throughput.1.store(now.1 - last.1, Ordering::Relaxed);
            last = now;
        }
    }

    async fn journal_loop(node: Arc<Self>) {
        let mut tick = tokio::time::interval(JOURNAL_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut failing = false;
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                () = node.stop.cancelled() => return,
            }
            // One line when writes start failing and one when they work again, not
            // one a second while the disk is full.
            match node.flush_journal().await {
                Err(e) if !failing => {
                    tracing::error!("{e}; counting goes on in memory");
                    failing = true;
                }
                Ok(_) if failing && node.journal_summary().health.error.is_none() => {
                    tracing::info!("traffic journal: writing again");
                    failing = false;
                }
                _ => {}
            }
        }
    }
}
