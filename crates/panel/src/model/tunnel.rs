//! Tunnels as the panel keeps them (`docs/tunnel.md`): one relay, its origins, the
//! mode, the balancing of profiles, up to eight profiles and the routing rules that
//! choose the tunnel when a relay carries several. Pure: the checks here need no
//! database; the store checks what does (servers exist, ports are free).
//!
//! What is derived is not kept: an origin's name is `server-<id>` (so renaming a server
//! changes no credential), its credential comes from the panel's secret, the tunnel's
//! name and the origin's name, and the tunnel's tag and certificate name from the
//! tunnel's name, which therefore never changes after saving.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{FieldError, Id, check_host};

#[path = "tunnel_transport.rs"]
mod transport;
pub use transport::{LinkTransport, OuterTls};

/// Most profiles of one tunnel: the node's rule.
pub use switchyard_config::MAX_PROFILES;
/// Most links an origin keeps per profile.
pub const MAX_LINKS: usize = 16;
/// Links an origin keeps on a profile that names none (and the tunnel none either).
pub const DEFAULT_LINKS: usize = 4;
/// Most addresses one origin of a direct-mode tunnel is dialed at.
pub const MAX_ORIGIN_ADDRESSES: usize = 8;
/// Most entries of each kind of routing rule.
pub const MAX_RULES: usize = 256;
/// The port of a new tunnel's profile when none is given.
pub const DEFAULT_PORT: u16 = 7443;
/// The target site a REALITY profile borrows when it names none (the panel's
/// `tunnels.reality_dest` overrides it): a large site on TLS 1.3 and HTTP/2 whose
/// certificate a prober expects to see on port 443 of any address. Xray's own
/// examples use this one; 3x-ui used `yahoo.com:443` and now picks from a list.
pub const DEFAULT_REALITY_DEST: &str = "www.microsoft.com:443";

/// Who listens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum TunnelMode {
    /// The relay listens and every origin dials it (origins need no open port).
    #[default]
    Reverse,
    /// The relay dials every origin.
    Direct,
}

/// How the relay uses several profiles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum TunnelBalancing {
    /// Every connected profile; a new connection takes the link with the fewest streams.
    #[default]
    Distribute,
    /// The first connected profile in the list; the next only when it has no links.
    Priority,
}

/// How a profile's links are secured.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum LinkSecurity {
    /// TLS 1.3 with the certificate the panel issues for the tunnel, pinned by the
    /// other side.
    #[default]
    Tls,
    /// TLS 1.3 with REALITY, on TCP only: the listening side answers only the
    /// tunnel's dialing side (its hello sealed with the tunnel's REALITY key) and
    /// splices everyone else, byte for byte, to the profile's target site
    /// (`reality_dest`), so a prober sees that site. The panel makes the key pair and
    /// the short id.
    Reality,
}

/// One way into the tunnel: a port, a security, a transport, and the listening side's
/// link addresses.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TunnelProfile {
    /// The listening side's port.
    #[schema(minimum = 1, maximum = 65535)]
    pub port: u16,
    /// Link security, `reality` or `tls`; always set in answers. Omitted on a new
    /// tunnel: REALITY for the first profile, TLS for the others; omitted on a change:
    /// the security of the tunnel's profile on the same port (TLS for a new port).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security: Option<LinkSecurity>,
    /// Link transport (REALITY: `tcp` only).
    #[serde(default)]
    pub transport: LinkTransport,
    /// Reverse mode: the relay's link addresses (`host:port`) the origins dial, all at
    /// once. Empty: the relay server's address at `port`. Direct mode: unused (the
    /// relay dials each origin server's address at `port`).
    #[serde(default)]
    pub addresses: Vec<String>,
    /// REALITY only: the target site (`host:port`) the listening side splices every
    /// connection but the tunnel's own to: what a prober sees. Omitted: the
    /// profile's current one on a change, else the panel's `tunnels.reality_dest`
    /// (default `www.microsoft.com:443`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(example = "www.microsoft.com:443")]
    pub reality_dest: Option<String>,
    /// REALITY only: the server name (SNI) the dialing side sends, one of the target
    /// site's names. Omitted: the host of `reality_dest` (kept from the current
    /// profile when the target is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reality_server_name: Option<String>,
    /// Links each origin keeps on this profile (1–16), spread over its addresses:
    /// the profile's weight in the pool (one with six takes three times the streams of
    /// one with two). Always set in answers; omitted: the tunnel's `links`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 16)]
    pub links: Option<usize>,
}

