//! The tunnel halves of a server's node config (`docs/tunnel.md`), from the tunnels
//! it is the relay or an origin of. Pure, like the rest of the render.
//!
//! - Every enabled tunnel of the server gives one `[[tunnels]]` entry with its name,
//!   mode, balancing, links, window and profiles, each profile with its own links.
//! - The relay half lists every origin (`server-<id>`) with its credential, derived
//!   here from the panel's secret, the tunnel's name and the origin's name; in reverse
//!   mode it listens with the tunnel's certificate (inline PEM); in direct mode it
//!   dials each origin at its listed addresses (`hosts`, all at once) or else its
//!   server's address (`host`), and pins the certificate.
//! - An origin half has only its own name and credential, and the pins (reverse
//!   mode: it dials the relay's link addresses, by default the relay server's address
//!   at each profile's port) or the certificate (direct mode: it listens).
//! - Pins: the current certificate's and, after a re-issue, the previous one's, so
//!   links up stay up and new links pass whichever side switches first.
//! - Credentials are derived at the tunnel's credential epoch (0 until a rotation);
//!   while a rotation rolls out, the listening side (a reverse-mode relay, a
//!   direct-mode origin) also gets each origin's credential at the previous epoch, and
//!   the dialing side only the current one.
//! - A profile over HTTP (WebSocket, HTTPUpgrade, XHTTP, gRPC) reaches both halves
//!   with its path (or service name), host and XHTTP mode; its CDN's TLS (`outer_tls`)
//!   only the dialing half, as the listening half serves plain HTTP behind the CDN.
//! - A REALITY profile becomes the node's `reality` transport (its target, server
//!   name, the tunnel's REALITY public key and short id) in both halves; only the
//!   listening half (a reverse-mode relay, a direct-mode origin) gets the private key,
//!   and only when the tunnel has a REALITY profile. A tunnel with REALITY profiles
//!   but no keys (a database edited by hand) is left out rather than half rendered.
//! - A relay with two or more tunnels gets route rules: each tunnel's rules send what
//!   they match into it (what matches none goes direct); with one tunnel the node makes
//!   it the final outbound itself.

use serde_json::{Value, json};
use switchyard_proto::xhttp::Mode;
use switchyard_tunnel::credentials::{TunnelSecret, origin_credential_at, tunnel_tag};

use crate::model::Server;
use crate::model::snapshot::SnapshotTunnel;
use crate::model::tunnel::{
    LinkSecurity, LinkTransport, OuterTls, TunnelBalancing, TunnelMode, TunnelProfile,
    TunnelRealityKeys, origin_name,
};

