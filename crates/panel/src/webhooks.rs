//! Webhook deliveries: events are queued in the database ([`enqueue`] for changes
//! made through the API; every 30 s the worker looks at the users for changes the
//! panel sees happen, `WebhookStore::watch_users`) and a worker ([`run`]) sends what
//! is due, signed ([`crate::model::webhook::sign`]), retried with
//! back-off until delivered or given up. The outbox is the database, so a restart
//! loses nothing; a lease lets one of several panel instances send each delivery.
//!
//! Each attempt: at most [`SEND_TIMEOUT`]; the URL's addresses are resolved first and
//! a hook without `allow_private` is refused any that is not global (loopback,
//! private, link-local: the cloud's metadata service among them); at most
//! [`AT_ONCE`] deliveries are in flight per instance.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tokio_util::sync::CancellationToken;

use crate::model::webhook::{Thresholds, backoff_ms, sign, tunnel_state};
use crate::store::{Attempt, Due, FoundTunnel, Store, StoreError};

/// The longest one attempt may take.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a taken delivery is another instance's to leave alone.
pub const LEASE_MS: i64 = 60_000;
/// Deliveries in flight at once, per instance.
pub const AT_ONCE: u32 = 16;
/// How often the worker looks for due deliveries.
pub const EVERY: Duration = Duration::from_secs(1);
/// How often it looks at the users and servers for changes the panel sees happen
/// (limited, expired, past 80 %, expiring, a hold's clock started; a server online
/// or unavailable).
pub const WATCH_EVERY: u32 = 30;

type Https = hyper_rustls::HttpsConnector<HttpConnector>;

/// Sends deliveries.
#[derive(Clone)]
pub struct Sender {
    client: Client<Https, Body>,
}

impl std::fmt::Debug for Sender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sender").finish_non_exhaustive()
    }
}

impl Sender {
    /// A sender trusting the system's root certificates (none found: https fails,
    /// http works).
    pub fn new() -> Result<Self, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let https = match hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_native_roots(provider.clone())
        {
            Ok(b) => b.https_or_http().enable_http1().build(),
            Err(e) => {
                tracing::warn!(
                    "webhooks: no system root certificates ({e}): https deliveries will fail"
                );
                let config = rustls::ClientConfig::builder_with_provider(provider)
                    .with_safe_default_protocol_versions()
                    .map_err(|e| format!("TLS for webhooks: {e}"))?
                    .with_root_certificates(rustls::RootCertStore::empty())
                    .with_no_client_auth();
                hyper_rustls::HttpsConnectorBuilder::new()
                    .with_tls_config(config)
                    .https_or_http()
                    .enable_http1()
                    .build()
            }
        };
        Ok(Self {
            client: Client::builder(TokioExecutor::new()).build(https),
        })
    }

    /// One attempt at `due`, at `now_ms`.
    pub async fn send(&self, due: &Due, now_ms: i64) -> Attempt {
        let failed = |status: Option<u16>, error: String| Attempt::Failed {
            status,
            error,
            next_ms: backoff_ms(due.attempts.saturating_add(1)).map(|d| now_ms.saturating_add(d)),
        };
        if let Err(why) = destination_allowed(&due.url, due.allow_private).await {
            return failed(None, why);
        }
        let timestamp = now_ms / 1000;
        let request = hyper::Request::post(due.url.as_str())
            .header("content-type", "application/json")
            .header(
                "user-agent",
                concat!("switchyard/", env!("CARGO_PKG_VERSION")),
            )
            .header("x-switchyard-event", due.event.as_str())
            .header("x-switchyard-delivery", due.id.to_string())
            .header("x-switchyard-timestamp", timestamp.to_string())
            .header(
                "x-switchyard-signature",
                sign(&due.secret, timestamp, &due.body),
            )
            .body(Body::from(due.body.clone()));
        let request = match request {
            Ok(r) => r,
            Err(e) => return failed(None, format!("the request could not be made: {e}")),
        };
        match tokio::time::timeout(SEND_TIMEOUT, self.client.request(request)).await {
            Err(_) => failed(
                None,
                format!("no answer within {} s", SEND_TIMEOUT.as_secs()),
            ),
            Ok(Err(e)) => failed(None, format!("could not send: {e}")),
            Ok(Ok(answer)) => {
                let status = answer.status().as_u16();
                if answer.status().is_success() {
                    Attempt::Delivered { status }
                } else {
                    failed(Some(status), format!("the receiver answered {status}"))
                }
            }
        }
    }
}

