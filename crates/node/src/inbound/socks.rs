//! SOCKS5 with username/password (RFC 1928, RFC 1929): CONNECT and UDP ASSOCIATE.

use std::net::SocketAddr;

use tokio::io::AsyncWriteExt;
use tokio::net::UdpSocket;
use tokio::time::Instant;

use switchyard_proto::Address;
use switchyard_proto::socks5::{
    AuthStatus, Command, Credentials, Greeting, MethodSelection, Reply, ReplyCode, Request,
    UdpPacket,
};
use switchyard_transport::header::{Header, read_header};

use super::udp::Outlet;
use super::{BoxIo, Conn, Ctx, MAX_HEADER, tcp};
use crate::runtime::Runtime;

fn unspecified() -> Address {
    Address::Ip(SocketAddr::from(([0, 0, 0, 0], 0)))
}

async fn send(stream: &mut BoxIo, encode: impl FnOnce(&mut Vec<u8>)) -> bool {
    let mut out = Vec::with_capacity(32);
    encode(&mut out);
    stream.write_all(&out).await.is_ok() && stream.flush().await.is_ok()
}

pub(crate) async fn serve(
    ctx: &Ctx,
    rt: &Runtime,
    mut stream: BoxIo,
    mut conn: Conn,
    local: SocketAddr,
) {
    let (peer, deadline) = (conn.peer, conn.deadline);
    let mut buf = Vec::with_capacity(64);
    let Header::Parsed((greeting, used)) =
        read_header(&mut stream, &mut buf, MAX_HEADER, deadline, Greeting::parse).await
    else {
        return;
    };
    buf.drain(..used);
    let method = greeting.select(true);
    if !send(&mut stream, |o| MethodSelection(method).encode(o)).await || method != 2 {
        return;
    }
    let Header::Parsed((creds, used)) = read_header(
        &mut stream,
        &mut buf,
        MAX_HEADER,
        deadline,
        Credentials::parse,
    )
    .await
    else {
        return;
    };
    buf.drain(..used);
    let name = String::from_utf8_lossy(&creds.username);
    let password = String::from_utf8_lossy(&creds.password);
    let user = rt.users.socks(&name, &password).cloned();
    if !send(&mut stream, |o| {
        AuthStatus {
            accepted: user.is_some(),
        }
        .encode(o)
    })
    .await
    {
        return;
    }
    let Some(user) = user else {
        return tracing::debug!(%peer, inbound = %ctx.config.tag, "SOCKS5: bad credentials");
    };
    conn.authenticated();
    let request =
        match read_header(&mut stream, &mut buf, MAX_HEADER, deadline, Request::parse).await {
            Header::Parsed((r, used)) => {
                buf.drain(..used);
                r
            }
            Header::Rejected(why) => {
                tracing::debug!(%peer, "SOCKS5 request: {why}");
                let _ = send(&mut stream, |o| {
                    Reply {
                        code: ReplyCode::CommandNotSupported,
                        bound: unspecified(),
                    }
                    .encode(o)
                })
                .await;
                return;
            }
            Header::Incomplete => return,
        };
    match request.command {
        Command::Connect => {
            let mut reply = Vec::new();
            Reply {
                code: ReplyCode::Succeeded,
                bound: unspecified(),
            }
            .encode(&mut reply);
            let preamble = tcp::Preamble {
                response: &reply,
                first: &buf,
            };
            tcp::proxy(ctx, rt, &user, peer, stream, request.destination, preamble).await;
        }
        Command::UdpAssociate => associate(ctx, rt, &user, peer, local, stream).await,
    }
}

/// UDP ASSOCIATE: a relay socket on the inbound's address for as long as the control
/// connection stays open; only the client's address may use it.
async fn associate(
    ctx: &Ctx,
    rt: &Runtime,
    user: &crate::users::User,
    peer: SocketAddr,
    local: SocketAddr,
    mut stream: BoxIo,
) {
    let Ok(admission) = ctx
        .shared
        .accounting
        .admit(&user.name, &ctx.config.tag, peer.ip(), user.address_limit)
        .inspect_err(|e| tracing::info!(inbound = %ctx.config.tag, "{e}"))
    else {
        return;
    };
    let Some(_slot) = ctx.shared.inbound_states.udp_slot(&user.name) else {
        return;
    };
    let session = ctx
        .shared
        .sessions
        .register(&user.name, &ctx.config.tag, &ctx.cancel);
    let (Ok(relay), Ok(mut outlet)) = (
        UdpSocket::bind(SocketAddr::new(local.ip(), 0)).await,
        Outlet::open(
            &user.name,
            Some(super::udp::InboundRef::new(&ctx.config.tag, &ctx.state)),
            &rt.relays,
        )
        .await,
    ) else {
        let _ = send(&mut stream, |o| {
            Reply {
                code: ReplyCode::GeneralFailure,
                bound: unspecified(),
            }
            .encode(o)
        })
        .await;
        return;
    };
    let bound = relay
        .local_addr()
        .map(Address::Ip)
        .unwrap_or_else(|_| unspecified());
    if !send(&mut stream, |o| {
        Reply {
            code: ReplyCode::Succeeded,
            bound,
        }
        .encode(o)
    })
    .await
    {
        return;
    }
    let mut client: Option<SocketAddr> = None;
    let mut from_client = vec![0u8; 65_536];
    let mut from_remote = vec![0u8; 65_536];
    let mut control = [0u8; 64];
    let mut out = Vec::with_capacity(2048);
    let mut last = Instant::now();
    loop {
        tokio::select! {
            // The association lives while the control connection is open.
            r = tokio::io::AsyncReadExt::read(&mut stream, &mut control) => if !matches!(r, Ok(n) if n > 0) { return },
            r = relay.recv_from(&mut from_client) => {
                let Ok((n, src)) = r else { return };
                if src.ip() != peer.ip() || client.is_some_and(|c| c != src) {
                    continue;
                }
                client = Some(src);
                let Ok(packet) = UdpPacket::parse(&from_client[..n]) else { continue };
                match outlet.send(&rt.dialer, &packet.address, packet.payload).await {
                    Ok(()) => admission.add(packet.payload.len() as u64, 0),
                    Err(e) => tracing::debug!(user = %user.name, "SOCKS5 UDP: {e}"),
                }
                last = Instant::now();
            }
            r = outlet.recv(&mut from_remote) => {
                let Ok((n, from)) = r else { return };
                let Some(to) = client else { continue };
                out.clear();
                UdpPacket { address: Address::Ip(from), payload: &from_remote[..n] }.encode(&mut out);
                if relay.send_to(&out, to).await.is_ok() {
                    admission.add(0, n as u64);
                }
                last = Instant::now();
            }
            () = tokio::time::sleep_until(last + rt.idle_timeout) => return,
            () = session.cancel.cancelled() => return,
        }
    }
}
