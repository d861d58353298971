//! Inbounds: listeners, the transport and security layers, and the hand-off to each
//! protocol.
//!
//! The layers (TCP listener, TLS, REALITY, WebSocket, HTTPUpgrade, gRPC) are the shared transport
//! layer's ([`switchyard_transport`]); the node adds its policy: deadlines,
//! pre-authentication limits, gates and fallbacks. Every connection gets one deadline
//! for its whole handshake (TLS, WebSocket upgrade, protocol header); a connection
//! that fails authentication is handed byte for byte to the inbound's fallback, or
//! held silently and closed.

mod buffers;
mod fallback;
mod grpc;
mod hysteria2;
mod io;
pub(crate) mod reality;
mod records;
mod shadowsocks;
mod socks;
#[path = "ss/relay.rs"]
mod ss_relay;
pub(crate) mod state;
mod tcp;
mod trojan;
pub(crate) mod udp;
mod vision;
mod vless;
mod xhttp;

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::net::TcpStream;
use tokio::time::{Instant, timeout_at};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use switchyard_proto::forwarded::{Cidr, client_ip};
use switchyard_proto::websocket::{EarlyData, UpgradeConfig};
use switchyard_transport::httpupgrade;
use switchyard_transport::listen::{BindOptions, Listener, TcpListener};
use switchyard_transport::ws::{self, Refused, Upgrade};

use crate::config::{InboundConfig, Protocol, Transport};
use crate::handover::{Handed, Kind};
use crate::runtime::{Runtime, Shared};

pub(crate) use io::{BoxIo, Gate, Gated, Prefixed};
use records::Records;
use vision::RawTls;

/// What a WebSocket (or HTTPUpgrade) client may send beneath the WebSocket layer (or
/// behind the upgrade) before it has authenticated. 64 KiB: a VLESS or Trojan header with the first payload chunk of
/// sing-box (32 KiB) or Xray (8 KiB) fits; a hostile peer cannot make the node
/// assemble a 1 MiB message before proving who it is.
pub(crate) const MAX_WS_UNAUTHENTICATED: usize = 64 * 1024;

/// Largest protocol header a client may send before authenticating. 8 KiB: real
/// headers are under 300 bytes; a WebSocket upgrade under 2 KiB (the transport reads
/// one up to [`switchyard_proto::websocket::MAX_HEAD_LEN`], 8 KiB as well).
pub(crate) const MAX_HEADER: usize = 8 * 1024;

/// What an inbound puts between TCP and its protocol.
pub(crate) enum Layer {
    /// Nothing.
    Plain,
    /// TLS with the inbound's certificate; with an ACME keeper's, whose challenge
    /// handshakes are answered before the acceptor sees a client.
    Tls(TlsAcceptor, Option<Arc<switchyard_acme::Served>>),
    /// REALITY: TLS 1.3 for its own clients, the target site for everyone else.
    Reality(Arc<reality::Reality>),
}

/// A listener bound for an inbound, not yet serving.
pub(crate) struct Bound {
    pub(crate) config: InboundConfig,
    sockets: Sockets,
    layer: Layer,
}

/// What an inbound's port is bound to.
enum Sockets {
    /// A TCP listener; Shadowsocks: with the UDP socket on the same port.
    Tcp(TcpListener, Option<tokio::net::UdpSocket>),
    /// Hysteria 2: QUIC's UDP sockets (`port`, then its hopping ports), nothing on
    /// TCP.
    Quic(Vec<std::net::UdpSocket>),
}

/// A serving inbound.
pub(crate) struct Running {
    cancel: CancellationToken,
    /// Its listening sockets, for a handover ([`crate::handover`]).
    sockets: Vec<Handed>,
}

impl Running {
    /// Stops accepting and closes the inbound's connections.
    pub(crate) fn stop(self) {
        self.cancel.cancel();
    }

    /// Duplicates of its listening sockets, to hand to a new process.
    pub(crate) fn handed(&self) -> std::io::Result<Vec<Handed>> {
        self.sockets.iter().map(Handed::try_clone).collect()
    }
}

