//! VLESS (no flow): TCP (command 1), UDP (command 2) and XUDP (command 3).

use std::net::SocketAddr;

use tokio::time::Instant;

use switchyard_proto::vless::{Command, Request};

use super::udp::{self, Framing};
use super::{BoxIo, Ctx, Header, fallback, read_header, tcp};
use crate::node::Runtime;

/// The response header: version 0, no addons.
const RESPONSE: [u8; 2] = [0, 0];

pub(crate) async fn serve(
    ctx: &Ctx,
    rt: &Runtime,
    mut stream: BoxIo,
    peer: SocketAddr,
    deadline: Instant,
) {
    let mut buf = Vec::with_capacity(512);
    let (request, used) = match read_header(&mut stream, &mut buf, deadline, Request::parse).await {
        Header::Parsed(r) => r,
        Header::Rejected(why) => {
            tracing::debug!(%peer, inbound = %ctx.config.tag, "not VLESS: {why}");
            return fallback::reject(ctx, rt, stream, buf).await;
        }
        Header::Closed => return,
    };
    let Some(user) = rt.users.vless(&request.uuid).cloned() else {
        tracing::debug!(%peer, inbound = %ctx.config.tag, "VLESS: unknown user id");
        return fallback::reject(ctx, rt, stream, buf).await;
    };
    let first = &buf[used..];
    match request.command {
        Command::Tcp(dest) => {
            let preamble = tcp::Preamble {
                response: &RESPONSE,
                first,
            };
            tcp::proxy(ctx, rt, &user, peer, stream, dest, preamble).await;
        }
        Command::Udp(dest) => {
            associate(
                ctx,
                rt,
                &user,
                peer,
                stream,
                Framing::Vless { to: dest },
                first,
            )
            .await
        }
        Command::Mux => {
            let framing = Framing::Xudp {
                session: 0,
                to: None,
            };
            associate(ctx, rt, &user, peer, stream, framing, first).await;
        }
    }
}

async fn associate(
    ctx: &Ctx,
    rt: &Runtime,
    user: &crate::users::User,
    peer: SocketAddr,
    mut stream: BoxIo,
    framing: Framing,
    first: &[u8],
) {
    let Ok(admission) = ctx
        .shared
        .accounting
        .admit(&user.name, &ctx.config.tag, peer.ip(), user.address_limit)
        .inspect_err(|e| tracing::info!(inbound = %ctx.config.tag, "{e}"))
    else {
        return;
    };
    let session = ctx
        .shared
        .sessions
        .register(&user.name, &ctx.config.tag, &ctx.cancel);
    if tokio::io::AsyncWriteExt::write_all(&mut stream, &RESPONSE)
        .await
        .is_err()
    {
        return;
    }
    let result = udp::associate(
        stream,
        framing,
        first.to_vec(),
        rt,
        &user.name,
        &admission,
        &session.cancel,
    )
    .await;
    if let Err(e) = result {
        tracing::debug!(user = %user.name, "VLESS UDP: {e}");
    }
}
