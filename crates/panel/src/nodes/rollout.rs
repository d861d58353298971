//! Roll-outs that end when every server of a tunnel runs the new config: a re-issued
//! certificate (the previous pin stays accepted meanwhile) and rotated credentials
//! (the previous ones stay accepted meanwhile). After each round in which a node runs
//! its desired config, its task tells the store what it runs; the store ends the
//! overlap once every server of the tunnel does.

use super::Nodes;
use crate::model::Id;
use crate::model::snapshot::ServerSnapshot;

impl Nodes {
    /// The node runs its desired config: tells the store which pins and credentials
    /// it runs, ending the overlaps every server of a tunnel now runs past.
    pub(super) async fn confirm_runs(&self, id: Id, snapshot: &ServerSnapshot) {
        self.confirm_pins(id, snapshot).await;
        self.confirm_credentials(id, snapshot).await;
    }

    /// The node runs its desired config, so the current pin of every tunnel it is in:
    /// tells the store, which ends a re-issue's overlap once every server of the
    /// tunnel does.
    async fn confirm_pins(&self, id: Id, snapshot: &ServerSnapshot) {
        let pins: Vec<(Id, String)> = snapshot
            .tunnels
            .iter()
            .filter(|t| t.tunnel.enabled && t.tunnel.previous_pin.is_some())
            .map(|t| (t.tunnel.id, t.certificate.pin.clone()))
            .collect();
        if pins.is_empty() {
            return;
        }
        match self.store.confirm_tunnel_pins(id, &pins).await {
            Ok(ended) => {
                for tunnel in ended {
                    tracing::info!(
                        tunnel,
                        "every server of the tunnel runs its re-issued certificate: the previous pin is dropped"
                    );
                }
            }
            Err(e) => tracing::warn!(server = id, "recording the tunnel pins it runs: {e}"),
        }
    }

    /// The node runs its desired config, so the current credentials of every tunnel it
    /// is in: tells the store, which ends a rotation's overlap once every server of the
    /// tunnel does.
    async fn confirm_credentials(&self, id: Id, snapshot: &ServerSnapshot) {
        let epochs: Vec<(Id, i64)> = snapshot
            .tunnels
            .iter()
            .filter(|t| t.tunnel.enabled && t.tunnel.previous_credential_epoch.is_some())
            .map(|t| (t.tunnel.id, t.tunnel.credential_epoch))
            .collect();
        if epochs.is_empty() {
            return;
        }
        match self.store.confirm_tunnel_credentials(id, &epochs).await {
            Ok(ended) => {
                for tunnel in ended {
                    tracing::info!(
                        tunnel,
                        "every server of the tunnel runs its rotated credentials: the previous ones are dropped"
                    );
                }
            }
            Err(e) => tracing::warn!(server = id, "recording the tunnel credentials it runs: {e}"),
        }
    }
}
