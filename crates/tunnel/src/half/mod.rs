//! The two halves of a tunnel, as running services.
//!
//! - [`RelayHalf`] pools every link of every origin and opens users' streams through
//!   them ([`RelayHalf::open`]). In reverse mode (the default) it listens on every
//!   profile's port and admits origins by their derived credentials; in direct mode
//!   it dials every origin instead.
//! - [`OriginHalf`] hands every stream the relay opens to a handler (the origin's own
//!   routing). In reverse mode it dials every address of every profile of the relay at
//!   once (hot standby) and keeps the wanted links up with back-off; in direct mode it
//!   listens.
//!
//! An origin keeps `links` links **per profile** ([`LINKS_PER_PROFILE`] by default, or
//! the profile's own [`Profile::links`]), spread over the profile's addresses
//! ([`spread`]). Both halves track every task they
//! start, so [`RelayHalf::stop`] and [`OriginHalf::stop`] return only once the ports
//! are free, and [`RelayHalf::reset`] / [`OriginHalf::reset`] rebuild the half from its
//! spec: links drop and the dialing side starts over at once, with no back-off.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken as Cancel;

use crate::credentials::tunnel_tag;
use crate::frame::Open;
use crate::link::transport::{Acceptor, Transport};
use crate::link::{Accepted, Admitted, Gate, LinkStream, Listener, Release};
use crate::mux::{Mux, MuxConfig, MuxStream, Side};
use crate::pool::Pool;

mod direct;
mod origin;
mod relay;

pub use direct::{DirectOrigin, OriginListenSpec, RelayDialSpec};
pub use origin::{OriginHalf, OriginSpec};
pub use relay::{RelayHalf, RelaySpec};

/// The defaults of a half, in the config contract: links an origin keeps per
/// profile, and the largest receive window ([`MuxConfig::max_window`]) a stream grows
/// to.
pub use switchyard_config::tunnel::{DEFAULT_WINDOW, LINKS_PER_PROFILE};

/// The multiplexer settings of a half whose streams' windows grow to `window` bytes.
fn mux_config(window: u32) -> MuxConfig {
    MuxConfig {
        max_window: window,
        ..MuxConfig::default()
    }
}

/// How long an origin half waits between status samples in tests and tools.
pub const SETTLE: Duration = Duration::from_millis(50);

/// One way into the tunnel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    /// The listening side's port for it.
    pub port: u16,
    /// TLS or WebSocket.
    pub transport: Transport,
    /// Reverse mode: where origins reach the relay (`host:port`; several for hot
    /// standby). Direct mode: unused (each origin's hosts are dialed at `port`).
    pub addresses: Vec<String>,
    /// Links each origin keeps on this profile, spread over its addresses ([`spread`]);
    /// `None`: the half's own `links`. Links set a profile's weight in the pool: a
    /// profile with six takes three times the streams of one with two.
    pub links: Option<usize>,
}

impl Profile {
    /// The links wanted on this profile, `default` (the half's `links`) when it names
    /// none; at least one.
    pub fn links_or(&self, default: usize) -> usize {
        self.links.unwrap_or(default).max(1)
    }
}

/// Why a half could not start or change.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HalfError {
    /// The certificate or key is unusable.
    #[error("tunnel {tunnel:?}: certificate: {problem}")]
    Certificate {
        /// The tunnel.
        tunnel: String,
        /// What is wrong.
        problem: crate::link::cert::CertError,
    },
    /// A profile's port can't be bound.
    #[error("tunnel {tunnel:?}: profile {profile} port {port}: {source}")]
    Bind {
        /// The tunnel.
        tunnel: String,
        /// The profile index.
        profile: usize,
        /// The port.
        port: u16,
        /// The cause.
        source: std::io::Error,
    },
}

/// Handles a stream the relay opened.
pub type StreamHandler = Arc<dyn Fn(Open, MuxStream) + Send + Sync>;

/// How `links` links of one profile are shared out over its `addresses`: as evenly
/// as they go, earlier addresses first, and at least one per address so that every
/// address stays connected (hot standby; a profile with more addresses than links
/// keeps one link on each).
pub fn spread(links: usize, addresses: usize) -> Vec<usize> {
    let Some(base) = links.checked_div(addresses) else {
        return Vec::new();
    };
    (0..addresses)
        .map(|i| (base + usize::from(i < links % addresses)).max(1))
        .collect()
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The tasks a half started; awaited when it stops.
#[derive(Debug, Default)]
struct Tasks(Mutex<Vec<JoinHandle<()>>>);

impl Tasks {
    fn spawn(&self, f: impl std::future::Future<Output = ()> + Send + 'static) {
        let mut tasks = lock(&self.0);
        tasks.retain(|t| !t.is_finished());
        tasks.push(tokio::spawn(f));
    }

    /// Waits for every task (they end on the half's stop token).
    async fn join(&self) {
        let tasks = std::mem::take(&mut *lock(&self.0));
        for t in tasks {
            let _ = t.await;
        }
    }
}

/// A profile's listener: `SO_REUSEPORT`, so the process a node hands over to binds
/// the port while this one still listens (it stops at the handover; links it holds
/// stay).
fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.set_reuseport(true)?;
    socket.bind(addr)?;
    socket.listen(1024)
}

/// The listening side of a half (the relay in reverse mode, an origin in direct
/// mode): every profile's port bound (all or none), a [`Listener`] on each, and the
/// admitted links of all of them on one channel with their profile index.
struct Listening {
    gates: Vec<Gate>,
}

