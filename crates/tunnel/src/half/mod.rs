//! The two halves of a tunnel, as running services (reverse mode: the relay listens,
//! origins dial it, so an origin needs no open port).
//!
//! - [`RelayHalf`] listens on every profile's port, admits origins by their derived
//!   credentials, puts a multiplexer on every link and pools them; the node's routing
//!   opens streams through [`RelayHalf::open`].
//! - [`OriginHalf`] dials every address of every profile of the relay at once (hot
//!   standby), keeps the wanted links up with back-off, and hands every stream the
//!   relay opens to a handler (the origin's own routing).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken as Cancel;

use crate::credentials::{Credential, certificate_name, tunnel_tag};
use crate::frame::{Hello, Open};
use crate::link::cert::{CertSwap, swappable_server_config};
use crate::link::transport::{Acceptor, Target, Transport};
use crate::link::{AddressStatus, Admitted, Dialer, DialerConfig, Gate, Listener, Pin, Refusals};
use crate::mux::{Mux, MuxConfig, MuxStream, Side};
use crate::pool::{Balancing, OriginStatus, Pool, PoolError};

/// One way into the tunnel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    /// The relay's port for it.
    pub port: u16,
    /// TLS or WebSocket.
    pub transport: Transport,
    /// Where origins reach it (`host:port`; several for hot standby).
    pub addresses: Vec<String>,
}

/// What a relay half needs.
#[derive(Clone, Debug)]
pub struct RelaySpec {
    /// The tunnel's name.
    pub tunnel: String,
    /// Address to listen on.
    pub listen: IpAddr,
    /// Up to eight profiles.
    pub profiles: Vec<Profile>,
    /// Balancing between profiles.
    pub balancing: Balancing,
    /// The tunnel certificate and key (PEM), issued for the tunnel's name.
    pub cert_pem: String,
    /// The key.
    pub key_pem: String,
    /// Admitted origins and their credentials.
    pub origins: Vec<(String, Credential)>,
}

