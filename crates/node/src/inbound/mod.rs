//! Inbounds: listeners, the transport and security layers, and the hand-off to each
//! protocol. Every connection gets one deadline for its whole handshake (TLS,
//! WebSocket upgrade, protocol header); a connection that fails authentication is
//! handed byte for byte to the inbound's fallback, or held silently and closed.

mod fallback;
mod io;
mod shadowsocks;
mod socks;
mod tcp;
mod trojan;
pub(crate) mod udp;
mod vless;

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::time::{Instant, timeout_at};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use switchyard_proto::websocket::{self, EarlyData, UpgradeConfig};

use crate::config::{InboundConfig, Protocol, Transport};
use crate::node::{Runtime, Shared};

pub(crate) use io::{BoxIo, Prefixed};

/// Largest protocol header a client may send before authenticating. 8 KiB: real
/// headers are under 300 bytes; a WebSocket upgrade under 2 KiB.
pub(crate) const MAX_HEADER: usize = 8 * 1024;

/// A listener bound for an inbound, not yet serving.
pub(crate) struct Bound {
    pub(crate) config: InboundConfig,
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    /// Shadowsocks: the UDP socket on the same port.
    udp: Option<tokio::net::UdpSocket>,
}

/// A serving inbound.
pub(crate) struct Running {
    cancel: CancellationToken,
}

impl Running {
    /// Stops accepting and closes the inbound's connections.
    pub(crate) fn stop(self) {
        self.cancel.cancel();
    }
}

/// Binds `config`'s port (with SO_REUSEPORT, so a changed inbound can bind while its
/// old listener still serves); `tls` serves its certificate, loaded by the caller.
pub(crate) async fn bind(
    config: &InboundConfig,
    tls: Option<TlsAcceptor>,
) -> Result<Bound, String> {
    let addr = SocketAddr::new(config.listen, config.port);
    let udp = match config.protocol {
        Protocol::Shadowsocks => Some(shadowsocks::bind_udp(addr)?),
        _ => None,
    };
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()
    } else {
        TcpSocket::new_v6()
    }
    .map_err(|e| format!("socket: {e}"))?;
    socket
        .set_reuseaddr(true)
        .map_err(|e| format!("SO_REUSEADDR: {e}"))?;
    socket
        .set_reuseport(true)
        .map_err(|e| format!("SO_REUSEPORT: {e}"))?;
    socket
        .bind(addr)
        .map_err(|e| format!("port {} on {}: {e}", config.port, config.listen))?;
    let listener = socket
        .listen(1024)
        .map_err(|e| format!("listen on {addr}: {e}"))?;
    Ok(Bound {
        config: config.clone(),
        listener,
        tls,
        udp,
    })
}

impl Bound {
    /// Starts serving.
    pub(crate) fn start(self, shared: Arc<Shared>) -> Running {
        let cancel = CancellationToken::new();
        let ctx = Arc::new(Ctx {
            config: self.config,
            tls: self.tls,
            cancel: cancel.clone(),
            shared,
        });
        match self.udp {
            Some(udp) => tokio::spawn(shadowsocks::serve(ctx, self.listener, udp)),
            None => tokio::spawn(accept_loop(ctx, self.listener)),
        };
        Running { cancel }
    }
}

/// What a connection's handler knows about its inbound.
pub(crate) struct Ctx {
    pub(crate) config: InboundConfig,
    tls: Option<TlsAcceptor>,
    /// Fires when the inbound is removed or rebuilt.
    pub(crate) cancel: CancellationToken,
    pub(crate) shared: Arc<Shared>,
}

async fn accept_loop(ctx: Arc<Ctx>, listener: TcpListener) {
    let each = ctx.clone();
    accept_each(&ctx, &listener, |tcp, peer| {
        tokio::spawn(handle(each.clone(), tcp, peer));
    })
    .await;
}

