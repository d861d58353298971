//! Trojan: CONNECT and UDP ASSOCIATE.

use std::net::SocketAddr;

use tokio::time::Instant;

use switchyard_proto::trojan::{Command, Request};

use super::udp::{self, Framing};
use super::{BoxIo, Ctx, Header, fallback, read_header, tcp};
use crate::node::Runtime;

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
            tracing::debug!(%peer, inbound = %ctx.config.tag, "not Trojan: {why}");
            return fallback::reject(ctx, rt, stream, buf).await;
        }
        Header::Closed => return,
    };
    let Some(user) = rt.users.trojan(&request.hash).cloned() else {
        tracing::debug!(%peer, inbound = %ctx.config.tag, "Trojan: unknown password");
        return fallback::reject(ctx, rt, stream, buf).await;
    };
    let first = buf[used..].to_vec();
    match request.command {
        Command::Connect => {
            let preamble = tcp::Preamble {
                response: &[],
                first: &first,
            };
            tcp::proxy(ctx, rt, &user, peer, stream, request.destination, preamble).await;
        }
        Command::UdpAssociate => {
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
            let result = udp::associate(
                stream,
                Framing::Trojan,
                first,
                rt,
                &user.name,
                &admission,
                &session.cancel,
            )
            .await;
            if let Err(e) = result {
                tracing::debug!(user = %user.name, "Trojan UDP: {e}");
            }
        }
    }
}
