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
    /// A server whose route id is its own in this subscription is keyed by it
    /// ([`Outbound::keyed_by_route`]); a route id that several entries share keys
    /// none of them (they keep their address identity).
    pub fn from_fetched(url: &str, sub: crate::subscription::Subscription) -> Self {
        let mut routes: HashMap<String, usize> = HashMap::new();
        for route in sub.entries.iter().filter_map(|e| e.route.clone()) {
            let n = routes.entry(route).or_default();
            *n = n.saturating_add(1);
        }
        let mut servers = Vec::new();
        for entry in sub.entries {
            let name = entry.name.clone();
            let own_route = entry
                .route
                .as_ref()
                .is_some_and(|r| routes.get(r) == Some(&1));
            match Outbound::new(entry) {
                Ok(o) if own_route => servers.push(Arc::new(o.keyed_by_route(url))),
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

#[cfg(test)]
mod tests {
    use switchyard_proto::entry::{Entry, EntryProtocol, EntryTransport};

    use super::*;

    fn entry(port: u16, route: Option<&str>) -> Entry {
        Entry {
            name: format!("s{port}"),
            server: "203.0.113.1".into(),
            port,
            protocol: EntryProtocol::Vless {
                uuid: "b831381d-6324-4d53-ad4f-8cda48b30811".into(),
                flow: None,
            },
            transport: EntryTransport::Tcp,
            tls: None,
            route: route.map(str::to_owned),
        }
    }

    fn identities(url: &str, entries: Vec<Entry>) -> Vec<String> {
        let sub = crate::subscription::Subscription {
            entries,
            update_interval_hours: None,
        };
        SubscriptionServers::from_fetched(url, sub)
            .servers
            .iter()
            .map(|o| o.identity())
            .collect()
    }

    /// A route id keys the server whatever its address; one shared by two entries,
    /// or none, leaves the address identity; another subscription's same id is
    /// another server.
    #[test]
    fn servers_are_keyed_by_their_own_route() {
        let url = "https://panel.example.com/sub/abc";
        let first = identities(
            url,
            vec![
                entry(443, Some("1")),
                entry(444, Some("2")),
                entry(445, Some("2")),
                entry(446, None),
            ],
        );
        assert!(first[0].starts_with("route:"), "{first:?}");
        for (i, id) in first.iter().enumerate().skip(1) {
            assert!(id.starts_with("vless:"), "{i}: {first:?}");
        }
        let moved = identities(url, vec![entry(8443, Some("1"))]);
        assert_eq!(moved[0], first[0]);
        let elsewhere = identities(
            "https://other.example.com/sub/x",
            vec![entry(443, Some("1"))],
        );
        assert_ne!(elsewhere[0], first[0]);
    }
}