/// Accepts on `listener` until the inbound stops, handing each connection (with
/// Nagle off) to `each`.
pub(crate) async fn accept_each(
    ctx: &Ctx,
    listener: &TcpListener,
    mut each: impl FnMut(TcpStream, SocketAddr),
) {
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            () = ctx.cancel.cancelled() => return,
        };
        match accepted {
            Ok((tcp, peer)) => {
                let _ = tcp.set_nodelay(true);
                each(tcp, peer);
            }
            Err(e) => {
                // Out of file descriptors and the like: wait a little, don't spin.
                tracing::warn!(inbound = %ctx.config.tag, "accept: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }
}

async fn handle(ctx: Arc<Ctx>, tcp: TcpStream, peer: SocketAddr) {
    let rt = ctx.shared.runtime();
    let local = tcp
        .local_addr()
        .unwrap_or_else(|_| SocketAddr::new(ctx.config.listen, ctx.config.port));
    let deadline = Instant::now() + rt.handshake_timeout;
    let stream: BoxIo = match &ctx.tls {
        None => Box::new(tcp),
        Some(acceptor) => match timeout_at(deadline, acceptor.accept(tcp)).await {
            Ok(Ok(tls)) => Box::new(tls),
            Ok(Err(e)) => {
                return tracing::debug!(%peer, inbound = %ctx.config.tag, "TLS handshake: {e}");
            }
            Err(_) => {
                return tracing::debug!(%peer, inbound = %ctx.config.tag, "TLS handshake timed out");
            }
        },
    };
    let stream = match &ctx.config.transport {
        Transport::Tcp => stream,
        Transport::Ws { path, host } => {
            match upgrade(&ctx, &rt, stream, path, host.as_deref(), deadline).await {
                Some(ws) => ws,
                None => return,
            }
        }
    };
    match ctx.config.protocol {
        Protocol::Vless => vless::serve(&ctx, &rt, stream, peer, deadline).await,
        Protocol::Trojan => trojan::serve(&ctx, &rt, stream, peer, deadline).await,
        Protocol::Socks => socks::serve(&ctx, &rt, stream, peer, local, deadline).await,
        Protocol::Shadowsocks => {} // served by shadowsocks::serve
    }
}

/// Answers a WebSocket upgrade for the configured path and host; anything else goes
/// to the fallback (or is held).
async fn upgrade(
    ctx: &Ctx,
    rt: &Runtime,
    mut stream: BoxIo,
    path: &str,
    host: Option<&str>,
    deadline: Instant,
) -> Option<BoxIo> {
    let config = UpgradeConfig {
        path: path.to_owned(),
        host: host.map(str::to_owned),
        early_data: EarlyData::Header("Sec-WebSocket-Protocol".into()),
    };
    let mut buf = Vec::with_capacity(1024);
    let parsed = read_header(&mut stream, &mut buf, deadline, |b| {
        websocket::parse_upgrade(b, &config)
    })
    .await;
    let (request, used) = match parsed {
        Header::Parsed(r) => r,
        Header::Rejected(why) => {
            tracing::debug!(inbound = %ctx.config.tag, "WebSocket upgrade refused: {why}");
            fallback::reject(ctx, rt, stream, buf).await;
            return None;
        }
        Header::Closed => return None,
    };
    let mut response = Vec::with_capacity(256);
    request.encode_response(&mut response);
    if stream.write_all(&response).await.is_err() || stream.flush().await.is_err() {
        return None;
    }
    let mut early = request.early_data.unwrap_or_default();
    // Frames that came right behind the request head are WebSocket frames, not
    // payload: give them back to the WebSocket reader.
    let rest = buf.split_off(used);
    let ws = crate::ws::server(Prefixed::new(rest, stream), std::mem::take(&mut early)).await;
    Some(Box::new(ws))
}

/// The outcome of reading a header.
pub(crate) enum Header<T> {
    /// Parsed, with the bytes it used.
    Parsed((T, usize)),
    /// Not acceptable: the reason (for logs).
    Rejected(String),
    /// The client went away or the deadline passed.
    Closed,
}

/// Reads into `buf` until `parse` accepts or rejects it, the header grows past
/// [`MAX_HEADER`], or the deadline passes.
pub(crate) async fn read_header<T, E: std::fmt::Display>(
    stream: &mut BoxIo,
    buf: &mut Vec<u8>,
    deadline: Instant,
    parse: impl Fn(&[u8]) -> Result<Option<(T, usize)>, E>,
) -> Header<T> {
    loop {
        if !buf.is_empty() {
            match parse(buf) {
                Ok(Some(done)) => return Header::Parsed(done),
                Ok(None) => {}
                Err(e) => return Header::Rejected(e.to_string()),
            }
        }
        if buf.len() >= MAX_HEADER {
            return Header::Rejected(format!("header longer than {MAX_HEADER} bytes"));
        }
        // Read into the buffer's spare room: no array lives in the connection's future.
        let want = 2048.min(MAX_HEADER - buf.len());
        buf.reserve(want);
        let mut limited = (&mut *stream).take(want as u64);
        match timeout_at(deadline, limited.read_buf(buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return Header::Closed,
            Ok(Ok(_)) => {}
            Err(_) => return Header::Closed,
        }
    }
}
