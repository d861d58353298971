//! Shadowsocks 2022 (SIP022), TCP and UDP on the inbound's port, several users on one
//! server key.
//!
//! TCP is ours: this module finds out *which* user a connection belongs to, opens the
//! request's head with that user's key (`switchyard_proto::shadowsocks::tcp_server`:
//! type, timestamp, padding, destination), refuses a salt seen in the last minute
//! ([`replay::Salts`], one per inbound tag, kept across rebuilds), and hands the rest
//! to the transport layer's [`SsStream`], whose first write carries the response's
//! head. UDP packets are opened by our decoder; the `shadowsocks` crate seals the
//! answers.
//!
//! - AES methods carry an identity header (EIH): the user's key hash, encrypted under a
//!   key derived from the server key and the salt. We decrypt it to pick the user; the
//!   session is under that user's key.
//! - `2022-blake3-chacha20-poly1305` has no identity header (SIP022 defines it for AES
//!   only, and clients refuse `serverKey:userKey` there), so a client's password is its
//!   user key alone and the user is the one whose key opens the first header chunk.
//!
//! Whatever fails (unknown user, bad tag, replayed salt, stale timestamp) is never
//! answered: TCP connections go to the fallback or are held silently and closed, UDP
//! packets are dropped.

#[path = "ss/replay.rs"]
pub(crate) mod replay;
#[path = "ss/udp.rs"]
mod udp;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use ::shadowsocks::context::SharedContext;
use ::shadowsocks::crypto::CipherKind;
use ::shadowsocks::crypto::v2::udp::UdpCipher;
use aes::cipher::{BlockDecrypt, KeyInit};
use bytes::Bytes;
use ring::rand::{SecureRandom, SystemRandom};
use switchyard_proto::shadowsocks::aead::TcpAead;
use switchyard_proto::shadowsocks::tcp_server;
use switchyard_transport::shadowsocks::{PendingResponse, SsStream};
use tokio::io::AsyncReadExt;
use tokio::net::{TcpStream, UdpSocket};
use tokio::time::{Instant, timeout_at};

use switchyard_transport::listen::TcpListener;

use super::state::InboundState;
use super::{Conn, Ctx, fallback, tcp};
use crate::config::SsMethod;
use crate::outbound::Destination;
use crate::runtime::Runtime;
use crate::users::User;
use switchyard_transport::BoxIo;

pub(crate) use udp::bind as bind_udp;

/// Key-derivation context of SIP022 identity subkeys.
const IDENTITY_SUBKEY: &str = "shadowsocks 2022 identity subkey";
/// Length of an identity header (one AES block).
const EIH_LEN: usize = 16;
/// The first header chunk of a request: type, timestamp, length, then the AEAD tag.
const FIXED_CHUNK_LEN: usize = 1 + 8 + 2 + 16;
/// The longest request head: salt, an identity header, the fixed header chunk and
/// the variable one at its longest (a whole chunk and its tag).
const MAX_HEAD: usize = 32 + EIH_LEN + 1 + 8 + 2 + 16 + u16::MAX as usize + 16;

/// A serving Shadowsocks inbound: what its TCP and UDP sides share.
pub(crate) struct Inbound {
    ctx: Arc<Ctx>,
    method: CipherKind,
    /// The same method, as our UDP decoder names it.
    ss_method: switchyard_proto::shadowsocks::Method,
    server_key: Bytes,
    /// The crate's state: salt replay filter, nonce generator. Kept per inbound tag,
    /// so a rebuilt inbound still refuses salts it has seen.
    context: SharedContext,
    /// What the inbound's tag keeps across rebuilds.
    state: Arc<InboundState>,
    keys: Mutex<Arc<Keys>>,
}

/// The users' keys of one runtime, in the forms the look-ups need.
pub(crate) struct Keys {
    runtime: Weak<Runtime>,
    /// Identity hash (BLAKE3 of the key, first 16 bytes) → key and user.
    by_hash: HashMap<Bytes, (Bytes, Arc<User>)>,
    /// Every key of the method's length, in config order.
    all: Vec<(Bytes, Arc<User>)>,
    /// Methods without identity headers: every key with its UDP cipher, for the trial
    /// that finds a packet's user.
    chacha: Vec<(Bytes, Arc<UdpCipher>, Arc<User>)>,
}

impl Keys {
    fn build(rt: &Arc<Runtime>, method: CipherKind) -> Self {
        let mut by_hash = HashMap::new();
        let mut all = Vec::new();
        let mut chacha = Vec::new();
        for (key, user) in &rt.users.shadowsocks {
            if key.len() != method.key_len() {
                continue; // validation rules this out; never hand the crate a bad key
            }
            let key = Bytes::copy_from_slice(key);
            // SIP022's identity hash: BLAKE3 of the user's key, its first 16 bytes.
            let hash = Bytes::copy_from_slice(&blake3::hash(&key).as_bytes()[..EIH_LEN]);
            by_hash.insert(hash, (key.clone(), user.clone()));
            if !has_eih(method) {
                let cipher = Arc::new(UdpCipher::new(method, &key, 0));
                chacha.push((key.clone(), cipher, user.clone()));
            }
            all.push((key, user.clone()));
        }
        Self {
            runtime: Arc::downgrade(rt),
            by_hash,
            all,
            chacha,
        }
    }

