//! The node's tunnel halves: started, kept or rebuilt on every config change, and the
//! origin's handling of the streams the relay opens.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};
use switchyard_proto::reality::{PublicKey, ShortId};
use switchyard_tunnel::credentials::{Credential, tunnel_tag};
use switchyard_tunnel::frame::{Network as TunnelNetwork, Open, ResetReason};
use switchyard_tunnel::half::{
    DirectOrigin, HalfError, OriginHalf, OriginListenSpec, OriginSpec, Profile, RelayDialSpec,
    RelayHalf, RelaySpec,
};
use switchyard_tunnel::link::Pin;
use switchyard_tunnel::link::pin::PinError;
use switchyard_tunnel::link::transport::{OuterTls, RealityLink, Transport};
use switchyard_tunnel::mux::MuxStream;
use switchyard_tunnel::pump::relay;
use switchyard_tunnel::user_limits::UserLimits;
use tokio_util::sync::CancellationToken;

use crate::config::{TunnelConfig, TunnelMode, TunnelProfile, TunnelTransport};
use crate::inbound::udp::Outlet;
use crate::runtime::{Runtime, Shared};
use switchyard_proto::Address;
use tokio::time::Instant;

/// Why a tunnel half could not be prepared, started or changed; the node goes on with
/// the halves it had.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TunnelError {
    /// The config gives this node neither the relay nor an origin half.
    #[error("neither relay nor origin")]
    NoHalf,
    /// The origin's credential is not 64 hex digits.
    #[error("credential is not 64 hex digits")]
    Credential,
    /// A field the half needs is not set.
    #[error("{field} is not set")]
    Unset {
        /// The field (`relay.cert`, `origin.key`...).
        field: String,
    },
    /// The certificate or key can't be read or used.
    #[error(transparent)]
    Certificate(#[from] crate::tls::CertificateError),
    /// The dialing side has no pin to check the listening side's certificate with.
    #[error("{field}: no pin is set")]
    NoPin {
        /// `relay.pins` or `origin.pins`.
        field: &'static str,
    },
    /// A pin is malformed.
    #[error("{field}: {source}")]
    Pin {
        /// `relay.pins` or `origin.pins`.
        field: &'static str,
        /// What is wrong with it.
        source: PinError,
    },
    /// The half could not start or change (a port in use, a certificate refused).
    #[error(transparent)]
    Half(#[from] HalfError),
}

/// A running half.
pub(crate) enum Half {
    /// This node relays the tunnel.
    Relay(Arc<RelayHalf>),
    /// This node is one of its origins.
    Origin(Box<OriginHalf>),
}

/// A tunnel half with the config it runs.
pub(crate) struct Running {
    pub(crate) config: TunnelConfig,
    pub(crate) half: Half,
}

/// The half's profiles; REALITY ones carry `reality_key` (the listening half's
/// private key, `None` on the dialing side). Validated before: keys read.
fn profiles(ps: &[TunnelProfile], reality_key: Option<&crate::config::Secret>) -> Vec<Profile> {
    ps.iter()
        .map(|p| Profile {
            port: p.port,
            transport: match &p.transport {
                TunnelTransport::Tls => Transport::Tls,
                TunnelTransport::Ws {
                    path,
                    host,
                    outer_tls,
                } => Transport::WebSocket {
                    path: path.clone(),
                    host: host.clone(),
                    outer: outer_tls.as_ref().map(outer),
                },
                TunnelTransport::HttpUpgrade {
                    path,
                    host,
                    outer_tls,
                } => Transport::HttpUpgrade {
                    path: path.clone(),
                    host: host.clone(),
                    outer: outer_tls.as_ref().map(outer),
                },
                TunnelTransport::Xhttp {
                    path,
                    host,
                    mode,
                    outer_tls,
                } => Transport::Xhttp {
                    path: path.clone(),
                    host: host.clone(),
                    mode: *mode,
                    outer: outer_tls.as_ref().map(outer),
                },
                TunnelTransport::Grpc {
                    service_name,
                    host,
                    outer_tls,
                } => Transport::Grpc {
                    service_name: service_name.clone(),
                    host: host.clone(),
                    outer: outer_tls.as_ref().map(outer),
                },
                TunnelTransport::Reality {
                    server_name,
                    dest,
                    public_key,
                    short_id,
                } => Transport::Reality(RealityLink {
                    server_name: server_name.clone(),
                    public_key: PublicKey::parse(public_key).unwrap_or(PublicKey([0; 32])),
                    short_id: ShortId::parse(short_id).unwrap_or(ShortId([0; 8])),
                    dest: dest.clone(),
                    private_key: reality_key.map(|k| k.expose().to_owned()),
                }),
            },
            addresses: p.addresses.clone(),
            links: p.links,
        })
        .collect()
}

/// A profile's TLS to the CDN in front of the listening side.
fn outer(o: &crate::config::OuterTls) -> OuterTls {
    OuterTls::new(o.server_name.clone(), o.ca_pem.clone())
}

/// The private key of the REALITY profiles when this node is the listening side.
fn listening_reality_key(c: &TunnelConfig) -> Option<&crate::config::Secret> {
    match c.mode {
        TunnelMode::Reverse => c.relay.as_ref()?.reality_private_key.as_ref(),
        TunnelMode::Direct => c.origin.as_ref()?.reality_private_key.as_ref(),
    }
}

fn origins(c: &TunnelConfig) -> Vec<(String, Credential)> {
    c.relay
        .as_ref()
        .map(|r| {
            r.origins
                .iter()
                .filter_map(|o| {
                    Some((o.name.clone(), Credential::from_hex(o.credential.expose())?))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Reverse mode, while credentials rotate: the origins' previous credentials.
fn previous_credentials(c: &TunnelConfig) -> Vec<(String, Credential)> {
    c.relay
        .as_ref()
        .map(|r| {
            r.origins
                .iter()
                .filter_map(|o| {
                    let p = o.previous_credential.as_ref()?;
                    Some((o.name.clone(), Credential::from_hex(p.expose())?))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// An origin half's credential and, while they rotate, its previous one.
fn own_credentials(
    o: &crate::config::OriginHalfConfig,
) -> Option<(Credential, Option<Credential>)> {
    let current = Credential::from_hex(o.credential.expose())?;
    let previous = o
        .previous_credential
        .as_ref()
        .and_then(|p| Credential::from_hex(p.expose()));
    Some((current, previous))
}

/// The tunnel's stream window in bytes.
fn window(c: &TunnelConfig) -> u32 {
    c.window_mib.saturating_mul(1 << 20)
}

/// Whether `new` differs from `old` only in what applies live: the relay's origins
/// (membership, credentials), an origin's credentials (a rotation), the certificate
/// files of the listening side (a re-issue) and the pins of the dialing side (a
/// rotation).
pub(crate) fn membership_only(old: &TunnelConfig, new: &TunnelConfig) -> bool {
    let strip = |c: &TunnelConfig| {
        let mut c = c.clone();
        if let Some(r) = &mut c.relay {
            r.origins.clear();
            r.cert = None;
            r.key = None;
            r.cert_pem = None;
            r.key_pem = None;
            r.pin = None;
            r.pins.clear();
        }
        if let Some(o) = &mut c.origin {
            o.credential = crate::config::Secret::new("");
            o.previous_credential = None;
            o.cert = None;
            o.key = None;
            o.cert_pem = None;
            o.key_pem = None;
            o.pin = None;
            o.pins.clear();
        }
        c
    };
    strip(old) == strip(new)
}

/// Applies what the files and pins of the config say now, live: the listening side
/// (a reverse-mode relay, a direct-mode origin) serves the certificate now in its
/// files (re-issued in place or moved, read by [`prepare`]) to new links; the dialing
/// side checks new links against its current pins. Links already up stay up.
pub(crate) fn refresh_certificate(
    r: &Running,
    new: &TunnelConfig,
    files: &Prepared,
) -> Result<(), TunnelError> {
    // The pins come from the new config (`r.config` is still the old one here).
    let direct = new.mode == TunnelMode::Direct;
    match (&r.half, &new.relay, &new.origin) {
        (Half::Relay(h), Some(relay), _) if direct => {
            h.set_direct_pins(pins(&relay.all_pins(), "relay.pins")?);
        }
        (Half::Relay(h), Some(_), _) => {
            h.set_certificate(&files.cert_pem, &files.key_pem)?;
        }
        (Half::Origin(h), _, Some(_)) if direct => {
            h.set_certificate(&files.cert_pem, &files.key_pem)?;
        }
        (Half::Origin(h), _, Some(origin)) => {
            h.set_pins(pins(&origin.all_pins(), "origin.pins")?);
        }
        _ => {}
    }
    Ok(())
}

/// A half's certificate and key (empty when it has none), read and checked with its
/// pins and credential before anything stops.
#[derive(Default)]
pub(crate) struct Prepared {
    cert_pem: String,
    key_pem: String,
}

/// Reads and checks what [`start`] needs, all but the ports. Blocks (file reads).
pub(crate) fn prepare(config: &TunnelConfig) -> Result<Prepared, TunnelError> {
    let direct = config.mode == TunnelMode::Direct;
    let (cert, key, inline, what) = match (&config.relay, &config.origin) {
        (Some(r), _) if direct => {
            return pins(&r.all_pins(), "relay.pins").map(|_| Prepared::default());
        }
        (Some(r), _) => (
            r.cert.as_deref(),
            r.key.as_deref(),
            r.cert_pem.as_ref().zip(r.key_pem.as_ref()),
            "relay",
        ),
        (None, Some(o)) => {
            Credential::from_hex(o.credential.expose()).ok_or(TunnelError::Credential)?;
            if !direct {
                return pins(&o.all_pins(), "origin.pins").map(|_| Prepared::default());
            }
            (
                o.cert.as_deref(),
                o.key.as_deref(),
                o.cert_pem.as_ref().zip(o.key_pem.as_ref()),
                "origin",
            )
        }
        (None, None) => return Err(TunnelError::NoHalf),
    };
    let (cert_pem, key_pem) = match inline {
        Some((c, k)) => (c.clone(), k.expose().to_owned()),
        None => (
            read(cert, &format!("{what}.cert"))?,
            read(key, &format!("{what}.key"))?,
        ),
    };
    let name = |p: Option<&std::path::Path>| p.unwrap_or(std::path::Path::new("")).to_owned();
    crate::tls::parse(
        cert_pem.as_bytes(),
        key_pem.as_bytes(),
        &name(cert),
        &name(key),
    )?;
    Ok(Prepared { cert_pem, key_pem })
}

fn read(p: Option<&std::path::Path>, what: &str) -> Result<String, TunnelError> {
    let p = p.ok_or_else(|| TunnelError::Unset {
        field: what.to_owned(),
    })?;
    std::fs::read_to_string(p).map_err(|source| {
        TunnelError::Certificate(crate::tls::CertificateError::Read {
            path: p.to_owned(),
            source,
        })
    })
}

/// Every pin of `texts` (`pin` and `pins` together); at least one.
fn pins(texts: &[String], field: &'static str) -> Result<Vec<Pin>, TunnelError> {
    if texts.is_empty() {
        return Err(TunnelError::NoPin { field });
    }
    texts
        .iter()
        .map(|t| {
            t.parse()
                .map_err(|source| TunnelError::Pin { field, source })
        })
        .collect()
}

fn direct_origins(c: &TunnelConfig) -> Vec<DirectOrigin> {
    c.relay
        .as_ref()
        .map(|r| {
            r.origins
                .iter()
                .filter_map(|o| {
                    Some(DirectOrigin {
                        name: o.name.clone(),
                        credential: Credential::from_hex(o.credential.expose())?,
                        hosts: o.all_hosts(),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

fn limits(r: &crate::config::RelayHalfConfig) -> UserLimits {
    UserLimits {
        streams: r.max_streams_per_user,
        udp: r.max_udp_per_user,
    }
}

/// Starts `config`'s half on this node, with its files read by [`prepare`].
pub(crate) async fn start(
    config: &TunnelConfig,
    files: Prepared,
    shared: &Arc<Shared>,
) -> Result<Half, TunnelError> {
    let direct = config.mode == TunnelMode::Direct;
    if let Some(r) = &config.relay {
        let half = if direct {
            RelayHalf::start_direct(RelayDialSpec {
                tunnel: config.name.clone(),
                profiles: profiles(&config.profiles, listening_reality_key(config)),
                balancing: config.balancing,
                links: config.links,
                pins: pins(&r.all_pins(), "relay.pins")?,
                origins: direct_origins(config),
                limits: limits(r),
                window: window(config),
            })
        } else {
            RelayHalf::start(RelaySpec {
                tunnel: config.name.clone(),
                listen: r.listen,
                profiles: profiles(&config.profiles, listening_reality_key(config)),
                balancing: config.balancing,
                cert_pem: files.cert_pem,
                key_pem: files.key_pem,
                origins: origins(config),
                limits: limits(r),
                window: window(config),
                site: crate::tunnel_site::site_dialer(shared),
            })
            .await?
        };
        half.set_previous_credentials(previous_credentials(config));
        return Ok(Half::Relay(Arc::new(half)));
    }
    let Some(o) = &config.origin else {
        return Err(TunnelError::NoHalf);
    };
    let credential = Credential::from_hex(o.credential.expose()).ok_or(TunnelError::Credential)?;
    let site = crate::tunnel_site::site_dialer(shared);
    let shared = shared.clone();
    let handler = Arc::new(move |open: Open, stream: MuxStream| {
        let (shared, open_now) = (shared.clone(), OriginStream::enter(&shared));
        tokio::spawn(async move {
            serve_stream(shared, open, stream).await;
            drop(open_now);
        });
    });
    let half = if direct {
        OriginHalf::listen(
            OriginListenSpec {
                tunnel: config.name.clone(),
                origin: o.name.clone(),
                credential,
                cert_pem: files.cert_pem,
                key_pem: files.key_pem,
                listen: o.listen,
                profiles: profiles(&config.profiles, listening_reality_key(config)),
                window: window(config),
                site,
            },
            handler,
        )
        .await?
    } else {
        let spec = OriginSpec {
            tunnel: config.name.clone(),
            origin: o.name.clone(),
            credential,
            pins: pins(&o.all_pins(), "origin.pins")?,
            profiles: profiles(&config.profiles, listening_reality_key(config)),
            links: config.links,
            window: window(config),
        };
        OriginHalf::start(spec, handler)
    };
    if let Some((current, previous @ Some(_))) = own_credentials(o) {
        half.set_credential(current, previous);
    }
    Ok(Half::Origin(Box::new(half)))
}

/// A stream the relay opened on this origin, counted in
/// [`Shared::origin_streams`] while it is served (an upgrade's old process drains
/// them too).
struct OriginStream(Arc<Shared>);

impl OriginStream {
    fn enter(shared: &Arc<Shared>) -> Self {
        shared
            .origin_streams
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Self(shared.clone())
    }
}

impl Drop for OriginStream {
    fn drop(&mut self) {
        self.0
            .origin_streams
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Hands the half over to another process ([`crate::handover`]): no new links, and
/// every link says `GoAway`; streams under way go on.
pub(crate) fn hand_over(r: &Running) {
    match &r.half {
        Half::Relay(h) => h.hand_over(),
        Half::Origin(h) => h.hand_over(),
    }
}

/// On an origin: a stream the relay opened goes out through this node's own routing.
/// Nobody is charged: the user was counted on the relay, and the relay's address is
/// no user's source address.
async fn serve_stream(shared: Arc<Shared>, open: Open, stream: MuxStream) {
    let rt = shared.runtime();
    if open.network == TunnelNetwork::Udp {
        return serve_datagrams(&rt, &open, stream).await;
    }
    let remote = match rt.dialer.connect(&open.destination).await {
        Ok(r) => r,
        Err(e) => {
            tracing::debug!(user = %open.user, "tunnel stream: {e}");
            return stream.reset(ResetReason::ConnectFailed);
        }
    };
    let never = CancellationToken::new();
    let _ = relay(stream, remote, rt.idle_timeout, &never, |_, _| {}).await;
}

/// On an origin: a UDP stream's datagrams go out through one socket (this node's
/// routing; no tunnels chained), answers come back with their source.
async fn serve_datagrams(rt: &Runtime, open: &Open, stream: MuxStream) {
    let Ok(mut outlet) = Outlet::open(&open.user, None, &HashMap::new()).await else {
        return stream.reset(ResetReason::ConnectFailed);
    };
    let mut buf = vec![0u8; 65_536];
    let mut last = Instant::now();
    loop {
        tokio::select! {
            r = stream.recv_from() => match r {
                Ok((to, data)) => {
                    if let Err(e) = outlet.send(&rt.dialer, &to, &data).await {
                        tracing::debug!(user = %open.user, "tunnel UDP to {to}: {e}");
                    }
                    last = Instant::now();
                }
                Err(_) => return,
            },
            r = outlet.recv(&mut buf) => match r {
                Ok((n, from)) => {
                    let _ = stream.send_to(&Address::Ip(from), &buf[..n]);
                    last = Instant::now();
                }
                Err(_) => return,
            },
            () = tokio::time::sleep_until(last + rt.idle_timeout) => return,
        }
    }
}

/// The relay halves by tunnel tag, for the data path.
pub(crate) fn relays(running: &HashMap<String, Running>) -> HashMap<String, Arc<RelayHalf>> {
    running
        .values()
        .filter_map(|r| match &r.half {
            Half::Relay(h) => Some((tunnel_tag(&r.config.name), h.clone())),
            Half::Origin(_) => None,
        })
        .collect()
}

/// Status of one half, for the control API.
pub(crate) fn status(r: &Running) -> Value {
    let base = json!({ "name": r.config.name, "tag": tunnel_tag(&r.config.name) });
    let mut v = base;
    match &r.half {
        Half::Relay(h) => {
            let refusals: Vec<Value> = h
                .refusals()
                .iter()
                .map(|f| {
                    json!({
                        "wrong_tag": f.wrong_tag, "unknown_origin": f.unknown_origin,
                        "bad_credential": f.bad_credential,
                        "last": f.last.as_ref().map(|(_, origin, why)| json!({"origin": origin, "reason": why.to_string()})),
                    })
                })
                .collect();
            v["role"] = json!("relay");
            v["window_bytes"] = json!(h.window());
            v["state"] = json!(if h.links() > 0 {
                format!("Connections: {}", h.links())
            } else {
                "No connections".into()
            });
            v["links"] = json!(h.links());
            v["payload_bytes"] = json!(h.bytes());
            v["origins"] = serde_json::to_value(h.origins()).unwrap_or_default();
            v["refusals_per_profile"] = json!(refusals);
            let dialing: serde_json::Map<String, Value> = h
                .dial_status()
                .into_iter()
                .map(|(origin, addrs)| (origin, json!(addresses(&addrs))))
                .collect();
            if !dialing.is_empty() {
                v["dialing"] = Value::Object(dialing);
            }
        }
        Half::Origin(h) => {
            v["role"] = json!("origin");
            v["window_bytes"] = json!(h.window());
            v["links"] = json!(h.links());
            v["addresses"] = json!(addresses(&h.status()));
            let refused: u64 = h.refusals().iter().map(|r| r.total()).sum();
            v["refused"] = json!(refused);
        }
    }
    v
}

/// Stops a half; its ports (a relay's, a direct-mode origin's) are free when this
/// returns, so a rebuild never races the old listener for them.
pub(crate) async fn stop(r: Running) {
    match &r.half {
        Half::Relay(h) => h.stop().await,
        Half::Origin(h) => h.stop().await,
    }
}

fn addresses(list: &[switchyard_tunnel::link::AddressStatus]) -> Vec<Value> {
    list.iter()
        .map(|a| {
            json!({
                "target": a.target, "wanted": a.wanted, "connected": a.connected,
                "failures": a.failures,
                "next_attempt_in_ms": a.next_attempt_in.map(|d| d.as_millis() as u64),
                "last_error": a.last_error.as_ref().map(ToString::to_string),
            })
        })
        .collect()
}

/// Rebuilds the half from its config: its links drop and the dialing side starts
/// over at once, with no back-off.
pub(crate) fn reset(r: &Running) {
    match &r.half {
        Half::Relay(h) => h.reset(),
        Half::Origin(h) => h.reset(),
    }
}

/// Applies a live membership change to a running half: the relay's origins and
/// their credentials, an origin's own credentials.
pub(crate) fn update_membership(r: &mut Running, config: TunnelConfig) {
    match &r.half {
        Half::Relay(h) if config.mode == TunnelMode::Direct => {
            h.set_direct_origins(direct_origins(&config));
        }
        Half::Relay(h) => {
            h.set_origins(origins(&config));
            h.set_previous_credentials(previous_credentials(&config));
        }
        Half::Origin(h) => {
            if let Some((current, previous)) = config.origin.as_ref().and_then(own_credentials) {
                h.set_credential(current, previous);
            }
        }
    }
    r.config = config;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> TunnelConfig {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn pins_certificate_files_and_origins_change_live_anything_else_rebuilds() {
        let base = "name = \"eu\"\n[[profiles]]\nport = 7443\naddresses = [\"r:7443\"]\n";
        let pin_a = format!("cert:{}", "aa".repeat(32));
        let pin_b = format!("key:{}", "bb".repeat(32));
        let origin = |pins: &str| {
            config(&format!(
                "{base}[origin]\nname = \"fi\"\ncredential = \"{}\"\n{pins}",
                "11".repeat(32)
            ))
        };
        let one = origin(&format!("pin = \"{pin_a}\"\n"));
        let two = origin(&format!("pin = \"{pin_a}\"\npins = [\"{pin_b}\"]\n"));
        let next = origin(&format!("pins = [\"{pin_b}\"]\n"));
        assert!(membership_only(&one, &two) && membership_only(&two, &next));
        assert_eq!(two.origin.as_ref().unwrap().all_pins(), [pin_a, pin_b]);
        let mut wider = next.clone();
        wider.links = 8;
        assert!(!membership_only(&next, &wider));
        assert_eq!((next.window_mib, window(&next)), (16, 16 << 20));
        let mut narrower = next.clone();
        narrower.window_mib = 2;
        assert!(!membership_only(&next, &narrower), "a window is shape");
        // A rotated credential (with the previous one beside it) applies live too.
        let mut rotated = next.clone();
        let o = rotated.origin.as_mut().unwrap();
        o.credential = crate::config::Secret::new("22".repeat(32));
        o.previous_credential = Some(crate::config::Secret::new("11".repeat(32)));
        assert!(membership_only(&next, &rotated));
        assert_eq!(
            own_credentials(rotated.origin.as_ref().unwrap()).map(|(c, p)| (c.0, p.map(|p| p.0))),
            Some(([0x22; 32], Some([0x11; 32])))
        );
    }
}
