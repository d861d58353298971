//! The relay's session pool: every link of every profile of an origin, under that
//! origin's identity, and the choice of link for a new stream.
//!
//! For every new connection the pool chooses, in order: the **origin** by user name
//! ([`Placement`]), the **profile** by the balancing mode, the **link** with the fewest
//! open streams. Losing a profile never moves a user; losing an origin (its last link)
//! moves only its users.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use serde::Serialize;

use crate::frame::Open;
use crate::mux::{MuxError, MuxHandle, MuxStream};
use crate::placement::Placement;
use crate::user_limits::{LimitKind, UserCounts, UserLimits};

/// How the pool uses several profiles: the config's own setting.
pub use switchyard_config::Balancing;

/// Why no stream could be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PoolError {
    /// No origin has a link up.
    #[error("no origin of the tunnel is connected")]
    NoOrigin,
    /// Every link of the user's origin refused the stream.
    #[error("origin {origin:?}: no link took the stream: {last}")]
    NoLink {
        /// The origin.
        origin: String,
        /// The last link's error.
        last: MuxError,
    },
    /// The user already holds as many streams (or UDP associations) as a user may.
    #[error("user {user:?} is at the tunnel's limit of {limit} {kind}; close some first")]
    UserLimit {
        /// The user.
        user: String,
        /// Which bound.
        kind: LimitKind,
        /// Its value.
        limit: usize,
    },
}

#[derive(Debug)]
struct Entry {
    id: u64,
    profile: usize,
    handle: MuxHandle,
}

/// One origin's links as status shows them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OriginStatus {
    /// Links up per profile index.
    pub links_per_profile: BTreeMap<usize, usize>,
    /// Streams open over all its links.
    pub open_streams: usize,
    /// Streams open per profile index (profiles with links up only): with
    /// `distribute`, each profile's share follows its links.
    pub streams_per_profile: BTreeMap<usize, usize>,
}

/// The pool.
#[derive(Debug)]
pub struct Pool {
    balancing: Balancing,
    state: Mutex<State>,
    users: UserCounts,
    /// When the pool was made: placement warms up from here.
    started: Instant,
}

impl Default for Pool {
    fn default() -> Self {
        Self::new(Balancing::default())
    }
}

/// How long after a start a user whose own origin has not connected yet is carried
/// by another without being pinned to it. 20 s: origins redial a restarted relay
/// within their back-off (a few seconds after a short outage); longer would leave
/// users on stand-ins that move them later.
pub const PLACEMENT_WARMUP: Duration = Duration::from_secs(20);

#[derive(Debug, Default)]
struct State {
    next_id: u64,
    origins: BTreeMap<String, Vec<Entry>>,
    /// The origins of the tunnel's config, connected or not.
    configured: Vec<String>,
    placement: Placement,
    /// Payload bytes of links that are gone.
    past_bytes: u64,
}

impl Pool {
    /// An empty pool with the default [`UserLimits`].
    pub fn new(balancing: Balancing) -> Self {
        Self::with_limits(balancing, UserLimits::default())
    }

    /// An empty pool bounding each user's streams by `limits`.
    pub fn with_limits(balancing: Balancing, limits: UserLimits) -> Self {
        Self {
            balancing,
            state: Mutex::default(),
            users: UserCounts::new(limits),
            started: Instant::now(),
        }
    }

    /// The origins the tunnel is configured with, connected or not: while the pool
    /// warms up ([`PLACEMENT_WARMUP`]), a user whose own origin among them is not
    /// connected yet is not pinned to a stand-in.
    pub fn set_configured(&self, origins: Vec<String>) {
        self.lock().configured = origins;
    }

