//! Shadowsocks 2022 UDP: one socket on the inbound's port; each client address is an
//! association with its own outlet, admission and session, answered through the
//! inbound's socket.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use ::shadowsocks::relay::socks5::Address;
use ::shadowsocks::relay::udprelay::crypto_io::{decrypt_client_payload, encrypt_server_payload};
use ::shadowsocks::relay::udprelay::options::UdpSocketControlData;
use bytes::{Bytes, BytesMut};
use tokio::net::UdpSocket;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::window::Window;
use super::{Inbound, Keys, destination, has_eih};
use crate::inbound::udp::Outlet;
use crate::node::Runtime;
use crate::outbound::Destination;
use crate::users::User;

/// Most client associations an inbound keeps at once. 4096: each holds a socket, a
/// task and a small queue; past this, packets of new clients are dropped until idle
/// associations expire.
const MAX_ASSOCIATIONS: usize = 4096;
/// Packets queued towards one association's outlet; more are dropped, as a congested
/// link would.
const QUEUE: usize = 64;
/// Largest datagram.
const MAX_DATAGRAM: usize = 65_536;

/// Binds the inbound's UDP port, with SO_REUSEPORT like its TCP listener.
pub(crate) fn bind(addr: SocketAddr) -> Result<UdpSocket, String> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))
        .map_err(|e| format!("UDP socket: {e}"))?;
    socket
        .set_reuse_address(true)
        .map_err(|e| format!("SO_REUSEADDR: {e}"))?;
    socket
        .set_reuse_port(true)
        .map_err(|e| format!("SO_REUSEPORT: {e}"))?;
    socket
        .bind(&addr.into())
        .map_err(|e| format!("UDP port {} on {}: {e}", addr.port(), addr.ip()))?;
    socket
        .set_nonblocking(true)
        .map_err(|e| format!("UDP socket: {e}"))?;
    UdpSocket::from_std(socket.into()).map_err(|e| format!("UDP socket: {e}"))
}

/// What the receive loop keeps of an association.
struct Association {
    /// The client's session id; a new one from the same address starts over.
    session_id: u64,
    /// The user's key, tried first for this client's next packet.
    key: Bytes,
    window: Window,
    to_outlet: mpsc::Sender<(Destination, Vec<u8>)>,
}

/// An authenticated packet.
struct Opened {
    len: usize,
    target: Address,
    control: UdpSocketControlData,
    key: Bytes,
    user: Arc<User>,
}

/// Receives the inbound's datagrams until it stops.
pub(crate) async fn serve(inbound: Arc<Inbound>, socket: Arc<UdpSocket>) {
    let ctx = inbound.ctx.clone();
    let mut associations: HashMap<SocketAddr, Association> = HashMap::new();
    let mut buf = vec![0u8; MAX_DATAGRAM];
    let mut scratch = vec![0u8; MAX_DATAGRAM];
    loop {
        let (n, client) = tokio::select! {
            r = socket.recv_from(&mut buf) => match r {
                Ok(r) => r,
                Err(e) => {
                    tracing::debug!(inbound = %ctx.config.tag, "UDP receive: {e}");
                    continue;
                }
            },
            () = ctx.cancel.cancelled() => return,
        };
        let rt = ctx.shared.runtime();
        let keys = inbound.keys(&rt);
        let hint = associations.get(&client).map(|a| a.key.clone());
        let Some(opened) = inbound.open(&keys, hint, &mut buf[..n], &mut scratch) else {
            tracing::trace!(%client, inbound = %ctx.config.tag, "shadowsocks: dropped a packet");
            continue;
        };
        let payload = if has_eih(inbound.method) {
            &buf[..opened.len]
        } else {
            &scratch[..opened.len]
        };
        let stale = associations.get(&client).is_some_and(|a| {
            a.session_id != opened.control.client_session_id || a.to_outlet.is_closed()
        });
        if stale {
            associations.remove(&client);
        }
        if !associations.contains_key(&client) {
            if associations.len() >= MAX_ASSOCIATIONS {
                associations.retain(|_, a| !a.to_outlet.is_closed());
                if associations.len() >= MAX_ASSOCIATIONS {
                    continue;
                }
            }
            let Some(association) = start(&inbound, &rt, &socket, client, &opened) else {
                continue;
            };
            associations.insert(client, association);
        }
        let Some(association) = associations.get_mut(&client) else {
            continue;
        };
        if !association.window.accept(opened.control.packet_id) {
            tracing::trace!(%client, "shadowsocks: replayed packet id");
            continue;
        }
        let _ = association
            .to_outlet
            .try_send((destination(opened.target), payload.to_vec()));
    }
}

