//! The push: a server's desired config rendered from the store's snapshot and, when
//! its node runs another version, sent (`PUT /v1/config`); applied, refused and failed
//! pushes are counted and timed in [`Metrics`](crate::metrics::Metrics).

use tokio::time::Instant;

use http::Method;
use switchyard_channel::NodeChannel;

use super::{Nodes, RoundError};
use crate::metrics::PushOutcome;
use crate::model::Id;
use crate::model::snapshot::ServerSnapshot;
use crate::render::render;

impl Nodes {
    /// Renders `snapshot` at `now_ms` and pushes it when the node runs another version
    /// than `running`. The version of the desired config when the node runs it now
    /// (it did already, or took it); none when it was not rendered or the node refused
    /// it. An error (the push did not reach the node) is the heartbeat's failure
    /// reason.
    pub(super) async fn push(
        &self,
        id: Id,
        channel: &NodeChannel,
        snapshot: &ServerSnapshot,
        running: Option<u64>,
        now_ms: i64,
    ) -> Result<Option<u64>, RoundError> {
        match render(snapshot, now_ms) {
            Ok(desired) if Some(desired.version) != running => {
                let body = serde_json::to_vec(&desired).unwrap_or_default();
                let started = Instant::now();
                match channel.request(Method::PUT, "/v1/config", Some(body)).await {
                    Ok((s, _)) if s.is_success() => {
                        self.metrics.push(started.elapsed(), PushOutcome::Applied);
                        tracing::info!(server = id, version = desired.version, "config applied");
                        Ok(Some(desired.version))
                    }
                    Ok((s, body)) => {
                        self.metrics.push(started.elapsed(), PushOutcome::Refused);
                        tracing::warn!(server = id, status = %s, "the node refused its config: {}", String::from_utf8_lossy(&body));
                        Ok(None)
                    }
                    Err(e) => {
                        self.metrics.push(started.elapsed(), PushOutcome::Failed);
                        Err(RoundError::Push(e))
                    }
                }
            }
            Ok(desired) => Ok(Some(desired.version)),
            Err(e) => {
                tracing::error!("{e}");
                Ok(None)
            }
        }
    }
}
