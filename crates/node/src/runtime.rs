//! What the data path reads: the [`Runtime`] in force (users, dialer, timeouts),
//! swapped whole on a config change, and the [`Shared`] state around it (counters,
//! live connections, per-inbound state). The running node makes and swaps them;
//! inbounds and tunnel halves only read them.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::accounting::Accounting;
use crate::config::NodeConfig;
use crate::inbound::state::InboundStates;
use crate::outbound::Dialer;
use crate::sessions::Sessions;
use crate::users::Users;

/// What the data path reads on every connection; swapped whole on a config change.
#[derive(Debug)]
pub struct Runtime {
    /// Enabled users by credential.
    pub users: Users,
    /// How users' traffic leaves.
    pub dialer: Dialer,
    /// Handshake deadline.
    pub handshake_timeout: Duration,
    /// Idle timeout of proxied connections.
    pub idle_timeout: Duration,
    /// How long a failed authentication without fallback is held.
    pub unauthenticated_hold: Duration,
    /// Connections of an inbound in their handshake at once, in total and per source.
    pub max_unauthenticated: (usize, usize),
    /// Relay halves by tunnel tag: where routes into tunnels open their streams.
    pub relays: HashMap<String, Arc<switchyard_tunnel::half::RelayHalf>>,
    /// The control API's address (`control.listen`): no user's connection may reach
    /// it, whatever `allow_private_destinations` says.
    pub control: SocketAddr,
}

impl Runtime {
    /// The runtime of config `c`, with the relay halves running for it.
    pub(crate) fn from_config(
        c: &NodeConfig,
        relays: HashMap<String, Arc<switchyard_tunnel::half::RelayHalf>>,
    ) -> Self {
        Self {
            relays,
            users: Users::build(c),
            dialer: Dialer::from_config(c),
            handshake_timeout: Duration::from_secs(c.node.handshake_timeout_s),
            idle_timeout: Duration::from_secs(c.node.idle_timeout_s),
            unauthenticated_hold: Duration::from_secs(c.node.unauthenticated_hold_s),
            max_unauthenticated: (
                c.node.max_unauthenticated,
                c.node.max_unauthenticated_per_source,
            ),
            control: c.control.listen,
        }
    }
}

/// State shared by the data path, the control API and the background tasks.
#[derive(Debug)]
pub struct Shared {
    /// Counters.
    pub accounting: Arc<Accounting>,
    /// Live connections.
    pub sessions: Arc<Sessions>,
    runtime: RwLock<Arc<Runtime>>,
    /// Bytes per second over the last second, up and down.
    pub throughput: (AtomicU64, AtomicU64),
    /// What each inbound tag keeps across its rebuilds (limits, replay state).
    pub(crate) inbound_states: Arc<InboundStates>,
    /// Fires when the node hands its listeners to a new process
    /// ([`crate::handover`]): accept loops end, open connections go on.
    pub(crate) stop_accepting: CancellationToken,
    /// Fired once the UDP sockets are this process's to read: at once, or, for a
    /// process taking over, when its predecessor released them.
    pub(crate) udp_released: CancellationToken,
    /// Sockets handed over by a predecessor, taken as inbounds bind.
    pub(crate) inherited: Mutex<crate::handover::Inherited>,
    /// Streams the relay opened on this node's origin halves, served now.
    pub origin_streams: AtomicUsize,
}

impl Shared {
    /// Fresh state (no counters, no connections) with `runtime` in force; with the
    /// sockets a predecessor handed over, if this process takes over from one (its UDP
    /// sockets are read once it released them).
    pub(crate) fn new(runtime: Runtime, inherited: Option<crate::handover::Inherited>) -> Self {
        let udp_released = CancellationToken::new();
        if inherited.is_none() {
            udp_released.cancel();
        }
        Self {
            stop_accepting: CancellationToken::new(),
            udp_released,
            inherited: Mutex::new(inherited.unwrap_or_default()),
            origin_streams: AtomicUsize::new(0),
            accounting: Arc::new(Accounting::default()),
            sessions: Arc::new(Sessions::default()),
            runtime: RwLock::new(Arc::new(runtime)),
            throughput: (AtomicU64::new(0), AtomicU64::new(0)),
            inbound_states: Arc::default(),
        }
    }

    /// The runtime in force now.
    pub fn runtime(&self) -> Arc<Runtime> {
        self.runtime
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// A socket the predecessor handed over for `addr`, if any (`take`: the
    /// [`crate::handover::Inherited`] method that converts it).
    pub(crate) fn inherited<T>(
        &self,
        take: impl FnOnce(&mut crate::handover::Inherited) -> Option<T>,
    ) -> Option<T> {
        take(&mut self.inherited.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Puts `runtime` in force: connections that read it from now on see it.
    pub(crate) fn set_runtime(&self, runtime: Runtime) {
        *self.runtime.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(runtime);
    }
}
