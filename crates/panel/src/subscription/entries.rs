//! A subscription's entries: one per non-empty route of every cluster the user sees,
//! cluster by cluster, in route order: the inbound the route's balancer chose for the
//! user ([`super::choice`]), named after the route (its flag first, made unique in the
//! subscription: [`super::names`]) and carrying the route's id, so a client keeps the
//! entry's identity when the balancer moves the user. The choice is remembered per
//! (user, route), so the next fetch keeps it while conditions are similar.
//!
//! Everything but the user and their sticky choices comes from the cached
//! [`Topology`]; "now" comes in.

use std::collections::HashMap;

use switchyard_balance::Settings;
use switchyard_proto::entry::{Entry, EntryProtocol, EntryReality, EntryTls, EntryTransport};

use super::agents::Format;
use super::choice::{Pool, pick, previous};
use super::names;
use super::support::{Lacks, LeftOut};
use super::topology::Topology;
use crate::model::{
    Credentials, HealthSettings, Inbound, InboundSecrets, InboundSecurity, InboundTransport,
    Protocol, Server, TlsCertificate, User,
};
use crate::service::{hysteria2_password, ss_user_key};
use crate::store::{Store, StoreError};

/// The entry for `inbound` on `server` as `user` should use it. A self-signed
/// certificate is pinned in every format that can carry a pin (sing-box, Clash, Xray,
/// Hysteria 2's links); other share links cannot, so they say `allowInsecure=1`. A REALITY inbound's entry has
/// its first server name as SNI, its fingerprint, public key and first short id.
pub fn entry(
    inbound: &Inbound,
    secrets: &InboundSecrets,
    server: &Server,
    credentials: &Credentials,
    format: Format,
) -> Option<Entry> {
    let host = inbound
        .host
        .clone()
        .unwrap_or_else(|| server.address.clone());
    let protocol = match inbound.protocol {
        Protocol::Vless => EntryProtocol::Vless {
            uuid: credentials.vless_uuid.clone(),
            flow: inbound.flow.map(|f| f.as_str().to_owned()),
        },
        Protocol::Trojan => EntryProtocol::Trojan {
            password: credentials.trojan_password.clone(),
        },
        Protocol::Shadowsocks => {
            let method = inbound.method.clone()?;
            let user = ss_user_key(credentials, &method)?;
            // SIP022's identity headers (`serverKey:userKey`) are for the AES methods
            // only: a ChaCha client's password is its user key alone, which is what
            // the node tries users' keys against (and sing-box refuses the pair).
            let password = if method == "2022-blake3-chacha20-poly1305" {
                user
            } else {
                format!("{}:{user}", secrets.ss_server_key.as_deref()?)
            };
            EntryProtocol::Shadowsocks { password, method }
        }
        Protocol::Hysteria2 => {
            let settings = inbound.hysteria2.clone().unwrap_or_default();
            EntryProtocol::Hysteria2 {
                password: hysteria2_password(credentials),
                obfs_password: secrets.hy2_obfs_password.clone().filter(|_| settings.obfs),
                // An interval means nothing without a range (the inbound's check
                // refuses one alone).
                hop_interval: settings
                    .hop_interval_secs
                    .filter(|_| settings.ports.is_some()),
                ports: settings.ports,
                // The node's rates are the client's the other way round: what the
                // node sends is what the client downloads.
                up_mbps: settings.down_mbps,
                down_mbps: settings.up_mbps,
            }
        }
    };
    let transport = match &inbound.transport {
        InboundTransport::Tcp => EntryTransport::Tcp,
        InboundTransport::Ws { path, host } => EntryTransport::Ws {
            path: path.clone(),
            host: host.clone(),
        },
        InboundTransport::HttpUpgrade { path, host } => EntryTransport::HttpUpgrade {
            path: path.clone(),
            host: host.clone(),
        },
        // No authority of its own: Xray sends the TLS server name (the inbound's
        // `sni`, else the address clients dial), else that address, which is what a
        // CDN in front routes by; sing-box and mihomo cannot set one anyway.
        InboundTransport::Grpc {
            service_name,
            multi_mode,
        } => EntryTransport::Grpc {
            service_name: service_name.clone(),
            authority: None,
            multi: *multi_mode,
        },
        // The node runs Xray's defaults beyond path, host and mode: no `extra`.
        InboundTransport::Xhttp(x) => EntryTransport::Xhttp {
            path: x.path.clone(),
            host: x.host.clone(),
            mode: x.mode(),
            extra: None,
        },
    };
    let tls = match &inbound.security {
        InboundSecurity::None => None,
        InboundSecurity::Tls { certificate } => {
            let self_signed = *certificate == TlsCertificate::SelfSigned;
            // A Hysteria 2 link carries the pin (`pinSHA256`); other links cannot.
            let links = format == Format::Links && inbound.protocol != Protocol::Hysteria2;
            Some(EntryTls {
                server_name: Some(inbound.sni.clone().unwrap_or_else(|| host.clone())),
                insecure: self_signed && links,
                certificate_pem: if self_signed && !links {
                    secrets.tls_cert_pem.clone()
                } else {
                    None
                },
                ..EntryTls::default()
            })
        }
        // The client's SNI is the target's first name, its short id the first one.
        InboundSecurity::Reality {
            server_names,
            short_ids,
            fingerprint,
            ..
        } => Some(EntryTls {
            server_name: server_names.first().cloned(),
            fingerprint: Some(fingerprint.clone()),
            reality: Some(EntryReality {
                public_key: inbound.reality_public_key.clone()?,
                short_id: short_ids.first().cloned().unwrap_or_default(),
            }),
            ..EntryTls::default()
        }),
    };
    Some(Entry {
        name: inbound.name.clone(),
        server: host,
        port: inbound.port,
        protocol,
        transport,
        tls,
        route: None,
    })
}