/// Why an inbound could not be set up; the node goes on with the config it had.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InboundError {
    /// Its TLS certificate or key is unreadable or unusable.
    #[error(transparent)]
    Certificate(#[from] crate::tls::CertificateError),
    /// rustls refused its TLS settings.
    #[error(transparent)]
    Tls(#[from] rustls::Error),
    /// Its REALITY settings can't be used.
    #[error(transparent)]
    Reality(#[from] reality::RealityError),
    /// Its port can't be bound.
    #[error(transparent)]
    Bind(#[from] BindError),
}

/// Why an inbound's port could not be bound.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BindError {
    /// The TCP port: the transport layer's listener says why (no socket, an option,
    /// `port N on IP: ...` when another program holds it, listen).
    #[error(transparent)]
    Tcp(#[from] switchyard_transport::listen::BindError),
    /// The system gave no UDP socket (Shadowsocks, Hysteria 2), or it could not be set up.
    #[error("UDP socket: {0}")]
    UdpSocket(#[source] std::io::Error),
    /// An option of the UDP socket (Shadowsocks, Hysteria 2) could not be set.
    #[error("{option}: {source}")]
    Option {
        /// `SO_REUSEADDR` or `SO_REUSEPORT`.
        option: &'static str,
        /// Why.
        source: std::io::Error,
    },
    /// A socket handed over by the previous process could not be taken.
    #[error("socket handed over for {addr}: {source}")]
    Inherited {
        /// Its address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The UDP port can't be bound (Shadowsocks, Hysteria 2; another program holds it:
    /// `AddrInUse`).
    #[error("UDP port {} on {}: {source}", .addr.port(), .addr.ip())]
    UdpPort {
        /// The address and port.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

impl BindError {
    /// Whether another socket holds the port (TCP or UDP).
    pub fn in_use(&self) -> bool {
        match self {
            Self::Tcp(e) => e.in_use(),
            Self::UdpPort { source, .. } => source.kind() == std::io::ErrorKind::AddrInUse,
            _ => false,
        }
    }
}

/// A UDP socket for `addr`: the one the previous process handed over, else a new one
/// (SO_REUSEPORT).
fn udp_socket(shared: &Shared, addr: SocketAddr) -> Result<std::net::UdpSocket, BindError> {
    match shared.inherited(|i| i.take_udp(addr)) {
        Some(socket) => socket.map_err(|source| BindError::Inherited { addr, source }),
        None => shadowsocks::bind_udp(addr)?
            .into_std()
            .map_err(BindError::UdpSocket),
    }
}

/// Binds `config`'s port (with SO_REUSEPORT, so a changed inbound can bind while its
/// old listener still serves), or takes the socket the previous process handed over
/// for it; `layer` (TLS with its certificate, or REALITY) is built by the caller.
pub(crate) async fn bind(
    config: &InboundConfig,
    layer: Layer,
    shared: &Shared,
) -> Result<Bound, BindError> {
    let layer = match (layer, &config.transport) {
        (Layer::Tls(acceptor, acme), Transport::Grpc { .. } | Transport::Xhttp(_)) => {
            Layer::Tls(with_h2(&acceptor), acme)
        }
        (layer, _) => layer,
    };
    let addr = SocketAddr::new(config.listen, config.port);
    let udp = match config.protocol {
        Protocol::Shadowsocks => Some(
            tokio::net::UdpSocket::from_std(udp_socket(shared, addr)?)
                .map_err(BindError::UdpSocket)?,
        ),
        Protocol::Hysteria2 => {
            // `port`, then the hopping range's other ports (validated: at most 100).
            let hops = config
                .hysteria2
                .as_ref()
                .and_then(|h| h.hop_ports().ok().flatten());
            let others = hops.into_iter().flatten().filter(|p| *p != config.port);
            let mut sockets = Vec::new();
            for port in std::iter::once(config.port).chain(others) {
                sockets.push(udp_socket(shared, SocketAddr::new(config.listen, port))?);
            }
            return Ok(Bound {
                config: config.clone(),
                sockets: Sockets::Quic(sockets),
                layer,
            });
        }
        _ => None,
    };
    let inherited = |source| BindError::Inherited { addr, source };
    let listener = match shared.inherited(|i| i.take_tcp(addr)) {
        Some(l) => TcpListener::from_tokio(
            tokio::net::TcpListener::from_std(l.map_err(inherited)?).map_err(inherited)?,
        ),
        None => TcpListener::bind(
            addr,
            BindOptions {
                reuse_port: true,
                backlog: 1024,
            },
        )?,
    };
    Ok(Bound {
        config: config.clone(),
        sockets: Sockets::Tcp(listener, udp),
        layer,
    })
}

/// A gRPC or XHTTP inbound's TLS offers ALPN `h2` (gRPC clients require it; XHTTP
/// runs on either), then `http/1.1` (a browser or prober still gets the fallback;
/// XHTTP's packet-up runs on it); the other inbounds offer none (`crate::tls`).
fn with_h2(acceptor: &TlsAcceptor) -> TlsAcceptor {
    let mut config = rustls::ServerConfig::clone(acceptor.config());
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    TlsAcceptor::from(Arc::new(config))
}

impl Bound {
    /// Starts serving: the accept loop (and Shadowsocks' UDP loop; Hysteria 2's QUIC
    /// accept loop) run supervised.
    pub(crate) fn start(self, shared: Arc<Shared>) -> Running {
        let cancel = CancellationToken::new();
        let sockets = self.handed();
        let state = shared.inbound_states.get(&self.config.tag);
        let xhttp = match &self.config.transport {
            Transport::Xhttp(settings) => Some(Arc::new(switchyard_transport::xhttp::Server::new(
                settings.clone(),
            ))),
            _ => None,
        };
        let ctx = Arc::new(Ctx {
            xhttp,
            trusted: self.config.trusted_networks().into(),
            config: self.config,
            layer: self.layer,
            cancel: cancel.clone(),
            state,
            shared,
        });
        let (listener, udp) = match self.sockets {
            Sockets::Tcp(listener, udp) => (Arc::new(listener), udp),
            Sockets::Quic(quic) => {
                hysteria2::start(ctx, quic);
                return Running { cancel, sockets };
            }
        };
        match udp {
            Some(udp) => shadowsocks::start(ctx, listener, Arc::new(udp)),
            None => {
                let each = ctx.clone();
                supervise(ctx, "accept", move || {
                    let (ctx, listener) = (each.clone(), listener.clone());
                    async move { accept_loop(ctx, &listener).await }
                });
            }
        }
        Running { cancel, sockets }
    }

    /// Duplicates of its sockets, each under the address its config names. One that
    /// cannot be duplicated (out of descriptors) is left out: the new process binds
    /// that port itself.
    fn handed(&self) -> Vec<Handed> {
        let addr = |port| SocketAddr::new(self.config.listen, port);
        let mut handed = Vec::new();
        let mut add = |h: std::io::Result<Handed>| match h {
            Ok(h) => handed.push(h),
            Err(e) => {
                tracing::warn!(inbound = %self.config.tag, "keeping a socket for a handover: {e}")
            }
        };
        match &self.sockets {
            Sockets::Tcp(listener, udp) => {
                add(Handed::of(Kind::Tcp, addr(self.config.port), listener));
                if let Some(udp) = udp {
                    add(Handed::of(Kind::Udp, addr(self.config.port), udp));
                }
            }
            Sockets::Quic(quic) => {
                for socket in quic {
                    match socket.local_addr() {
                        Ok(local) => add(Handed::of(Kind::Udp, addr(local.port()), socket)),
                        Err(e) => add(Err(e)),
                    }
                }
            }
        }
        handed
    }
}

/// What a connection's handler knows about its inbound.
pub(crate) struct Ctx {
    pub(crate) config: InboundConfig,
    layer: Layer,
    /// Fires when the inbound is removed or rebuilt.
    pub(crate) cancel: CancellationToken,
    /// What the inbound's tag keeps across rebuilds.
    pub(crate) state: Arc<state::InboundState>,
    pub(crate) shared: Arc<Shared>,
    /// An XHTTP inbound's server: its sessions, shared by all its connections.
    pub(crate) xhttp: Option<Arc<switchyard_transport::xhttp::Server>>,
    /// The inbound's `trusted_proxies`: whose `X-Forwarded-For` names the user's
    /// address ([`Ctx::user_address`]).
    pub(crate) trusted: Arc<[Cidr]>,
}

impl Ctx {
    /// The user's address on a connection from `peer` whose request carried the
    /// `X-Forwarded-For` lines `forwarded_for`: the address the inbound's trusted
    /// proxies name, or `peer` (`docs/node.md`, "Behind a CDN: the user's address").
    /// The port stays the TCP peer's. The pre-authentication limits are not
    /// concerned: they count the connection's real sender.
    pub(crate) fn user_address(&self, peer: SocketAddr, forwarded_for: &[String]) -> SocketAddr {
        if self.trusted.is_empty() {
            return peer;
        }
        let ip = client_ip(peer.ip(), &self.trusted, forwarded_for);
        if ip != peer.ip() {
            tracing::trace!(%peer, user_address = %ip, inbound = %self.config.tag, "X-Forwarded-For of a trusted proxy");
        }
        SocketAddr::new(ip, peer.port())
    }
}

/// Runs an inbound's long-lived task (`what`: its accept or receive loop) under
/// [`crate::supervise`] until the inbound stops; restarts are counted in
/// `switchyard_inbound_task_restarts_total`, so one bad packet never leaves an
/// inbound deaf.
pub(crate) fn supervise<F, Fut>(ctx: Arc<Ctx>, what: &'static str, make: F)
where
    F: Fn() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let name = format!("inbound {}: {what} task", ctx.config.tag);
    crate::supervise::supervise(name, ctx.cancel.clone(), ctx.state.restarts.clone(), make);
}

async fn accept_loop(ctx: Arc<Ctx>, listener: &TcpListener) {
    let each = ctx.clone();
    accept_each(&ctx, listener, |tcp, conn| {
        tokio::spawn(handle(each.clone(), tcp, conn));
    })
    .await;
}

/// One accepted connection, as its handshake sees it.
pub(crate) struct Conn {
    /// The client's address.
    pub(crate) peer: SocketAddr,
    /// When it was accepted: a failed handshake is held until a fixed time after this.
    pub(crate) accepted: Instant,
    /// The handshake's deadline.
    pub(crate) deadline: Instant,
    pending: state::Unauthenticated,
    /// Opens on authentication: a WebSocket or HTTPUpgrade stream reads little until
    /// then.
    gate: Arc<Gate>,
}

impl Conn {
    /// The client proved who it is: it no longer counts against the inbound's
    /// pre-authentication limits, and its streams read freely.
    pub(crate) fn authenticated(&mut self) {
        self.pending.authenticated();
        self.gate.open();
    }
}

/// Accepts on `listener` until the inbound stops, handing each connection (with
/// Nagle off: the transport's listener sees to it) to `each`; a connection over the
/// pre-authentication limits (per inbound, per source address) is closed at once.
/// [`Listener::accept`] is cancel-safe, so stopping on `ctx.cancel` while it waits
/// loses no queued connection: none is taken from the kernel and then dropped.
pub(crate) async fn accept_each<L: Listener>(
    ctx: &Ctx,
    listener: &L,
    mut each: impl FnMut(L::Conn, Conn),
) {
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            () = ctx.cancel.cancelled() => return,
            () = ctx.shared.stop_accepting.cancelled() => return,
        };
        match accepted {
            Ok((tcp, peer)) => {
                let rt = ctx.shared.runtime();
                let (total, per_source) = rt.max_unauthenticated;
                let Some(pending) = ctx.state.pending.enter(peer.ip(), total, per_source) else {
                    ctx.state.limited.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(%peer, inbound = %ctx.config.tag, "too many connections in their handshake: closed");
                    continue;
                };
                let now = Instant::now();
                each(
                    tcp,
                    Conn {
                        peer,
                        accepted: now,
                        deadline: now + rt.handshake_timeout,
                        pending,
                        gate: Arc::default(),
                    },
                );
            }
            Err(e) => {
                // Out of file descriptors and the like: wait a little, don't spin.
                tracing::warn!(inbound = %ctx.config.tag, "accept: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }
}

/// What serves a connection once its handshakes are done, for as long as it lives.
type Serving<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// One connection's task. It lives as long as the connection, so it holds only the
/// future that serves it: the handshakes run in a box of their own, freed when they
/// are done, and hand over the serving future, boxed at the size of its own path.
/// (Written inline, the task held room for the largest path of all, 11 KiB, and the
/// TLS session a handshake returned, for every connection; see
/// `a_connections_task_holds_only_its_serving_future`.)
async fn handle(ctx: Arc<Ctx>, tcp: TcpStream, conn: Conn) {
    let rt = ctx.shared.runtime();
    let serving = {
        let open = Box::pin(open(&ctx, &rt, tcp, conn));
        open.await
    };
    if let Some(serving) = serving {
        serving.await;
    }
}

/// The handshakes of a connection (TLS or REALITY, then WebSocket or HTTPUpgrade):
/// what serves it then, or `None` when it ends here (refused, held, timed out).
async fn open<'a>(
    ctx: &'a Arc<Ctx>,
    rt: &'a Arc<Runtime>,
    tcp: TcpStream,
    mut conn: Conn,
) -> Option<Serving<'a>> {
    let local = tcp
        .local_addr()
        .unwrap_or_else(|_| SocketAddr::new(ctx.config.listen, ctx.config.port));
    let peer = conn.peer;
    // VLESS over TCP in TLS or REALITY may switch to Vision's direct copy: its TLS
    // session keeps the socket within reach ([`vision`]).
    let vision_capable =
        ctx.config.protocol == Protocol::Vless && ctx.config.transport == Transport::Tcp;
    let stream: BoxIo = match &ctx.layer {
        Layer::Plain => Box::new(tcp),
        Layer::Reality(reality) => match reality.accept(ctx, rt, tcp, &conn).await {
            Some(tls) if vision_capable => {
                return Some(Box::pin(vless::serve_tls(ctx, rt, Box::new(tls), conn)));
            }
            Some(tls) => Box::new(tls),
            None => return None,
        },
        Layer::Tls(acceptor, acme) if vision_capable => {
            let raw = Records::new(Prefixed::new(Vec::new(), tcp), true);
            match timeout_at(conn.deadline, accept_tls(acceptor, acme.as_ref(), raw)).await {
                Ok(Ok(Some(tls))) => {
                    return Some(Box::pin(vless::serve_tls(ctx, rt, Box::new(tls), conn)));
                }
                Ok(Ok(None)) => return None,
                Ok(Err(e)) => {
                    tracing::debug!(%peer, inbound = %ctx.config.tag, "TLS handshake: {e}");
                    return None;
                }
                Err(_) => {
                    tracing::debug!(%peer, inbound = %ctx.config.tag, "TLS handshake timed out");
                    return None;
                }
            }
        }
        Layer::Tls(acceptor, acme) => {
            match timeout_at(conn.deadline, accept_tls(acceptor, acme.as_ref(), tcp)).await {
                Ok(Ok(Some(tls))) => Box::new(tls),
                Ok(Ok(None)) => return None,
                Ok(Err(e)) => {
                    tracing::debug!(%peer, inbound = %ctx.config.tag, "TLS handshake: {e}");
                    return None;
                }
                Err(_) => {
                    tracing::debug!(%peer, inbound = %ctx.config.tag, "TLS handshake timed out");
                    return None;
                }
            }
        }
    };
    let stream = match &ctx.config.transport {
        Transport::Tcp => stream,
        Transport::Ws { path, host } => {
            upgrade(ctx, rt, stream, path, host.as_deref(), &mut conn).await?
        }
        Transport::HttpUpgrade { path, host } => {
            http_upgrade(ctx, rt, stream, path, host.as_deref(), &mut conn).await?
        }
        Transport::Grpc { service_name } => {
            return Some(Box::pin(grpc::serve(ctx, rt, stream, conn, service_name)));
        }
        Transport::Xhttp(_) => return Some(Box::pin(xhttp::serve(ctx, rt, stream, conn))),
    };
    match ctx.config.protocol {
        Protocol::Vless => Some(Box::pin(vless::serve(ctx, rt, stream, conn))),
        Protocol::Trojan => Some(Box::pin(trojan::serve(ctx, rt, stream, conn))),
        Protocol::Socks => Some(Box::pin(socks::serve(ctx, rt, stream, conn, local))),
        Protocol::Shadowsocks => None, // served by shadowsocks::start
        Protocol::Hysteria2 => None,   // served by hysteria2::start
    }
}

/// A TLS handshake; with an ACME keeper, an ACME server's validation is answered and
/// ends there (`None`).
async fn accept_tls<IO>(
    acceptor: &TlsAcceptor,
    acme: Option<&Arc<switchyard_acme::Served>>,
    io: IO,
) -> std::io::Result<Option<tokio_rustls::server::TlsStream<IO>>>
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    match acme {
        None => acceptor.accept(io).await.map(Some),
        Some(served) => switchyard_acme::accept(acceptor, served, io).await,
    }
}

/// Answers a WebSocket upgrade for the configured path and host; anything else goes
/// to the fallback (or is held).
async fn upgrade(
    ctx: &Ctx,
    rt: &Runtime,
    stream: BoxIo,
    path: &str,
    host: Option<&str>,
    conn: &mut Conn,
) -> Option<BoxIo> {
    // A share link's `?ed=2048` (validation allows no other query) is a hint for
    // clients: requests are matched on the path alone.
    let path = path.split_once('?').map_or(path, |(p, _)| p);
    let config = UpgradeConfig {
        path: path.to_owned(),
        host: host.map(str::to_owned),
        early_data: EarlyData::HeaderOrPath("Sec-WebSocket-Protocol".into()),
    };
    let Upgrade {
        request,
        mut stream,
        rest,
        forwarded_for,
    } = match ws::read_upgrade(stream, &config, conn.deadline).await {
        Ok(upgrade) => upgrade,
        Err(refused) => return refuse(ctx, rt, "WebSocket upgrade", refused, conn).await,
    };
    if ws::answer(&request, &mut stream).await.is_err() {
        return None;
    }
    conn.peer = ctx.user_address(conn.peer, &forwarded_for);
    let early = request.early_data.unwrap_or_default();
    // Frames that came right behind the request head are WebSocket frames, not
    // payload: give them back to the WebSocket reader, gated until the client
    // authenticates.
    let gated = Gated::new(
        Prefixed::new(rest, stream),
        conn.gate.clone(),
        MAX_WS_UNAUTHENTICATED,
    );
    Some(Box::new(ws::server(gated, early).await))
}

/// Hands a refused upgrade (`what`) to the fallback with every byte read, or holds
/// it; logs why when the request was whole but wrong.
async fn refuse(
    ctx: &Ctx,
    rt: &Runtime,
    what: &str,
    refused: Refused<BoxIo>,
    conn: &Conn,
) -> Option<BoxIo> {
    if let Some(why) = refused.why {
        tracing::debug!(inbound = %ctx.config.tag, "{what} refused: {why}");
    }
    fallback::reject(ctx, rt, refused.stream, refused.read, conn).await;
    None
}

/// Answers an HTTPUpgrade request for the configured path and host; anything else
/// goes to the fallback (or is held), with every byte read.
async fn http_upgrade(
    ctx: &Ctx,
    rt: &Runtime,
    stream: BoxIo,
    path: &str,
    host: Option<&str>,
    conn: &mut Conn,
) -> Option<BoxIo> {
    let config = switchyard_proto::httpupgrade::Config {
        path: path.to_owned(),
        host: host.map(str::to_owned),
    };
    let httpupgrade::Upgrade {
        request,
        mut stream,
        rest,
        forwarded_for,
    } = match httpupgrade::read_upgrade(stream, &config, conn.deadline).await {
        Ok(upgrade) => upgrade,
        Err(refused) => return refuse(ctx, rt, "HTTPUpgrade", refused, conn).await,
    };
    let answered = timeout_at(conn.deadline, httpupgrade::answer(&request, &mut stream)).await;
    if !matches!(answered, Ok(Ok(()))) {
        return None;
    }
    conn.peer = ctx.user_address(conn.peer, &forwarded_for);
    // The bytes behind the request head are the protocol's header: read first, and
    // like everything below, gated until the client authenticates.
    let gated = Gated::new(stream, conn.gate.clone(), MAX_WS_UNAUTHENTICATED);
    Some(Box::new(Prefixed::new(rest, gated)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;
    use std::time::Duration;

    /// An inbound's context on a node whose state lives in `dir`.
    async fn ctx(dir: &tempfile::TempDir) -> Arc<Ctx> {
        let text = format!(
            "[node]\nstate_dir = {:?}\n",
            dir.path().display().to_string()
        );
        let config = crate::NodeConfig::from_toml(&text).unwrap();
        let node = crate::Node::start(config).await.unwrap();
        let text = "tag = \"t\"\nprotocol = \"vless\"\nport = 1\n";
        let inbound: InboundConfig = toml::from_str(text).unwrap();
        let shared = node.shared().clone();
        Arc::new(Ctx {
            state: shared.inbound_states.get("t"),
            config: inbound,
            layer: Layer::Plain,
            cancel: CancellationToken::new(),
            shared,
            xhttp: None,
            trusted: Arc::new([]),
        })
    }

    /// The size of the future `f` returns.
    fn output<F: FnOnce(A, B, C) -> Fut, A, B, C, Fut>(_: &F) -> usize {
        std::mem::size_of::<Fut>()
    }
    fn output4<F: FnOnce(A, B, C, D) -> Fut, A, B, C, D, Fut>(_: &F) -> usize {
        std::mem::size_of::<Fut>()
    }
    fn output7<F: FnOnce(A, B, C, D, E, G, H) -> Fut, A, B, C, D, E, G, H, Fut>(_: &F) -> usize {
        std::mem::size_of::<Fut>()
    }

    /// A connection's task lives as long as the connection: it holds the future that
    /// serves it and nothing of the handshakes (it held room for the largest path
    /// of all, 11 KiB, for every connection, and for the TLS session a handshake
    /// returned).
    #[test]
    fn a_connections_task_holds_only_its_serving_future() {
        let task = output(&handle);
        let serving = [
            output4(&vless::serve),
            output4(&vless::serve_tls),
            output4(&trojan::serve),
        ];
        let smallest = serving.into_iter().min().unwrap();
        assert!(task < 1024, "a connection's task of {task} bytes");
        assert!(
            task < smallest / 4,
            "{task} bytes for serving ones of {serving:?}"
        );
        let handshake = output4(&open);
        assert!(
            handshake > 2 * task,
            "the handshakes ({handshake} bytes) are boxed"
        );
        // Shadowsocks' task holds the relay (`tcp::proxy`), not the handshake nor
        // the stream it opened.
        let ss = output(&shadowsocks::handle);
        let proxy = output7(&tcp::proxy);
        assert!(ss < proxy + 512, "{ss} bytes for a relay of {proxy}");
    }

    /// A task that panics is counted and started again after a pause that doubles;
    /// one that returns is not restarted.
    #[tokio::test(start_paused = true)]
    async fn a_failed_task_is_counted_and_restarted() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(&dir).await;
        let runs = Arc::new(AtomicU32::new(0));
        let counted = runs.clone();
        supervise(ctx.clone(), "test", move || {
            let runs = counted.clone();
            async move {
                if runs.fetch_add(1, Ordering::SeqCst) < 2 {
                    panic!("hostile input");
                }
            }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        tokio::time::sleep(crate::supervise::RESTART_FIRST).await;
        assert_eq!(runs.load(Ordering::SeqCst), 2, "restarted after 100 ms");
        tokio::time::sleep(crate::supervise::RESTART_FIRST).await;
        assert_eq!(runs.load(Ordering::SeqCst), 2, "the second pause is 200 ms");
        tokio::time::sleep(crate::supervise::RESTART_FIRST * 2).await;
        assert_eq!(runs.load(Ordering::SeqCst), 3);
        assert_eq!(ctx.state.restarts.load(Ordering::SeqCst), 2);
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert_eq!(
            runs.load(Ordering::SeqCst),
            3,
            "a task that ends is not restarted"
        );
        let mut metrics = String::new();
        ctx.shared.inbound_states.write_metrics(&mut metrics);
        assert!(
            metrics.contains("switchyard_inbound_task_restarts_total{inbound=\"t\"} 2"),
            "{metrics}"
        );
    }
}