/// Why a half could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HalfError {
    /// The certificate or key is unusable.
    #[error("tunnel {tunnel:?}: certificate: {problem}")]
    Certificate {
        /// The tunnel.
        tunnel: String,
        /// What is wrong.
        problem: String,
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

/// A running relay half.
#[derive(Debug)]
pub struct RelayHalf {
    tunnel: String,
    pool: Arc<Pool>,
    admitted: Admitted,
    gates: Vec<Gate>,
    stop: Cancel,
    listeners: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// Direct mode: the dialers of the origins.
    direct: Option<direct::DirectState>,
    /// Reverse mode: the certificate served to origins.
    cert: Option<Arc<CertSwap>>,
}

impl RelayHalf {
    /// Binds every profile's port and starts admitting origins.
    pub async fn start(spec: RelaySpec) -> Result<Self, HalfError> {
        let (tls, cert) = swappable_server_config(&spec.cert_pem, &spec.key_pem).map_err(|e| {
            HalfError::Certificate {
                tunnel: spec.tunnel.clone(),
                problem: e.to_string(),
            }
        })?;
        let tag = tunnel_tag(&spec.tunnel);
        let admitted = Admitted::new(spec.origins.clone());
        let pool = Arc::new(Pool::new(spec.balancing));
        let stop = Cancel::new();
        let mut listeners = Vec::new();
        for (i, p) in spec.profiles.iter().enumerate() {
            let addr = SocketAddr::new(spec.listen, p.port);
            let l = TcpListener::bind(addr)
                .await
                .map_err(|source| HalfError::Bind {
                    tunnel: spec.tunnel.clone(),
                    profile: i,
                    port: p.port,
                    source,
                })?;
            listeners.push(l);
        }
        let mut gates = Vec::new();
        let mut handles = Vec::new();
        for (i, (p, l)) in spec.profiles.iter().zip(listeners).enumerate() {
            let gate = Gate::new(&tag, admitted.clone());
            gates.push(gate.clone());
            let listener = Listener::new(Acceptor::new(tls.clone(), p.transport.clone()), gate);
            let (tx, mut rx) = mpsc::channel(64);
            let stop_l = stop.clone();
            handles.push(tokio::spawn(async move {
                tokio::select! {
                    () = listener.serve(l, tx) => {}
                    () = stop_l.cancelled() => {}
                }
            }));
            let pool = pool.clone();
            let stop_r = stop.clone();
            tokio::spawn(async move {
                loop {
                    let accepted = tokio::select! {
                        a = rx.recv() => match a { Some(a) => a, None => return },
                        () = stop_r.cancelled() => return,
                    };
                    pool_link(&pool, accepted.origin, i, accepted.stream);
                }
            });
        }
        // Removed origins lose their links at once.
        let (watch_admitted, watch_pool, stop_w) = (admitted.clone(), pool.clone(), stop.clone());
        tokio::spawn(async move {
            let mut changes = watch_admitted.watch();
            loop {
                tokio::select! {
                    r = changes.changed() => if r.is_err() { return },
                    () = stop_w.cancelled() => return,
                }
                for origin in watch_pool.status().keys() {
                    if !watch_admitted.contains(origin) {
                        watch_pool.drop_origin(origin);
                    }
                }
            }
        });
        Ok(Self {
            tunnel: spec.tunnel,
            pool,
            admitted,
            gates,
            stop,
            listeners: std::sync::Mutex::new(handles),
            direct: None,
            cert: Some(cert),
        })
    }

    /// Opens a stream for a user's connection.
    pub fn open(&self, open: Open, now_ms: i64) -> Result<MuxStream, PoolError> {
        self.pool.open(open, now_ms)
    }

    /// Replaces the admitted origins live: links of origins still admitted stay up.
    pub fn set_origins(&self, origins: Vec<(String, Credential)>) {
        self.admitted.replace(origins);
    }

    /// Links and streams per connected origin.
    pub fn origins(&self) -> std::collections::BTreeMap<String, OriginStatus> {
        self.pool.status()
    }

    /// Refused link attempts, added up over the profiles.
    pub fn refusals(&self) -> Vec<Refusals> {
        self.gates.iter().map(Gate::refusals).collect()
    }

    /// Links up.
    pub fn links(&self) -> usize {
        self.pool.links()
    }

    /// Payload bytes carried.
    pub fn bytes(&self) -> u64 {
        self.pool.bytes()
    }

    /// Drops every link; the dialing side (origins, or this relay in direct mode)
    /// starts over at once.
    pub fn reset(&self) {
        self.pool.close_all();
        self.reset_dialers();
    }

    /// The tunnel's name.
    pub fn tunnel(&self) -> &str {
        &self.tunnel
    }

    /// Reverse mode: serves a re-issued certificate to new links from now on; links
    /// already up stay up. (Origins that pin the public key need no change when the
    /// certificate is re-issued with the same key.)
    pub fn set_certificate(&self, cert_pem: &str, key_pem: &str) -> Result<(), HalfError> {
        let fail = |e: crate::link::cert::CertError| HalfError::Certificate {
            tunnel: self.tunnel.clone(),
            problem: e.to_string(),
        };
        match &self.cert {
            Some(swap) => swap.set(cert_pem, key_pem).map_err(fail),
            None => Ok(()),
        }
    }

    /// Stops the half: links close and the profiles' ports are free when this returns.
    pub async fn stop(&self) {
        self.stop.cancel();
        self.pool.close_all();
        let handles =
            std::mem::take(&mut *self.listeners.lock().unwrap_or_else(|p| p.into_inner()));
        for h in handles {
            let _ = h.await;
        }
    }
}

impl Drop for RelayHalf {
    fn drop(&mut self) {
        self.stop.cancel();
        self.pool.close_all();
    }
}

/// What an origin half needs.
#[derive(Clone, Debug)]
pub struct OriginSpec {
    /// The tunnel's name.
    pub tunnel: String,
    /// This origin's name.
    pub origin: String,
    /// Its credential.
    pub credential: Credential,
    /// The relay's certificate pin.
    pub pin: Pin,
    /// The relay's profiles (ports, transports, addresses).
    pub profiles: Vec<Profile>,
    /// Links wanted per address.
    pub links: usize,
}

/// Handles a stream the relay opened.
pub type StreamHandler = Arc<dyn Fn(Open, MuxStream) + Send + Sync>;

/// A running origin half.
pub struct OriginHalf {
    tunnel: String,
    /// Reverse mode: the dialer to the relay. Direct mode: none (the origin listens).
    dialer: Option<Dialer>,
    /// Direct mode: the gates of the profiles' listeners.
    gates: Vec<Gate>,
    links: Arc<std::sync::atomic::AtomicUsize>,
    stop: Cancel,
}

impl std::fmt::Debug for OriginHalf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OriginHalf")
            .field("tunnel", &self.tunnel)
            .finish_non_exhaustive()
    }
}

