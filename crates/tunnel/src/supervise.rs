//! Long-lived tasks, supervised: a task that fails (panics) is logged, counted and
//! started again after a pause that doubles from 100 ms to 5 s while it keeps failing
//! within a minute of its start, so a task that fails at once can't spin and one bad
//! input never leaves a node (or a client) deaf. A task that returns, or fails after `stop`
//! fired, is not started again.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The first pause before a restart.
pub const RESTART_FIRST: Duration = Duration::from_millis(100);
/// The longest pause before a restart.
pub const RESTART_MAX: Duration = Duration::from_secs(5);
/// A task that ran this long before failing starts over from [`RESTART_FIRST`].
const STABLE_AFTER: Duration = Duration::from_secs(60);

/// Runs what `make` makes until it returns or `stop` fires; `what` names it in logs
/// and `restarts` counts its restarts.
pub fn supervise<F, Fut>(what: String, stop: CancellationToken, restarts: Arc<AtomicU64>, make: F)
where
    F: Fn() -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    tokio::spawn(async move {
        let mut pause = RESTART_FIRST;
        loop {
            let started = Instant::now();
            let failed = match tokio::spawn(make()).await {
                Ok(()) => return,
                Err(e) => e,
            };
            if stop.is_cancelled() || !failed.is_panic() {
                return;
            }
            if started.elapsed() > STABLE_AFTER {
                pause = RESTART_FIRST;
            }
            let count = restarts.fetch_add(1, Ordering::Relaxed) + 1;
            tracing::error!(
                restarts = count,
                "{what} failed ({failed}); restarting it in {pause:?}"
            );
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                () = stop.cancelled() => return,
            }
            pause = (pause * 2).min(RESTART_MAX);
        }
    });
}
