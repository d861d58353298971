//! Tunnels: the part of the [`Store`](super::Store) behind `/api/v1/tunnels`.
//!
//! Rules kept here, so no caller can break them:
//! - a tunnel's name never changes (its tag, credentials and certificate name derive
//!   from it);
//! - its relay and origins are servers that exist, the relay is none of its origins,
//!   and a server in a tunnel cannot be deleted;
//! - the certificate (and its key) are the panel's: created with the tunnel, replaced
//!   only by a re-issue, which keeps the previous pin for the overlap; the overlap
//!   ends (the previous pin is dropped) once every server of the tunnel runs the
//!   current pin ([`TunnelStore::confirm_tunnel_pins`]);
//! - the REALITY key pair and short id are the panel's too: made once per tunnel
//!   (with it, or on the first change of a tunnel made before REALITY), never
//!   replaced; a duplicate gets its own;
//! - credentials rotate by epoch ([`TunnelStore::rotate_tunnel_credentials`]); the
//!   previous epoch stays accepted until every server of the tunnel runs the current
//!   one ([`TunnelStore::confirm_tunnel_credentials`]).
//!
//! Both overlaps end by one algorithm, the roll-out (`rollout`): what each server runs
//! is recorded, and the previous value goes once the relay and every origin run the
//! current one.

use async_trait::async_trait;

use super::StoreError;
use crate::model::Id;
use crate::model::tunnel::{
    Tunnel, TunnelCertificate, TunnelInput, TunnelRealityKeys, UsagePoint, UsageStep,
};

/// Tunnels in the store.
#[async_trait]
pub trait TunnelStore: Send + Sync {
    /// Every tunnel, oldest first.
    async fn tunnels(&self) -> Result<Vec<Tunnel>, StoreError>;
    /// One tunnel.
    async fn tunnel(&self, id: Id) -> Result<Tunnel, StoreError>;
    /// Creates a tunnel with the certificate issued for it and its REALITY keys.
    async fn create_tunnel(
        &self,
        input: &TunnelInput,
        certificate: &TunnelCertificate,
        reality: &TunnelRealityKeys,
        now_ms: i64,
    ) -> Result<Tunnel, StoreError>;
    /// Gives a tunnel made before REALITY its keys; a tunnel that has some keeps
    /// them (so two panel instances racing agree on the first). Announces nothing:
    /// the change that needs them does.
    async fn init_tunnel_reality_keys(
        &self,
        id: Id,
        reality: &TunnelRealityKeys,
    ) -> Result<(), StoreError>;
    /// The tunnel's REALITY keys (with the private key, for the nodes' halves); none
    /// for a tunnel made before REALITY and never given any.
    async fn tunnel_reality_keys(&self, id: Id) -> Result<Option<TunnelRealityKeys>, StoreError>;
    /// Changes a tunnel; `input.name` must be the tunnel's name.
    async fn update_tunnel(&self, id: Id, input: &TunnelInput) -> Result<Tunnel, StoreError>;
    /// Deletes a tunnel.
    async fn delete_tunnel(&self, id: Id) -> Result<(), StoreError>;
    /// Replaces the certificate; the old pin stays accepted as `previous_pin`.
    async fn reissue_tunnel_certificate(
        &self,
        id: Id,
        certificate: &TunnelCertificate,
    ) -> Result<Tunnel, StoreError>;
    /// Records that `server_id` runs a config with these tunnels' current pins
    /// (`(tunnel id, pin)`). A tunnel whose relay and origins all run its current pin
    /// drops its previous pin: the overlap after a re-issue is over, and the nodes get
    /// configs without it. Returns those tunnels; announces a change only for them.
    /// A pin that is no longer the tunnel's current one is ignored.
    async fn confirm_tunnel_pins(
        &self,
        server_id: Id,
        pins: &[(Id, String)],
    ) -> Result<Vec<Id>, StoreError>;
    /// Rotates the credentials: the epoch goes up by one and the one before stays
    /// accepted (`previous_credential_epoch`) until every server of the tunnel runs
    /// the new one ([`Self::confirm_tunnel_credentials`]). A rotation during a rotation
    /// keeps only the latest two.
    async fn rotate_tunnel_credentials(&self, id: Id) -> Result<Tunnel, StoreError>;
    /// Records that `server_id` runs a config with these tunnels' current credential
    /// epochs (`(tunnel id, epoch)`). A tunnel whose relay and origins all run it drops
    /// its previous epoch: the rotation's overlap is over, and the nodes get configs
    /// without the previous credentials. Returns those tunnels; announces a change only
    /// for them. An epoch that is no longer the tunnel's current one is ignored.
    async fn confirm_tunnel_credentials(
        &self,
        server_id: Id,
        epochs: &[(Id, i64)],
    ) -> Result<Vec<Id>, StoreError>;
    /// The certificate of a tunnel (with its key), for the nodes' halves.
    async fn tunnel_certificate(&self, id: Id) -> Result<TunnelCertificate, StoreError>;
    /// Adds `bytes` the relay reported at `now_ms` to the tunnel's usage at every step,
    /// and forgets points older than each step keeps. Announces no change (it is
    /// traffic, not configuration).
    async fn record_tunnel_usage(&self, id: Id, bytes: u64, now_ms: i64) -> Result<(), StoreError>;
    /// The tunnel's usage at `step` from `since_ms` on, oldest first.
    async fn tunnel_usage(
        &self,
        id: Id,
        step: UsageStep,
        since_ms: i64,
    ) -> Result<Vec<UsagePoint>, StoreError>;
}
