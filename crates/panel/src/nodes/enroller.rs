//! Enrollment against the store: join tokens are single-use and expiring (the
//! store's conditional update decides), a server has one valid token at a time, a
//! server whose node has joined takes no other until an operator replaces the node,
//! and a node certificate is accepted only when its pin is the one stored for a
//! server.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use switchyard_channel::enroll::{EnrollRefused, EnrollRequest, Enroller};
use switchyard_tunnel::link::pin::Pin;

use crate::store::token_hash::hash_token;
use crate::store::{JoinRefusal, Store, StoreError};

/// The panel's [`Enroller`].
pub struct StoreEnroller {
    store: Arc<dyn Store>,
    /// What nodes said about themselves between `enroll` and `enrolled`.
    joining: Mutex<HashMap<String, (String, String)>>,
}

impl std::fmt::Debug for StoreEnroller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreEnroller").finish_non_exhaustive()
    }
}

impl StoreEnroller {
    /// Enrollment over `store`.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self {
            store,
            joining: Mutex::default(),
        }
    }
}

fn unavailable(e: impl std::fmt::Display) -> EnrollRefused {
    tracing::error!("enrollment: {e}");
    EnrollRefused::Unavailable("the database is unavailable".into())
}

#[switchyard_channel::async_trait]
impl Enroller for StoreEnroller {
    async fn enroll(&self, request: EnrollRequest) -> Result<String, EnrollRefused> {
        let now = crate::clock::now_ms();
        let hash = hash_token(request.secret.expose());
        match self
            .store
            .consume_join_token(&hash, now)
            .await
            .map_err(unavailable)?
        {
            Ok(server) => {
                let id = server.to_string();
                tracing::info!(server, hostname = %request.hostname, remote = %request.remote, "node joined");
                self.joining
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(id.clone(), (request.hostname, request.version));
                Ok(id)
            }
            Err(JoinRefusal::Used) => Err(EnrollRefused::AlreadyUsed),
            Err(JoinRefusal::Expired) => Err(EnrollRefused::Expired),
            Err(r @ (JoinRefusal::Revoked | JoinRefusal::Enrolled)) => {
                tracing::info!(hostname = %request.hostname, remote = %request.remote, "enrollment refused: {r}");
                Err(EnrollRefused::Other(r.to_string()))
            }
            Err(_) => Err(EnrollRefused::Unknown),
        }
    }

    async fn enrolled(&self, server_id: &str, certificate: Pin) -> Result<(), EnrollRefused> {
        let id: i64 = server_id
            .parse()
            .map_err(|_| EnrollRefused::Other("bad server id".into()))?;
        let (hostname, version) = self
            .joining
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(server_id)
            .unwrap_or_default();
        match self
            .store
            .pin_server(id, &certificate.to_string(), &hostname, &version)
            .await
        {
            Ok(()) => Ok(()),
            // Another node of this server was pinned since its token was taken: the
            // pin stays, this node is refused.
            Err(StoreError::Conflict(_)) => {
                tracing::warn!(
                    server = id,
                    "enrollment refused: the server's node has already joined"
                );
                Err(EnrollRefused::Other(JoinRefusal::Enrolled.to_string()))
            }
            Err(e) => Err(unavailable(e)),
        }
    }

    async fn authorize(&self, node_certificate_der: &[u8]) -> Option<String> {
        let pin = Pin::of_certificate(node_certificate_der).to_string();
        match self.store.server_by_fingerprint(&pin).await {
            Ok(found) => found.map(|id| id.to_string()),
            Err(e) => {
                tracing::error!("authorizing a node: {e}");
                None
            }
        }
    }
}
