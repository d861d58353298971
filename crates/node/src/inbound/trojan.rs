//! Trojan: CONNECT and UDP ASSOCIATE.

use switchyard_proto::trojan::{Command, Request};
use switchyard_transport::header::{Header, read_header};

use super::udp::{self, Framing};
use super::{BoxIo, Conn, Ctx, MAX_HEADER, fallback, tcp};
use crate::runtime::Runtime;

pub(crate) async fn serve(ctx: &Ctx, rt: &Runtime, mut stream: BoxIo, mut conn: Conn) {
    let peer = conn.peer;
    let mut buf = Vec::with_capacity(512);
    let (request, used) = match read_header(
        &mut stream,
        &mut buf,
        MAX_HEADER,
        conn.deadline,
        Request::parse,
    )
    .await
    {
        Header::Parsed(r) => r,
        Header::Rejected(why) => {
            tracing::debug!(%peer, inbound = %ctx.config.tag, "not Trojan: {why}");
            return fallback::reject(ctx, rt, stream, buf, &conn).await;
        }
        Header::Incomplete => return fallback::reject(ctx, rt, stream, buf, &conn).await,
    };
    let Some(user) = rt.users.trojan(&request.hash).cloned() else {
        tracing::debug!(%peer, inbound = %ctx.config.tag, "Trojan: unknown password");
        return fallback::reject(ctx, rt, stream, buf, &conn).await;
    };
    conn.authenticated();
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
            let preamble = tcp::Preamble {
                response: &[],
                first: &first,
            };
            udp::serve(ctx, rt, &user, peer, stream, Framing::Trojan, preamble).await;
        }
    }
}
