//! Shadowsocks 2022 (SIP022), TCP and UDP on the inbound's port, several users on one
//! server key.
//!
//! The `shadowsocks` crate does the protocol: AEAD framing, timestamps, the salt replay
//! filter (one [`Context`] per inbound), the identity header check. This module only
//! finds out *which* user a connection belongs to, so it can be counted and limited:
//!
//! - AES methods carry an identity header (EIH): the user's key hash, encrypted under a
//!   key derived from the server key and the salt. We decrypt it to pick the user, then
//!   the crate checks it again and authenticates the stream with that user's key.
//! - `2022-blake3-chacha20-poly1305` has no identity header (SIP022 defines it for AES
//!   only, and clients refuse `serverKey:userKey` there), so a client's password is its
//!   user key alone and the user is the one whose key opens the first header chunk.
//!
//! Whatever fails (unknown user, bad tag, replayed salt, stale timestamp) is never
//! answered: TCP connections are held silently and closed, UDP packets are dropped.

#[path = "ss/replay.rs"]
pub(crate) mod replay;
#[path = "ss/udp.rs"]
mod udp;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use ::shadowsocks::config::{ServerUser, ServerUserManager};
use ::shadowsocks::context::SharedContext;
use ::shadowsocks::crypto::CipherKind;
use ::shadowsocks::crypto::v2::tcp::TcpCipher;
use ::shadowsocks::crypto::v2::udp::UdpCipher;
use ::shadowsocks::relay::socks5::Address;
use ::shadowsocks::relay::tcprelay::ProxyServerStream;
use aes::cipher::{BlockDecrypt, KeyInit};
use bytes::Bytes;
use tokio::io::AsyncReadExt;
use tokio::net::{TcpStream, UdpSocket};
use tokio::time::timeout_at;

use switchyard_transport::listen::TcpListener;

use super::state::InboundState;
use super::{BoxIo, Conn, Ctx, Prefixed, fallback, tcp};
use crate::config::SsMethod;
use crate::outbound::Destination;
use crate::runtime::Runtime;
use crate::users::User;

pub(crate) use udp::bind as bind_udp;

/// Key-derivation context of SIP022 identity subkeys.
const IDENTITY_SUBKEY: &str = "shadowsocks 2022 identity subkey";
/// Length of an identity header (one AES block).
const EIH_LEN: usize = 16;
/// The first header chunk of a request: type, timestamp, length, then the AEAD tag.
const FIXED_CHUNK_LEN: usize = 1 + 8 + 2 + 16;

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
    /// For the crate's identity header check (AES methods).
    manager: Arc<ServerUserManager>,
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
        let mut manager = ServerUserManager::new();
        let mut by_hash = HashMap::new();
        let mut all = Vec::new();
        let mut chacha = Vec::new();
        for (key, user) in &rt.users.shadowsocks {
            if key.len() != method.key_len() {
                continue; // validation rules this out; never hand the crate a bad key
            }
            let key = Bytes::copy_from_slice(key);
            let entry = ServerUser::new(user.name.clone(), key.clone());
            by_hash.insert(entry.clone_identity_hash(), (key.clone(), user.clone()));
            manager.add_user(entry);
            if !has_eih(method) {
                let cipher = Arc::new(UdpCipher::new(method, &key, 0));
                chacha.push((key.clone(), cipher, user.clone()));
            }
            all.push((key, user.clone()));
        }
        Self {
            runtime: Arc::downgrade(rt),
            manager: Arc::new(manager),
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

    /// The user whose identity header `eih` follows `salt` (AES methods).
    fn user_by_eih(&self, keys: &Keys, salt: &[u8], eih: &[u8]) -> Option<Arc<User>> {
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
        keys.by_hash(&block).map(|(_, user)| user.clone())
    }

    /// The user whose key opens the request's first header chunk (methods without
    /// identity headers).
    fn user_by_trial(&self, keys: &Keys, salt: &[u8], chunk: &[u8]) -> Option<(Bytes, Arc<User>)> {
        let mut scratch = chunk.to_vec();
        keys.all
            .iter()
            .find(|(key, _)| {
                scratch.copy_from_slice(chunk);
                TcpCipher::new(self.method, key, salt).decrypt_packet(&mut scratch)
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

async fn handle(inbound: Arc<Inbound>, mut tcp: TcpStream, mut conn: Conn) {
    let ctx = &inbound.ctx;
    let rt = ctx.shared.runtime();
    let keys = inbound.keys(&rt);
    let (peer, deadline) = (conn.peer, conn.deadline);
    let salt_len = inbound.method.salt_len();
    let eih = has_eih(inbound.method);
    // The whole fixed part: the crate reads it in a single read, which must not come
    // up short. A client that stops short is failed like any other, with what it sent.
    let want = salt_len + if eih { EIH_LEN } else { 0 } + FIXED_CHUNK_LEN;
    let mut head = Vec::with_capacity(want);
    while head.len() < want {
        let mut limited = (&mut tcp).take((want - head.len()) as u64);
        match timeout_at(deadline, limited.read_buf(&mut head)).await {
            Ok(Ok(n)) if n > 0 => {}
            _ => {
                let stream: BoxIo = Box::new(tcp);
                return fallback::reject(ctx, &rt, stream, head, &conn).await;
            }
        }
    }
    let (salt, rest) = head.split_at(salt_len);
    let found = if eih {
        inbound
            .user_by_eih(&keys, salt, &rest[..EIH_LEN])
            .map(|user| (inbound.server_key.clone(), Some(keys.manager.clone()), user))
    } else {
        inbound
            .user_by_trial(&keys, salt, rest)
            .map(|(key, user)| (key, None, user))
    };
    let Some((key, manager, user)) = found else {
        tracing::debug!(%peer, inbound = %ctx.config.tag, "shadowsocks: unknown user");
        return fallback::reject(ctx, &rt, Box::new(tcp), head, &conn).await;
    };
    let mut stream = ProxyServerStream::from_stream_with_user_manager(
        inbound.context.clone(),
        Prefixed::new(head, tcp),
        inbound.method,
        &key,
        manager,
    );
    let target = match timeout_at(deadline, stream.handshake()).await {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => {
            tracing::debug!(%peer, inbound = %ctx.config.tag, user = %user.name, "shadowsocks: {e}");
            let held: BoxIo = Box::new(stream.into_inner());
            return fallback::reject(ctx, &rt, held, Vec::new(), &conn).await;
        }
        Err(_) => {
            let held: BoxIo = Box::new(stream.into_inner());
            return fallback::reject(ctx, &rt, held, Vec::new(), &conn).await;
        }
    };
    conn.authenticated();
    let target = match destination(target) {
        Ok(t) => t,
        Err(e) => {
            tracing::debug!(%peer, inbound = %ctx.config.tag, user = %user.name, "shadowsocks: destination: {e}");
            return;
        }
    };
    let preamble = tcp::Preamble {
        response: &[],
        first: &[],
    };
    tcp::proxy(ctx, &rt, &user, peer, Box::new(stream), target, preamble).await;
}

/// Our name for the crate's address, checked like every other destination (the
/// crate accepts any UTF-8 as a domain).
pub(crate) fn destination(address: Address) -> Result<Destination, switchyard_proto::AddressError> {
    match address {
        Address::SocketAddress(a) => Ok(Destination::Ip(a)),
        Address::DomainNameAddress(name, port) => Destination::domain(&name, port),
    }
}
