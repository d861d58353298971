//! What happens to a connection that fails its handshake: the fallback gets it byte
//! for byte, or it is held in silence and closed. Never a protocol error: an active
//! prober must learn nothing.
//!
//! What a prober can observe is the same whatever and however many bytes it sent:
//! - with a fallback, every failed handshake (a wrong header, an unknown user, or a
//!   header cut short by the prober's silence, EOF or the handshake deadline) is
//!   handed to the fallback with every byte read so far, so the prober talks to the
//!   fallback site exactly as if it had connected to it;
//! - without one, every failed handshake is held: bytes are read and dropped, nothing
//!   is ever sent, and the connection is closed a fixed time after it was accepted
//!   (not after the failure): [`unauthenticated_hold_s`] or the handshake deadline,
//!   whichever is later, even if the prober closed its side earlier.
//!
//! [`unauthenticated_hold_s`]: crate::config::NodeSettings::unauthenticated_hold_s

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, ToSocketAddrs};
use tokio::time::{Instant, sleep_until, timeout};

use super::{BoxIo, Conn, Ctx};
use crate::runtime::Runtime;

/// Connecting to the fallback (or a REALITY target) takes at most this long. 5 s: the
/// fallback is a local or nearby site; one that does not answer by then is down, and
/// the connection is held.
pub(crate) const FALLBACK_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Hands `stream`, whose first bytes `read` have already been taken, to the inbound's
/// fallback, or holds it and closes it.
pub(crate) async fn reject(ctx: &Ctx, rt: &Runtime, stream: BoxIo, read: Vec<u8>, conn: &Conn) {
    match ctx.config.fallback {
        // Boxed: every handshake that may refuse holds this future in its own, and
        // a refused connection is rare; an accepted one should not pay its room.
        Some(addr) => Box::pin(splice(ctx, rt, stream, read, conn, addr)).await,
        None => Box::pin(hold(ctx, rt, stream, conn)).await,
    }
}

/// Connects to `addr` (a fallback, or a REALITY inbound's target site), writes it
/// `read` and relays both ways until either side is done; holds the connection
/// instead when `addr` does not answer.
pub(crate) async fn splice(
    ctx: &Ctx,
    rt: &Runtime,
    stream: BoxIo,
    read: Vec<u8>,
    conn: &Conn,
    addr: std::net::SocketAddr,
) {
    splice_to(ctx, rt, stream, read, conn, addr, &addr).await;
}

/// Like [`splice`] for a REALITY inbound's `dest`: the addresses its name resolves to
/// must pass the node's refusals (private, loopback and the node's own addresses
/// unless `allow_private_destinations`, the control API always), or the connection is
/// held: a name that resolves to the node's own network never reaches it.
pub(crate) async fn splice_reality(
    ctx: &Ctx,
    rt: &Runtime,
    stream: BoxIo,
    read: Vec<u8>,
    conn: &Conn,
    dest: &str,
) {
    match rt.dialer.reality_site(dest).await {
        Ok(addrs) => splice_to(ctx, rt, stream, read, conn, &addrs[..], &dest).await,
        Err(e) => {
            tracing::warn!(inbound = %ctx.config.tag, "REALITY dest refused: {e}");
            hold(ctx, rt, stream, conn).await;
        }
    }
}

async fn splice_to(
    ctx: &Ctx,
    rt: &Runtime,
    stream: BoxIo,
    read: Vec<u8>,
    conn: &Conn,
    to: impl ToSocketAddrs,
    addr: &(dyn std::fmt::Display + Sync),
) {
    let mut site = match timeout(FALLBACK_CONNECT_TIMEOUT, TcpStream::connect(to)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            tracing::warn!(inbound = %ctx.config.tag, %addr, "fallback unreachable: {e}");
            return hold(ctx, rt, stream, conn).await;
        }
        Err(_) => {
            tracing::warn!(inbound = %ctx.config.tag, %addr, "fallback did not answer in {FALLBACK_CONNECT_TIMEOUT:?}");
            return hold(ctx, rt, stream, conn).await;
        }
    };
    let _ = site.set_nodelay(true);
    if site.write_all(&read).await.is_err() {
        return;
    }
    // The fallback's traffic is nobody's: counted nowhere, ended when idle like a
    // user's connection, or when the inbound stops.
    let _ = super::tcp::relay(
        ctx,
        stream,
        Box::new(site),
        rt.idle_timeout,
        &ctx.cancel,
        |_, _| {},
    )
    .await;
}

/// Reads and drops until `unauthenticated_hold` after the connection was accepted,
/// then closes it; says nothing meanwhile.
async fn hold(ctx: &Ctx, rt: &Runtime, mut stream: BoxIo, conn: &Conn) {
    // Never before the handshake deadline: a header cut short fails only then, and
    // must be closed at the same time as one that failed at once.
    let until = conn.accepted + rt.unauthenticated_hold.max(rt.handshake_timeout);
    let mut sink = vec![0u8; 4096];
    loop {
        let read = tokio::select! {
            r = tokio::time::timeout_at(until, stream.read(&mut sink)) => r,
            () = ctx.cancel.cancelled() => return,
        };
        match read {
            Ok(Ok(n)) if n > 0 => {}
            // The prober closed its side or the stream failed: wait out the hold all
            // the same, so closing early shows nothing.
            Ok(_) => break,
            Err(_) => return,
        }
    }
    drop(sink);
    tokio::select! {
        () = sleep_until(until.max(Instant::now())) => {}
        () = ctx.cancel.cancelled() => {}
    }
}