/// `host:port`, the host bracketed when it is an IPv6 address.
fn address(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// A profile as one side gets it: `dialing` whether that side dials the links (and so
/// gets the CDN's TLS, `outer_tls`), `dialed` the host it dials when the profile's
/// addresses are its (an origin in reverse mode dials the relay; a relay in direct
/// mode dials each origin's own addresses, given with the origins).
fn profile(
    p: &TunnelProfile,
    links: usize,
    dialing: bool,
    dialed: Option<&str>,
    reality: &TunnelRealityKeys,
) -> Value {
    let transport = match (p.link_security(), &p.transport) {
        (LinkSecurity::Reality, _) => json!({
            "type": "reality",
            "server_name": p.reality_server_name,
            "dest": p.reality_dest,
            "public_key": reality.public_key,
            "short_id": reality.short_id,
        }),
        (LinkSecurity::Tls, LinkTransport::Tcp) => json!({ "type": "tls" }),
        (
            LinkSecurity::Tls,
            LinkTransport::Ws {
                path,
                host,
                outer_tls,
            },
        ) => over_http(
            json!({ "type": "ws", "path": path, "host": host }),
            outer_tls.as_ref(),
            dialing,
        ),
        (
            LinkSecurity::Tls,
            LinkTransport::HttpUpgrade {
                path,
                host,
                outer_tls,
            },
        ) => over_http(
            json!({ "type": "httpupgrade", "path": path, "host": host }),
            outer_tls.as_ref(),
            dialing,
        ),
        (
            LinkSecurity::Tls,
            LinkTransport::Xhttp {
                path,
                host,
                mode,
                outer_tls,
            },
        ) => over_http(
            json!({
                "type": "xhttp",
                "path": path,
                "host": host,
                // Checked before it is stored; the node's name for it either way.
                "mode": Mode::parse(mode).unwrap_or_default().name(),
            }),
            outer_tls.as_ref(),
            dialing,
        ),
        (
            LinkSecurity::Tls,
            LinkTransport::Grpc {
                service_name,
                host,
                outer_tls,
            },
        ) => over_http(
            json!({ "type": "grpc", "service_name": service_name, "host": host }),
            outer_tls.as_ref(),
            dialing,
        ),
    };
    let addresses: Vec<String> = match dialed {
        Some(_) if !p.addresses.is_empty() => p.addresses.clone(),
        Some(host) => vec![address(host, p.port)],
        None => Vec::new(),
    };
    json!({
        "port": p.port,
        "transport": transport,
        "addresses": addresses,
        "links": p.links.unwrap_or(links),
    })
}

/// A profile's transport over HTTP (WebSocket, HTTPUpgrade, XHTTP, gRPC): `transport`
/// as both sides get it, and the CDN's TLS for the dialing side only (`dialing`); the
/// listening side serves plain HTTP behind the CDN.
fn over_http(mut transport: Value, outer_tls: Option<&OuterTls>, dialing: bool) -> Value {
    if let Some(outer) = outer_tls.filter(|_| dialing) {
        transport["outer_tls"] = json!(outer);
    }
    transport
}

fn pins(c: &SnapshotTunnel) -> Vec<&str> {
    std::iter::once(c.certificate.pin.as_str())
        .chain(c.tunnel.previous_pin.as_deref())
        .collect()
}

/// The halves `server` runs, and its route rules.
pub(super) fn halves(
    server: &Server,
    listen: &str,
    tunnels: &[SnapshotTunnel],
    secret: Option<&TunnelSecret>,
) -> (Vec<Value>, Vec<Value>) {
    let Some(secret) = secret else {
        return (Vec::new(), Vec::new());
    };
    let mut out = Vec::new();
    let mut relayed = Vec::new();
    let no_keys = TunnelRealityKeys {
        private_key: String::new(),
        public_key: String::new(),
        short_id: String::new(),
    };
    for c in tunnels.iter().filter(|c| c.tunnel.enabled) {
        let t = &c.tunnel;
        let uses_reality = t
            .profiles
            .iter()
            .any(|p| p.link_security() == LinkSecurity::Reality);
        let reality = match &c.reality {
            Some(keys) => keys,
            None if uses_reality => continue,
            None => &no_keys,
        };
        let private_key = uses_reality.then_some(reality.private_key.as_str());
        let direct = t.mode == TunnelMode::Direct;
        let at = |origin: i64, epoch: i64| {
            let epoch = u64::try_from(epoch).unwrap_or_default();
            origin_credential_at(secret, &t.name, &origin_name(origin), epoch).to_hex()
        };
        let credential = |origin: i64| at(origin, t.credential_epoch);
        let previous = |origin: i64| t.previous_credential_epoch.map(|e| at(origin, e));
        let head = |profiles: Vec<Value>| {
            json!({
                "name": t.name,
                "mode": if direct { "direct" } else { "reverse" },
                "balancing": match t.balancing {
                    TunnelBalancing::Distribute => "distribute",
                    TunnelBalancing::Priority => "priority",
                },
                "links": t.links,
                "window_mib": t.window_mib,
                "profiles": profiles,
            })
        };
        if t.relay_server_id == server.id {
            let origins: Vec<Value> = c
                .origins
                .iter()
                .map(|o| {
                    let mut v =
                        json!({ "name": origin_name(o.id), "credential": credential(o.id) });
                    let listed = t
                        .origins
                        .iter()
                        .find(|to| to.server_id == o.id)
                        .map(|to| to.addresses.as_slice())
                        .unwrap_or_default();
                    if direct && listed.is_empty() {
                        v["host"] = json!(o.address);
                    } else if direct {
                        v["hosts"] = json!(listed);
                    } else if let Some(p) = previous(o.id) {
                        v["previous_credential"] = json!(p);
                    }
                    v
                })
                .collect();
            let mut relay = json!({ "origins": origins });
            if direct {
                relay["pins"] = json!(pins(c));
            } else {
                relay["listen"] = json!(listen);
                relay["cert_pem"] = json!(c.certificate.cert_pem);
                relay["key_pem"] = json!(c.certificate.key_pem);
                if let Some(k) = private_key {
                    relay["reality_private_key"] = json!(k);
                }
            }
            let mut v = head(
                t.profiles
                    .iter()
                    .map(|p| profile(p, t.links, direct, None, reality))
                    .collect(),
            );
            v["relay"] = relay;
            out.push(v);
            relayed.push(t);
        } else if c.origins.iter().any(|o| o.id == server.id) {
            let mut origin =
                json!({ "name": origin_name(server.id), "credential": credential(server.id) });
            if direct {
                origin["listen"] = json!(listen);
                origin["cert_pem"] = json!(c.certificate.cert_pem);
                origin["key_pem"] = json!(c.certificate.key_pem);
                if let Some(p) = previous(server.id) {
                    origin["previous_credential"] = json!(p);
                }
                if let Some(k) = private_key {
                    origin["reality_private_key"] = json!(k);
                }
            } else {
                origin["pins"] = json!(pins(c));
            }
            let dialed = (!direct).then_some(c.relay.address.as_str());
            let mut v = head(
                t.profiles
                    .iter()
                    .map(|p| profile(p, t.links, !direct, dialed, reality))
                    .collect(),
            );
            v["origin"] = origin;
            out.push(v);
        }
    }
    let rules = if relayed.len() >= 2 {
        relayed
            .iter()
            .filter(|t| !t.rules.is_empty())
            .map(|t| {
                json!({
                    "domain": t.rules.domains,
                    "domain_suffix": t.rules.suffixes,
                    "ip_cidr": t.rules.cidrs,
                    "port": t.rules.ports,
                    "outbound": tunnel_tag(&t.name),
                })
            })
            .collect()
    } else {
        Vec::new()
    };
    (out, rules)
}

#[cfg(test)]
#[path = "tunnels_tests.rs"]
mod tests;
