//! The node's background tasks, supervised ([`crate::supervise`]): a task that panics
//! is logged, counted in `switchyard_node_task_restarts_total` and started again.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{JOURNAL_EVERY, Node};
use crate::runtime::Shared;
use crate::supervise::supervise;

/// Starts the throughput sampler and the journal's flusher.
pub(super) fn start(node: &Arc<Node>) {
    let (shared, stop) = (node.shared.clone(), node.stop.clone());
    let restarts = node.task_restarts.clone();
    supervise(
        "throughput sampler".into(),
        node.stop.clone(),
        restarts.clone(),
        move || Node::sample_throughput(shared.clone(), stop.clone()),
    );
    let n = node.clone();
    supervise(
        "journal flusher".into(),
        node.stop.clone(),
        restarts,
        move || Node::journal_loop(n.clone()),
    );
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
