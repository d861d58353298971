//! Change announcements: "something a node's config is made of changed".
//!
//! With SQLite (one instance) a write announces in-process. With PostgreSQL every write
//! also runs `NOTIFY switchyard`; each instance LISTENs and forwards what it hears to
//! its own subscribers, its own writes included, so a change made through any instance
//! reaches the nodes held by every instance. A listener that loses its connection
//! reconnects (sqlx's `PgListener` does) and announces once, so nothing missed while it
//! was away stays unpushed.

use std::sync::Arc;

use tokio::sync::broadcast;

/// The channel name used with PostgreSQL's LISTEN/NOTIFY.
pub(super) const CHANNEL: &str = "switchyard";

/// Subscribers lagging by more than this many announcements just re-check everything
/// (an announcement carries no payload that matters).
const BUFFER: usize = 64;

/// Where writes are announced.
#[derive(Clone, Debug)]
pub struct Changes {
    tx: Arc<broadcast::Sender<()>>,
}

impl Default for Changes {
    fn default() -> Self {
        let (tx, _) = broadcast::channel(BUFFER);
        Self { tx: Arc::new(tx) }
    }
}

impl Changes {
    /// Announces a change to this instance's subscribers.
    pub fn announce(&self) {
        let _ = self.tx.send(());
    }

    /// A new subscriber.
    pub fn subscribe(&self) -> broadcast::Receiver<()> {
        self.tx.subscribe()
    }

    /// Forwards PostgreSQL notifications from `url` to subscribers until the process
    /// ends. Spawned once per instance.
    pub fn listen_postgres(&self, url: String) {
        let me = self.clone();
        tokio::spawn(async move {
            loop {
                match sqlx::postgres::PgListener::connect(&url).await {
                    Ok(mut listener) => {
                        if let Err(e) = listener.listen(CHANNEL).await {
                            tracing::warn!("LISTEN {CHANNEL}: {e}");
                        } else {
                            me.announce();
                            loop {
                                match listener.try_recv().await {
                                    Ok(Some(_)) => me.announce(),
                                    // The connection was lost and is re-established by
                                    // the next call: re-check once.
                                    Ok(None) => me.announce(),
                                    Err(e) => {
                                        tracing::warn!("PostgreSQL notifications: {e}");
                                        break;
                                    }
                                }
                            }
                        }
                    }
                    Err(e) => tracing::warn!("PostgreSQL notifications: {e}"),
                }
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            }
        });
    }
}
