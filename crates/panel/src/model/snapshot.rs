//! What a server's desired config is rendered from: the [`ServerSnapshot`] the store
//! reads in one go, with the tunnels the server is in ([`SnapshotTunnel`]). Plain data:
//! the store fills it, `render` turns it into the node's config, the stats round bounds
//! what the node reports by it.

use switchyard_tunnel::credentials::TunnelSecret;

use super::tunnel::{Tunnel, TunnelCertificate, TunnelRealityKeys};
use super::{Credentials, Inbound, InboundSecrets, Server, User};

/// Everything a server's desired config is rendered from.
#[derive(Clone, Debug)]
pub struct ServerSnapshot {
    /// The server.
    pub server: Server,
    /// Its inbounds and their secrets.
    pub inbounds: Vec<(Inbound, InboundSecrets)>,
    /// Users who may see its cluster, with credentials (status decided by the caller).
    pub users: Vec<(User, Credentials)>,
    /// The tunnels it is the relay or an origin of (disabled ones too: the render
    /// leaves those out).
    pub tunnels: Vec<SnapshotTunnel>,
    /// The panel's tunnel secret, when there are tunnels.
    pub tunnel_secret: Option<TunnelSecret>,
}

/// A tunnel of the server being rendered, with what its halves need.
#[derive(Clone, Debug, PartialEq)]
pub struct SnapshotTunnel {
    /// The tunnel.
    pub tunnel: Tunnel,
    /// Its certificate (with the key: the listening half needs it).
    pub certificate: TunnelCertificate,
    /// Its REALITY keys (with the private key: the listening half needs it); none for
    /// a tunnel made before REALITY that never had a REALITY profile.
    pub reality: Option<TunnelRealityKeys>,
    /// The relay server (its address is the default link address).
    pub relay: Server,
    /// The origin servers, in the tunnel's order (direct mode dials their addresses).
    pub origins: Vec<Server>,
}
