//! Several panel instances on one PostgreSQL: a request for a node whose channel
//! another instance holds is forwarded to that instance through the database, so any
//! instance answers a tunnel's live status and Reset.
//!
//! The asking instance sends `NOTIFY switchyard_node_asks` with an [`Ask`]: a random
//! id, its own instance id, the server, the method and path of the node's control API,
//! and how long it waits. Every instance LISTENs; the one holding the server's channel
//! (no other) makes the request within that time and writes the node's answer into
//! `node_answers` under the ask's id (a row, because an answer may be larger than a
//! notification's 8000 bytes), then sends `NOTIFY switchyard_node_answers` with the id
//! and the asker's instance id. The asker takes the row (`DELETE … RETURNING`) and
//! answers its client. When no instance holds the channel, nobody answers and the
//! asker gives up at its deadline: the node is unreachable.
//!
//! Bounds: only the tunnel paths of the node's control API are forwarded (`/v1/tunnels…`,
//! `GET` or `POST`), a forwarded request waits at most [`MAX_WITHIN`], an answer is at
//! most [`MAX_BODY`] bytes, at most [`MAX_IN_FLIGHT`] asks wait and as many are answered
//! at once (more are refused, or left unanswered), and answer rows nobody took are swept
//! a minute after they were written. Clocks of instances need not agree: an ask carries
//! a duration, not a time.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Method, StatusCode};
use serde::{Deserialize, Serialize};
use sqlx::Row;
use sqlx::postgres::{PgListener, PgPool, PgPoolOptions};
use tokio::sync::{Semaphore, oneshot};
use tokio_util::sync::CancellationToken;

use super::Nodes;
use crate::model::Id;

/// The notification channel asks go on.
const ASKS: &str = "switchyard_node_asks";
/// The notification channel answers are announced on.
const ANSWERS: &str = "switchyard_node_answers";
/// The longest a forwarded request may wait for its node.
pub const MAX_WITHIN: Duration = Duration::from_secs(10);
/// The largest answer forwarded, bytes.
pub const MAX_BODY: usize = 1 << 20;
/// Asks waiting for an answer at once, and asks being answered at once, per instance.
pub const MAX_IN_FLIGHT: usize = 256;
/// How long an answer row nobody took is kept.
const KEEP_ANSWER_MS: i64 = 60_000;
/// The longest path forwarded.
const MAX_PATH: usize = 512;

/// Why a node could not be asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AskError {
    /// This instance holds no channel to the node and has no other instance to ask
    /// (SQLite: one instance).
    #[error("server {server} is not connected to the panel")]
    NotConnected {
        /// The server.
        server: Id,
    },
    /// No instance answered in time: none holds the node's channel (or the one that
    /// does could not ask it in time).
    #[error(
        "server {server} is not connected to any panel instance (none answered within {within_ms} ms)"
    )]
    NoInstance {
        /// The server.
        server: Id,
        /// How long the asker waited.
        within_ms: u64,
    },
    /// The node's channel failed or the node did not answer in time.
    #[error("server {server}: {reason}")]
    Node {
        /// The server.
        server: Id,
        /// What failed.
        reason: String,
    },
    /// Too many asks are waiting on this instance.
    #[error("server {server}: too many requests to nodes are waiting; try again")]
    Busy {
        /// The server.
        server: Id,
    },
    /// The database carrying the ask failed.
    #[error("server {server}: forwarding through the database: {source}")]
    Database {
        /// The server.
        server: Id,
        /// The cause.
        source: sqlx::Error,
    },
    /// The request is not one that is forwarded (not a tunnel path of the control
    /// API, or not `GET`/`POST`).
    #[error("{method} {path} is not forwarded to other panel instances")]
    NotForwarded {
        /// The method.
        method: String,
        /// The path.
        path: String,
    },
}

/// A node's answer: its status and body.
pub type Answer = (StatusCode, Vec<u8>);

/// An ask, as its notification carries it.
#[derive(Debug, Serialize, Deserialize)]
struct Ask {
    id: String,
    from: String,
    server: Id,
    method: String,
    path: String,
    within_ms: u64,
}

/// An answer's announcement.
#[derive(Debug, Serialize, Deserialize)]
struct Answered {
    id: String,
    to: String,
}

/// Whether `method path` may be forwarded: the node's tunnel API only.
fn forwarded(method: &Method, path: &str) -> bool {
    (method == Method::GET || method == Method::POST)
        && path.len() <= MAX_PATH
        && (path == "/v1/tunnels" || path.starts_with("/v1/tunnels/"))
        && !path.contains("..")
}

