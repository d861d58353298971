//! Operations as an operator (or `switchyard up`) performs them: validate, generate
//! what the panel generates (credentials, keys, self-signed certificates, tokens),
//! store. The API's handlers are thin calls into this.

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use rand::RngCore;
use rand::rngs::OsRng;
use thiserror::Error;

use crate::model::{
    self, Credentials, FieldError, Id, Inbound, InboundSecrets, InboundSecurity, Protocol, Server,
    TlsCertificate, User,
};
use crate::store::token_hash::hash_token;
use crate::store::{InboundInput, ServerInput, Store, StoreError, UserInput};

mod admins;
mod imported;
mod plans;
mod private_dest;
mod tunnel_dest;
mod tunnels;

/// What an operation refused or failed with.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ServiceError {
    /// The input is not valid; names the field.
    #[error("{0}")]
    Invalid(FieldError),
    /// The store refused or failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Generating a certificate failed.
    #[error("generating a certificate: {0}")]
    Certificate(String),
    /// Generating a REALITY key pair failed.
    #[error("generating a REALITY key pair: {0}")]
    Keys(String),
    /// Issuing the certificate of the tunnel named here failed (the cause is logged
    /// where it failed).
    #[error("tunnel {0}: its certificate could not be issued")]
    TunnelCertificate(String),
    /// Making the REALITY keys of the tunnel named here failed (the cause is logged
    /// where it failed).
    #[error("tunnel {0}: its REALITY keys could not be made")]
    TunnelKeys(String),
}

impl From<FieldError> for ServiceError {
    fn from(e: FieldError) -> Self {
        Self::Invalid(e)
    }
}

/// `n` random bytes from the OS.
pub fn random_bytes(n: usize) -> Vec<u8> {
    let mut b = vec![0u8; n];
    OsRng.fill_bytes(&mut b);
    b
}

/// A random URL-safe token of `bytes` random bytes.
pub fn random_token(bytes: usize) -> String {
    URL_SAFE_NO_PAD.encode(random_bytes(bytes))
}

pub use admins::check_admin;
pub use plans::user_from_plan;
pub use switchyard_config::hex::encode as hex;

