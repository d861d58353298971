//! Hysteria 2: QUIC on the inbound's UDP port, served by
//! [`switchyard_transport::hysteria2`]; this module adds the node's policy.
//!
//! - A new QUIC connection counts against the inbound's pre-authentication limits
//!   (in total and per source) until it authenticates; over them it is dropped
//!   unanswered. Whoever does not authenticate gets the transport's masquerade (a
//!   web server's `404 page not found`).
//! - A client authenticates with a user's `hysteria2` password, looked up in the
//!   runtime in force at that moment, so users added, removed or disabled by a live
//!   apply count for the next connection. The connection is then admitted like a
//!   VLESS or Trojan one (the user's address limit) and registered as one session:
//!   disabling or removing the user, or stopping the inbound, closes it.
//! - Each of its streams is one TCP connection: dialed by the route's plan with the
//!   dialer's destination checks ([`super::tcp::dial`]), answered ok, or refused
//!   with the reason; then relayed with the node's idle timeout.
//! - Each UDP session of the client is an association with its own outlet (the
//!   route's plan per datagram, as Trojan's and VLESS's UDP), a slot of the user's
//!   UDP limit, and answers sent back as datagrams; an association quiet for
//!   [`UDP_IDLE`] ends, and a connection holds at most [`MAX_UDP_SESSIONS`].
//!
//! Every byte either way is counted on the user and the inbound.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use switchyard_proto::hysteria2::Salamander;
use switchyard_transport::hysteria2::{
    Authenticated, Masquerade, PendingTcp, ProxySite, ServerSettings, TcpAccept, endpoint_on,
    handshake,
};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::tcp::{self, DialFailure};
use super::udp::Outlet;
use super::{Ctx, Layer};
use crate::accounting::Admission;
use crate::config::InboundConfig;
use crate::outbound::Destination;
use crate::users::User;

/// UDP sessions one connection keeps at once (and the transport reassembles); past
/// it, datagrams of new sessions are dropped until old ones idle out.
pub(crate) const MAX_UDP_SESSIONS: usize = 256;

/// A UDP session with no datagram either way for this long ends (the official
/// server's default), or sooner when the node's idle timeout is shorter.
pub(crate) const UDP_IDLE: Duration = Duration::from_secs(60);

/// Datagrams queued towards one session's outlet; more are dropped, as a congested
/// link would.
const UDP_QUEUE: usize = 64;

/// Largest datagram from a destination.
const MAX_DATAGRAM: usize = 65_536;

/// An authenticated connection, its user known.
type Connection = Authenticated<Arc<User>>;

/// What the transport is told for `config`.
fn settings(config: &InboundConfig) -> ServerSettings {
    let h = config.hysteria2.clone().unwrap_or_default();
    let mbps = |m: u64| m.saturating_mul(125_000);
    ServerSettings {
        udp: h.udp,
        rx: h.down_mbps.map(mbps),
        tx: h.up_mbps.map(mbps),
        max_udp_sessions: MAX_UDP_SESSIONS,
        salamander: h
            .obfs_password
            .map(|p| Salamander::new(p.expose().as_bytes())),
        masquerade: masquerade(&config.tag, h.masquerade.as_deref()),
        ..ServerSettings::default()
    }
}

/// The masquerade for `url` (validated): its site, behind the web's roots; a bare
/// 404 without one (or, logged, when the URL does not read after all).
fn masquerade(tag: &str, url: Option<&str>) -> Masquerade {
    let Some(url) = url else {
        return Masquerade::NotFound;
    };
    let site = switchyard_transport::hysteria2::masquerade::web_roots()
        .map_err(|e| e.to_string())
        .and_then(|roots| ProxySite::new(url, roots).map_err(|e| e.to_string()));
    match site {
        Ok(site) => Masquerade::Proxy(site),
        Err(e) => {
            tracing::warn!(inbound = %tag, "hysteria2.masquerade: {e}; answering 404 instead");
            Masquerade::NotFound
        }
    }
}