    /// The user whose identity hash is `hash`.
    pub(crate) fn by_hash(&self, hash: &[u8]) -> Option<&(Bytes, Arc<User>)> {
        self.by_hash.get(hash)
    }
}

/// Our decoder's name for a method.
fn ss_method(method: SsMethod) -> switchyard_proto::shadowsocks::Method {
    use switchyard_proto::shadowsocks::Method;
    match method {
        SsMethod::Aes128Gcm => Method::Aes128Gcm,
        SsMethod::Aes256Gcm => Method::Aes256Gcm,
        SsMethod::Chacha20Poly1305 => Method::Chacha20Poly1305,
    }
}

/// Whether the method carries identity headers.
fn has_eih(method: CipherKind) -> bool {
    ::shadowsocks::config::method_support_eih(method)
}

/// Why a Shadowsocks inbound could not be built from its config.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum NewError {
    /// The config names no method.
    #[error("a shadowsocks inbound needs a method")]
    NoMethod,
    /// The config holds no server key.
    #[error("a shadowsocks inbound needs the server key")]
    NoKey,
    /// The server key does not decode for the method.
    #[error(transparent)]
    Key(#[from] crate::config::SsKeyError),
}

impl Inbound {
    fn new(ctx: Arc<Ctx>) -> Result<Self, NewError> {
        let method = ctx.config.method.ok_or(NewError::NoMethod)?;
        let password = ctx.config.password.as_ref().ok_or(NewError::NoKey)?;
        let server_key = crate::config::ss_key(password.expose(), method)?;
        let ss_method = ss_method(method);
        let method = ss_method.kind();
        let rt = ctx.shared.runtime();
        let state = ctx.shared.inbound_states.get(&ctx.config.tag);
        Ok(Self {
            keys: Mutex::new(Arc::new(Keys::build(&rt, method))),
            ctx,
            method,
            ss_method,
            server_key: server_key.into(),
            context: state.shadowsocks().context.clone(),
            state,
        })
    }

    /// The keys of `rt`, rebuilt when the runtime changed since the last call.
    pub(crate) fn keys(&self, rt: &Arc<Runtime>) -> Arc<Keys> {
        let mut keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        if !std::ptr::eq(keys.runtime.as_ptr(), Arc::as_ptr(rt)) {
            *keys = Arc::new(Keys::build(rt, self.method));
        }
        keys.clone()
    }

    /// The user whose identity header `eih` follows `salt` (AES methods), with their
    /// key.
    fn user_by_eih(&self, keys: &Keys, salt: &[u8], eih: &[u8]) -> Option<(Bytes, Arc<User>)> {
        let material = [self.server_key.as_ref(), salt].concat();
        let subkey = blake3::derive_key(IDENTITY_SUBKEY, &material);
        let mut block = aes::Block::clone_from_slice(eih);
        match self.method {
            CipherKind::AEAD2022_BLAKE3_AES_128_GCM => {
                aes::Aes128::new_from_slice(&subkey[..16])
                    .ok()?
                    .decrypt_block(&mut block);
            }
            CipherKind::AEAD2022_BLAKE3_AES_256_GCM => {
                aes::Aes256::new_from_slice(&subkey)
                    .ok()?
                    .decrypt_block(&mut block);
            }
            _ => return None,
        }
        keys.by_hash(&block).cloned()
    }

    /// The user whose key opens the request's first header chunk (methods without
    /// identity headers).
    fn user_by_trial(&self, keys: &Keys, salt: &[u8], chunk: &[u8]) -> Option<(Bytes, Arc<User>)> {
        let mut scratch = chunk.to_vec();
        keys.all
            .iter()
            .find(|(key, _)| {
                scratch.copy_from_slice(chunk);
                TcpAead::new(self.ss_method, key, salt).decrypt_packet(&mut scratch)
            })
            .cloned()
    }
}

/// Serves TCP on `listener` and UDP on `socket` until the inbound stops, each loop
/// supervised.
pub(crate) fn start(ctx: Arc<Ctx>, listener: Arc<TcpListener>, socket: Arc<UdpSocket>) {
    let inbound = match Inbound::new(ctx.clone()) {
        Ok(i) => Arc::new(i),
        Err(e) => return tracing::error!(inbound = %ctx.config.tag, "shadowsocks: {e}"),
    };
    let udp = inbound.clone();
    super::supervise(ctx.clone(), "shadowsocks UDP", move || {
        udp::serve(udp.clone(), socket.clone())
    });
    super::supervise(ctx, "accept", move || {
        let (inbound, listener) = (inbound.clone(), listener.clone());
        async move {
            super::accept_each(&inbound.ctx.clone(), &*listener, |tcp, conn| {
                tokio::spawn(handle(inbound.clone(), tcp, conn));
            })
            .await;
        }
    });
}

/// A request opened: the stream (boxed: the task would otherwise keep room for the
/// stream itself while it relays it), its destination and user, and the connection.
type Opened = (BoxIo, Destination, Arc<User>, Conn);

