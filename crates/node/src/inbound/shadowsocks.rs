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

#[path = "ss/udp.rs"]
mod udp;
#[path = "ss/window.rs"]
mod window;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, Weak};

use ::shadowsocks::config::{ServerType, ServerUser, ServerUserManager};
use ::shadowsocks::context::{Context, SharedContext};
use ::shadowsocks::crypto::CipherKind;
use ::shadowsocks::crypto::v2::tcp::TcpCipher;
use ::shadowsocks::relay::socks5::Address;
use ::shadowsocks::relay::tcprelay::ProxyServerStream;
use aes::cipher::{BlockDecrypt, KeyInit};
use bytes::Bytes;
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::time::{Instant, timeout_at};

use super::{BoxIo, Ctx, Prefixed, fallback, tcp};
use crate::config::SsMethod;
use crate::node::Runtime;
use crate::outbound::Destination;
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
    server_key: Bytes,
    /// The crate's state: salt replay filter, nonce generator.
    context: SharedContext,
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
}

impl Keys {
    fn build(rt: &Arc<Runtime>, method: CipherKind) -> Self {
        let mut manager = ServerUserManager::new();
        let mut by_hash = HashMap::new();
        let mut all = Vec::new();
        for (key, user) in &rt.users.shadowsocks {
            if key.len() != method.key_len() {
                continue; // validation rules this out; never hand the crate a bad key
            }
            let key = Bytes::copy_from_slice(key);
            let entry = ServerUser::new(user.name.clone(), key.clone());
            by_hash.insert(entry.clone_identity_hash(), (key.clone(), user.clone()));
            manager.add_user(entry);
            all.push((key, user.clone()));
        }
        Self {
            runtime: Arc::downgrade(rt),
            manager: Arc::new(manager),
            by_hash,
            all,
        }
    }

    /// The user whose identity hash is `hash`.
    pub(crate) fn by_hash(&self, hash: &[u8]) -> Option<&(Bytes, Arc<User>)> {
        self.by_hash.get(hash)
    }
}

/// The crate's name for a method.
fn cipher_kind(method: SsMethod) -> CipherKind {
    match method {
        SsMethod::Aes128Gcm => CipherKind::AEAD2022_BLAKE3_AES_128_GCM,
        SsMethod::Aes256Gcm => CipherKind::AEAD2022_BLAKE3_AES_256_GCM,
        SsMethod::Chacha20Poly1305 => CipherKind::AEAD2022_BLAKE3_CHACHA20_POLY1305,
    }
}

/// Whether the method carries identity headers.
fn has_eih(method: CipherKind) -> bool {
    ::shadowsocks::config::method_support_eih(method)
}

impl Inbound {
    fn new(ctx: Arc<Ctx>) -> Result<Self, String> {
        let method = ctx
            .config
            .method
            .ok_or("a shadowsocks inbound needs a method")?;
        let password = ctx
            .config
            .password
            .as_ref()
            .ok_or("a shadowsocks inbound needs the server key")?;
        let server_key = crate::config::ss_key(password.expose(), method)?;
        let method = cipher_kind(method);
        let rt = ctx.shared.runtime();
        Ok(Self {
            keys: Mutex::new(Arc::new(Keys::build(&rt, method))),
            ctx,
            method,
            server_key: server_key.into(),
            context: Context::new_shared(ServerType::Server),
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

/// Serves TCP on `listener` and UDP on `socket` until the inbound stops.
pub(crate) async fn serve(ctx: Arc<Ctx>, listener: TcpListener, socket: UdpSocket) {
    let inbound = match Inbound::new(ctx.clone()) {
        Ok(i) => Arc::new(i),
        Err(e) => return tracing::error!(inbound = %ctx.config.tag, "shadowsocks: {e}"),
    };
    tokio::spawn(udp::serve(inbound.clone(), Arc::new(socket)));
    super::accept_each(&ctx, &listener, |tcp, peer| {
        tokio::spawn(handle(inbound.clone(), tcp, peer));
    })
    .await;
}

async fn handle(inbound: Arc<Inbound>, mut tcp: TcpStream, peer: SocketAddr) {
    let ctx = &inbound.ctx;
    let rt = ctx.shared.runtime();
    let keys = inbound.keys(&rt);
    let deadline = Instant::now() + rt.handshake_timeout;
    let salt_len = inbound.method.salt_len();
    let eih = has_eih(inbound.method);
    // The whole fixed part: the crate reads it in a single read, which must not come
    // up short.
    let mut head = vec![0u8; salt_len + if eih { EIH_LEN } else { 0 } + FIXED_CHUNK_LEN];
    match timeout_at(deadline, tcp.read_exact(&mut head)).await {
        Ok(Ok(_)) => {}
        _ => return,
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
        return fallback::reject(ctx, &rt, Box::new(Prefixed::new(head, tcp)), Vec::new()).await;
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
            return fallback::reject(ctx, &rt, held, Vec::new()).await;
        }
        Err(_) => return,
    };
    let preamble = tcp::Preamble {
        response: &[],
        first: &[],
    };
    tcp::proxy(
        ctx,
        &rt,
        &user,
        peer,
        Box::new(stream),
        destination(target),
        preamble,
    )
    .await;
}

/// Our name for the crate's address.
pub(crate) fn destination(address: Address) -> Destination {
    match address {
        Address::SocketAddress(a) => Destination::Ip(a),
        Address::DomainNameAddress(name, port) => Destination::Domain(name, port),
    }
}
