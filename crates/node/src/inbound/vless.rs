//! VLESS (no flow): TCP (command 1), UDP (command 2) and XUDP (command 3).

use switchyard_proto::vless::{Command, Request};

use super::udp::{self, Framing};
use super::{BoxIo, Conn, Ctx, Header, fallback, read_header, tcp};
use crate::node::Runtime;

/// The response header: version 0, no addons.
const RESPONSE: [u8; 2] = [0, 0];

pub(crate) async fn serve(ctx: &Ctx, rt: &Runtime, mut stream: BoxIo, mut conn: Conn) {
    let peer = conn.peer;
    let mut buf = Vec::with_capacity(512);
    let (request, used) =
        match read_header(&mut stream, &mut buf, conn.deadline, Request::parse).await {
            Header::Parsed(r) => r,
            Header::Rejected(why) => {
                tracing::debug!(%peer, inbound = %ctx.config.tag, "not VLESS: {why}");
                return fallback::reject(ctx, rt, stream, buf, &conn).await;
            }
            Header::Incomplete => return fallback::reject(ctx, rt, stream, buf, &conn).await,
        };
    let Some(user) = rt.users.vless(&request.uuid).cloned() else {
        tracing::debug!(%peer, inbound = %ctx.config.tag, "VLESS: unknown user id");
        return fallback::reject(ctx, rt, stream, buf, &conn).await;
    };
    conn.authenticated();
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
            let preamble = tcp::Preamble {
                response: &RESPONSE,
                first,
            };
            udp::serve(
                ctx,
                rt,
                &user,
                peer,
                stream,
                Framing::Vless { to: dest },
                preamble,
            )
            .await;
        }
        Command::Mux => {
            let framing = Framing::Xudp {
                session: 0,
                to: None,
            };
            let preamble = tcp::Preamble {
                response: &RESPONSE,
                first,
            };
            udp::serve(ctx, rt, &user, peer, stream, framing, preamble).await;
        }
    }
}