impl Default for TunnelProfile {
    fn default() -> Self {
        Self {
            port: DEFAULT_PORT,
            security: None,
            transport: LinkTransport::Tcp,
            addresses: Vec::new(),
            reality_dest: None,
            reality_server_name: None,
            links: None,
        }
    }
}

impl TunnelProfile {
    /// The profile's security (TLS when unset: what every profile was before REALITY).
    pub fn link_security(&self) -> LinkSecurity {
        self.security.unwrap_or(LinkSecurity::Tls)
    }
}

/// When a relay carries two or more tunnels, the connections these rules match go
/// into this tunnel (with one tunnel, it is the relay's final outbound and the rules
/// are not needed).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TunnelRules {
    /// Exact domains (`example.com`).
    #[serde(default)]
    pub domains: Vec<String>,
    /// Domain suffixes (`example.com` matches it and every subdomain).
    #[serde(default)]
    pub suffixes: Vec<String>,
    /// Destination networks (`10.0.0.0/8`, `2001:db8::/32`).
    #[serde(default)]
    pub cidrs: Vec<String>,
    /// Destination ports.
    #[serde(default)]
    pub ports: Vec<u16>,
}

impl TunnelRules {
    /// Whether no rule is set.
    pub fn is_empty(&self) -> bool {
        self.domains.is_empty()
            && self.suffixes.is_empty()
            && self.cidrs.is_empty()
            && self.ports.is_empty()
    }
}

/// A new or changed tunnel: what the operator fills in (nothing security-related).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TunnelInput {
    /// The tunnel's name: 1–64 letters, digits and `_ . -`. It cannot change after
    /// saving (its tag, credentials and certificate name derive from it).
    #[schema(min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.-]+$")]
    pub name: String,
    /// The relay: the server users connect to, whose traffic goes into the tunnel.
    pub relay_server_id: Id,
    /// The origins, in order: the servers the traffic leaves from.
    pub origin_server_ids: Vec<Id>,
    /// Who listens (default `reverse`: the relay).
    #[serde(default)]
    pub mode: TunnelMode,
    /// How several profiles are used (default `distribute`).
    #[serde(default)]
    pub balancing: TunnelBalancing,
    /// The links of every profile that names none of its own (1–16, default 4). A
    /// profile's own `links` is its weight; this is kept for clients that set one
    /// value for the whole tunnel.
    #[serde(default = "default_links")]
    #[schema(minimum = 1, maximum = 16)]
    pub links: usize,
    /// The largest receive window a stream grows to, in MiB, on both halves (1–64,
    /// default 16: fills 1 Gbit/s at 130 ms; smaller bounds what a slow reader holds).
    #[serde(default = "default_window")]
    #[schema(minimum = 1, maximum = 64)]
    pub window_mib: u32,
    /// 1–8 profiles; default one REALITY profile on port 7443 in front of the
    /// panel's default target.
    #[serde(default = "default_profiles")]
    pub profiles: Vec<TunnelProfile>,
    /// What goes into this tunnel when its relay carries several.
    #[serde(default)]
    pub rules: TunnelRules,
    /// Off: the tunnel is kept but no node runs it.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Direct mode: the addresses the relay dials an origin at (each a host name or
    /// IP address, at every profile's port, all at once: hot standby). An origin not
    /// listed is dialed at its server's address. Kept, and unused, in reverse mode.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub origin_addresses: Vec<OriginAddresses>,
}

/// The addresses the relay dials one origin at, in direct mode.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OriginAddresses {
    /// The origin's server (one of `origin_server_ids`).
    pub server_id: Id,
    /// 1–8 host names or IP addresses (no port: each profile's port is dialed at
    /// every one of them). They replace the server's address for this tunnel.
    pub addresses: Vec<String>,
}

fn default_links() -> usize {
    DEFAULT_LINKS
}

