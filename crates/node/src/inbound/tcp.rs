//! An authenticated user's TCP connection: admission, dial, relay.

use std::net::SocketAddr;

use switchyard_tunnel::pump::relay;
use tokio::io::AsyncWriteExt;

use super::{BoxIo, Ctx};
use crate::accounting::now_ms;
use crate::outbound::{Destination, Dialer, Plan};
use crate::route::Network;
use crate::runtime::Runtime;
use crate::users::User;
use switchyard_tunnel::frame::{Network as TunnelNetwork, Open};

/// Bytes exchanged before the relay starts.
pub(crate) struct Preamble<'a> {
    /// The protocol's answer to the client, if any.
    pub(crate) response: &'a [u8],
    /// Payload the client sent with its header.
    pub(crate) first: &'a [u8],
}

/// Proxies `stream` of `user` to `dest`: checks the address limit, dials, writes the
/// preamble, then relays until done. Bytes are counted on the user and the inbound.
pub(crate) async fn proxy(
    ctx: &Ctx,
    rt: &Runtime,
    user: &User,
    peer: SocketAddr,
    mut stream: BoxIo,
    dest: Destination,
    Preamble { response, first }: Preamble<'_>,
) {
    let admission = match ctx.shared.accounting.admit(
        &user.name,
        &ctx.config.tag,
        peer.ip(),
        user.address_limit,
    ) {
        Ok(a) => a,
        Err(e) => return tracing::info!(inbound = %ctx.config.tag, "{e}"),
    };
    let session = ctx
        .shared
        .sessions
        .register(&user.name, &ctx.config.tag, &ctx.cancel);
    let plan = match rt.dialer.plan(&dest, Network::Tcp).await {
        Ok(p) => p,
        Err(e) => return tracing::debug!(user = %user.name, "{e}"),
    };
    let mut remote: BoxIo = match plan {
        Plan::Tunnel(tag) => {
            let open = Open {
                network: TunnelNetwork::Tcp,
                user: user.name.clone(),
                destination: dest.clone(),
            };
            match rt.relays.get(&tag).map(|r| r.open(open, now_ms())) {
                Some(Ok(stream)) => Box::new(stream),
                Some(Err(e)) => {
                    return tracing::debug!(user = %user.name, %dest, "tunnel {tag}: {e}");
                }
                None => return tracing::warn!(%dest, "tunnel {tag} is not running"),
            }
        }
        Plan::Direct(addrs) => match Dialer::connect_to(&dest, &addrs).await {
            Ok(r) => Box::new(r),
            Err(e) => return tracing::debug!(user = %user.name, "{e}"),
        },
    };
    if !response.is_empty()
        && (stream.write_all(response).await.is_err() || stream.flush().await.is_err())
    {
        return;
    }
    if !first.is_empty() {
        if remote.write_all(first).await.is_err() {
            return;
        }
        admission.add(first.len() as u64, 0);
    }
    let ended = relay(stream, remote, rt.idle_timeout, &session.cancel, |u, d| {
        admission.add(u, d)
    })
    .await;
    tracing::trace!(user = %user.name, %dest, ?ended, "connection closed");
}
