//! The subscriptions as the driver holds them: their usable servers, and the task that
//! fetches each again on its interval.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use switchyard_auto::{Server, ServerId, Subscription};
use tokio::sync::mpsc;

use crate::outbound::Outbound;

/// One subscription's usable servers, in order.
#[derive(Clone, Debug)]
pub struct SubscriptionServers {
    /// Its name: the URL it is fetched from again (`None`: never refreshed).
    pub name: String,
    /// Where to fetch it again, if anywhere.
    pub url: Option<String>,
    /// How often its server asks to be fetched again.
    pub update_interval: Option<Duration>,
    /// The servers.
    pub servers: Vec<Arc<Outbound>>,
}

impl SubscriptionServers {
    /// The usable servers of a fetched subscription, the others logged and left out.
    pub fn from_fetched(url: &str, sub: crate::subscription::Subscription) -> Self {
        let mut servers = Vec::new();
        for entry in sub.entries {
            let name = entry.name.clone();
            match Outbound::new(entry) {
                Ok(o) => servers.push(Arc::new(o)),
                Err(e) => tracing::warn!(server = %name, "left out: {e}"),
            }
        }
        Self {
            name: url.to_owned(),
            url: Some(url.to_owned()),
            update_interval: sub
                .update_interval_hours
                .map(|h| Duration::from_secs(u64::from(h.max(1)) * 3600)),
            servers,
        }
    }

    pub(super) fn auto(&self, by_id: &mut HashMap<ServerId, Arc<Outbound>>) -> Subscription {
        let mut servers = Vec::new();
        for o in &self.servers {
            let id = ServerId::new(o.identity());
            by_id.insert(id.clone(), o.clone());
            servers.push(Server {
                id,
                name: o.entry().name.clone(),
            });
        }
        Subscription {
            name: self.name.clone(),
            servers,
        }
    }
}

/// Fetches `url` again every `every` and sends what it got; a failed fetch is logged
/// and the old servers stay.
pub(super) async fn refresh(
    url: String,
    every: Duration,
    updates: mpsc::UnboundedSender<SubscriptionServers>,
) {
    loop {
        tokio::time::sleep(every).await;
        match crate::subscription::fetch(&url).await {
            Ok(sub) => {
                if updates
                    .send(SubscriptionServers::from_fetched(&url, sub))
                    .is_err()
                {
                    return;
                }
            }
            Err(e) => tracing::warn!("refreshing the subscription: {e}"),
        }
    }
}
