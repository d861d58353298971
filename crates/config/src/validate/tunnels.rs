//! The tunnels' section: names, profiles, links and windows, REALITY profiles, and
//! each half's certificate, pins and credentials.

use std::collections::HashSet;

use super::{ConfigError, invalid};
use crate::credentials::Credential;
use crate::tunnel::parse_pin;
use crate::{MAX_PROFILES, NodeConfig, TunnelMode, TunnelTransport};

impl NodeConfig {
    pub(super) fn validate_tunnels(&self) -> Result<(), ConfigError> {
        let mut names = HashSet::new();
        let mut ports: HashSet<u16> = self.inbounds.iter().map(|i| i.port).collect();
        for (i, t) in self.tunnels.iter().enumerate() {
            let f = |name: &str| format!("tunnels[{i}].{name}");
            if t.name.is_empty() || t.name.len() > 64 || t.name.chars().any(char::is_control) {
                return Err(invalid(f("name"), "use 1-64 printable characters"));
            }
            if !names.insert(t.name.as_str()) {
                return Err(invalid(
                    f("name"),
                    format!("{:?} is used by another tunnel", t.name),
                ));
            }
            if !(1..=MAX_PROFILES).contains(&t.profiles.len()) {
                return Err(invalid(
                    f("profiles"),
                    format!("a tunnel has 1 to {MAX_PROFILES} profiles"),
                ));
            }
            if !(1..=64).contains(&t.links) {
                return Err(invalid(f("links"), "must be 1 to 64"));
            }
            for (j, p) in t.profiles.iter().enumerate() {
                if p.links.is_some_and(|n| !(1..=64).contains(&n)) {
                    return Err(invalid(
                        f(&format!("profiles[{j}].links")),
                        "must be 1 to 64",
                    ));
                }
                upgrade_profile(&p.transport).map_err(|(field, why)| {
                    invalid(f(&format!("profiles[{j}].transport.{field}")), why)
                })?;
            }
            if !(1..=64).contains(&t.window_mib) {
                return Err(invalid(f("window_mib"), "must be 1 to 64 (MiB)"));
            }
            let direct = t.mode == TunnelMode::Direct;
            let listens = |ports: &mut HashSet<u16>| -> Result<(), ConfigError> {
                for (j, p) in t.profiles.iter().enumerate() {
                    if p.port == 0 || !ports.insert(p.port) {
                        return Err(invalid(
                            f(&format!("profiles[{j}].port")),
                            format!("{} is 0 or already used on this node", p.port),
                        ));
                    }
                }
                Ok(())
            };
            let pin_ok = |pins: &[String], field: &str| -> Result<(), ConfigError> {
                let ok = |p: &String| parse_pin(p).is_some();
                if !pins.is_empty() && pins.iter().all(ok) {
                    Ok(())
                } else {
                    Err(invalid(f(field), "must be cert:<64 hex> or key:<64 hex>"))
                }
            };
            // The listening side's certificate: files (`cert`, `key`) or inline PEM
            // (`cert_pem`, `key_pem`), one pair, whole.
            let files = |cert: bool, key: bool, cert_pem: bool, key_pem: bool, at: &str| match (
                cert || key,
                cert_pem || key_pem,
            ) {
                (true, true) => Err(invalid(
                    f(&format!("{at}.cert")),
                    "set cert and key, or cert_pem and key_pem, not both",
                )),
                (true, false) if cert && key => Ok(()),
                (false, true) if cert_pem && key_pem => Ok(()),
                _ => Err(invalid(
                    f(&format!("{at}.cert")),
                    "the listening side needs cert and key (or cert_pem and key_pem)",
                )),
            };
            // REALITY profiles: keys and names that read; the listening half's private
            // key is the profiles' public key's.
            let listening_key = match (&t.relay, &t.origin) {
                (Some(r), None) if !direct => r.reality_private_key.as_ref().map(|k| ("relay", k)),
                (None, Some(o)) if direct => o.reality_private_key.as_ref().map(|k| ("origin", k)),
                _ => None,
            };
            let listening_key = match listening_key {
                Some((half, k)) => Some((
                    half,
                    switchyard_proto::reality::PrivateKey::parse(k.expose()).map_err(|e| {
                        invalid(f(&format!("{half}.reality_private_key")), e.to_string())
                    })?,
                )),
                None => None,
            };
            let listening = (t.relay.is_some() && !direct) || (t.origin.is_some() && direct);
            for (j, p) in t.profiles.iter().enumerate() {
                let TunnelTransport::Reality {
                    server_name,
                    dest,
                    public_key,
                    short_id,
                } = &p.transport
                else {
                    continue;
                };
                let at = |field: &str| f(&format!("profiles[{j}].transport.{field}"));
                if server_name.is_empty() || server_name.len() > 253 {
                    return Err(invalid(at("server_name"), "one of the target site's names"));
                }
                // The listening half splices probers to `dest`: the rule of a REALITY
                // inbound's (switchyard_proto::dest, the panel's too). The dialing
                // half never dials it: the form alone.
                let allow = !listening || self.node.allow_private_destinations;
                switchyard_proto::dest::check(dest, allow)
                    .map_err(|e| invalid(at("dest"), e.to_string()))?;
                let public = switchyard_proto::reality::PublicKey::parse(public_key)
                    .map_err(|e| invalid(at("public_key"), e.to_string()))?;
                switchyard_proto::reality::ShortId::parse(short_id)
                    .map_err(|e| invalid(at("short_id"), e.to_string()))?;
                if listening {
                    let half = if direct { "origin" } else { "relay" };
                    match &listening_key {
                        None => {
                            return Err(invalid(
                                f(&format!("{half}.reality_private_key")),
                                "missing: the listening side of a REALITY profile needs its private key",
                            ));
                        }
                        Some((half, k)) if k.public_key() != public => {
                            return Err(invalid(
                                f(&format!("{half}.reality_private_key")),
                                format!("is not the key of profiles[{j}]'s public_key"),
                            ));
                        }
                        Some(_) => {}
                    }
                }
            }
            match (&t.relay, &t.origin) {
                (Some(_), Some(_)) | (None, None) => {
                    return Err(invalid(
                        f("relay"),
                        "set exactly one of relay and origin: this node's half",
                    ));
                }
                (Some(relay), None) => {
                    for (n, field) in [
                        (relay.max_streams_per_user, "relay.max_streams_per_user"),
                        (relay.max_udp_per_user, "relay.max_udp_per_user"),
                    ] {
                        if n == 0 {
                            return Err(invalid(f(field), "must be at least 1"));
                        }
                    }
                    if direct {
                        pin_ok(&relay.all_pins(), "relay.pin")?;
                    } else {
                        listens(&mut ports)?;
                        files(
                            relay.cert.is_some(),
                            relay.key.is_some(),
                            relay.cert_pem.is_some(),
                            relay.key_pem.is_some(),
                            "relay",
                        )?;
                    }
                    let mut seen = HashSet::new();
                    for (j, o) in relay.origins.iter().enumerate() {
                        if !seen.insert(o.name.as_str()) {
                            return Err(invalid(
                                f(&format!("relay.origins[{j}].name")),
                                "used twice",
                            ));
                        }
                        if Credential::from_hex(o.credential.expose()).is_none() {
                            return Err(invalid(
                                f(&format!("relay.origins[{j}].credential")),
                                "must be 64 hex digits",
                            ));
                        }
                        if o.previous_credential
                            .as_ref()
                            .is_some_and(|p| Credential::from_hex(p.expose()).is_none())
                        {
                            return Err(invalid(
                                f(&format!("relay.origins[{j}].previous_credential")),
                                "must be 64 hex digits",
                            ));
                        }
                        if direct && o.all_hosts().is_empty() {
                            return Err(invalid(
                                f(&format!("relay.origins[{j}].host")),
                                "direct mode dials each origin at its host",
                            ));
                        }
                    }
                }
                (None, Some(origin)) => {
                    if Credential::from_hex(origin.credential.expose()).is_none() {
                        return Err(invalid(f("origin.credential"), "must be 64 hex digits"));
                    }
                    if origin
                        .previous_credential
                        .as_ref()
                        .is_some_and(|p| Credential::from_hex(p.expose()).is_none())
                    {
                        return Err(invalid(
                            f("origin.previous_credential"),
                            "must be 64 hex digits",
                        ));
                    }
                    if direct {
                        listens(&mut ports)?;
                        files(
                            origin.cert.is_some(),
                            origin.key.is_some(),
                            origin.cert_pem.is_some(),
                            origin.key_pem.is_some(),
                            "origin",
                        )?;
                    } else {
                        pin_ok(&origin.all_pins(), "origin.pin")?;
                        for (j, p) in t.profiles.iter().enumerate() {
                            if p.addresses.is_empty() {
                                return Err(invalid(
                                    f(&format!("profiles[{j}].addresses")),
                                    "an origin needs the relay's address for every profile",
                                ));
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// A WebSocket, HTTPUpgrade, XHTTP or gRPC profile's requests and its CDN's TLS: the
/// field that is wrong and why.
fn upgrade_profile(t: &TunnelTransport) -> Result<(), (&'static str, &'static str)> {
    let plain = |s: &str| !s.chars().any(|c| c.is_control() || c.is_whitespace());
    let (host, outer) = match t {
        TunnelTransport::Ws {
            path,
            host,
            outer_tls,
        }
        | TunnelTransport::HttpUpgrade {
            path,
            host,
            outer_tls,
        }
        | TunnelTransport::Xhttp {
            path,
            host,
            outer_tls,
            ..
        } => {
            let xhttp = matches!(t, TunnelTransport::Xhttp { .. });
            if !path.starts_with('/') || path.len() > 256 || !plain(path) {
                return Err((
                    "path",
                    "must start with / and be at most 256 characters, without spaces",
                ));
            }
            // XHTTP adds its session and padding to the path and the query.
            if xhttp && path.contains(['?', '#']) {
                return Err(("path", "an XHTTP path has no query ('?') or '#'"));
            }
            (host, outer_tls)
        }
        TunnelTransport::Grpc {
            service_name,
            host,
            outer_tls,
        } => {
            let name_ok = !service_name.is_empty()
                && service_name.len() <= 128
                && service_name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
            if !name_ok {
                return Err(("service_name", "1 to 128 letters, digits, '_', '.' and '-'"));
            }
            (host, outer_tls)
        }
        TunnelTransport::Tls | TunnelTransport::Reality { .. } => return Ok(()),
    };
    if host.len() > 253 || !plain(host) {
        return Err(("host", "a host name of at most 253 characters"));
    }
    let Some(outer) = outer else {
        return Ok(());
    };
    let name = &outer.server_name;
    let name_ok = !name.is_empty()
        && name.len() <= 253
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':'));
    if !name_ok {
        return Err((
            "outer_tls.server_name",
            "the CDN's DNS name (or IP address) its certificate carries",
        ));
    }
    if outer
        .ca_pem
        .as_deref()
        .is_some_and(|pem| !holds_certificate(pem))
    {
        return Err((
            "outer_tls.ca_pem",
            "must hold a PEM certificate (-----BEGIN CERTIFICATE-----)",
        ));
    }
    Ok(())
}

/// Whether `pem` holds at least one certificate block whose body is base64.
fn holds_certificate(pem: &str) -> bool {
    use base64::Engine as _;
    const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
    const END: &str = "-----END CERTIFICATE-----";
    let Some((_, rest)) = pem.split_once(BEGIN) else {
        return false;
    };
    let Some((body, _)) = rest.split_once(END) else {
        return false;
    };
    let body: String = body.chars().filter(|c| !c.is_whitespace()).collect();
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .is_ok_and(|der| !der.is_empty())
}