/// Serves QUIC on `socket` until the inbound stops: the accept loop runs supervised;
/// stopping closes the endpoint and with it every connection.
///
/// A process taking over from another ([`crate::handover`]) starts the endpoint only
/// once its predecessor released the sockets (two QUIC endpoints reading one socket
/// would each get half of every connection's packets); the predecessor closes its
/// endpoint then, and its clients reconnect here.
pub(crate) fn start(ctx: Arc<Ctx>, sockets: Vec<std::net::UdpSocket>) {
    if ctx.shared.udp_released.is_cancelled() {
        return start_now(ctx, sockets);
    }
    tokio::spawn(async move {
        tokio::select! {
            () = ctx.shared.udp_released.cancelled() => start_now(ctx, sockets),
            () = ctx.cancel.cancelled() => {}
        }
    });
}

fn start_now(ctx: Arc<Ctx>, sockets: Vec<std::net::UdpSocket>) {
    let tag = ctx.config.tag.clone();
    let Layer::Tls(acceptor, _) = &ctx.layer else {
        // Validation rules this out.
        return tracing::error!(inbound = %tag, "hysteria2: needs TLS");
    };
    // The certificate resolver comes along, so a renewed certificate serves new
    // connections here too.
    let tls = rustls::ServerConfig::clone(acceptor.config());
    let settings = Arc::new(settings(&ctx.config));
    let ep = match endpoint_on(sockets, tls, &settings) {
        Ok(ep) => ep,
        Err(e) => return tracing::error!(inbound = %tag, "hysteria2: QUIC endpoint: {e}"),
    };
    let (closing, cancel, shared) = (ep.clone(), ctx.cancel.clone(), ctx.shared.clone());
    tokio::spawn(async move {
        tokio::select! {
            () = cancel.cancelled() => {}
            () = shared.stop_accepting.cancelled() => {}
        }
        closing.close(0u32.into(), b"");
    });
    let each = ctx.clone();
    super::supervise(ctx, "accept", move || {
        let (ctx, ep, settings) = (each.clone(), ep.clone(), settings.clone());
        async move {
            loop {
                let incoming = tokio::select! {
                    i = ep.accept() => i,
                    () = ctx.cancel.cancelled() => return,
                };
                let Some(incoming) = incoming else {
                    return; // the endpoint is closed
                };
                let peer = incoming.remote_address();
                let (total, per_source) = ctx.shared.runtime().max_unauthenticated;
                let Some(mut pending) = ctx.state.pending.enter(peer.ip(), total, per_source)
                else {
                    ctx.state.limited.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(%peer, inbound = %ctx.config.tag, "too many connections in their handshake: dropped");
                    incoming.ignore();
                    continue;
                };
                let (ctx, settings) = (ctx.clone(), settings.clone());
                tokio::spawn(async move {
                    let mut settings = ServerSettings::clone(&settings);
                    settings.handshake_timeout = ctx.shared.runtime().handshake_timeout;
                    let authenticate =
                        |auth: &str| ctx.shared.runtime().users.hysteria2(auth).cloned();
                    match handshake(incoming, &settings, authenticate).await {
                        Ok(conn) => {
                            pending.authenticated();
                            serve(ctx, Arc::new(conn)).await;
                        }
                        Err(e) => {
                            tracing::debug!(%peer, inbound = %ctx.config.tag, "hysteria2: {e}");
                        }
                    }
                });
            }
        }
    });
}