/// What a subscription's entries are made from besides the user.
#[derive(Clone, Copy)]
pub struct Sources<'a> {
    /// The clusters' routes, servers and inbounds, cached.
    pub topology: &'a Topology,
    /// Where the user's changed choices are remembered.
    pub store: &'a dyn Store,
    /// How servers are judged.
    pub health: HealthSettings,
    /// The balancer's settings (its hysteresis).
    pub settings: Settings,
}

impl std::fmt::Debug for Sources<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sources").finish_non_exhaustive()
    }
}

/// The entries of `user`'s subscription at `now_ms`: every route's choice, from the
/// cached topology, but those the app `lacks` a feature for, which are counted in
/// the [`LeftOut`] instead ([`super::support`]); changed choices are remembered (a
/// failure to is logged: the answer is right without it, the next fetch chooses
/// again).
pub async fn entries(
    from: Sources<'_>,
    user: &User,
    credentials: &Credentials,
    sticky: &[(i64, i64)],
    (format, lacks): (Format, &Lacks),
    now_ms: i64,
) -> Result<(Vec<Entry>, LeftOut), StoreError> {
    let view = from.topology.view(now_ms).await?;
    let sticky: HashMap<i64, i64> = sticky.iter().copied().collect();
    let settings = from.settings;
    let mut out = Vec::new();
    let mut changed = Vec::new();
    let mut left = LeftOut::default();
    for cluster in view.iter() {
        if let Some(allowed) = &user.clusters
            && !allowed.contains(&cluster.id)
        {
            continue;
        }
        let pool = Pool {
            inbounds: &cluster.inbounds,
            servers: &cluster.servers,
            now_ms,
            health: from.health,
        };
        for route in cluster.routes.iter().filter(|r| !r.inbound_ids.is_empty()) {
            let last = sticky.get(&route.id).copied();
            let prev = previous(last, user.online_ms, now_ms);
            let Some(p) = pick(route, pool, prev, &settings) else {
                continue;
            };
            if last != Some(p.inbound.id) {
                changed.push((route.id, p.inbound.id));
            }
            if let Some(mut e) = entry(p.inbound, p.secrets, p.server, credentials, format) {
                // Left out before naming, so the names stay those of what is shown.
                if let Some(feature) = lacks.missing(&e) {
                    left.add(feature);
                    continue;
                }
                // The entry is the route, whichever inbound stands for it today.
                e.name = names::label(&route.name, route.flag.as_deref());
                e.route = Some(route.id.to_string());
                out.push(e);
            }
        }
    }
    names::make_unique(&mut out);
    if let Err(e) = from.store.put_sticky(user.id, &changed, now_ms).await {
        // The answer is right without it; the next fetch chooses again.
        tracing::warn!(user = user.id, "remembering route choices: {e}");
    }
    Ok((out, left))
}
