//! Shadowsocks 2022 UDP: one socket on the inbound's port; each user's client session
//! is an association with its own outlet, admission and session, answered through the
//! inbound's socket at the address the session's newest packet came from.
//!
//! Packets are opened by our checked decoder (`switchyard_proto::shadowsocks`), never
//! by the `shadowsocks` crate's, whose address parser panics on a truncated domain.
//! Packet ids are checked per user and session in a window that outlives the
//! association and rebuilds of the inbound, so a packet replayed from any address is
//! dropped.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use ::shadowsocks::crypto::v2::udp::UdpCipher;
use ::shadowsocks::relay::socks5::Address;
use ::shadowsocks::relay::udprelay::crypto_io::encrypt_server_payload;
use ::shadowsocks::relay::udprelay::options::UdpSocketControlData;
use bytes::{Bytes, BytesMut};
use std::sync::Mutex;
use switchyard_proto::shadowsocks::{ClientPacket, Header, PacketError, open_chacha};
use tokio::net::UdpSocket;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::{Inbound, Keys, has_eih};
use crate::inbound::BindError;
use crate::inbound::udp::{Outlet, UdpError};
use crate::outbound::Destination;
use crate::runtime::Runtime;
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
pub(crate) fn bind(addr: SocketAddr) -> Result<UdpSocket, BindError> {
    use socket2::{Domain, Protocol, Socket, Type};
    let option = |option| move |source| BindError::Option { option, source };
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))
        .map_err(BindError::UdpSocket)?;
    socket
        .set_reuse_address(true)
        .map_err(option("SO_REUSEADDR"))?;
    socket
        .set_reuse_port(true)
        .map_err(option("SO_REUSEPORT"))?;
    socket
        .bind(&addr.into())
        .map_err(|source| BindError::UdpPort { addr, source })?;
    socket.set_nonblocking(true).map_err(BindError::UdpSocket)?;
    UdpSocket::from_std(socket.into()).map_err(BindError::UdpSocket)
}

/// What the receive loop keeps of an association: one per user and client session.
struct Association {
    /// The session's cipher (AES methods derive a key per session).
    cipher: Arc<UdpCipher>,
    /// Where answers go: the address the session's newest packet came from (a client
    /// that roams keeps its session).
    client: Arc<Mutex<SocketAddr>>,
    to_outlet: mpsc::Sender<(Destination, Vec<u8>)>,
}

/// An authenticated packet, decrypted in the receive buffer.
struct Opened {
    session_id: u64,
    packet_id: u64,
    target: Destination,
    payload: std::ops::Range<usize>,
    key: Bytes,
    cipher: Arc<UdpCipher>,
    user: Arc<User>,
}

impl Opened {
    /// `packet`, opened in the buffer that starts at address `base`, for `user`.
    fn new(
        packet: ClientPacket<'_>,
        base: usize,
        key: Bytes,
        cipher: Arc<UdpCipher>,
        user: Arc<User>,
    ) -> Self {
        let at = packet.payload.as_ptr() as usize - base;
        Self {
            session_id: packet.session_id,
            packet_id: packet.packet_id,
            target: packet.address,
            payload: at..at + packet.payload.len(),
            key,
            cipher,
            user,
        }
    }
}

/// The current Unix time in seconds, for packets' timestamps.
fn unix_now() -> u64 {
    u64::try_from(crate::accounting::now_ms() / 1000).unwrap_or(0)
}

