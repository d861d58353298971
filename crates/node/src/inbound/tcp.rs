//! An authenticated user's TCP connection: admission, dial, relay.

use std::net::SocketAddr;

use std::any::Any;
use std::sync::atomic::Ordering;

use switchyard_transport::grpc::GrpcStream;
use switchyard_transport::io::Io;
use switchyard_transport::shadowsocks::SsStream;
use tokio::net::TcpStream;

use switchyard_tunnel::pump::{Ended, relay_chunks, relay_with};
use tokio::io::AsyncWriteExt;

use super::vision::Vision;
use super::{BoxIo, Ctx, Gated};
use crate::accounting::now_ms;
use crate::outbound::{Destination, Dialer, Plan};
use crate::route::Network;
use crate::runtime::Runtime;
use crate::users::User;
use switchyard_tunnel::frame::{Network as TunnelNetwork, Open};
use switchyard_tunnel::pool::PoolError;

/// Bytes exchanged before the relay starts.
pub(crate) struct Preamble<'a> {
    /// The protocol's answer to the client, if any.
    pub(crate) response: &'a [u8],
    /// Payload the client sent with its header.
    pub(crate) first: &'a [u8],
}

/// Proxies `stream` of `user` to `dest`: checks the address limit, dials, writes the
/// preamble, then relays until done. Bytes are counted on the user and the inbound.
pub(crate) async fn proxy(
    ctx: &Ctx,
    rt: &Runtime,
    user: &User,
    peer: SocketAddr,
    mut stream: BoxIo,
    dest: Destination,
    Preamble { response, first }: Preamble<'_>,
) {
    let admission = match ctx.shared.accounting.admit(
        &user.name,
        &ctx.config.tag,
        peer.ip(),
        user.address_limit,
    ) {
        Ok(a) => a,
        Err(e) => return tracing::info!(inbound = %ctx.config.tag, "{e}"),
    };
    let session = ctx
        .shared
        .sessions
        .register(&user.name, &ctx.config.tag, &ctx.cancel);
    // Rules that look at protocols see the client's first bytes (more are read for
    // a moment when the header brought too few); they go to the destination first.
    // The protocol's answer goes out before, as a client may wait for it to send
    // anything (SOCKS5): a blocked connection is then closed after it.
    let sniffing = rt.dialer.sniffs();
    if sniffing
        && !response.is_empty()
        && (stream.write_all(response).await.is_err() || stream.flush().await.is_err())
    {
        return;
    }
    // Copied only to grow it while sniffing.
    let mut sniffed = Vec::new();
    let protocol = if sniffing {
        sniffed.extend_from_slice(first);
        sniff(&mut stream, &mut sniffed).await
    } else {
        None
    };
    let first = if sniffing { sniffed.as_slice() } else { first };
    let Some(mut remote) = dial_for(ctx, rt, user, &dest, protocol).await else {
        return;
    };
    if !sniffing
        && !response.is_empty()
        && (stream.write_all(response).await.is_err() || stream.flush().await.is_err())
    {
        return;
    }
    if !first.is_empty() {
        if remote.write_all(first).await.is_err() {
            return;
        }
        admission.add(first.len() as u64, 0);
    }
    let ended = relay(
        ctx,
        stream,
        remote,
        rt.idle_timeout,
        &session.cancel,
        |u, d| admission.add(u, d),
    )
    .await;
    tracing::trace!(user = %user.name, %dest, ?ended, "connection closed");
}

