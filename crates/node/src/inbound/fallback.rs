//! What happens to a connection that fails authentication: the fallback gets it byte
//! for byte, or it is held in silence and closed. Never a protocol error: an active
//! prober must learn nothing.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::{BoxIo, Ctx};
use crate::node::Runtime;

/// Bytes a held connection may send before it is closed early (it reads and drops
/// them meanwhile, so a prober can't tell holding from a slow server).
const HOLD_DRAIN_LIMIT: usize = 64 * 1024;

/// Hands `stream`, whose first bytes `read` have already been taken, to the inbound's
/// fallback, or holds it and closes it.
pub(crate) async fn reject(ctx: &Ctx, rt: &Runtime, mut stream: BoxIo, read: Vec<u8>) {
    let Some(addr) = ctx.config.fallback else {
        return hold(ctx, rt, stream).await;
    };
    let mut site = match TcpStream::connect(addr).await {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(inbound = %ctx.config.tag, %addr, "fallback unreachable: {e}");
            return hold(ctx, rt, stream).await;
        }
    };
    if site.write_all(&read).await.is_err() {
        return;
    }
    let cancel = ctx.cancel.clone();
    tokio::select! {
        _ = tokio::io::copy_bidirectional(&mut stream, &mut site) => {}
        () = cancel.cancelled() => {}
    }
}

async fn hold(ctx: &Ctx, rt: &Runtime, mut stream: BoxIo) {
    let deadline = tokio::time::Instant::now() + rt.unauthenticated_hold;
    let mut drained = 0usize;
    let mut sink = vec![0u8; 4096];
    loop {
        let read = tokio::select! {
            r = tokio::time::timeout_at(deadline, stream.read(&mut sink)) => r,
            () = ctx.cancel.cancelled() => return,
        };
        match read {
            Ok(Ok(n)) if n > 0 && drained + n <= HOLD_DRAIN_LIMIT => drained += n,
            _ => return,
        }
    }
}
