//! Tunnels as an operator makes them: the operator fills in nothing security-related.
//! The certificate is issued here (rcgen, for the tunnel's derived certificate name)
//! and the REALITY key pair and short id made here; credentials are derived when the
//! nodes' halves are rendered. A new tunnel's first profile is REALITY in front of the
//! panel's default target (`tunnels.reality_dest`) unless it says otherwise.

use super::{Service, ServiceError};
use crate::model::tunnel::{
    LinkSecurity, OriginAddresses, Tunnel, TunnelCertificate, TunnelInput, TunnelRealityKeys,
    check_tunnel_name,
};
use crate::model::{FieldError, Id};

/// A fresh REALITY key pair and short id for tunnel `name`.
fn reality_keys(name: &str) -> Result<TunnelRealityKeys, ServiceError> {
    let keys = switchyard_config::reality::generate().map_err(|e| {
        tracing::error!(tunnel = name, "making the tunnel's REALITY keys: {e}");
        ServiceError::TunnelKeys(name.to_owned())
    })?;
    Ok(TunnelRealityKeys {
        private_key: keys.private_key,
        public_key: keys.public_key,
        short_id: keys.short_id,
    })
}

/// A fresh certificate (and key) for tunnel `name`.
fn issue(name: &str) -> Result<TunnelCertificate, ServiceError> {
    let cert = switchyard_tunnel::link::cert::issue(name).map_err(|e| {
        tracing::error!(tunnel = name, "issuing the tunnel certificate: {e}");
        ServiceError::TunnelCertificate(name.to_owned())
    })?;
    Ok(TunnelCertificate {
        cert_pem: cert.cert_pem,
        key_pem: cert.key_pem,
        pin: cert.pin.to_string(),
    })
}

impl Service {
    /// A new tunnel, with a certificate issued for it and its REALITY keys. A first
    /// profile that says no security is REALITY in front of `reality_dest` (the
    /// panel's default target); other profiles default to TLS.
    pub async fn create_tunnel(
        &self,
        mut input: TunnelInput,
        reality_dest: &str,
        now_ms: i64,
    ) -> Result<Tunnel, ServiceError> {
        input.fill_defaults(None, reality_dest);
        input.check()?;
        self.check_tunnel_dests(&input).await?;
        self.insert_tunnel(&input, now_ms).await
    }

    /// Stores a checked tunnel with a fresh certificate and REALITY keys.
    async fn insert_tunnel(
        &self,
        input: &TunnelInput,
        now_ms: i64,
    ) -> Result<Tunnel, ServiceError> {
        let certificate = issue(&input.name)?;
        let reality = reality_keys(&input.name)?;
        Ok(self
            .store
            .create_tunnel(input, &certificate, &reality, now_ms)
            .await?)
    }

    /// Changes a tunnel (everything but its name). A profile that says no security
    /// keeps that of the tunnel's profile on the same port (TLS for a new port), and a
    /// REALITY profile that names no target keeps its target (`reality_dest` for a
    /// new one).
    pub async fn update_tunnel(
        &self,
        id: Id,
        mut input: TunnelInput,
        reality_dest: &str,
    ) -> Result<Tunnel, ServiceError> {
        let current = self.store.tunnel(id).await?;
        input.fill_defaults(Some(&current.profiles), reality_dest);
        input.check()?;
        self.check_tunnel_dests(&input).await?;
        let uses_reality = input
            .profiles
            .iter()
            .any(|p| p.link_security() == LinkSecurity::Reality);
        if uses_reality && current.reality_public_key.is_none() {
            // A tunnel made before REALITY: its keys are made on its first REALITY profile.
            let reality = reality_keys(&current.name)?;
            self.store.init_tunnel_reality_keys(id, &reality).await?;
        }
        Ok(self.store.update_tunnel(id, &input).await?)
    }

    /// Copies tunnel `id` as `name` for the relay `relay_server_id`: the same origins
    /// (with their direct-mode addresses), mode, balancing, links, profiles (REALITY
    /// targets included) and rules, a new certificate and new REALITY keys and
    /// therefore new credentials: nothing of one relay's opens the other. The
    /// profiles' link addresses are not copied (they name the first relay).
    pub async fn duplicate_tunnel(
        &self,
        id: Id,
        name: String,
        relay_server_id: Id,
        now_ms: i64,
    ) -> Result<Tunnel, ServiceError> {
        check_tunnel_name("name", &name)?;
        let from = self.store.tunnel(id).await?;
        if from.origins.iter().any(|o| o.server_id == relay_server_id) {
            return Err(FieldError::new(
                "relay_server_id",
                "that server is an origin of the tunnel: it cannot be its relay too",
            )
            .into());
        }
        let origin_addresses = from
            .origins
            .iter()
            .filter(|o| !o.addresses.is_empty())
            .map(|o| OriginAddresses {
                server_id: o.server_id,
                addresses: o.addresses.clone(),
            })
            .collect();
        let input = TunnelInput {
            name,
            relay_server_id,
            origin_server_ids: from.origins.iter().map(|o| o.server_id).collect(),
            origin_addresses,
            mode: from.mode,
            balancing: from.balancing,
            links: from.links,
            window_mib: from.window_mib,
            profiles: from
                .profiles
                .into_iter()
                .map(|mut p| {
                    p.addresses.clear();
                    p.security = Some(p.link_security());
                    p
                })
                .collect(),
            rules: from.rules,
            enabled: from.enabled,
        };
        input.check()?;
        // The new relay listens: a private REALITY target needs its allowance.
        self.check_tunnel_dests(&input).await?;
        self.insert_tunnel(&input, now_ms).await
    }

    /// Re-issues tunnel `id`'s certificate with a new key. The previous pin stays
    /// accepted beside the new one while both halves take the new certificate; the
    /// REALITY keys stay as they are.
    pub async fn reissue_tunnel_certificate(&self, id: Id) -> Result<Tunnel, ServiceError> {
        let name = self.store.tunnel(id).await?.name;
        let certificate = issue(&name)?;
        Ok(self
            .store
            .reissue_tunnel_certificate(id, &certificate)
            .await?)
    }
}
