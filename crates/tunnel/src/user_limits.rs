//! Per-user bounds on the relay: how many streams, and how many of them UDP
//! associations, one user may hold in a tunnel at once, over all its origins and
//! links. Without them one user could fill a link's stream slots (4096) and crowd out
//! everyone else placed on that origin.
//!
//! [`UserCounts`] is the live tally; each stream the pool opens carries a lease that
//! gives its slot back when the stream's handle is dropped.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde::{Deserialize, Serialize};

use crate::frame::Network;

/// The defaults, in the config contract: most streams, and most UDP associations, per
/// user in one tunnel.
pub use switchyard_config::tunnel::{STREAMS_PER_USER, UDP_PER_USER};

/// The per-user bounds. Every default is here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct UserLimits {
    /// Most streams of one user, TCP and UDP together. Default [`STREAMS_PER_USER`].
    pub streams: usize,
    /// Most UDP streams (associations) of one user. Default [`UDP_PER_USER`].
    pub udp: usize,
}

impl Default for UserLimits {
    fn default() -> Self {
        Self {
            streams: STREAMS_PER_USER,
            udp: UDP_PER_USER,
        }
    }
}

#[derive(Debug, Default)]
struct Count {
    streams: usize,
    udp: usize,
    /// The limit was hit and logged; logged again only after the user went below it.
    warned: bool,
}

/// The live tally of streams per user, shared with the leases.
#[derive(Debug, Clone, Default)]
pub(crate) struct UserCounts {
    limits: UserLimits,
    counts: Arc<Mutex<HashMap<String, Count>>>,
}

/// A stream's place in its user's count, given back on drop.
#[derive(Debug)]
pub(crate) struct Lease {
    counts: Arc<Mutex<HashMap<String, Count>>>,
    user: String,
    udp: bool,
}

/// Which bound a user hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitKind {
    /// [`UserLimits::streams`].
    Streams,
    /// [`UserLimits::udp`].
    Udp,
}

impl core::fmt::Display for LimitKind {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Self::Streams => "streams",
            Self::Udp => "UDP associations",
        })
    }
}

fn lock(m: &Mutex<HashMap<String, Count>>) -> MutexGuard<'_, HashMap<String, Count>> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl UserCounts {
    pub(crate) fn new(limits: UserLimits) -> Self {
        Self {
            limits,
            counts: Arc::default(),
        }
    }

    /// Takes a slot for `user`'s new stream, or says which bound it hit (logged once
    /// per episode, so a client retrying in a loop does not flood the log).
    pub(crate) fn take(&self, user: &str, network: Network) -> Result<Lease, (LimitKind, usize)> {
        let mut counts = lock(&self.counts);
        let c = counts.entry(user.to_owned()).or_default();
        let udp = network == Network::Udp;
        let hit = if c.streams >= self.limits.streams {
            Some((LimitKind::Streams, self.limits.streams))
        } else if udp && c.udp >= self.limits.udp {
            Some((LimitKind::Udp, self.limits.udp))
        } else {
            None
        };
        if let Some((kind, limit)) = hit {
            if !c.warned {
                c.warned = true;
                tracing::warn!(%user, limit, "tunnel: user is at the limit of {limit} {kind}; new ones are refused until some close");
            }
            return Err((kind, limit));
        }
        c.streams += 1;
        c.udp += usize::from(udp);
        Ok(Lease {
            counts: self.counts.clone(),
            user: user.to_owned(),
            udp,
        })
    }

    /// `user`'s streams and UDP streams now.
    pub(crate) fn of(&self, user: &str) -> (usize, usize) {
        lock(&self.counts)
            .get(user)
            .map_or((0, 0), |c| (c.streams, c.udp))
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let mut counts = lock(&self.counts);
        if let Some(c) = counts.get_mut(&self.user) {
            c.streams = c.streams.saturating_sub(1);
            c.udp = c.udp.saturating_sub(usize::from(self.udp));
            c.warned = false;
            if c.streams == 0 {
                counts.remove(&self.user);
            }
        }
    }
}