impl OriginHalf {
    /// Starts dialing the relay; every stream it opens goes to `handler`.
    pub fn start(spec: OriginSpec, handler: StreamHandler) -> Self {
        let name = certificate_name(&spec.tunnel);
        let targets: Vec<Target> = spec
            .profiles
            .iter()
            .flat_map(|p| {
                p.addresses.iter().map(|a| Target {
                    addr: a.clone(),
                    name: name.clone(),
                    pin: spec.pin,
                    transport: p.transport.clone(),
                })
            })
            .collect();
        let hello = Hello {
            tag: tunnel_tag(&spec.tunnel),
            origin: spec.origin.clone(),
            credential: spec.credential.0,
        };
        let mut config = DialerConfig::new(targets, hello);
        config.wanted = vec![spec.links.max(1); config.targets.len()];
        let (dialer, mut links_rx) = Dialer::start(config);
        let stop = Cancel::new();
        let links = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (stop_l, count) = (stop.clone(), links.clone());
        tokio::spawn(async move {
            loop {
                let link = tokio::select! {
                    l = links_rx.recv() => match l { Some(l) => l, None => return },
                    () = stop_l.cancelled() => return,
                };
                serve_origin_link(link.stream, handler.clone(), stop_l.clone(), count.clone());
            }
        });
        Self {
            tunnel: spec.tunnel,
            dialer: Some(dialer),
            gates: Vec::new(),
            links,
            stop,
        }
    }

    /// Per relay address: wanted and connected links, back-off, last error (reverse
    /// mode; empty in direct mode, where the relay dials).
    pub fn status(&self) -> Vec<AddressStatus> {
        self.dialer.as_ref().map(Dialer::status).unwrap_or_default()
    }

    /// Refused link attempts per profile (direct mode, where the origin listens).
    pub fn refusals(&self) -> Vec<Refusals> {
        self.gates.iter().map(Gate::refusals).collect()
    }

    /// Links up.
    pub fn links(&self) -> usize {
        self.links.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Waiting addresses try again at once.
    pub fn reset(&self) {
        if let Some(d) = &self.dialer {
            d.reset();
        }
    }

    /// The tunnel's name.
    pub fn tunnel(&self) -> &str {
        &self.tunnel
    }
}

impl Drop for OriginHalf {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// On an origin: runs the multiplexer on a link and hands every stream the relay
/// opens to `handler`.
fn serve_origin_link(
    stream: crate::link::LinkStream,
    handler: StreamHandler,
    stop: Cancel,
    count: Arc<std::sync::atomic::AtomicUsize>,
) {
    let (handle, mut incoming) = Mux::start(stream, Side::Acceptor, MuxConfig::default());
    count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    tokio::spawn(async move {
        loop {
            tokio::select! {
                next = incoming.next() => match next {
                    Some((open, stream)) => handler(open, stream),
                    None => break,
                },
                () = stop.cancelled() => { handle.close(); break }
            }
        }
        count.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    });
}

/// On the relay: runs the multiplexer on a link of `origin` and pools it until it ends.
fn pool_link(pool: &Arc<Pool>, origin: String, profile: usize, stream: crate::link::LinkStream) {
    let (handle, _incoming) = Mux::start(stream, Side::Opener, MuxConfig::default());
    let id = pool.add(&origin, profile, handle.clone());
    let pool = pool.clone();
    tokio::spawn(async move {
        let why = handle.closed().await;
        tracing::debug!(%origin, "tunnel link ended: {why}");
        pool.remove(&origin, id);
    });
}

mod direct;
pub use direct::{DirectOrigin, OriginListenSpec, RelayDialSpec};

/// How long an origin half waits between status samples in tests and tools.
pub const SETTLE: Duration = Duration::from_millis(50);
