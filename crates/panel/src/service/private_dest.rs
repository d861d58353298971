//! A REALITY inbound's `dest` against its server's `allow_private_destinations`: the
//! node checks the same with the same function ([`switchyard_proto::dest::check`]), so
//! a config the panel accepts is one the node takes.

use super::{Service, ServiceError};
use crate::model::{self, FieldError, Id, InboundSecurity};
use crate::store::{InboundInput, ServerInput, StoreError};

impl Service {
    /// Refuses a REALITY `dest` that is not global (loopback, private, a local name)
    /// unless the inbound's server allows private destinations.
    pub(super) async fn check_inbound_dest(
        &self,
        input: &InboundInput,
    ) -> Result<(), ServiceError> {
        let InboundSecurity::Reality { dest, .. } = &input.security else {
            return Ok(());
        };
        let server = match self.store.server(input.server_id).await {
            Err(StoreError::NotFound(_)) => {
                return Err(FieldError::new("server_id", "no such server").into());
            }
            other => other?,
        };
        model::check_dest("security.dest", dest, server.allow_private_destinations)?;
        Ok(())
    }

    /// Refuses to stop allowing private destinations on a server while one of its
    /// REALITY inbounds needs them: its node would refuse the config.
    pub(super) async fn check_server_dests(
        &self,
        id: Id,
        input: &ServerInput,
    ) -> Result<(), ServiceError> {
        if input.allow_private_destinations {
            return Ok(());
        }
        for inbound in self.store.inbounds(Some(id), None).await? {
            if let InboundSecurity::Reality { dest, .. } = &inbound.security
                && switchyard_proto::dest::check(dest, false).is_err()
            {
                return Err(FieldError::new(
                    "allow_private_destinations",
                    format!(
                        "inbound {} ({:?}) sends REALITY probes to the private {dest}: change its security.dest first",
                        inbound.id, inbound.name
                    ),
                )
                .into());
            }
        }
        Ok(())
    }
}