/// One connection's task, which lives as long as the connection: the handshake runs
/// in a box of its own, freed when it is done, so the task holds only the relay
/// (as the other inbounds' tasks, `super::handle`).
pub(super) async fn handle(inbound: Arc<Inbound>, tcp: TcpStream, conn: Conn) {
    let rt = inbound.ctx.shared.runtime();
    let opened = {
        let open = Box::pin(open(&inbound, &rt, tcp, conn));
        open.await
    };
    let Some((stream, target, user, conn)) = opened else {
        return;
    };
    let preamble = tcp::Preamble {
        response: &[],
        first: &[],
    };
    let peer = conn.peer;
    tcp::proxy(&inbound.ctx, &rt, &user, peer, stream, target, preamble).await;
    // `conn` (its place among the inbound's handshakes) lives until the end.
    drop(conn);
}

/// The handshake: the user found by the request's head, the head opened and its
/// salt new; `None` when it was refused (and handed to the fallback or held).
pub(super) async fn open(
    inbound: &Inbound,
    rt: &Arc<Runtime>,
    mut tcp: TcpStream,
    mut conn: Conn,
) -> Option<Opened> {
    let ctx = &inbound.ctx;
    let keys = inbound.keys(rt);
    let (peer, deadline) = (conn.peer, conn.deadline);
    let salt_len = inbound.method.salt_len();
    let eih = has_eih(inbound.method);
    let identities = usize::from(eih);
    // The fixed part first: salt, identity header, the first header chunk.
    let want = tcp_server::fixed_len(inbound.ss_method, identities);
    let mut head = Vec::with_capacity(want + 512);
    if !read_to(&mut tcp, &mut head, want, deadline).await {
        fallback::reject(ctx, rt, Box::new(tcp), head, &conn).await;
        return None;
    }
    let (salt, rest) = head.split_at(salt_len);
    let found = if eih {
        inbound.user_by_eih(&keys, salt, &rest[..EIH_LEN])
    } else {
        inbound.user_by_trial(&keys, salt, &rest[..FIXED_CHUNK_LEN])
    };
    let Some((key, user)) = found else {
        tracing::debug!(%peer, inbound = %ctx.config.tag, "shadowsocks: unknown user");
        fallback::reject(ctx, rt, Box::new(tcp), head, &conn).await;
        return None;
    };
    // Then the variable header, as long as the fixed one says (at most a chunk).
    // It is opened on a copy, so a refusal hands on the bytes as they came.
    let opened = loop {
        let mut work = head.clone();
        match tcp_server::open_request(inbound.ss_method, &key, identities, &mut work, unix_now()) {
            Ok(Some(opened)) => break (work, opened),
            Ok(None) => {
                let more = head.len() + 1;
                if !read_to(&mut tcp, &mut head, more, deadline).await {
                    fallback::reject(ctx, rt, Box::new(tcp), head, &conn).await;
                    return None;
                }
            }
            Err(e) => {
                tracing::debug!(%peer, inbound = %ctx.config.tag, user = %user.name, "shadowsocks: {e}");
                fallback::reject(ctx, rt, Box::new(tcp), head, &conn).await;
                return None;
            }
        }
    };
    let (work, opened) = opened;
    if !inbound.state.shadowsocks().salts.accept(&opened.salt) {
        tracing::debug!(%peer, inbound = %ctx.config.tag, user = %user.name, "shadowsocks: replayed salt");
        fallback::reject(ctx, rt, Box::new(tcp), head, &conn).await;
        return None;
    }
    conn.authenticated();
    let target = opened.destination.clone();
    let mut response_salt = vec![0u8; salt_len];
    if SystemRandom::new().fill(&mut response_salt).is_err() {
        tracing::warn!(inbound = %ctx.config.tag, "shadowsocks: no randomness for a salt");
        return None;
    }
    let response = PendingResponse {
        method: inbound.ss_method,
        key: key.to_vec(),
        salt: response_salt,
        request_salt: opened.salt.clone(),
    };
    let stream: BoxIo = Box::new(SsStream::serve(tcp, work, opened, response));
    Some((stream, target, user, conn))
}

/// Reads from `tcp` into `buf` until it holds `want` bytes (reading no further
/// than a request's head can be); false when the client stops short or the
/// deadline passes.
async fn read_to(tcp: &mut TcpStream, buf: &mut Vec<u8>, want: usize, deadline: Instant) -> bool {
    while buf.len() < want {
        // Read what is there, up to the longest head: salt, identity header, both
        // chunks at their longest.
        let room = (MAX_HEAD - buf.len().min(MAX_HEAD)) as u64;
        if room == 0 {
            return false;
        }
        let mut limited = (&mut *tcp).take(room);
        match timeout_at(deadline, limited.read_buf(buf)).await {
            Ok(Ok(n)) if n > 0 => {}
            _ => return false,
        }
    }
    true
}

/// Unix seconds now, from the node's clock.
fn unix_now() -> u64 {
    u64::try_from(crate::accounting::now_ms() / 1000).unwrap_or(0)
}