/// Serves an authenticated connection until it ends, its user is closed or the
/// inbound stops.
async fn serve(ctx: Arc<Ctx>, conn: Arc<Connection>) {
    let user = conn.user().clone();
    let peer = conn.remote();
    let tag = &ctx.config.tag;
    let admission =
        match ctx
            .shared
            .accounting
            .admit(&user.name, tag, peer.ip(), user.address_limit)
        {
            Ok(a) => Arc::new(a),
            Err(e) => {
                tracing::info!(inbound = %tag, "{e}");
                return conn.connection().close(0u32.into(), b"");
            }
        };
    let session = ctx.shared.sessions.register(&user.name, tag, &ctx.cancel);
    let udp = tokio::spawn(udp(
        ctx.clone(),
        conn.clone(),
        admission.clone(),
        session.cancel.clone(),
    ));
    loop {
        let pending = tokio::select! {
            p = conn.accept_tcp() => match p {
                Ok(p) => p,
                Err(e) => {
                    tracing::trace!(%peer, user = %user.name, "hysteria2 connection closed: {e}");
                    break;
                }
            },
            () = session.cancel.cancelled() => break,
        };
        tokio::spawn(stream(
            ctx.clone(),
            user.clone(),
            admission.clone(),
            session.cancel.clone(),
            pending,
        ));
    }
    // Its streams and UDP sessions end with it.
    session.cancel.cancel();
    conn.connection().close(0u32.into(), b"");
    udp.abort();
}

/// One stream: its request read by the handshake deadline, the destination dialed,
/// the answer (ok, or refused with why), then the relay.
async fn stream(
    ctx: Arc<Ctx>,
    user: Arc<User>,
    admission: Arc<Admission>,
    cancel: CancellationToken,
    pending: PendingTcp,
) {
    let rt = ctx.shared.runtime();
    let accept = match pending.read(Instant::now() + rt.handshake_timeout).await {
        Ok(a) => a,
        Err(e) => {
            return tracing::debug!(user = %user.name, inbound = %ctx.config.tag, "hysteria2 request: {e}");
        }
    };
    let dest = accept.request.address.clone();
    if rt.dialer.sniffs() {
        return sniffed_stream(&ctx, &rt, &user, &admission, &cancel, accept, dest).await;
    }
    let seen = crate::route::Seen {
        inbound: Some(&ctx.config.tag),
        protocol: None,
    };
    let remote = match tcp::dial(&rt, &user, &dest, seen).await {
        Ok(r) => r,
        Err(e) => {
            e.log(&user, &dest);
            let why = match &e {
                DialFailure::Dial(e) => e.to_string(),
                _ => "connection failed".to_owned(),
            };
            return accept.refuse(&why).await;
        }
    };
    let Ok(stream) = accept.ok().await else {
        return;
    };
    let ended = switchyard_tunnel::pump::relay_with(
        stream,
        remote,
        super::buffers::HYSTERIA2,
        rt.idle_timeout,
        &cancel,
        |u, d| admission.add(u, d),
    )
    .await;
    tracing::trace!(user = %user.name, %dest, ?ended, "hysteria2 stream closed");
}

/// A stream while a rule looks at protocols: answered ok at once (the client sends
/// nothing before), its first bytes sniffed ([`tcp::sniff`]), then routed with what
/// they showed; a destination refused then closes the stream.
async fn sniffed_stream(
    ctx: &Ctx,
    rt: &crate::runtime::Runtime,
    user: &User,
    admission: &Admission,
    cancel: &CancellationToken,
    accept: TcpAccept,
    dest: Destination,
) {
    use tokio::io::AsyncWriteExt;
    let Ok(mut stream) = accept.ok().await else {
        return;
    };
    let mut first = Vec::new();
    let protocol = tcp::sniff(&mut stream, &mut first).await;
    let Some(mut remote) = tcp::dial_for(ctx, rt, user, &dest, protocol).await else {
        return;
    };
    if !first.is_empty() {
        if remote.write_all(&first).await.is_err() {
            return;
        }
        admission.add(first.len() as u64, 0);
    }
    let ended = switchyard_tunnel::pump::relay_with(
        stream,
        remote,
        super::buffers::HYSTERIA2,
        rt.idle_timeout,
        cancel,
        |u, d| admission.add(u, d),
    )
    .await;
    tracing::trace!(user = %user.name, %dest, ?ended, "hysteria2 stream closed");
}

/// A session's datagrams towards its association.
type Queue = mpsc::Sender<(Destination, Vec<u8>)>;