/// Refuses a URL whose host resolves to an address that is not global, unless
/// `allow_private`.
async fn destination_allowed(url: &str, allow_private: bool) -> Result<(), String> {
    if allow_private {
        return Ok(());
    }
    let uri: hyper::Uri = url.parse().map_err(|_| "the URL is not valid".to_owned())?;
    let host = uri.host().ok_or("the URL has no host")?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port = uri
        .port_u16()
        .unwrap_or(if uri.scheme_str() == Some("https") {
            443
        } else {
            80
        });
    let addrs = tokio::time::timeout(SEND_TIMEOUT, tokio::net::lookup_host((host, port)))
        .await
        .map_err(|_| format!("{host} did not resolve in time"))?
        .map_err(|e| format!("{host} does not resolve: {e}"))?;
    for a in addrs {
        if switchyard_proto::dest::is_private(a.ip()) {
            return Err(format!(
                "{host} resolves to {}, not a global address (the hook's allow_private lets it)",
                a.ip()
            ));
        }
    }
    Ok(())
}

/// Queues `event` with `data` for the hooks that picked it (errors are logged: an
/// event lost to a failing database is said, never silently dropped).
pub async fn enqueue(
    store: &dyn Store,
    event: &str,
    by: &str,
    data: serde_json::Value,
    now_ms: i64,
) {
    let body = crate::model::webhook::body(event, by, &data, now_ms);
    if let Err(e) = store.enqueue(event, &body, None, now_ms).await {
        tracing::warn!(event, error = %e, "a webhook event could not be queued");
    }
}

/// Sends what is due now; how many deliveries were attempted.
pub async fn deliver_due(
    store: &dyn Store,
    sender: &Sender,
    now_ms: i64,
) -> Result<usize, StoreError> {
    let due = store.take_due(now_ms, AT_ONCE, LEASE_MS).await?;
    let sent = due.len();
    let attempts = futures_util::future::join_all(due.iter().map(|d| sender.send(d, now_ms))).await;
    for (d, attempt) in due.iter().zip(attempts) {
        if let Attempt::Failed { error, next_ms, .. } = &attempt {
            tracing::info!(delivery = d.id, event = %d.event, error, given_up = next_ms.is_none(), "webhook delivery failed");
        }
        store.finish(d.id, &attempt, crate::clock::now_ms()).await?;
    }
    Ok(sent)
}

/// The worker: every second, sends what is due, until `stop`; every
/// [`WATCH_EVERY`] seconds, looks at users (by the operator's `thresholds`), servers
/// and tunnels (asking their relays through `nodes`) for changes to tell.
pub async fn run(
    store: Arc<dyn Store>,
    nodes: Option<crate::nodes::Nodes>,
    thresholds: Thresholds,
    stop: CancellationToken,
) {
    let sender = match Sender::new() {
        Ok(s) => s,
        Err(e) => {
            tracing::error!("webhooks cannot be sent: {e}");
            return;
        }
    };
    let mut every = tokio::time::interval(EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut ticks: u32 = 0;
    loop {
        tokio::select! {
            _ = every.tick() => {}
            () = stop.cancelled() => return,
        }
        ticks = ticks.wrapping_add(1);
        if ticks.is_multiple_of(WATCH_EVERY) {
            let now = crate::clock::now_ms();
            if let Err(e) = store.watch_users(now, &thresholds).await {
                tracing::warn!("webhooks, looking at users: {e}");
            }
            if let Err(e) = store.watch_servers(now).await {
                tracing::warn!("webhooks, looking at servers: {e}");
            }
            if let Err(e) = watch_tunnels(store.as_ref(), nodes.as_ref(), now).await {
                tracing::warn!("webhooks, looking at tunnels: {e}");
            }
        }
        if let Err(e) = deliver_due(store.as_ref(), &sender, crate::clock::now_ms()).await {
            tracing::warn!("webhook deliveries: {e}");
        }
    }
}

/// Asks every tunnel's relay how it is (as the dashboard does) and tells the
/// changes ([`crate::store::WebhookStore::watch_tunnels`]). How many events.
pub async fn watch_tunnels(
    store: &dyn Store,
    nodes: Option<&crate::nodes::Nodes>,
    now_ms: i64,
) -> Result<u64, StoreError> {
    let tunnels = store.tunnels().await?;
    if tunnels.is_empty() {
        return Ok(0);
    }
    let states = crate::nodes::tunnel_status::tunnel_states(nodes, &tunnels).await;
    let found: Vec<FoundTunnel> = tunnels
        .iter()
        .zip(states)
        .map(|(t, s)| {
            let state = tunnel_state(s.links, s.error.is_some());
            FoundTunnel {
                id: t.id,
                state,
                data: serde_json::json!({"id": t.id, "name": t.name, "state": state,
                    "links": s.links, "error": s.error}),
            }
        })
        .collect();
    store.watch_tunnels(&found, now_ms).await
}