/// Relays `user` and `remote` for the inbound: inside the kernel when both are bare
/// TCP sockets (nothing of ours to encrypt or frame either way: a plain inbound
/// dialing straight out, a fallback, a REALITY inbound's borrowed site), through the
/// pump with the inbound's buffers otherwise; toward a gRPC user the pump's reads are
/// handed to the stream as its messages (`pump::relay_chunks`), not copied into them.
pub(crate) async fn relay(
    ctx: &Ctx,
    user: BoxIo,
    remote: BoxIo,
    idle: std::time::Duration,
    cancel: &tokio_util::sync::CancellationToken,
    count: impl Fn(u64, u64) + Send + Sync,
) -> std::io::Result<Ended> {
    if let (Some(u), Some(r)) = (user.as_tcp(), remote.as_tcp()) {
        ctx.state.spliced.fetch_add(1, Ordering::Relaxed);
        return switchyard_tunnel::splice::relay(u, r, idle, cancel, count).await;
    }
    let buffers = super::buffers::of(&ctx.config);
    // Vision to a bare socket: each direction into the kernel once it goes raw.
    let user = match owned::<Vision>(user)? {
        Owned::Is(vision) if remote.as_tcp().is_some() => match owned::<TcpStream>(remote)? {
            Owned::Is(remote) => {
                // Boxed: its future is larger than the plain relay's, and every
                // connection's task would otherwise hold room for it.
                let spliced = &ctx.state.spliced;
                return Box::pin(super::vision::relay(
                    spliced, *vision, *remote, buffers, idle, cancel, count,
                ))
                .await;
            }
            Owned::Not(remote) => {
                let pump = Box::pin(relay_with(vision, remote, buffers, idle, cancel, count));
                return pump.await;
            }
        },
        Owned::Is(vision) => vision as BoxIo,
        Owned::Not(user) => user,
    };
    // Shadowsocks to a bare socket: the download sealed where it is read.
    let user = match owned::<SsStream<TcpStream>>(user)? {
        Owned::Is(ss) if remote.as_tcp().is_some() => match owned::<TcpStream>(remote)? {
            Owned::Is(remote) => {
                // Boxed, as Vision's above.
                return Box::pin(super::ss_relay::relay(
                    *ss, *remote, buffers, idle, cancel, count,
                ))
                .await;
            }
            Owned::Not(remote) => {
                let pump = Box::pin(relay_with(ss, remote, buffers, idle, cancel, count));
                return pump.await;
            }
        },
        Owned::Is(ss) => ss as BoxIo,
        Owned::Not(user) => user,
    };
    // gRPC: each read toward the user becomes a message where it lies.
    let user = match owned::<Gated<GrpcStream>>(user)? {
        Owned::Is(gated) => match gated.into_open() {
            Ok(grpc) => {
                // Boxed, as the plain relay below.
                let pump = Box::pin(relay_chunks(
                    grpc.into_split(),
                    remote,
                    buffers,
                    idle,
                    cancel,
                    count,
                ));
                return pump.await;
            }
            Err(gated) => Box::new(gated) as BoxIo,
        },
        Owned::Not(user) => user,
    };
    // Boxed, so that a connection spliced above holds no room for the pump's two
    // directions (its task lives as long as the connection).
    let pump = Box::pin(relay_with(user, remote, buffers, idle, cancel, count));
    pump.await
}

/// A boxed stream taken out of its box as a `T`, or left as it was.
enum Owned<T> {
    Is(Box<T>),
    Not(BoxIo),
}

/// `io` itself when it is a `T`.
fn owned<T: Io>(io: BoxIo) -> std::io::Result<Owned<T>> {
    if !(&*io as &dyn Any).is::<T>() {
        return Ok(Owned::Not(io));
    }
    let any: Box<dyn Any> = io;
    // `is` said it is one: this cannot fail.
    any.downcast::<T>()
        .map(Owned::Is)
        .map_err(|_| std::io::Error::other("a stream is not the type it said it was"))
}

/// Why a user's TCP connection could not be opened to its destination.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum DialFailure {
    /// The route refused the destination, or dialing it failed.
    #[error(transparent)]
    Dial(#[from] crate::outbound::DialError),
    /// The route's tunnel is not running.
    #[error("tunnel {0} is not running")]
    TunnelDown(String),
    /// No stream could be opened in the route's tunnel.
    #[error("tunnel {tag}: {source}")]
    Tunnel {
        /// The tunnel's tag.
        tag: String,
        /// Why.
        source: switchyard_tunnel::pool::PoolError,
    },
}

impl DialFailure {
    /// Whether a routing rule blocked the destination.
    pub(crate) fn is_blocked(&self) -> bool {
        matches!(self, Self::Dial(crate::outbound::DialError::Blocked(_)))
    }

    /// Logs it for `user`'s connection to `dest` (a tunnel that is down is the
    /// operator's business: a warning).
    pub(crate) fn log(&self, user: &User, dest: &Destination) {
        match self {
            Self::TunnelDown(_) => tracing::warn!(%dest, "{self}"),
            Self::Tunnel { .. } => tracing::debug!(user = %user.name, %dest, "{self}"),
            Self::Dial(_) => tracing::debug!(user = %user.name, "{self}"),
        }
    }
}