    /// The streams and the UDP streams `user` holds now.
    pub fn user_streams(&self, user: &str) -> (usize, usize) {
        self.users.of(user)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a link of `origin` on `profile`; returns its id for [`remove`](Self::remove).
    pub fn add(&self, origin: &str, profile: usize, handle: MuxHandle) -> u64 {
        let mut s = self.lock();
        s.next_id += 1;
        let id = s.next_id;
        s.origins.entry(origin.to_owned()).or_default().push(Entry {
            id,
            profile,
            handle,
        });
        id
    }

    /// Removes a link that ended; when it was the origin's last, the origin's users
    /// are free to be placed elsewhere.
    pub fn remove(&self, origin: &str, id: u64) {
        let mut s = self.lock();
        let mut gone_bytes = 0;
        let empty = match s.origins.get_mut(origin) {
            Some(links) => {
                links.retain(|e| {
                    let keep = e.id != id;
                    if !keep {
                        gone_bytes += e.handle.bytes_carried();
                    }
                    keep
                });
                links.is_empty()
            }
            None => false,
        };
        s.past_bytes += gone_bytes;
        if empty {
            s.origins.remove(origin);
            s.placement.origin_lost(origin);
        }
    }

    /// Closes and forgets every link of `origin` (removed from the tunnel).
    pub fn drop_origin(&self, origin: &str) {
        let mut s = self.lock();
        if let Some(links) = s.origins.remove(origin) {
            for e in links {
                s.past_bytes += e.handle.bytes_carried();
                e.handle.close();
            }
        }
        s.placement.origin_lost(origin);
    }

    /// Every link takes no new streams and tells its origin so (the process hands
    /// over); their streams go on.
    pub fn go_away_all(&self) {
        for e in self.lock().origins.values().flatten() {
            e.handle.go_away();
        }
    }

    /// Closes every link (reset, or the half is rebuilt).
    pub fn close_all(&self) {
        let origins: Vec<String> = self.lock().origins.keys().cloned().collect();
        for o in origins {
            self.drop_origin(&o);
        }
    }

    /// Opens a stream for `open.user`'s connection.
    pub fn open(&self, open: Open, now_ms: i64) -> Result<MuxStream, PoolError> {
        let lease = self
            .users
            .take(&open.user, open.network)
            .map_err(|(kind, limit)| PoolError::UserLimit {
                user: open.user.clone(),
                kind,
                limit,
            })?;
        let (origin, candidates) = {
            let mut s = self.lock();
            let connected: Vec<String> = s
                .origins
                .iter()
                .filter(|(_, links)| links.iter().any(|e| !e.handle.is_closed()))
                .map(|(o, _)| o.clone())
                .collect();
            let refs: Vec<&str> = connected.iter().map(String::as_str).collect();
            let configured = std::mem::take(&mut s.configured);
            let names: Vec<&str> = configured.iter().map(String::as_str).collect();
            let warming = self.started.elapsed() < PLACEMENT_WARMUP;
            let origin = s
                .placement
                .place(&open.user, &refs, &names, warming, now_ms);
            s.configured = configured;
            let origin = origin.ok_or(PoolError::NoOrigin)?;
            let links = &s.origins[&origin];
            (origin.clone(), order(links, self.balancing))
        };
        let mut last = MuxError::Closed;
        for handle in candidates {
            match handle.open(open.clone()) {
                Ok(stream) => return Ok(stream.with_lease(lease)),
                Err(e) => last = e,
            }
        }
        Err(PoolError::NoLink { origin, last })
    }

    /// Links and streams per origin.
    pub fn status(&self) -> BTreeMap<String, OriginStatus> {
        let s = self.lock();
        s.origins
            .iter()
            .map(|(o, links)| {
                let mut st = OriginStatus::default();
                for e in links.iter().filter(|e| !e.handle.is_closed()) {
                    let streams = e.handle.open_streams();
                    *st.links_per_profile.entry(e.profile).or_default() += 1;
                    *st.streams_per_profile.entry(e.profile).or_default() += streams;
                    st.open_streams += streams;
                }
                (o.clone(), st)
            })
            .collect()
    }

    /// Links up in all.
    pub fn links(&self) -> usize {
        self.status()
            .values()
            .map(|s| s.links_per_profile.values().sum::<usize>())
            .sum()
    }

    /// Payload bytes carried by the tunnel so far, both directions.
    pub fn bytes(&self) -> u64 {
        let s = self.lock();
        s.past_bytes
            + s.origins
                .values()
                .flatten()
                .map(|e| e.handle.bytes_carried())
                .sum::<u64>()
    }
}

/// The links to try, best first: by balancing mode, then fewest open streams.
fn order(links: &[Entry], balancing: Balancing) -> Vec<MuxHandle> {
    let mut live: Vec<(usize, usize, &Entry)> = links
        .iter()
        .filter(|e| !e.handle.is_closed() && !e.handle.is_going_away())
        .map(|e| (e.profile, e.handle.open_streams(), e))
        .collect();
    match balancing {
        Balancing::Distribute => live.sort_by_key(|&(_, streams, e)| (streams, e.id)),
        Balancing::Priority => live.sort_by_key(|&(profile, streams, e)| (profile, streams, e.id)),
    }
    live.into_iter().map(|(_, _, e)| e.handle.clone()).collect()
}
