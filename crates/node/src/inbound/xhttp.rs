//! An XHTTP inbound's connection (`docs/node.md`, "XHTTP"): after TLS, REALITY (or
//! nothing), HTTP/1.1 or HTTP/2 whose XHTTP streams are each a connection of their
//! own for VLESS or Trojan.
//!
//! - The first request of an HTTP/1.1 connection that is not ours (another path or
//!   host, bad padding, another method, not HTTP at all) sends the whole connection
//!   to the fallback with every byte read, as any refused handshake. On HTTP/2, and
//!   on later requests, the answer is `404` with no body: what a web server says of a
//!   page it does not have.
//! - The session table is the inbound's ([`Ctx::xhttp`]): Xray's HTTP/1.1 client
//!   sends a stream's POSTs on other connections than its GET.
//! - Each stream gets its own [`Conn`] (as gRPC's): its own place among the
//!   pre-authentication limits, its own handshake deadline and gate, the connection's
//!   peer. A stream that fails authentication is held in silence, then closed: its
//!   bytes are inside HTTP requests, nothing a fallback site could answer.
//! - An HTTP/2 connection with no request of ours by the handshake deadline is
//!   closed, and so is any connection with no request in progress for the node's
//!   idle timeout.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use switchyard_transport::xhttp::ServerStream;
use tokio::time::Instant;

use super::{BoxIo, Conn, Ctx, Gated, Layer, MAX_WS_UNAUTHENTICATED, fallback, trojan, vless};
use crate::config::{InboundConfig, Protocol};
use crate::runtime::Runtime;

/// Serves one connection of an XHTTP inbound.
pub(super) async fn serve(ctx: &Arc<Ctx>, rt: &Arc<Runtime>, stream: BoxIo, conn: Conn) {
    let Some(server) = ctx.xhttp.clone() else {
        return;
    };
    let peer = conn.peer;
    let first = match server.read_first(stream, conn.deadline).await {
        Ok(first) => first,
        Err(refused) => {
            if let Some(why) = &refused.why {
                tracing::debug!(%peer, inbound = %ctx.config.tag, "XHTTP refused: {why}");
            }
            return fallback::reject(ctx, rt, refused.stream, refused.read, &conn).await;
        }
    };
    let deadline = conn.deadline;
    // From here each stream is counted on its own (an HTTP/2 connection that sends
    // nothing of ours is closed at `deadline`).
    drop(conn);
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
    let each_rt = rt.clone();
    let each = move |stream: ServerStream| {
        let rt = each_rt.clone();
        let (total, per_source) = rt.max_unauthenticated;
        let Some(pending) = streams.state.pending.enter(peer.ip(), total, per_source) else {
            streams.state.limited.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(%peer, inbound = %streams.config.tag, "too many connections in their handshake: XHTTP stream closed");
            return;
        };
        let now = Instant::now();
        let conn = Conn {
            peer: streams.user_address(peer, stream.forwarded_for()),
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
        let ctx = streams.clone();
        tokio::spawn(async move {
            let serving = async {
                match ctx.config.protocol {
                    Protocol::Vless => vless::serve(&ctx, &rt, stream, conn).await,
                    Protocol::Trojan => trojan::serve(&ctx, &rt, stream, conn).await,
                    // Validation allows XHTTP for VLESS and Trojan only.
                    _ => {}
                }
            };
            tokio::select! {
                () = serving => {}
                () = ctx.cancel.cancelled() => {}
            }
        });
    };
    let serving = server.serve(first, deadline, rt.idle_timeout, each);
    tokio::select! {
        served = serving => if let Err(e) = served {
            tracing::debug!(%peer, inbound = %ctx.config.tag, "XHTTP connection: {e}");
        },
        () = ctx.cancel.cancelled() => {}
    }
}