/// An ask waiting for its answer: the server, and where the answer goes.
type Waiting = (Id, oneshot::Sender<Result<Answer, AskError>>);

/// This instance's end of the forwarding: its id, its pool, its waiting asks.
pub struct Forwarder {
    instance: String,
    pool: PgPool,
    waiting: Mutex<HashMap<String, Waiting>>,
    answering: Arc<Semaphore>,
}

impl std::fmt::Debug for Forwarder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Forwarder")
            .field("instance", &self.instance)
            .finish_non_exhaustive()
    }
}

fn now_ms() -> i64 {
    crate::clock::now_ms()
}

impl Forwarder {
    /// Starts forwarding for `nodes` over the PostgreSQL database at `url`: listens
    /// for asks (answered when `nodes` holds the server's channel) and for answers to
    /// this instance's asks, until `stop`.
    pub fn start(
        url: &str,
        nodes: Nodes,
        stop: CancellationToken,
    ) -> Result<Arc<Self>, sqlx::Error> {
        let pool = PgPoolOptions::new()
            .max_connections(4)
            .acquire_timeout(MAX_WITHIN)
            .connect_lazy(url)?;
        let me = Arc::new(Self {
            instance: crate::service::random_token(12),
            pool,
            waiting: Mutex::default(),
            answering: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
        });
        let listening = me.clone();
        let url = url.to_owned();
        tokio::spawn(async move {
            tokio::select! {
                () = listening.listen(&url, &nodes) => {}
                () = stop.cancelled() => {}
            }
        });
        Ok(me)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Waiting>> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Asks the instance holding `server`'s channel to make the request, and waits for
    /// its answer at most `within` (itself bounded by [`MAX_WITHIN`]).
    pub async fn ask(
        &self,
        server: Id,
        method: Method,
        path: &str,
        within: Duration,
    ) -> Result<Answer, AskError> {
        if !forwarded(&method, path) {
            return Err(AskError::NotForwarded {
                method: method.to_string(),
                path: path.to_owned(),
            });
        }
        let within = within.min(MAX_WITHIN);
        let id = crate::service::random_token(16);
        let (tx, rx) = oneshot::channel();
        {
            let mut waiting = self.lock();
            if waiting.len() >= MAX_IN_FLIGHT {
                return Err(AskError::Busy { server });
            }
            waiting.insert(id.clone(), (server, tx));
        }
        let within_ms = u64::try_from(within.as_millis()).unwrap_or(u64::MAX);
        let ask = Ask {
            id: id.clone(),
            from: self.instance.clone(),
            server,
            method: method.to_string(),
            path: path.to_owned(),
            within_ms,
        };
        let payload = serde_json::to_string(&ask).unwrap_or_default();
        let asked = async {
            sqlx::query("SELECT pg_notify($1, $2)")
                .bind(ASKS)
                .bind(&payload)
                .execute(&self.pool)
                .await
                .map_err(|source| AskError::Database { server, source })?;
            rx.await
                .map_err(|_| AskError::NoInstance { server, within_ms })?
        };
        let out = match tokio::time::timeout(within, asked).await {
            Ok(r) => r,
            Err(_) => Err(AskError::NoInstance { server, within_ms }),
        };
        self.lock().remove(&id);
        out
    }

    /// Listens (reconnecting after a second when the connection is lost) until the
    /// task is stopped.
    async fn listen(self: &Arc<Self>, url: &str, nodes: &Nodes) {
        loop {
            match PgListener::connect(url).await {
                Ok(mut listener) => match listener.listen_all([ASKS, ANSWERS]).await {
                    Ok(()) => loop {
                        match listener.recv().await {
                            Ok(n) if n.channel() == ASKS => self.heard_ask(n.payload(), nodes),
                            Ok(n) => self.heard_answer(n.payload()),
                            Err(e) => {
                                tracing::warn!("forwarded node requests: {e}");
                                break;
                            }
                        }
                    },
                    Err(e) => tracing::warn!("LISTEN {ASKS}, {ANSWERS}: {e}"),
                },
                Err(e) => tracing::warn!("forwarded node requests: {e}"),
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    /// Another instance's ask: answered when this instance holds the server's channel.
    fn heard_ask(self: &Arc<Self>, payload: &str, nodes: &Nodes) {
        let Ok(ask) = serde_json::from_str::<Ask>(payload) else {
            tracing::warn!(
                "an unreadable forwarded node request ({} bytes)",
                payload.len()
            );
            return;
        };
        if ask.from == self.instance || !nodes.holds(ask.server) {
            return;
        }
        let Ok(method) = ask.method.parse::<Method>() else {
            return;
        };
        if !forwarded(&method, &ask.path) {
            tracing::warn!(server = ask.server, path = %ask.path, "refused a forwarded node request");
            return;
        }
        let Ok(permit) = self.answering.clone().try_acquire_owned() else {
            tracing::warn!(
                server = ask.server,
                "too many forwarded node requests at once: one left unanswered"
            );
            return;
        };
        let (me, nodes) = (self.clone(), nodes.clone());
        tokio::spawn(async move {
            let _permit = permit;
            let within = Duration::from_millis(ask.within_ms).min(MAX_WITHIN);
            let (status, body) = match nodes.request(ask.server, method, &ask.path, within).await {
                // It let go of the channel meanwhile: another holder may answer.
                None => return,
                Some(Ok((status, body))) if body.len() <= MAX_BODY => (
                    i64::from(status.as_u16()),
                    String::from_utf8_lossy(&body).into_owned(),
                ),
                Some(Ok((_, body))) => (
                    0,
                    format!(
                        "the node's answer is too large to forward ({} bytes)",
                        body.len()
                    ),
                ),
                // Status 0: the node could not be asked; the body says why.
                Some(Err(e)) => (0, e.to_string()),
            };
            if let Err(e) = me.answer(&ask, status, &body).await {
                tracing::warn!(
                    server = ask.server,
                    "answering a forwarded node request: {e}"
                );
            }
        });
    }

    async fn answer(&self, ask: &Ask, status: i64, body: &str) -> Result<(), sqlx::Error> {
        let now = now_ms();
        sqlx::query("DELETE FROM node_answers WHERE expires_ms < $1")
            .bind(now)
            .execute(&self.pool)
            .await?;
        sqlx::query(
            "INSERT INTO node_answers (id, status, body, expires_ms) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (id) DO NOTHING",
        )
        .bind(&ask.id)
        .bind(status)
        .bind(body)
        .bind(now.saturating_add(KEEP_ANSWER_MS))
        .execute(&self.pool)
        .await?;
        let answered = Answered {
            id: ask.id.clone(),
            to: ask.from.clone(),
        };
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(ANSWERS)
            .bind(serde_json::to_string(&answered).unwrap_or_default())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// An answer: taken when it is for one of this instance's waiting asks.
    fn heard_answer(self: &Arc<Self>, payload: &str) {
        let Ok(answered) = serde_json::from_str::<Answered>(payload) else {
            return;
        };
        if answered.to != self.instance {
            return;
        }
        let Some((server, tx)) = self.lock().remove(&answered.id) else {
            // Given up on already: the row is swept later.
            return;
        };
        let me = self.clone();
        tokio::spawn(async move {
            let _ = tx.send(me.take(&answered.id, server).await);
        });
    }

    async fn take(&self, id: &str, server: Id) -> Result<Answer, AskError> {
        let row = sqlx::query("DELETE FROM node_answers WHERE id = $1 RETURNING status, body")
            .bind(id)
            .fetch_one(&self.pool)
            .await
            .map_err(|source| AskError::Database { server, source })?;
        let status: i64 = row
            .try_get(0)
            .map_err(|source| AskError::Database { server, source })?;
        let body: String = row
            .try_get(1)
            .map_err(|source| AskError::Database { server, source })?;
        match u16::try_from(status)
            .ok()
            .and_then(|s| StatusCode::from_u16(s).ok())
        {
            Some(status) => Ok((status, body.into_bytes())),
            None => Err(AskError::Node {
                server,
                reason: body,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_tunnel_api_is_forwarded() {
        assert!(forwarded(&Method::GET, "/v1/tunnels/eu"));
        assert!(forwarded(&Method::POST, "/v1/tunnels/eu/reset"));
        assert!(forwarded(&Method::GET, "/v1/tunnels"));
        assert!(!forwarded(&Method::PUT, "/v1/config"));
        assert!(!forwarded(&Method::GET, "/v1/stats"));
        assert!(!forwarded(&Method::POST, "/v1/stats/ack"));
        assert!(!forwarded(&Method::DELETE, "/v1/tunnels/eu"));
        assert!(!forwarded(&Method::GET, "/v1/tunnelsx"));
        assert!(!forwarded(&Method::GET, "/v1/tunnels/../config"));
        assert!(!forwarded(
            &Method::GET,
            &format!("/v1/tunnels/{}", "a".repeat(600))
        ));
    }
}