impl Inbound {
    /// Decrypts a client packet in place (AES: in `packet`; otherwise in `scratch`)
    /// and finds its user; `hint` is the key this client used last.
    fn open(
        &self,
        keys: &Keys,
        hint: Option<Bytes>,
        packet: &mut [u8],
        scratch: &mut [u8],
    ) -> Option<Opened> {
        if has_eih(self.method) {
            let (len, target, control) = decrypt_client_payload(
                &self.context,
                self.method,
                &self.server_key,
                packet,
                Some(&keys.manager),
            )
            .ok()?;
            let control = control?;
            let (key, user) = keys
                .by_hash(control.user.as_ref()?.identity_hash())?
                .clone();
            return Some(Opened {
                len,
                target,
                control,
                key,
                user,
            });
        }
        // No identity header: the key that opens the packet names the user.
        let scratch = &mut scratch[..packet.len()];
        let hinted = hint.and_then(|h| keys.all.iter().find(|(k, _)| *k == h));
        for (key, user) in hinted.into_iter().chain(keys.all.iter()) {
            scratch.copy_from_slice(packet);
            if let Ok((len, target, Some(control))) =
                decrypt_client_payload(&self.context, self.method, key, scratch, None)
            {
                return Some(Opened {
                    len,
                    target,
                    control,
                    key: key.clone(),
                    user: user.clone(),
                });
            }
        }
        None
    }
}

/// Admits a new association and starts its task.
fn start(
    inbound: &Arc<Inbound>,
    rt: &Arc<Runtime>,
    socket: &Arc<UdpSocket>,
    client: SocketAddr,
    opened: &Opened,
) -> Option<Association> {
    let ctx = &inbound.ctx;
    let user = &opened.user;
    let admission = ctx
        .shared
        .accounting
        .admit(&user.name, &ctx.config.tag, client.ip(), user.address_limit)
        .inspect_err(|e| tracing::info!(inbound = %ctx.config.tag, "{e}"))
        .ok()?;
    let session = ctx
        .shared
        .sessions
        .register(&user.name, &ctx.config.tag, &ctx.cancel);
    let (tx, rx) = mpsc::channel(QUEUE);
    let mut session_id = [0u8; 8];
    inbound
        .context
        .generate_nonce(inbound.method, &mut session_id, false);
    let reply = Reply {
        inbound: inbound.clone(),
        socket: socket.clone(),
        client,
        key: opened.key.clone(),
        client_session_id: opened.control.client_session_id,
        server_session_id: u64::from_be_bytes(session_id),
        packet_id: 0,
    };
    let rt = rt.clone();
    let name = user.name.clone();
    tokio::spawn(async move {
        if let Err(e) = associate(&rt, &name, rx, reply, &admission, &session.cancel).await {
            tracing::debug!(user = %name, "shadowsocks UDP: {e}");
        }
    });
    Some(Association {
        session_id: opened.control.client_session_id,
        key: opened.key.clone(),
        window: Window::default(),
        to_outlet: tx,
    })
}

/// How answers go back to one client.
struct Reply {
    inbound: Arc<Inbound>,
    socket: Arc<UdpSocket>,
    client: SocketAddr,
    key: Bytes,
    client_session_id: u64,
    server_session_id: u64,
    packet_id: u64,
}

impl Reply {
    async fn send(
        &mut self,
        from: SocketAddr,
        payload: &[u8],
        out: &mut BytesMut,
    ) -> Result<(), String> {
        let mut control = UdpSocketControlData::default();
        control.client_session_id = self.client_session_id;
        control.server_session_id = self.server_session_id;
        control.packet_id = self.packet_id;
        self.packet_id += 1;
        out.clear();
        encrypt_server_payload(
            &self.inbound.context,
            self.inbound.method,
            &self.key,
            &Address::SocketAddress(from),
            &control,
            payload,
            out,
        );
        self.socket
            .send_to(out, self.client)
            .await
            .map(|_| ())
            .map_err(|e| format!("to {}: {e}", self.client))
    }
}

/// Carries one association until it is idle for the idle timeout, the receive loop
/// drops it, or `cancel` fires.
async fn associate(
    rt: &Runtime,
    user: &str,
    mut from_client: mpsc::Receiver<(Destination, Vec<u8>)>,
    mut reply: Reply,
    admission: &crate::accounting::Admission,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<(), String> {
    let mut outlet = Outlet::open(user, &rt.relays)
        .await
        .map_err(|e| format!("UDP socket: {e}"))?;
    let mut datagram = vec![0u8; MAX_DATAGRAM];
    let mut out = BytesMut::with_capacity(2048);
    let mut last = Instant::now();
    loop {
        tokio::select! {
            packet = from_client.recv() => {
                let Some((to, data)) = packet else { return Ok(()) };
                last = Instant::now();
                match outlet.send(&rt.dialer, &to, &data).await {
                    Ok(()) => admission.add(data.len() as u64, 0),
                    Err(e) => tracing::debug!("UDP to {to}: {e}"),
                }
            }
            r = outlet.recv(&mut datagram) => {
                let (n, from) = r.map_err(|e| format!("UDP receive: {e}"))?;
                reply.send(from, &datagram[..n], &mut out).await?;
                admission.add(0, n as u64);
                last = Instant::now();
            }
            () = tokio::time::sleep_until(last + rt.idle_timeout) => return Ok(()),
            () = cancel.cancelled() => return Ok(()),
        }
    }
}
