//! Validation of a whole [`NodeConfig`]: every error names the field.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;

use base64::Engine as _;
use thiserror::Error;

use super::{NodeConfig, OutboundKind, Protocol, Security, SsMethod, Transport};

/// Why a config was refused. The running config stays in force.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The text is not valid TOML/JSON for this structure.
    #[error("config does not parse: {0}")]
    Parse(String),
    /// A field has a value that can't work.
    #[error("{field}: {problem}")]
    Invalid {
        /// Path of the field, like `inbounds[2].port`.
        field: String,
        /// What is wrong and what would be right.
        problem: String,
    },
}

/// Most users with Shadowsocks keys a `2022-blake3-chacha20-poly1305` inbound serves.
/// Without identity headers every new TCP connection and every new UDP session is
/// opened by trying each user's key in turn (one ChaCha20-Poly1305 open of a 27-byte
/// chunk, about a microsecond each), so a prober's connection costs at most 1,000 of
/// them, about a millisecond of CPU.
pub const MAX_CHACHA_USERS: usize = 1000;

fn invalid(field: impl Into<String>, problem: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        field: field.into(),
        problem: problem.into(),
    }
}

pub use switchyard_proto::vless::parse_uuid;

/// Decodes a Shadowsocks 2022 key (standard base64) and checks its length.
pub fn ss_key(text: &str, method: SsMethod) -> Result<Vec<u8>, String> {
    let key = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| {
            // Never the offending character: the text is a secret.
            use base64::DecodeError as E;
            match e {
                E::InvalidByte(at, _) | E::InvalidLastSymbol(at, _) => {
                    format!("not base64 (a bad character at offset {at})")
                }
                E::InvalidLength(n) => format!("not base64 ({n} characters)"),
                E::InvalidPadding => "not base64 (bad padding)".to_owned(),
            }
        })?;
    if key.len() != method.key_len() {
        return Err(format!(
            "decodes to {} bytes; {method:?} needs {} (generate one with `openssl rand -base64 {}`)",
            key.len(),
            method.key_len(),
            method.key_len()
        ));
    }
    Ok(key)
}

/// A REALITY inbound's fields; `f` names a field of the inbound; `allow_private` is
/// `node.allow_private_destinations`.
fn validate_reality(
    ib: &super::InboundConfig,
    f: &dyn Fn(&str) -> String,
    allow_private: bool,
) -> Result<(), ConfigError> {
    use switchyard_proto::reality::{ClientVersion, PrivateKey, ShortId};
    let Security::Reality {
        dest,
        server_names,
        private_key,
        short_ids,
        max_time_diff_ms: _,
        min_client_version,
        max_client_version,
    } = &ib.security
    else {
        return Ok(());
    };
    if ib.protocol != Protocol::Vless || ib.transport != Transport::Tcp {
        return Err(invalid(
            f("security"),
            "REALITY is served for VLESS over plain TCP (transport tcp) only",
        ));
    }
    // The panel checks with the same function (switchyard_proto::dest).
    switchyard_proto::dest::check(dest, allow_private)
        .map_err(|e| invalid(f("security.dest"), e.to_string()))?;
    if server_names.is_empty() {
        return Err(invalid(
            f("security.server_names"),
            "needs at least one name: the target's, which clients put in their SNI",
        ));
    }
    for (j, name) in server_names.iter().enumerate() {
        if name.len() > 253 || !name.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(invalid(
                f(&format!("security.server_names[{j}]")),
                "is not a host name (or \"\" for a hello without SNI)",
            ));
        }
    }
    // Never the key itself in the message: it is a secret.
    PrivateKey::parse(private_key.expose()).map_err(|e| {
        invalid(
            f("security.private_key"),
            format!("{e}: an X25519 private key is 32 bytes in base64url (make one with `switchyard node reality-keys`)"),
        )
    })?;
    if short_ids.is_empty() {
        return Err(invalid(
            f("security.short_ids"),
            "needs at least one (\"\" is one)",
        ));
    }
    for (j, id) in short_ids.iter().enumerate() {
        ShortId::parse(id)
            .map_err(|e| invalid(f(&format!("security.short_ids[{j}]")), e.to_string()))?;
    }
    let version = |text: &Option<String>, field: &str| {
        text.as_deref()
            .map(ClientVersion::parse)
            .transpose()
            .map_err(|e| invalid(f(field), e.to_string()))
    };
    let min = version(min_client_version, "security.min_client_version")?;
    let max = version(max_client_version, "security.max_client_version")?;
    if let (Some(min), Some(max)) = (min, max)
        && min > max
    {
        return Err(invalid(
            f("security.max_client_version"),
            format!("{max} is older than min_client_version {min}"),
        ));
    }
    Ok(())
}

