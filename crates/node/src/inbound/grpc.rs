//! A gRPC inbound's connection (`docs/node.md`, "gRPC"): after TLS (or nothing),
//! one HTTP/2 connection whose gun requests are each a connection of their own for
//! VLESS or Trojan.
//!
//! - Bytes that are not HTTP/2's preface (an HTTP/1.1 probe, anything else) go to
//!   the fallback with every byte read, as any refused handshake.
//! - Each stream gets its own [`Conn`]: its own place among the pre-authentication
//!   limits, its own handshake deadline, its own gate, the connection's peer. A
//!   stream that fails authentication is held in silence as any failed handshake
//!   without a fallback, then reset: its bytes are gRPC messages, nothing a fallback
//!   site could answer (Xray closes such a stream too). The connection and its other
//!   streams go on.
//! - The connection itself counts as one in its handshake until its first gun
//!   request; one with no gun request by the handshake deadline is closed, and so is
//!   one with no open stream for the node's idle timeout.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use switchyard_transport::grpc::{self as transport, GrpcStream, Settings};
use tokio::time::Instant;

use super::{Conn, Ctx, Gated, Layer, MAX_WS_UNAUTHENTICATED, fallback, trojan, vless};
use crate::config::{InboundConfig, Protocol};
use crate::runtime::Runtime;

use super::BoxIo;

/// Serves one connection of a gRPC inbound for `service_name`.
pub(super) async fn serve(
    ctx: &Arc<Ctx>,
    rt: &Arc<Runtime>,
    stream: BoxIo,
    conn: Conn,
    service_name: &str,
) {
    let peer = conn.peer;
    let io = match transport::read_preface(stream, conn.deadline).await {
        Ok(io) => io,
        Err(refused) => {
            if let Some(why) = &refused.why {
                tracing::debug!(%peer, inbound = %ctx.config.tag, "gRPC refused: {why}");
            }
            return fallback::reject(ctx, rt, refused.stream, refused.read, &conn).await;
        }
    };
    // The streams' context: the inbound's, without its fallback (see above).
    let streams = Arc::new(Ctx {
        config: InboundConfig {
            fallback: None,
            ..ctx.config.clone()
        },
        layer: Layer::Plain,
        cancel: ctx.cancel.clone(),
        state: ctx.state.clone(),
        shared: ctx.shared.clone(),
        xhttp: None,
        trusted: ctx.trusted.clone(),
    });
    let open = Arc::new(AtomicUsize::new(0));
    let mut outer = Some(conn);
    let deadline = outer.as_ref().map_or_else(Instant::now, |c| c.deadline);
    let settings = Settings::default();
    let each = |stream: GrpcStream| {
        // The connection proved it speaks gun: from here each stream is counted.
        drop(outer.take());
        let (total, per_source) = rt.max_unauthenticated;
        let Some(pending) = ctx.state.pending.enter(peer.ip(), total, per_source) else {
            ctx.state.limited.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(%peer, inbound = %ctx.config.tag, "too many connections in their handshake: gRPC stream reset");
            return;
        };
        let now = Instant::now();
        let conn = Conn {
            peer: ctx.user_address(peer, stream.forwarded_for()),
            accepted: now,
            deadline: now + rt.handshake_timeout,
            pending,
            gate: Arc::default(),
        };
        let stream: BoxIo = Box::new(Gated::new(
            stream,
            conn.gate.clone(),
            MAX_WS_UNAUTHENTICATED,
        ));
        let (ctx, rt, open) = (streams.clone(), rt.clone(), Open::new(&open));
        tokio::spawn(async move {
            let _open = open;
            let serving = async {
                match ctx.config.protocol {
                    Protocol::Vless => vless::serve(&ctx, &rt, stream, conn).await,
                    Protocol::Trojan => trojan::serve(&ctx, &rt, stream, conn).await,
                    // Validation allows gRPC for VLESS and Trojan only.
                    _ => {}
                }
            };
            tokio::select! {
                () = serving => {}
                () = ctx.cancel.cancelled() => {}
            }
        });
    };
    let serving = transport::serve(io, service_name, &settings, deadline, each);
    let watch = watch(&open, deadline, rt.idle_timeout);
    tokio::select! {
        served = serving => if let Err(e) = served {
            tracing::debug!(%peer, inbound = %ctx.config.tag, "gRPC connection: {e}");
        },
        () = watch => tracing::debug!(%peer, inbound = %ctx.config.tag, "gRPC connection idle: closed"),
        () = ctx.cancel.cancelled() => {}
    }
}

/// Returns when the connection should close: no gun request by `deadline`, or no
/// stream open for `idle`.
async fn watch(open: &AtomicUsize, deadline: Instant, idle: std::time::Duration) {
    tokio::time::sleep_until(deadline).await;
    if open.load(Ordering::Relaxed) & EVER == 0 {
        return;
    }
    let step = idle.clamp(
        std::time::Duration::from_secs(1),
        std::time::Duration::from_secs(30),
    );
    let mut idle_since = None;
    loop {
        let now = Instant::now();
        if open.load(Ordering::Relaxed) & !EVER > 0 {
            idle_since = None;
        } else if now.duration_since(*idle_since.get_or_insert(now)) >= idle {
            return;
        }
        tokio::time::sleep(step).await;
    }
}

/// Set in the open-stream counter once a stream opened.
const EVER: usize = 1 << (usize::BITS - 1);

/// A stream counted open while alive.
struct Open(Arc<AtomicUsize>);

impl Open {
    fn new(open: &Arc<AtomicUsize>) -> Self {
        open.fetch_or(EVER, Ordering::Relaxed);
        open.fetch_add(1, Ordering::Relaxed);
        Self(open.clone())
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}