/// A random version-4 UUID.
pub fn random_uuid() -> String {
    let mut b = random_bytes(16);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex(&b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// Fresh credentials for a user.
pub fn new_credentials() -> Credentials {
    Credentials {
        vless_uuid: random_uuid(),
        trojan_password: random_token(24),
        ss_seed: STANDARD.encode(random_bytes(32)),
    }
}

/// A subscription token: 24 random bytes (192 bits), URL-safe.
pub fn new_subscription_token() -> String {
    random_token(24)
}

/// A user's Shadowsocks 2022 key for `method`: the first bytes of their seed.
pub fn ss_user_key(credentials: &Credentials, method: &str) -> Option<String> {
    let len = model::ss_key_len(method)?;
    let seed = STANDARD.decode(&credentials.ss_seed).ok()?;
    (seed.len() >= len).then(|| STANDARD.encode(&seed[..len]))
}

/// The user's Hysteria 2 password, derived from their credential seed as the
/// Shadowsocks keys are ([`ss_user_key`]), so no column holds it: 32 hex digits of
/// SHA-256 over a label and the seed. Distinct from the Trojan password and from
/// every Shadowsocks key (those are the seed's bytes themselves); it changes when
/// the seed does (never, today).
pub fn hysteria2_password(credentials: &Credentials) -> String {
    use sha2::Digest;
    let mut hash = sha2::Sha256::new();
    hash.update(b"switchyard hysteria2 password\0");
    hash.update(credentials.ss_seed.as_bytes());
    hash.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The Salamander password a Hysteria 2 inbound `input` should have: the one it
/// gives, else `kept` (the inbound's current one), else a new random one; none when
/// it does not obfuscate.
fn hy2_obfs_password(input: &InboundInput, kept: Option<String>) -> Option<String> {
    let settings = input.hysteria2.as_ref()?;
    if input.protocol != Protocol::Hysteria2 || !settings.obfs {
        return None;
    }
    settings
        .obfs_password
        .clone()
        .or(kept)
        .or_else(|| Some(URL_SAFE_NO_PAD.encode(random_bytes(24))))
}

/// `input` with Hysteria 2's default settings when a Hysteria 2 inbound is given
/// none, so reads always show them.
fn with_hysteria2_defaults(mut input: InboundInput) -> InboundInput {
    if input.protocol == Protocol::Hysteria2 && input.hysteria2.is_none() {
        input.hysteria2 = Some(model::InboundHysteria2::default());
    }
    input
}

/// `input` with one short id when a REALITY inbound is given none: the current
/// inbound's, when it is a REALITY inbound with some, else 8 random bytes in hex.
fn with_short_id(input: &InboundInput, current: Option<&InboundSecurity>) -> InboundInput {
    let mut input = input.clone();
    if let InboundSecurity::Reality { short_ids, .. } = &mut input.security
        && short_ids.is_empty()
    {
        *short_ids = match current {
            Some(InboundSecurity::Reality {
                short_ids: kept, ..
            }) if !kept.is_empty() => kept.clone(),
            _ => vec![hex(&random_bytes(8))],
        };
    }
    input
}

/// The operations.
#[derive(Clone)]
pub struct Service {
    store: Arc<dyn Store>,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service").finish_non_exhaustive()
    }
}

fn validate_server(input: &ServerInput) -> Result<(), FieldError> {
    model::check_name("name", &input.name)?;
    model::check_host("address", &input.address)
}

pub(crate) fn validate_user(input: &UserInput) -> Result<(), FieldError> {
    model::check_username("username", &input.username)?;
    if input.note.chars().count() > 1000 {
        return Err(FieldError::new("note", "must be at most 1000 characters"));
    }
    model::names::check_note("note", &input.note)?;
    if input.traffic_limit.is_some_and(|l| l > i64::MAX as u64) {
        return Err(FieldError::new("traffic_limit", "is too large"));
    }
    if input.on_hold_days.is_some_and(|d| d == 0 || d > 36_500) {
        return Err(FieldError::new("on_hold_days", "must be 1 to 36500"));
    }
    if input.device_limit.is_some_and(|d| d == 0 || d > 1000) {
        return Err(FieldError::new("device_limit", "must be 1 to 1000"));
    }
    if input.address_limit.is_some_and(|a| a == 0 || a > 1000) {
        return Err(FieldError::new("address_limit", "must be 1 to 1000"));
    }
    if input.expires_ms.is_some_and(|e| e < 0) {
        return Err(FieldError::new("expires_ms", "must not be negative"));
    }
    Ok(())
}

impl Service {
    /// Operations over `store`.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self { store }
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// A new server (pending until its node joins).
    pub async fn create_server(
        &self,
        input: &ServerInput,
        now_ms: i64,
    ) -> Result<Server, ServiceError> {
        validate_server(input)?;
        Ok(self.store.create_server(input, now_ms).await?)
    }

    /// Changes a server.
    pub async fn update_server(&self, id: Id, input: &ServerInput) -> Result<Server, ServiceError> {
        validate_server(input)?;
        self.check_server_dests(id, input).await?;
        self.check_server_tunnel_dests(id, input).await?;
        Ok(self.store.update_server(id, input).await?)
    }

    /// A join token's secret for `server_id`, valid for `ttl_ms`; only its hash is
    /// stored.
    pub async fn new_join_secret(
        &self,
        server_id: Id,
        ttl_ms: i64,
        now_ms: i64,
    ) -> Result<String, ServiceError> {
        self.store.server(server_id).await?;
        let secret = random_token(24);
        self.store
            .create_join_token(server_id, &hash_token(&secret), now_ms + ttl_ms, now_ms)
            .await?;
        Ok(secret)
    }

    /// Replaces the server's node: forgets its pin (its channel is refused from now
    /// on), revokes its unused join tokens and returns a fresh token's secret, valid
    /// for `ttl_ms`.
    pub async fn replace_node(
        &self,
        server_id: Id,
        ttl_ms: i64,
        now_ms: i64,
    ) -> Result<String, ServiceError> {
        let secret = random_token(24);
        self.store
            .replace_node(server_id, &hash_token(&secret), now_ms + ttl_ms, now_ms)
            .await?;
        Ok(secret)
    }

    fn validate_inbound(input: &InboundInput) -> Result<(), FieldError> {
        model::check_name("name", &input.name)?;
        model::check_inbound(
            input.protocol,
            input.port,
            &input.transport,
            &input.security,
            input.method.as_deref(),
            input.coefficient,
        )?;
        model::check_reality_and_flow(
            input.protocol,
            &input.transport,
            &input.security,
            input.flow,
            input.sni.as_deref(),
        )?;
        model::check_hysteria2(
            input.protocol,
            &input.transport,
            &input.security,
            input.hysteria2.as_ref(),
        )?;
        model::check_trusted_proxies(&input.transport, &input.trusted_proxies)?;
        model::check_inbound_rules(&input.rules)?;
        if let Some(h) = &input.host {
            model::check_host("host", h)?;
        }
        if let Some(s) = &input.sni {
            model::check_host("sni", s)?;
        }
        Ok(())
    }

    /// Refuses rules that name a tunnel the inbound's server does not relay.
    async fn check_rule_tunnels(&self, input: &InboundInput) -> Result<(), ServiceError> {
        if input.rules.tunnel.is_empty() {
            return Ok(());
        }
        let relayed: Vec<Id> = self
            .store
            .tunnels()
            .await?
            .iter()
            .filter(|t| t.relay_server_id == input.server_id)
            .map(|t| t.id)
            .collect();
        Ok(model::inbound_rules::check_tunnels(&input.rules, &relayed)?)
    }

    /// The secrets `inbound` has now (none found: the defaults, nothing).
    async fn secrets_of(&self, inbound: &Inbound) -> Result<InboundSecrets, ServiceError> {
        let server = self.store.server(inbound.server_id).await?;
        Ok(self
            .store
            .cluster_inbounds(server.cluster_id)
            .await?
            .into_iter()
            .find(|(i, _)| i.id == inbound.id)
            .map(|(_, s)| s)
            .unwrap_or_default())
    }

    /// What the panel generates for an inbound: a Shadowsocks server key, a
    /// self-signed certificate for its server name, a REALITY key pair.
    async fn secrets_for(&self, input: &InboundInput) -> Result<InboundSecrets, ServiceError> {
        let mut secrets = InboundSecrets {
            hy2_obfs_password: hy2_obfs_password(input, None),
            ..InboundSecrets::default()
        };
        if let InboundSecurity::Reality { .. } = input.security {
            let keys = switchyard_config::reality::generate()
                .map_err(|e| ServiceError::Keys(e.to_string()))?;
            secrets.reality_private_key = Some(keys.private_key);
            secrets.reality_public_key = Some(keys.public_key);
        }
        if input.protocol == Protocol::Shadowsocks {
            let len = input
                .method
                .as_deref()
                .and_then(model::ss_key_len)
                .unwrap_or(32);
            secrets.ss_server_key = Some(STANDARD.encode(random_bytes(len)));
        }
        if let InboundSecurity::Tls {
            certificate: TlsCertificate::SelfSigned,
        } = input.security
        {
            // As the store says when the inbound is written: the input names a server
            // that does not exist (422 on `server_id`), not a missing resource (404).
            let server = match self.store.server(input.server_id).await {
                Err(StoreError::NotFound(_)) => {
                    return Err(FieldError::new("server_id", "no such server").into());
                }
                other => other?,
            };
            let name = input
                .sni
                .clone()
                .or_else(|| input.host.clone())
                .unwrap_or(server.address);
            let cert = rcgen::generate_simple_self_signed(vec![name])
                .map_err(|e| ServiceError::Certificate(e.to_string()))?;
            secrets.tls_cert_pem = Some(cert.cert.pem());
            secrets.tls_key_pem = Some(cert.signing_key.serialize_pem());
        }
        Ok(secrets)
    }

    /// A new inbound; secrets are generated. The cluster's first inbound gets the
    /// default route.
    pub async fn create_inbound(
        &self,
        input: &InboundInput,
        now_ms: i64,
    ) -> Result<Inbound, ServiceError> {
        Self::validate_inbound(input)?;
        self.check_inbound_dest(input).await?;
        self.check_rule_tunnels(input).await?;
        let input = with_hysteria2_defaults(with_short_id(input, None));
        let secrets = self.secrets_for(&input).await?;
        Ok(self.store.create_inbound(&input, &secrets, now_ms).await?)
    }

    /// Changes an inbound. Secrets are made anew only when what they depend on
    /// changed (the protocol or method, the certificate's source or name; a REALITY
    /// inbound keeps its key pair while it stays a REALITY inbound, and its short ids
    /// when none are given).
    pub async fn update_inbound(
        &self,
        id: Id,
        input: &InboundInput,
    ) -> Result<Inbound, ServiceError> {
        Self::validate_inbound(input)?;
        self.check_inbound_dest(input).await?;
        self.check_rule_tunnels(input).await?;
        let current = self.store.inbound(id).await?;
        let input = &with_hysteria2_defaults(with_short_id(input, Some(&current.security)));
        let both_reality = matches!(current.security, InboundSecurity::Reality { .. })
            && matches!(input.security, InboundSecurity::Reality { .. });
        // REALITY's keys depend on nothing else of the inbound (it is VLESS, no
        // method, no certificate).
        let regenerate = !both_reality
            && (current.protocol != input.protocol
                || current.method != input.method
                || current.security != input.security
                || current.sni != input.sni
                || current.host != input.host);
        let mut secrets = if regenerate {
            Some(self.secrets_for(input).await?)
        } else {
            None
        };
        // A Hysteria 2 inbound keeps its Salamander password unless a new one is
        // given or obfuscation is turned off.
        if input.protocol == Protocol::Hysteria2 || current.protocol == Protocol::Hysteria2 {
            let kept = self.secrets_of(&current).await?;
            let want = hy2_obfs_password(input, kept.hy2_obfs_password.clone());
            match &mut secrets {
                Some(s) => s.hy2_obfs_password = want,
                None if want != kept.hy2_obfs_password => {
                    secrets = Some(InboundSecrets {
                        hy2_obfs_password: want,
                        ..kept
                    });
                }
                None => {}
            }
        }
        Ok(self
            .store
            .update_inbound(id, input, secrets.as_ref())
            .await?)
    }

    /// A new user with fresh credentials and subscription token.
    pub async fn create_user(&self, input: &UserInput, now_ms: i64) -> Result<User, ServiceError> {
        validate_user(input)?;
        Ok(self
            .store
            .create_user(input, &new_credentials(), &new_subscription_token(), now_ms)
            .await?)
    }

    /// Changes a user.
    pub async fn update_user(
        &self,
        id: Id,
        input: &UserInput,
        now_ms: i64,
    ) -> Result<User, ServiceError> {
        validate_user(input)?;
        Ok(self.store.update_user(id, input, now_ms).await?)
    }

    /// Replaces the user's subscription token; the old link stops working.
    pub async fn revoke_subscription(&self, id: Id, now_ms: i64) -> Result<User, ServiceError> {
        Ok(self
            .store
            .set_subscription_token(id, &new_subscription_token(), now_ms)
            .await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_values_have_their_shape() {
        let u = random_uuid();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert!(matches!(&u[19..20], "8" | "9" | "a" | "b"));
        assert_eq!(new_subscription_token().len(), 32); // 24 bytes, base64url
        assert_ne!(new_subscription_token(), new_subscription_token());
        let c = new_credentials();
        assert_eq!(
            STANDARD
                .decode(ss_user_key(&c, "2022-blake3-aes-128-gcm").unwrap())
                .unwrap()
                .len(),
            16
        );
        assert_eq!(
            STANDARD
                .decode(ss_user_key(&c, "2022-blake3-aes-256-gcm").unwrap())
                .unwrap()
                .len(),
            32
        );
        assert_eq!(ss_user_key(&c, "aes-128-gcm"), None);
    }
}