fn tag_ok(tag: &str) -> bool {
    !tag.is_empty()
        && tag.len() <= 64
        && tag
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

impl NodeConfig {
    /// Checks the whole config; the first problem found is returned, naming its field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        // A config read back from the control API and sent (or saved) unfilled: from
        // the API, a file or a reload alike.
        if let Some(field) = self.redacted_field() {
            return Err(invalid(
                field,
                format!(
                    "holds {:?}, what reads show in place of a secret; send the real value",
                    super::REDACTED
                ),
            ));
        }
        let n = &self.node;
        if !(1..=300).contains(&n.handshake_timeout_s) {
            return Err(invalid(
                "node.handshake_timeout_s",
                "must be 1 to 300 seconds",
            ));
        }
        if !(10..=86_400).contains(&n.idle_timeout_s) {
            return Err(invalid(
                "node.idle_timeout_s",
                "must be 10 to 86400 seconds",
            ));
        }
        if n.max_unauthenticated == 0 {
            return Err(invalid("node.max_unauthenticated", "must be at least 1"));
        }
        if !(1..=n.max_unauthenticated).contains(&n.max_unauthenticated_per_source) {
            return Err(invalid(
                "node.max_unauthenticated_per_source",
                "must be 1 to node.max_unauthenticated",
            ));
        }
        if n.unauthenticated_hold_s > 600 {
            return Err(invalid(
                "node.unauthenticated_hold_s",
                "must be at most 600 seconds",
            ));
        }
        if !self.control.listen.ip().is_loopback() {
            return Err(invalid(
                "control.listen",
                format!(
                    "{} is not a loopback address; the control API listens on loopback only",
                    self.control.listen
                ),
            ));
        }
        self.validate_inbounds()?;
        self.validate_users()?;
        self.validate_tunnels()?;
        self.validate_outbounds()
    }

    fn validate_inbounds(&self) -> Result<(), ConfigError> {
        let mut tags = HashSet::new();
        let mut ports: HashMap<u16, Vec<(IpAddr, usize)>> = HashMap::new();
        for (i, ib) in self.inbounds.iter().enumerate() {
            let f = |name: &str| format!("inbounds[{i}].{name}");
            if !tag_ok(&ib.tag) {
                return Err(invalid(f("tag"), "use 1-64 letters, digits, '-' or '_'"));
            }
            if !tags.insert(ib.tag.as_str()) {
                return Err(invalid(
                    f("tag"),
                    format!("{:?} is used by another inbound", ib.tag),
                ));
            }
            if ib.port == 0 {
                return Err(invalid(f("port"), "must be 1-65535"));
            }
            let same_port = ports.entry(ib.port).or_default();
            if let Some((_, j)) = same_port.iter().find(|(ip, _)| {
                *ip == ib.listen || ip.is_unspecified() || ib.listen.is_unspecified()
            }) {
                return Err(invalid(
                    f("port"),
                    format!(
                        "{}:{} overlaps inbounds[{j}] ({:?})",
                        ib.listen, ib.port, self.inbounds[*j].tag
                    ),
                ));
            }
            same_port.push((ib.listen, i));
            if let Transport::Ws { path, .. } = &ib.transport
                && !path.starts_with('/')
            {
                return Err(invalid(f("transport.path"), "must start with '/'"));
            }
            if let Transport::Ws { path, .. } = &ib.transport
                && let Some((_, query)) = path.split_once('?')
                && !query
                    .strip_prefix("ed=")
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            {
                return Err(invalid(
                    f("transport.path"),
                    "a query is not part of the path: only `?ed=N` (the early-data hint of share links, ignored) may follow it",
                ));
            }
            if let Security::Tls {
                cert,
                key,
                cert_pem,
                key_pem,
            } = &ib.security
            {
                let files = cert.is_some() || key.is_some();
                let inline = cert_pem.is_some() || key_pem.is_some();
                if files && inline {
                    return Err(invalid(
                        f("security"),
                        "give either cert and key (PEM files) or cert_pem and key_pem (inline PEM), not both",
                    ));
                }
                let missing = if files {
                    match (cert, key) {
                        (None, _) => Some("security.cert"),
                        (_, None) => Some("security.key"),
                        _ => None,
                    }
                } else if inline {
                    match (cert_pem, key_pem) {
                        (None, _) => Some("security.cert_pem"),
                        (_, None) => Some("security.key_pem"),
                        _ => None,
                    }
                } else {
                    Some("security.cert")
                };
                if let Some(field) = missing {
                    return Err(invalid(
                        f(field),
                        "missing: TLS needs cert and key (PEM files) or cert_pem and key_pem (inline PEM)",
                    ));
                }
            }
            if let Security::Reality { .. } = &ib.security {
                validate_reality(ib, &f, self.node.allow_private_destinations)?;
            }
            match ib.protocol {
                Protocol::Shadowsocks => {
                    let Some(method) = ib.method else {
                        return Err(invalid(
                            f("method"),
                            "a shadowsocks inbound needs a 2022 method",
                        ));
                    };
                    let Some(password) = &ib.password else {
                        return Err(invalid(
                            f("password"),
                            "a shadowsocks inbound needs the server key",
                        ));
                    };
                    ss_key(password.expose(), method).map_err(|p| invalid(f("password"), p))?;
                    if ib.transport != Transport::Tcp || ib.security != Security::None {
                        return Err(invalid(
                            f("transport"),
                            "shadowsocks runs on plain TCP/UDP (it brings its own encryption)",
                        ));
                    }
                    if ib.fallback.is_some() {
                        return Err(invalid(f("fallback"), "shadowsocks has no fallback"));
                    }
                    let keyed = self
                        .users
                        .iter()
                        .filter(|u| u.shadowsocks.is_some())
                        .count();
                    if method == SsMethod::Chacha20Poly1305 && keyed > MAX_CHACHA_USERS {
                        return Err(invalid(
                            f("method"),
                            format!(
                                "2022-blake3-chacha20-poly1305 finds a connection's user by trying every key, so it serves at most {MAX_CHACHA_USERS} users ({keyed} have keys): use 2022-blake3-aes-128-gcm or -256-gcm, whose identity headers name the user"
                            ),
                        ));
                    }
                }
                Protocol::Socks => {
                    if ib.transport != Transport::Tcp {
                        return Err(invalid(f("transport"), "socks runs on plain TCP"));
                    }
                    if ib.fallback.is_some() {
                        return Err(invalid(f("fallback"), "socks has no fallback"));
                    }
                }
                Protocol::Vless | Protocol::Trojan => {}
            }
            if ib.flow.is_some()
                && (ib.protocol != Protocol::Vless
                    || ib.transport != Transport::Tcp
                    || matches!(ib.security, Security::None))
            {
                return Err(invalid(
                    f("flow"),
                    "xtls-rprx-vision needs VLESS over TCP with TLS or REALITY (its direct copy writes to the TCP connection under the TLS)",
                ));
            }
            if ib.protocol != Protocol::Shadowsocks
                && (ib.method.is_some() || ib.password.is_some())
            {
                return Err(invalid(
                    f("method"),
                    "method and password are for shadowsocks inbounds",
                ));
            }
        }
        Ok(())
    }

    fn validate_users(&self) -> Result<(), ConfigError> {
        let mut names = HashSet::new();
        let mut seen: HashMap<(&str, String), usize> = HashMap::new();
        for (i, u) in self.users.iter().enumerate() {
            let f = |name: &str| format!("users[{i}].{name}");
            if u.name.is_empty() || u.name.len() > 128 || u.name.chars().any(char::is_control) {
                return Err(invalid(f("name"), "use 1-128 printable characters"));
            }
            if !names.insert(u.name.as_str()) {
                return Err(invalid(
                    f("name"),
                    format!("{:?} is used by another user", u.name),
                ));
            }
            if let Some(id) = &u.vless
                && parse_uuid(id.expose()).is_none()
            {
                return Err(invalid(
                    f("vless"),
                    "is not a UUID (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)",
                ));
            }
            if let Some(key) = &u.shadowsocks {
                for ib in self
                    .inbounds
                    .iter()
                    .filter(|ib| ib.protocol == Protocol::Shadowsocks)
                {
                    if let Some(method) = ib.method {
                        ss_key(key.expose(), method).map_err(|p| {
                            invalid(f("shadowsocks"), format!("for inbound {:?}: {p}", ib.tag))
                        })?;
                    }
                }
            }
            if u.address_limit == Some(0) {
                return Err(invalid(
                    f("address_limit"),
                    "must be at least 1 (omit it for no limit)",
                ));
            }
            let creds = [
                (
                    "vless",
                    u.vless
                        .as_ref()
                        .map(|s| s.expose().to_ascii_lowercase().replace('-', "")),
                ),
                ("trojan", u.trojan.as_ref().map(|s| s.expose().to_owned())),
                (
                    "shadowsocks",
                    u.shadowsocks.as_ref().map(|s| s.expose().to_owned()),
                ),
            ];
            for (kind, cred) in creds {
                if let Some(cred) = cred
                    && let Some(j) = seen.insert((kind, cred), i)
                {
                    return Err(invalid(
                        f(kind),
                        format!(
                            "the same credential as users[{j}] ({:?}); each user needs its own",
                            self.users[j].name
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    fn validate_tunnels(&self) -> Result<(), ConfigError> {
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
            if !(1..=8).contains(&t.profiles.len()) {
                return Err(invalid(f("profiles"), "a tunnel has 1 to 8 profiles"));
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
            }
            if !(1..=64).contains(&t.window_mib) {
                return Err(invalid(f("window_mib"), "must be 1 to 64 (MiB)"));
            }
            let direct = t.mode == super::TunnelMode::Direct;
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
                let ok = |p: &String| p.parse::<switchyard_tunnel::link::Pin>().is_ok();
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
                let super::TunnelTransport::Reality {
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
                        if switchyard_tunnel::credentials::Credential::from_hex(
                            o.credential.expose(),
                        )
                        .is_none()
                        {
                            return Err(invalid(
                                f(&format!("relay.origins[{j}].credential")),
                                "must be 64 hex digits",
                            ));
                        }
                        if o.previous_credential.as_ref().is_some_and(|p| {
                            switchyard_tunnel::credentials::Credential::from_hex(p.expose())
                                .is_none()
                        }) {
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
                    if switchyard_tunnel::credentials::Credential::from_hex(
                        origin.credential.expose(),
                    )
                    .is_none()
                    {
                        return Err(invalid(f("origin.credential"), "must be 64 hex digits"));
                    }
                    if origin.previous_credential.as_ref().is_some_and(|p| {
                        switchyard_tunnel::credentials::Credential::from_hex(p.expose()).is_none()
                    }) {
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

    fn validate_outbounds(&self) -> Result<(), ConfigError> {
        let mut tags = HashSet::new();
        for (i, o) in self.outbounds.iter().enumerate() {
            let field = format!("outbounds[{i}].tag");
            if !tag_ok(&o.tag) {
                return Err(invalid(field, "use 1-64 letters, digits, '-' or '_'"));
            }
            if !tags.insert(o.tag.as_str()) {
                return Err(invalid(
                    field,
                    format!("{:?} is used by another outbound", o.tag),
                ));
            }
            let builtin = match o.tag.as_str() {
                "direct" => Some(OutboundKind::Direct),
                "block" => Some(OutboundKind::Block),
                _ => None,
            };
            if builtin.is_some_and(|b| b != o.kind) {
                return Err(invalid(
                    field,
                    format!("{:?} is a built-in outbound of another type", o.tag),
                ));
            }
        }
        for (i, rule) in self.route.rules.iter().enumerate() {
            if rule.is_catch_all() {
                return Err(invalid(
                    format!("route.rules[{i}]"),
                    "has no condition; set route.final for what no rule matches",
                ));
            }
            if self.via(&rule.outbound).is_none() {
                return Err(invalid(
                    format!("route.rules[{i}].outbound"),
                    format!("no outbound is tagged {:?}", rule.outbound),
                ));
            }
        }
        if self.via(&self.final_tag()).is_none() {
            return Err(invalid(
                "route.final",
                format!("no outbound is tagged {:?}", self.final_tag()),
            ));
        }
        Ok(())
    }
}