/// Receives the inbound's datagrams until it stops.
pub(crate) async fn serve(inbound: Arc<Inbound>, socket: Arc<UdpSocket>) {
    let ctx = inbound.ctx.clone();
    let sessions = &inbound.state.shadowsocks().sessions;
    let mut associations: HashMap<(Arc<str>, u64), Association> = HashMap::new();
    // The key each client address used last: tried first (methods without identity).
    let mut hints: HashMap<SocketAddr, Bytes> = HashMap::new();
    let mut buf = vec![0u8; MAX_DATAGRAM];
    let mut scratch = vec![0u8; MAX_DATAGRAM];
    // A process taking over reads the socket once its predecessor stopped reading it
    // ([`crate::handover`]); the predecessor stops when it hands over.
    tokio::select! {
        () = ctx.shared.udp_released.cancelled() => {}
        () = ctx.cancel.cancelled() => return,
    }
    loop {
        let (n, client) = tokio::select! {
            () = ctx.shared.stop_accepting.cancelled() => return,
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
        let opened = inbound.open(
            &keys,
            &associations,
            hints.get(&client),
            &mut buf[..n],
            &mut scratch,
        );
        let opened = match opened {
            Ok(o) => o,
            Err(e) => {
                tracing::trace!(%client, inbound = %ctx.config.tag, "shadowsocks: dropped a packet: {e}");
                continue;
            }
        };
        let user: Arc<str> = opened.user.name.as_str().into();
        if !sessions.accept(&user, opened.session_id, opened.packet_id) {
            tracing::trace!(%client, "shadowsocks: replayed packet id");
            continue;
        }
        let payload = if has_eih(inbound.method) {
            &buf[opened.payload.clone()]
        } else {
            &scratch[opened.payload.clone()]
        };
        let id = (user, opened.session_id);
        if associations
            .get(&id)
            .is_some_and(|a| a.to_outlet.is_closed())
        {
            associations.remove(&id);
        }
        if !associations.contains_key(&id) {
            if associations.len() >= MAX_ASSOCIATIONS {
                associations.retain(|_, a| !a.to_outlet.is_closed());
                hints.clear();
                if associations.len() >= MAX_ASSOCIATIONS {
                    continue;
                }
            }
            let Some(association) = start(&inbound, &rt, &socket, client, &opened) else {
                continue;
            };
            associations.insert(id.clone(), association);
        }
        let Some(association) = associations.get_mut(&id) else {
            continue;
        };
        {
            let mut to = association.client.lock().unwrap_or_else(|p| p.into_inner());
            if *to != client {
                tracing::debug!(from = %*to, to = %client, "shadowsocks: a UDP session moved");
                *to = client;
            }
        }
        if hints.len() < MAX_ASSOCIATIONS {
            hints.insert(client, opened.key.clone());
        }
        let _ = association
            .to_outlet
            .try_send((opened.target, payload.to_vec()));
    }
}

/// Why a client packet was dropped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum OpenError {
    /// The packet did not open (the last key tried, when several were).
    #[error(transparent)]
    Packet(#[from] PacketError),
    /// An AES packet without an identity header.
    #[error("no identity header")]
    NoIdentity,
    /// No user's key matches the packet.
    #[error("unknown user")]
    UnknownUser,
    /// The packet authenticated as this user's but is malformed.
    #[error("user {user}: {error}")]
    User {
        /// The user whose key opened it.
        user: Arc<str>,
        /// What is wrong with it.
        error: PacketError,
    },
}

impl Inbound {
    /// Decrypts a client packet (AES: in place in `packet`; otherwise in `scratch`)
    /// and finds its user; `hint` is the key this client address used last.
    fn open(
        &self,
        keys: &Keys,
        associations: &HashMap<(Arc<str>, u64), Association>,
        hint: Option<&Bytes>,
        packet: &mut [u8],
        scratch: &mut [u8],
    ) -> Result<Opened, OpenError> {
        let method = self.ss_method;
        let now = unix_now();
        if method.has_identity() {
            let header = Header::read(method, &self.server_key, packet, true)?;
            let identity = header.identity.ok_or(OpenError::NoIdentity)?;
            let (key, user) = keys
                .by_hash(&identity)
                .cloned()
                .ok_or(OpenError::UnknownUser)?;
            let id: (Arc<str>, u64) = (user.name.as_str().into(), header.session_id);
            let cipher = match associations.get(&id) {
                Some(a) => a.cipher.clone(),
                None => Arc::new(method.cipher(&key, header.session_id)),
            };
            let base = packet.as_ptr() as usize;
            let opened = header.open(&cipher, packet, now)?;
            return Ok(Opened::new(opened, base, key, cipher, user));
        }
        // No identity header: the key that opens the packet names the user. At most
        // the inbound's users are tried (validation caps them for this method).
        let scratch = &mut scratch[..packet.len()];
        let hinted = hint.and_then(|h| keys.chacha.iter().find(|(k, _, _)| k == h));
        let mut last = OpenError::UnknownUser;
        for (key, cipher, user) in hinted.into_iter().chain(keys.chacha.iter()) {
            scratch.copy_from_slice(packet);
            let base = scratch.as_ptr() as usize;
            match open_chacha(cipher, scratch, now) {
                Ok(opened) => {
                    let (key, cipher, user) = (key.clone(), cipher.clone(), user.clone());
                    return Ok(Opened::new(opened, base, key, cipher, user));
                }
                // Authenticated but malformed: this user's packet, refused by name.
                Err(e) if e != PacketError::Decrypt => {
                    return Err(OpenError::User {
                        user: user.name.as_str().into(),
                        error: e,
                    });
                }
                Err(e) => last = OpenError::Packet(e),
            }
        }
        Err(last)
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
    let slot = ctx.shared.inbound_states.udp_slot(&user.name)?;
    let session = ctx
        .shared
        .sessions
        .register(&user.name, &ctx.config.tag, &ctx.cancel);
    let (tx, rx) = mpsc::channel(QUEUE);
    let mut session_id = [0u8; 8];
    inbound
        .context
        .generate_nonce(inbound.method, &mut session_id, false);
    let to = Arc::new(Mutex::new(client));
    let reply = Reply {
        inbound: inbound.clone(),
        socket: socket.clone(),
        client: to.clone(),
        key: opened.key.clone(),
        client_session_id: opened.session_id,
        server_session_id: u64::from_be_bytes(session_id),
        packet_id: 0,
    };
    let rt = rt.clone();
    let name = user.name.clone();
    let from = super::super::udp::InboundRef::new(&ctx.config.tag, &ctx.state);
    tokio::spawn(async move {
        let _slot = slot;
        if let Err(e) = associate(&rt, (&name, from), rx, reply, &admission, &session.cancel).await
        {
            tracing::debug!(user = %name, "shadowsocks UDP: {e}");
        }
    });
    Some(Association {
        cipher: opened.cipher.clone(),
        client: to,
        to_outlet: tx,
    })
}

/// How answers go back to one client.
struct Reply {
    inbound: Arc<Inbound>,
    socket: Arc<UdpSocket>,
    client: Arc<Mutex<SocketAddr>>,
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
    ) -> Result<(), UdpError> {
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
        let client = *self.client.lock().unwrap_or_else(|p| p.into_inner());
        self.socket
            .send_to(out, client)
            .await
            .map(|_| ())
            .map_err(|source| UdpError::Reply { client, source })
    }
}

/// Carries one association until it is idle for the idle timeout, the receive loop
/// drops it, or `cancel` fires.
async fn associate(
    rt: &Runtime,
    (user, inbound): (&str, super::super::udp::InboundRef),
    mut from_client: mpsc::Receiver<(Destination, Vec<u8>)>,
    mut reply: Reply,
    admission: &crate::accounting::Admission,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<(), UdpError> {
    let mut outlet = Outlet::open(user, Some(inbound), &rt.relays)
        .await
        .map_err(UdpError::Socket)?;
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
                let (n, from) = r.map_err(UdpError::Receive)?;
                reply.send(from, &datagram[..n], &mut out).await?;
                admission.add(0, n as u64);
                last = Instant::now();
            }
            () = tokio::time::sleep_until(last + rt.idle_timeout) => return Ok(()),
            () = cancel.cancelled() => return Ok(()),
        }
    }
}