/// The connection's UDP: each client session to its association, started on its
/// first datagram.
async fn udp(
    ctx: Arc<Ctx>,
    conn: Arc<Connection>,
    admission: Arc<Admission>,
    cancel: CancellationToken,
) {
    let user = conn.user().clone();
    let mut sessions: HashMap<u32, Queue> = HashMap::new();
    let (ended_tx, mut ended) = mpsc::unbounded_channel::<u32>();
    loop {
        let packet = tokio::select! {
            p = conn.recv_udp() => match p {
                Ok(p) => p,
                Err(_) => return,
            },
            Some(id) = ended.recv() => {
                // Unless a new association took the id meanwhile.
                if sessions.get(&id).is_some_and(mpsc::Sender::is_closed) {
                    sessions.remove(&id);
                    conn.end_udp_session(id);
                }
                continue;
            }
            () = cancel.cancelled() => return,
        };
        let id = packet.session_id;
        let queue = match sessions.get(&id) {
            Some(q) if !q.is_closed() => q.clone(),
            _ => {
                if sessions.len() >= MAX_UDP_SESSIONS && !sessions.contains_key(&id) {
                    continue;
                }
                let Some(slot) = ctx.shared.inbound_states.udp_slot(&user.name) else {
                    continue;
                };
                let (queue, rx) = mpsc::channel(UDP_QUEUE);
                let association = Association {
                    ctx: ctx.clone(),
                    conn: conn.clone(),
                    id,
                    admission: admission.clone(),
                    cancel: cancel.clone(),
                };
                let ended_tx = ended_tx.clone();
                tokio::spawn(async move {
                    association.run(rx).await;
                    drop(slot);
                    let _ = ended_tx.send(id);
                });
                sessions.insert(id, queue.clone());
                queue
            }
        };
        // A full queue drops the datagram, as a congested link would.
        let _ = queue.try_send((packet.address, packet.payload));
    }
}

/// One client UDP session.
struct Association {
    ctx: Arc<Ctx>,
    conn: Arc<Connection>,
    id: u32,
    admission: Arc<Admission>,
    cancel: CancellationToken,
}

impl Association {
    /// Carries the session's datagrams out and the answers back until it is idle, the
    /// connection ends or the user is closed; `rx` is closed when this returns.
    async fn run(self, mut rx: mpsc::Receiver<(Destination, Vec<u8>)>) {
        let rt = self.ctx.shared.runtime();
        let user = self.conn.user();
        let mut outlet = match Outlet::open(
            &user.name,
            Some(super::udp::InboundRef::new(
                &self.ctx.config.tag,
                &self.ctx.state,
            )),
            &rt.relays,
        )
        .await
        {
            Ok(o) => o,
            Err(e) => {
                return tracing::debug!(user = %user.name, inbound = %self.ctx.config.tag, "UDP socket: {e}");
            }
        };
        let idle = UDP_IDLE.min(rt.idle_timeout);
        let mut buf = vec![0u8; MAX_DATAGRAM];
        let mut last = Instant::now();
        loop {
            tokio::select! {
                m = rx.recv() => {
                    let Some((to, data)) = m else { break };
                    match outlet.send(&rt.dialer, &to, &data).await {
                        Ok(()) => self.admission.add(data.len() as u64, 0),
                        Err(e) => tracing::debug!(user = %user.name, "UDP to {to}: {e}"),
                    }
                    last = Instant::now();
                }
                r = outlet.recv(&mut buf) => {
                    let Ok((n, from)) = r else { break };
                    match self.conn.send_udp(self.id, &Destination::Ip(from), &buf[..n]) {
                        Ok(()) => self.admission.add(0, n as u64),
                        Err(e) => tracing::debug!(user = %user.name, "UDP from {from}: {e}"),
                    }
                    last = Instant::now();
                }
                () = tokio::time::sleep_until(last + idle) => break,
                () = self.cancel.cancelled() => break,
            }
        }
        rx.close();
    }
}