fn default_window() -> u32 {
    16
}

fn default_profiles() -> Vec<TunnelProfile> {
    vec![TunnelProfile::default()]
}

fn yes() -> bool {
    true
}

/// An origin of a tunnel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TunnelOrigin {
    /// The server.
    pub server_id: Id,
    /// Its name in the tunnel, `server-<id>` (what users are pinned by and the
    /// credential is derived from).
    pub name: String,
    /// Direct mode: the addresses the relay dials it at; absent (empty): its server's
    /// address.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<String>,
}

/// A tunnel as the API shows it: no key, no credential.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Tunnel {
    /// Id.
    pub id: Id,
    /// The name (fixed).
    pub name: String,
    /// The tag both halves carry (`tunnel-…`), derived from the name.
    pub tag: String,
    /// The name the tunnel's certificate is issued for, derived from the name.
    pub certificate_name: String,
    /// The pin of the current certificate (`cert:<sha256 hex>`).
    pub certificate_pin: String,
    /// The previous certificate's pin, still accepted while a re-issue rolls out.
    pub previous_pin: Option<String>,
    /// How many times the credentials were rotated (0: as first derived). Not a
    /// secret: the credentials derive from the panel's secret, which never leaves it.
    pub credential_epoch: i64,
    /// The previous epoch, whose credentials the listening side still accepts while
    /// a rotation rolls out; none once every server runs the current one.
    pub previous_credential_epoch: Option<i64>,
    /// The tunnel's REALITY public key (X25519, base64url), which its REALITY profiles'
    /// dialing side pins; none for a tunnel made before REALITY that never had a
    /// REALITY profile. The private key is never in an answer.
    pub reality_public_key: Option<String>,
    /// The relay.
    pub relay_server_id: Id,
    /// The origins, in order.
    pub origins: Vec<TunnelOrigin>,
    /// Who listens.
    pub mode: TunnelMode,
    /// How several profiles are used.
    pub balancing: TunnelBalancing,
    /// The links of a profile that names none (each profile's `links` says its own).
    pub links: usize,
    /// The largest receive window of a stream, MiB.
    pub window_mib: u32,
    /// The profiles.
    pub profiles: Vec<TunnelProfile>,
    /// What goes into this tunnel when its relay carries several.
    pub rules: TunnelRules,
    /// Whether nodes run it.
    pub enabled: bool,
    /// Unix ms.
    pub created_ms: i64,
}

/// The steps a tunnel's usage is kept at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum UsageStep {
    /// One minute, kept for 48 hours.
    Minute,
    /// One hour, kept for 90 days.
    Hour,
}

impl UsageStep {
    /// Both steps.
    pub const ALL: [Self; 2] = [Self::Minute, Self::Hour];

    /// The step's length.
    pub fn ms(self) -> i64 {
        match self {
            Self::Minute => 60_000,
            Self::Hour => 3_600_000,
        }
    }

    /// How long points of this step are kept.
    pub fn kept_ms(self) -> i64 {
        match self {
            Self::Minute => 48 * 3_600_000,
            Self::Hour => 90 * 24 * 3_600_000,
        }
    }

    /// The start of the step `at` falls in.
    pub fn start(self, at_ms: i64) -> i64 {
        at_ms.div_euclid(self.ms()) * self.ms()
    }
}

/// The payload bytes a tunnel carried in one step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct UsagePoint {
    /// The step's start, Unix ms.
    pub at_ms: i64,
    /// Payload bytes (both directions) the relay reported in it.
    pub bytes: u64,
}

/// The name of an origin server in every tunnel.
pub fn origin_name(server: Id) -> String {
    format!("server-{server}")
}

