//! VLESS: TCP (command 1), UDP (command 2) and XUDP (command 3), with no flow or,
//! over TCP in TLS or REALITY, XTLS Vision ([`super::vision`]).

use switchyard_proto::vless::{Command, Flow, Request};
use switchyard_transport::header::{Header, read_header};

use super::udp::{self, Framing};
use super::vision::{RawTls, Vision};
use super::{BoxIo, Conn, Ctx, MAX_HEADER, fallback, tcp};
use crate::config::Flow as InboundFlow;
use crate::runtime::Runtime;
use crate::users::User;

/// The response header: version 0, no addons.
const RESPONSE: [u8; 2] = [0, 0];

/// A request read and its user authenticated.
struct Authenticated {
    request: Request,
    user: std::sync::Arc<User>,
    /// Where the payload starts in the bytes read.
    used: usize,
}

/// Reads the request header and finds its user; a stream that is not VLESS or names
/// nobody goes to the fallback and `None` comes back.
async fn authenticate<S>(
    ctx: &Ctx,
    rt: &Runtime,
    stream: &mut Option<S>,
    buf: &mut Vec<u8>,
    conn: &mut Conn,
) -> Option<Authenticated>
where
    S: super::io::Io + 'static,
{
    let peer = conn.peer;
    let s = stream.as_mut()?;
    let (request, used) = match read_header(s, buf, MAX_HEADER, conn.deadline, Request::parse).await
    {
        Header::Parsed(r) => r,
        Header::Rejected(why) => {
            tracing::debug!(%peer, inbound = %ctx.config.tag, "not VLESS: {why}");
            let s: BoxIo = Box::new(stream.take()?);
            fallback::reject(ctx, rt, s, std::mem::take(buf), conn).await;
            return None;
        }
        Header::Incomplete => {
            let s: BoxIo = Box::new(stream.take()?);
            fallback::reject(ctx, rt, s, std::mem::take(buf), conn).await;
            return None;
        }
    };
    let Some(user) = rt.users.vless(&request.uuid).cloned() else {
        tracing::debug!(%peer, inbound = %ctx.config.tag, "VLESS: unknown user id");
        let s: BoxIo = Box::new(stream.take()?);
        fallback::reject(ctx, rt, s, std::mem::take(buf), conn).await;
        return None;
    };
    conn.authenticated();
    Some(Authenticated {
        request,
        user,
        used,
    })
}

/// VLESS on a stream that cannot carry Vision (plain TCP, WebSocket).
pub(crate) async fn serve(ctx: &Ctx, rt: &Runtime, stream: BoxIo, mut conn: Conn) {
    let mut buf = Vec::with_capacity(512);
    let mut stream = Some(stream);
    let Some(a) = authenticate(ctx, rt, &mut stream, &mut buf, &mut conn).await else {
        return;
    };
    let Some(stream) = stream else { return };
    if a.request.flow == Flow::Vision {
        return tracing::info!(user = %a.user.name, inbound = %ctx.config.tag,
            "VLESS: xtls-rprx-vision needs TCP with TLS or REALITY; this inbound has neither: closed");
    }
    let first = &buf[a.used..];
    carry(ctx, rt, &a, stream, conn, &RESPONSE, first).await;
}

/// VLESS over TCP in TLS or REALITY: Vision when the client asks for it. The TLS
/// session comes boxed and the handshake runs in a block of its own, so that the
/// relay's future (this one, for the connection's life) holds neither.
pub(crate) async fn serve_tls(ctx: &Ctx, rt: &Runtime, tls: Box<RawTls>, mut conn: Conn) {
    let mut buf = Vec::with_capacity(512);
    let (a, stream, response, used) = {
        let mut stream = Some(*tls);
        let Some(a) = authenticate(ctx, rt, &mut stream, &mut buf, &mut conn).await else {
            return;
        };
        let Some(mut tls) = stream else { return };
        let (stream, response, used): (BoxIo, &[u8], usize) = match a.request.flow {
            Flow::Vision => {
                let first = &buf[a.used..];
                match Vision::new(tls, a.request.uuid, &RESPONSE, first, ctx.state.clone()) {
                    Ok(v) => (Box::new(v), &[], buf.len()),
                    Err(e) => {
                        return tracing::debug!(user = %a.user.name, inbound = %ctx.config.tag, "Vision: {e}");
                    }
                }
            }
            Flow::None => {
                let tcp = matches!(a.request.command, Command::Tcp(_));
                if tcp && ctx.config.flow == Some(InboundFlow::Vision) {
                    return tracing::info!(user = %a.user.name, inbound = %ctx.config.tag,
                        "VLESS: this inbound's flow is xtls-rprx-vision and the client asked for none: closed");
                }
                // No switch can come: rustls may read ahead as it likes.
                tls.get_mut().0.unbound();
                let used = a.used;
                (Box::new(tls), &RESPONSE, used)
            }
        };
        (a, stream, response, used)
    };
    carry(ctx, rt, &a, stream, conn, response, &buf[used..]).await;
}

/// Carries an authenticated request's payload; `response` and `first` as in
/// [`tcp::Preamble`].
async fn carry(
    ctx: &Ctx,
    rt: &Runtime,
    a: &Authenticated,
    stream: BoxIo,
    conn: Conn,
    response: &[u8],
    first: &[u8],
) {
    let peer = conn.peer;
    let preamble = tcp::Preamble { response, first };
    match &a.request.command {
        Command::Tcp(dest) => {
            tcp::proxy(ctx, rt, &a.user, peer, stream, dest.clone(), preamble).await;
        }
        Command::Udp(dest) => {
            let framing = Framing::Vless { to: dest.clone() };
            udp::serve(ctx, rt, &a.user, peer, stream, framing, preamble).await;
        }
        Command::Mux => {
            let framing = Framing::Xudp {
                session: 0,
                to: None,
            };
            udp::serve(ctx, rt, &a.user, peer, stream, framing, preamble).await;
        }
    }
    // `conn` (its place among the inbound's handshakes) lives until the end.
    drop(conn);
}