/// How long a connection into a tunnel waits for an origin to connect when none is:
/// 2 s, what origins take to dial a relay that just started (after an upgrade, the
/// old process's `GoAway` sends them to the new one at once).
pub(crate) const ORIGIN_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// How long a connection's first bytes are waited for when a rule looks at its
/// protocol and the header brought too few: a client that waits for the server to
/// speak first (SMTP, SSH) waits this much longer once.
pub(crate) const SNIFF_WAIT: std::time::Duration = std::time::Duration::from_millis(300);
/// The most bytes read for sniffing.
const SNIFF_MAX: usize = 2048;

/// The protocol `first` (the client's bytes so far, grown by what more arrives
/// within [`SNIFF_WAIT`], up to [`SNIFF_MAX`]) shows, if one a rule can name.
pub(crate) async fn sniff<S>(stream: &mut S, first: &mut Vec<u8>) -> Option<crate::route::Sniffed>
where
    S: tokio::io::AsyncRead + Unpin,
{
    use switchyard_proto::bittorrent::{Sniff, sniff_tcp};
    use tokio::io::AsyncReadExt;
    let until = tokio::time::Instant::now() + SNIFF_WAIT;
    loop {
        match sniff_tcp(first) {
            Sniff::BitTorrent => return Some(crate::route::Sniffed::Bittorrent),
            Sniff::Other => return None,
            Sniff::NeedMore if first.len() >= SNIFF_MAX => return None,
            Sniff::NeedMore => {}
        }
        let mut buf = [0u8; 1024];
        let room = (SNIFF_MAX - first.len()).min(buf.len());
        match tokio::time::timeout_at(until, stream.read(&mut buf[..room])).await {
            Ok(Ok(n)) if n > 0 => first.extend_from_slice(&buf[..n]),
            _ => return None,
        }
    }
}

/// [`dial`] for a user of the inbound `ctx` whose first bytes showed `protocol`; a
/// failure is logged, and counted when a rule blocked it.
pub(crate) async fn dial_for(
    ctx: &Ctx,
    rt: &Runtime,
    user: &User,
    dest: &Destination,
    protocol: Option<crate::route::Sniffed>,
) -> Option<BoxIo> {
    let seen = crate::route::Seen {
        inbound: Some(&ctx.config.tag),
        protocol,
    };
    match dial(rt, user, dest, seen).await {
        Ok(r) => Some(r),
        Err(e) => {
            if e.is_blocked() {
                ctx.state
                    .blocked
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            e.log(user, dest);
            None
        }
    }
}

/// Opens `user`'s connection to `dest` by the route's plan (with what the node
/// `seen` of it): a direct dial, or a stream in a tunnel. The destination checks
/// (blocked, private, the control API) are the dialer's.
pub(crate) async fn dial(
    rt: &Runtime,
    user: &User,
    dest: &Destination,
    seen: crate::route::Seen<'_>,
) -> Result<BoxIo, DialFailure> {
    match rt.dialer.plan(dest, Network::Tcp, seen).await? {
        Plan::Tunnel(tag) => {
            let open = Open {
                network: TunnelNetwork::Tcp,
                user: user.name.clone(),
                destination: dest.clone(),
            };
            let Some(relay) = rt.relays.get(&tag) else {
                return Err(DialFailure::TunnelDown(tag));
            };
            // No origin yet (the relay just started, or took over from an upgraded
            // process, and the origins are dialing it): wait a little for one.
            let until = tokio::time::Instant::now() + ORIGIN_WAIT;
            loop {
                match relay.open(open.clone(), now_ms()) {
                    Ok(stream) => return Ok(Box::new(stream)),
                    Err(PoolError::NoOrigin) if tokio::time::Instant::now() < until => {
                        tokio::time::sleep(ORIGIN_WAIT / 20).await;
                    }
                    Err(source) => return Err(DialFailure::Tunnel { tag, source }),
                }
            }
        }
        Plan::Direct(addrs) => Ok(Box::new(Dialer::connect_to(dest, &addrs).await?)),
    }
}