/// Checks a tunnel's name: 1–64 of letters, digits, `_ . -`.
pub fn check_tunnel_name(field: &str, name: &str) -> Result<(), FieldError> {
    if name.is_empty() || name.len() > 64 {
        return Err(FieldError::new(field, "must be 1 to 64 characters"));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
    {
        return Err(FieldError::new(
            field,
            "may contain only letters, digits and _ . -",
        ));
    }
    Ok(())
}

/// The host of a `host:port` (`[v6]:port` unbracketed), or the whole text when it
/// has no port.
fn host_of(address: &str) -> &str {
    let host = address.rsplit_once(':').map_or(address, |(h, _)| h);
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

impl TunnelInput {
    /// Fills in what the operator left out of the profiles' security. `current`: the
    /// tunnel's profiles before a change (none for a new tunnel); `reality_dest`: the
    /// panel's default target. A new tunnel's first profile is REALITY unless it says
    /// otherwise, its other profiles TLS; a changed tunnel's profile keeps the
    /// security (and REALITY target) of its profile on the same port. A REALITY
    /// profile's server name defaults to its target's host. A profile without
    /// `links` gets the tunnel's.
    pub fn fill_defaults(&mut self, current: Option<&[TunnelProfile]>, reality_dest: &str) {
        for p in &mut self.profiles {
            p.links = Some(p.links.unwrap_or(self.links));
        }
        for (i, p) in self.profiles.iter_mut().enumerate() {
            let before = current
                .and_then(|c| c.iter().find(|q| q.port == p.port))
                .filter(|b| b.link_security() == LinkSecurity::Reality);
            let security = p.security.unwrap_or(match (current, before) {
                (None, _) if i == 0 => LinkSecurity::Reality,
                (Some(_), Some(_)) => LinkSecurity::Reality,
                _ => LinkSecurity::Tls,
            });
            p.security = Some(security);
            if security != LinkSecurity::Reality || p.reality_dest.is_some() {
                continue;
            }
            match before.and_then(|b| Some((b.reality_dest.clone()?, b))) {
                Some((dest, b)) => {
                    p.reality_dest = Some(dest);
                    if p.reality_server_name.is_none() {
                        p.reality_server_name = b.reality_server_name.clone();
                    }
                }
                None => p.reality_dest = Some(reality_dest.to_owned()),
            }
        }
        for p in &mut self.profiles {
            if let (Some(dest), None) = (&p.reality_dest, &p.reality_server_name)
                && p.link_security() == LinkSecurity::Reality
            {
                p.reality_server_name = Some(host_of(dest).to_owned());
            }
        }
    }

    /// Checks everything that needs no database; the error names the field
    /// (`profiles[1].port`, `rules.cidrs[0]`).
    pub fn check(&self) -> Result<(), FieldError> {
        check_tunnel_name("name", &self.name)?;
        if self.origin_server_ids.is_empty() {
            return Err(FieldError::new(
                "origin_server_ids",
                "a tunnel needs at least one origin",
            ));
        }
        for (i, id) in self.origin_server_ids.iter().enumerate() {
            let field = format!("origin_server_ids[{i}]");
            if *id == self.relay_server_id {
                return Err(FieldError::new(
                    field,
                    "the relay cannot be an origin of its own tunnel",
                ));
            }
            if self.origin_server_ids[..i].contains(id) {
                return Err(FieldError::new(
                    field,
                    format!("server {id} is listed twice"),
                ));
            }
        }
        if !(1..=MAX_LINKS).contains(&self.links) {
            return Err(FieldError::new("links", "must be 1 to 16"));
        }
        self.check_origin_addresses()?;
        if !(1..=64).contains(&self.window_mib) {
            return Err(FieldError::new("window_mib", "must be 1 to 64 (MiB)"));
        }
        if self.profiles.is_empty() || self.profiles.len() > MAX_PROFILES {
            return Err(FieldError::new(
                "profiles",
                format!("a tunnel has 1 to {MAX_PROFILES} profiles"),
            ));
        }
        for (i, p) in self.profiles.iter().enumerate() {
            check_profile(&format!("profiles[{i}]"), p)?;
            if let Some(j) = self.profiles[..i].iter().position(|q| q.port == p.port) {
                return Err(FieldError::new(
                    format!("profiles[{i}].port"),
                    format!("port {} is profile {j}'s", p.port),
                ));
            }
        }
        check_rules(&self.rules)
    }

    /// `origin_addresses`: origins of this tunnel, each once, with 1–8 hosts.
    fn check_origin_addresses(&self) -> Result<(), FieldError> {
        if self.origin_addresses.len() > self.origin_server_ids.len() {
            return Err(FieldError::new(
                "origin_addresses",
                "at most one entry per origin",
            ));
        }
        for (i, o) in self.origin_addresses.iter().enumerate() {
            let field = format!("origin_addresses[{i}]");
            if !self.origin_server_ids.contains(&o.server_id) {
                return Err(FieldError::new(
                    format!("{field}.server_id"),
                    format!("server {} is not an origin of this tunnel", o.server_id),
                ));
            }
            if self.origin_addresses[..i]
                .iter()
                .any(|q| q.server_id == o.server_id)
            {
                return Err(FieldError::new(
                    format!("{field}.server_id"),
                    format!("server {} is listed twice", o.server_id),
                ));
            }
            if o.addresses.is_empty() || o.addresses.len() > MAX_ORIGIN_ADDRESSES {
                return Err(FieldError::new(
                    format!("{field}.addresses"),
                    "1 to 8 host names or IP addresses (leave the origin out for its server's address)",
                ));
            }
            for (j, a) in o.addresses.iter().enumerate() {
                let at = format!("{field}.addresses[{j}]");
                check_host(&at, a)?;
                if o.addresses[..j].contains(a) {
                    return Err(FieldError::new(at, format!("{a:?} is listed twice")));
                }
            }
        }
        Ok(())
    }

    /// The addresses the relay dials origin `server` at, as the input says (empty:
    /// its server's address).
    pub fn addresses_of(&self, server: Id) -> &[String] {
        self.origin_addresses
            .iter()
            .find(|o| o.server_id == server)
            .map_or(&[], |o| o.addresses.as_slice())
    }
}

fn check_profile(field: &str, p: &TunnelProfile) -> Result<(), FieldError> {
    if p.port == 0 {
        return Err(FieldError::new(
            format!("{field}.port"),
            "must be 1 to 65535",
        ));
    }
    if p.links.is_some_and(|n| !(1..=MAX_LINKS).contains(&n)) {
        return Err(FieldError::new(format!("{field}.links"), "must be 1 to 16"));
    }
    if p.link_security() == LinkSecurity::Reality {
        check_reality(field, p)?;
    } else {
        for (name, set) in [
            ("reality_dest", p.reality_dest.is_some()),
            ("reality_server_name", p.reality_server_name.is_some()),
        ] {
            if set {
                return Err(FieldError::new(
                    format!("{field}.{name}"),
                    "only a REALITY profile has a target site: set security to reality or leave this out",
                ));
            }
        }
    }
    transport::check_transport(field, &p.transport)?;
    if p.addresses.len() > 16 {
        return Err(FieldError::new(
            format!("{field}.addresses"),
            "at most 16 addresses",
        ));
    }
    for (j, a) in p.addresses.iter().enumerate() {
        check_address(&format!("{field}.addresses[{j}]"), a)?;
    }
    Ok(())
}

/// A REALITY profile: on TCP, with a target `host:port` and a server name that is a
/// name (a TLS client sends no address as SNI).
fn check_reality(field: &str, p: &TunnelProfile) -> Result<(), FieldError> {
    if p.transport != LinkTransport::Tcp {
        return Err(FieldError::new(
            format!("{field}.transport"),
            "REALITY links run on TCP only: use {\"type\":\"tcp\"}, or TLS security for WebSocket, HTTPUpgrade, XHTTP or gRPC",
        ));
    }
    let dest_field = format!("{field}.reality_dest");
    let Some(dest) = &p.reality_dest else {
        return Err(FieldError::new(
            dest_field,
            "a REALITY profile needs its target site, host:port",
        ));
    };
    check_address(&dest_field, dest)?;
    // The node's form too (it refuses what a resolver reads as an address, `127.1`);
    // whether a private target is allowed depends on the listening server
    // (`Service::check_tunnel_dests`).
    super::check_dest(&dest_field, dest, true)?;
    let name_field = format!("{field}.reality_server_name");
    let name = p.reality_server_name.as_deref().unwrap_or_default();
    if name.parse::<std::net::IpAddr>().is_ok() || name.is_empty() {
        return Err(FieldError::new(
            name_field,
            "one of the target site's names (the target is an address: name it)",
        ));
    }
    check_host(&name_field, name)
}

/// Checks a `host:port` (`[v6]:port` for IPv6).
pub fn check_address(field: &str, address: &str) -> Result<(), FieldError> {
    let bad = || FieldError::new(field, format!("{address:?} is not host:port"));
    let (host, port) = address.rsplit_once(':').ok_or_else(bad)?;
    match port.parse::<u16>() {
        Ok(p) if p > 0 => {}
        _ => return Err(bad()),
    }
    // An IPv6 address is bracketed (`[2001:db8::1]:7443`), anything else has no colon.
    match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => v6
            .parse::<std::net::Ipv6Addr>()
            .map(|_| ())
            .map_err(|_| bad()),
        None if host.contains(':') => Err(bad()),
        None => check_host(field, host),
    }
}

fn check_rules(r: &TunnelRules) -> Result<(), FieldError> {
    let lists = [
        ("rules.domains", r.domains.len()),
        ("rules.suffixes", r.suffixes.len()),
        ("rules.cidrs", r.cidrs.len()),
        ("rules.ports", r.ports.len()),
    ];
    if let Some((field, _)) = lists.iter().find(|(_, n)| *n > MAX_RULES) {
        return Err(FieldError::new(*field, "at most 256 entries"));
    }
    for (field, names) in [
        ("rules.domains", &r.domains),
        ("rules.suffixes", &r.suffixes),
    ] {
        for (i, name) in names.iter().enumerate() {
            let field = format!("{field}[{i}]");
            if name.parse::<std::net::IpAddr>().is_ok() {
                return Err(FieldError::new(
                    field,
                    "is an address: put it in rules.cidrs",
                ));
            }
            check_host(&field, name)?;
        }
    }
    for (i, cidr) in r.cidrs.iter().enumerate() {
        check_cidr(&format!("rules.cidrs[{i}]"), cidr)?;
    }
    if let Some(i) = r.ports.iter().position(|p| *p == 0) {
        return Err(FieldError::new(
            format!("rules.ports[{i}]"),
            "must be 1 to 65535",
        ));
    }
    Ok(())
}

/// Checks `address/length`.
fn check_cidr(field: &str, cidr: &str) -> Result<(), FieldError> {
    let bad = || FieldError::new(field, format!("{cidr:?} is not address/length"));
    let (addr, len) = cidr.split_once('/').ok_or_else(bad)?;
    let addr: std::net::IpAddr = addr.parse().map_err(|_| bad())?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    match len.parse::<u8>() {
        Ok(n) if n <= max => Ok(()),
        _ => Err(bad()),
    }
}

/// The certificate the panel issued for a tunnel: what its listening half presents.
#[derive(Clone, PartialEq, Eq)]
pub struct TunnelCertificate {
    /// The certificate (PEM).
    pub cert_pem: String,
    /// Its private key (PEM). A secret: never in the API, never in a log.
    pub key_pem: String,
    /// Its pin (`cert:<hex>`), what the dialing half accepts.
    pub pin: String,
}

impl std::fmt::Debug for TunnelCertificate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TunnelCertificate")
            .field("pin", &self.pin)
            .field("key_pem", &switchyard_proto::entry::REDACTED)
            .finish_non_exhaustive()
    }
}

/// The REALITY key pair and short id the panel made for a tunnel: what its REALITY
/// profiles run with. The listening half holds the private key, both halves the
/// public key and short id.
#[derive(Clone, PartialEq, Eq)]
pub struct TunnelRealityKeys {
    /// The X25519 private key (base64url). A secret: never in the API, never in a log.
    pub private_key: String,
    /// Its public key (base64url), shown in the tunnel's answers.
    pub public_key: String,
    /// The short id (8 random bytes, hex) the dialing side presents.
    pub short_id: String,
}

impl std::fmt::Debug for TunnelRealityKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TunnelRealityKeys")
            .field("public_key", &self.public_key)
            .field("short_id", &self.short_id)
            .field("private_key", &switchyard_proto::entry::REDACTED)
            .finish()
    }
}

#[cfg(test)]
#[path = "tunnel_tests.rs"]
mod tests;
