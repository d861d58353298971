//! A tunnel's REALITY profiles against their listening servers'
//! `allow_private_destinations`: the listening half (the relay in reverse mode, every
//! origin in direct mode) splices probers to a profile's `reality_dest`, so a
//! loopback, private or local-name target would expose that server's own services.
//! The node checks the same with the same function ([`switchyard_proto::dest::check`])
//! on its listening half, so a tunnel the panel accepts is one its nodes take.

use super::{Service, ServiceError};
use crate::model::tunnel::{LinkSecurity, TunnelInput, TunnelMode, TunnelProfile};
use crate::model::{self, FieldError, Id};
use crate::store::{ServerInput, StoreError};

/// The servers that listen for a tunnel of `mode` (and so dial its REALITY target).
fn listening(mode: TunnelMode, relay: Id, origins: impl Iterator<Item = Id>) -> Vec<Id> {
    match mode {
        TunnelMode::Reverse => vec![relay],
        TunnelMode::Direct => origins.collect(),
    }
}

/// The REALITY profiles' targets, with their indices.
fn reality_dests(profiles: &[TunnelProfile]) -> impl Iterator<Item = (usize, &str)> {
    profiles.iter().enumerate().filter_map(|(i, p)| {
        (p.link_security() == LinkSecurity::Reality)
            .then_some(p.reality_dest.as_deref())
            .flatten()
            .map(|d| (i, d))
    })
}

impl Service {
    /// Refuses a REALITY profile whose `reality_dest` is not global (loopback,
    /// private, a local name) unless every server that listens for the tunnel allows
    /// private destinations. A server that does not exist is left to the store's
    /// own refusal.
    pub async fn check_tunnel_dests(&self, input: &TunnelInput) -> Result<(), ServiceError> {
        if reality_dests(&input.profiles).next().is_none() {
            return Ok(());
        }
        let ids = listening(
            input.mode,
            input.relay_server_id,
            input.origin_server_ids.iter().copied(),
        );
        let mut allow_private = true;
        for id in ids {
            match self.store.server(id).await {
                Ok(server) => allow_private &= server.allow_private_destinations,
                Err(StoreError::NotFound(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        for (i, dest) in reality_dests(&input.profiles) {
            model::check_dest(&format!("profiles[{i}].reality_dest"), dest, allow_private)?;
        }
        Ok(())
    }

    /// Refuses to stop allowing private destinations on a server while it listens for
    /// a tunnel whose REALITY profile needs them: its node would refuse the config.
    pub(super) async fn check_server_tunnel_dests(
        &self,
        id: Id,
        input: &ServerInput,
    ) -> Result<(), ServiceError> {
        if input.allow_private_destinations {
            return Ok(());
        }
        for tunnel in self.store.tunnels().await? {
            let origins = tunnel.origins.iter().map(|o| o.server_id);
            if !listening(tunnel.mode, tunnel.relay_server_id, origins).contains(&id) {
                continue;
            }
            for (i, dest) in reality_dests(&tunnel.profiles) {
                if switchyard_proto::dest::check(dest, false).is_err() {
                    return Err(FieldError::new(
                        "allow_private_destinations",
                        format!(
                            "tunnel {} ({:?}) sends REALITY probes of profiles[{i}] to the private {dest}: change its reality_dest first",
                            tunnel.id, tunnel.name
                        ),
                    )
                    .into());
                }
            }
        }
        Ok(())
    }
}