impl Listening {
    async fn start(
        tunnel: &str,
        listen: IpAddr,
        profiles: &[Profile],
        acceptor: &(dyn Fn(&Transport) -> Acceptor + Sync),
        admitted: &Admitted,
        stop: &Cancel,
        tasks: &Tasks,
    ) -> Result<(Self, mpsc::Receiver<(usize, Accepted)>), HalfError> {
        let mut bound = Vec::new();
        for (i, p) in profiles.iter().enumerate() {
            let l = bind(SocketAddr::new(listen, p.port)).map_err(|source| HalfError::Bind {
                tunnel: tunnel.to_owned(),
                profile: i,
                port: p.port,
                source,
            })?;
            bound.push(l);
        }
        let tag = tunnel_tag(tunnel);
        let (all_tx, all_rx) = mpsc::channel(64);
        let mut gates = Vec::new();
        for (i, (p, l)) in profiles.iter().zip(bound).enumerate() {
            let gate = Gate::new(&tag, admitted.clone());
            gates.push(gate.clone());
            let listener = Listener::new(acceptor(&p.transport), gate);
            let (tx, mut rx) = mpsc::channel(64);
            let stop = stop.clone();
            let all = all_tx.clone();
            // The listener lives in this task: when it ends, the port is free.
            tasks.spawn(async move {
                let serve = listener.serve(l, tx);
                tokio::pin!(serve);
                loop {
                    tokio::select! {
                        () = &mut serve => return,
                        () = stop.cancelled() => return,
                        a = rx.recv() => match a {
                            Some(a) => if all.send((i, a)).await.is_err() { return },
                            None => return,
                        },
                    }
                }
            });
        }
        Ok((Self { gates }, all_rx))
    }
}

/// On an origin: runs the multiplexer on a link and hands every stream the relay
/// opens to `handler`, until the link ends or `stop` fires. When `handing` fires
/// (this process hands over to another), the link says `GoAway` and carries its
/// streams to their end; when the relay says it, a dialed link is `release`d, so a
/// replacement is dialed at once.
fn serve_origin_link(
    link: OriginLink,
    handler: StreamHandler,
    stop: Cancel,
    count: Arc<AtomicUsize>,
) {
    let OriginLink {
        stream,
        release,
        handing,
        mux,
    } = link;
    let (handle, mut incoming) = Mux::start(stream, Side::Acceptor, mux);
    count.fetch_add(1, Ordering::Relaxed);
    tokio::spawn(async move {
        let (mut said, mut heard) = (false, release.is_none());
        loop {
            tokio::select! {
                next = incoming.next() => match next {
                    Some((open, stream)) => handler(open, stream),
                    None => break,
                },
                () = stop.cancelled() => { handle.close(); break }
                () = handing.cancelled(), if !said => {
                    said = true;
                    handle.go_away();
                }
                () = handle.peer_going_away(), if !heard => {
                    heard = true;
                    retire(&handle, release.as_ref());
                }
            }
        }
        count.fetch_sub(1, Ordering::Relaxed);
    });
}

/// A link the peer says `GoAway` on leaves its dialer's count (a replacement is
/// dialed at once); one that closed simply ended.
fn retire(handle: &crate::mux::MuxHandle, release: Option<&Release>) {
    if let Some(release) = release
        && !handle.is_closed()
    {
        tracing::info!("tunnel link: the peer hands over; dialing a replacement");
        release.retire();
    }
}

/// What [`serve_origin_link`] runs on.
struct OriginLink {
    stream: LinkStream,
    /// A dialed link's place in its dialer's count.
    release: Option<Release>,
    /// Fires when this process hands over.
    handing: Cancel,
    mux: MuxConfig,
}

/// On the relay: runs the multiplexer on a link of `origin` and pools it until it
/// ends. Added first, checked second: an origin removed before the check is seen by
/// it, one removed after it is swept from the pool by the removal, so a link admitted
/// just before its origin was removed never stays.
fn pool_link(
    pool: &Arc<Pool>,
    admitted: &Admitted,
    origin: String,
    profile: usize,
    stream: LinkStream,
    release: Option<Release>,
    mux: MuxConfig,
) {
    let (handle, _incoming) = Mux::start(stream, Side::Opener, mux);
    let id = pool.add(&origin, profile, handle.clone());
    if !admitted.contains(&origin) {
        tracing::info!(%origin, "tunnel link dropped: its origin was removed as it came up");
        handle.close();
    }
    let pool = pool.clone();
    tokio::spawn(async move {
        if release.is_some() {
            handle.peer_going_away().await;
            retire(&handle, release.as_ref());
        }
        let why = handle.closed().await;
        tracing::debug!(%origin, "tunnel link ended: {why}");
        pool.remove(&origin, id);
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::Balancing;

    #[test]
    fn links_are_spread_over_a_profiles_addresses() {
        assert_eq!(spread(4, 1), [4]);
        assert_eq!(spread(4, 2), [2, 2]);
        assert_eq!(spread(4, 3), [2, 1, 1]);
        assert_eq!(spread(6, 4), [2, 2, 1, 1]);
        assert_eq!(spread(2, 3), [1, 1, 1]);
        assert_eq!(spread(4, 0), Vec::<usize>::new());
    }

    #[tokio::test]
    async fn a_link_whose_origin_was_removed_as_it_came_up_is_dropped() {
        let pool = Arc::new(Pool::new(Balancing::Distribute));
        let admitted = Admitted::new([]);
        let (a, _b) = tokio::io::duplex(1024);
        pool_link(
            &pool,
            &admitted,
            "de".into(),
            0,
            Box::new(a),
            None,
            MuxConfig::default(),
        );
        assert_eq!(pool.links(), 0);
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(pool.status().is_empty());
    }
}
