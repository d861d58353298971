//! The panel's configuration: one typed structure, read from TOML, overridden by
//! environment variables, validated as a whole. Every default lives here.
//!
//! Environment overrides (each wins over the file):
//! `SWITCHYARD_PANEL_LISTEN`, `SWITCHYARD_PANEL_CHANNEL_LISTEN`,
//! `SWITCHYARD_PANEL_PUBLIC_URL`, `SWITCHYARD_PANEL_CHANNEL_ADDRESS`,
//! `SWITCHYARD_PANEL_DATA_DIR`, `SWITCHYARD_PANEL_DATABASE_URL`,
//! `SWITCHYARD_PANEL_SUBSCRIPTION_LISTEN`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::subscription::agents::{AgentRule, check_rules};

/// Where the first admin's generated password is written (in the data directory).
pub const PASSWORD_FILE: &str = "admin-password.txt";

/// A config that can't be used; names the field.
#[derive(Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum PanelConfigError {
    /// The file is not valid TOML or has unknown fields.
    #[error("panel config: {0}")]
    Parse(String),
    /// A field has a bad value.
    #[error("panel config: {field}: {message}")]
    Invalid {
        /// The field (`listen`, `channel.address`).
        field: String,
        /// Why.
        message: String,
    },
}

fn invalid(field: &str, message: impl Into<String>) -> PanelConfigError {
    PanelConfigError::Invalid {
        field: field.into(),
        message: message.into(),
    }
}

/// The whole panel configuration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PanelConfig {
    /// The API, the web UI and (unless `subscription_listen` is set) subscriptions.
    /// Default `127.0.0.1:2053`: reachable only from this machine until the operator
    /// puts TLS in front (a reverse proxy) or opens it on purpose.
    pub listen: SocketAddr,
    /// A second listener that serves only `/sub/{token}`, for operators who give
    /// subscriptions their own port or domain. Unset by default.
    pub subscription_listen: Option<SocketAddr>,
    /// The URL users and operators reach the panel at (`https://panel.example.com`),
    /// used in subscription links shown by the API. Default: `http://` + `listen`.
    /// An `https://` URL also marks session cookies `Secure`.
    pub public_url: Option<String>,
    /// Where the data lives: the SQLite database, the first admin's password file.
    pub data_dir: PathBuf,
    /// `postgres://...` to use PostgreSQL (several instances may share it); unset
    /// means SQLite at `data_dir/panel.db`.
    pub database_url: Option<String>,
    /// The node channel.
    pub channel: ChannelSettings,
    /// Sessions and logins.
    pub auth: AuthSettings,
    /// Serve `/metrics` without a token (for a Prometheus that cannot send one). Off:
    /// the metrics name servers and counts users.
    pub metrics_without_token: bool,
    /// What subscriptions say and who gets which format.
    pub subscription: SubscriptionSettings,
    /// What new tunnels get when the operator leaves it out.
    pub tunnels: TunnelSettings,
    /// The HTTP listeners' limits and the reverse proxies trusted to name the client.
    pub http: HttpSettings,
    /// What the panel hands out to install nodes (`docs/install.md`).
    pub install: InstallSettings,
    /// HTTPS on the API's and the subscriptions' listeners with this certificate
    /// (renewed in place: the files are read again when they change). Unset: plain
    /// HTTP, for a panel behind a TLS reverse proxy or on loopback.
    pub tls: Option<TlsFiles>,
    /// HTTPS with a certificate the panel obtains and renews itself from an ACME
    /// server (Let's Encrypt by default), answering its TLS-ALPN-01 challenge on
    /// `listen`. Not with `tls`.
    pub acme: Option<AcmeSettings>,
    /// When webhooks tell of a user's usage and expiry (`docs/panel.md`).
    pub webhooks: crate::model::webhook::Thresholds,
}

/// A certificate from an ACME server: the settings nodes' inbounds use too.
pub use switchyard_config::AcmeSettings;
/// Let's Encrypt's production directory.
pub use switchyard_config::acme::LETS_ENCRYPT;

/// The identifiers the panel's certificate is asked for: the configured ones, else
/// `public_url`'s host.
pub fn acme_identifiers(acme: &AcmeSettings, public_base: &str) -> Vec<String> {
    if !acme.identifiers.is_empty() {
        return acme.identifiers.clone();
    }
    public_base
        .split("://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .map(|authority| match authority.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or_default().to_owned(),
            None => authority
                .rsplit_once(':')
                .map_or(authority, |(h, _)| h)
                .to_owned(),
        })
        .filter(|h| !h.is_empty())
        .into_iter()
        .collect()
}

/// The panel's own certificate.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsFiles {
    /// The certificate chain (PEM), leaf first.
    pub certificate: PathBuf,
    /// Its private key (PEM).
    pub key: PathBuf,
    /// How often the files are checked for a renewal, in seconds. Default 60: a
    /// renewal done days before expiry is served within a minute.
    #[serde(default = "sixty")]
    pub reload_s: u64,
}

fn sixty() -> u64 {
    60
}

/// The install script and binary the panel serves to new servers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InstallSettings {
    /// The binary served at `/install/switchyard-linux-<arch>`, whose sha256 join
    /// tokens pin. Default: the panel's own executable (one binary holds the panel
    /// and the node), for this machine's architecture.
    pub binary: Option<PathBuf>,
    /// Downloads of the binary at once; past it a download is answered 503 with
    /// `Retry-After`. Default 4: a handful of servers installing together, while
    /// anonymous fetches of a large file cannot take the panel's uplink.
    pub max_downloads: usize,
}

impl Default for InstallSettings {
    fn default() -> Self {
        Self {
            binary: None,
            max_downloads: 4,
        }
    }
}

/// Tunnels' defaults.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TunnelSettings {
    /// The target site (`host:port`) of a REALITY profile that names none: the
    /// listening side splices every connection that is not the tunnel's own to it, so
    /// a prober sees that site. Default `www.microsoft.com:443`: a large site on
    /// TLS 1.3 whose certificate is unremarkable at any address. Choose one near your
    /// servers (same network or country) that serves TLS 1.3 and HTTP/2; the server
    /// name sent defaults to its host. The node connects to it only when it splices.
    pub reality_dest: String,
}

impl Default for TunnelSettings {
    fn default() -> Self {
        Self {
            reality_dest: crate::model::tunnel::DEFAULT_REALITY_DEST.to_owned(),
        }
    }
}

/// Apps that send no `x-hwid`, for users with a device limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WithoutHwid {
    /// Served as if the limit were not there: the limit then binds only apps that
    /// identify the device, and anyone with the token can pass it by sending no
    /// `x-hwid`. An operator's explicit choice, never the default.
    Serve,
    /// Given no servers, with an `announce` that says why (default: a fetch that
    /// does not say which device it is cannot be counted, so it must not pass a
    /// limit).
    #[default]
    Refuse,
}

/// Subscriptions: the headers apps show, the User-Agent rules, device limits and the
/// balancer's stickiness.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SubscriptionSettings {
    /// The profile's title in apps (`profile-title`). Default `"Switchyard"`.
    pub title: String,
    /// How often apps fetch again, in hours (`profile-update-interval`). Default 12:
    /// twice a day picks up new servers soon enough and costs nothing.
    pub update_interval_hours: u32,
    /// Where users get help (`support-url`), shown by Hiddify and Happ.
    pub support_url: Option<String>,
    /// A page for people (`profile-web-page-url`); default: the subscription URL
    /// itself, which browsers get as a page.
    pub web_page_url: Option<String>,
    /// A notice apps show (`announce`), e.g. maintenance hours.
    pub announce: Option<String>,
    /// User-Agent rules tried before the built-in table (`docs/subscriptions.md`).
    pub agents: Vec<AgentRule>,
    /// What users with a device limit get from apps that send no `x-hwid`.
    pub without_hwid: WithoutHwid,
    /// A user keeps the inbound a route gave them unless another is better by more
    /// than this many percent on the route's own metric. Default 25.
    pub hysteresis_percent: u32,
    /// Fetches one token may make at once before it must wait (`429` with
    /// `Retry-After`). Default 60: a household's devices starting together and a
    /// user tapping "update" a few times stay far below it. 0 turns the limit off.
    pub fetch_burst: u32,
    /// Then one more fetch per this many seconds. Default 10 (360 an hour): apps
    /// fetch every few hours, so only a script hammering a token ever waits.
    pub fetch_refill_s: u32,
    /// The resolver a VPN config asks through the proxy (sing-box's own apps:
    /// `https://IP[:port][/path]`, `tls://`, `tcp://` or `udp://IP[:port]`). Default
    /// Cloudflare's over HTTPS, `https://1.1.1.1/dns-query`.
    pub remote_dns: String,
    /// Split tunnelling in every app's config (`docs/subscriptions.md`).
    pub routing: crate::model::routing::RoutingSettings,
    /// Paths besides `sub` under which the subscription links of an imported panel
    /// are answered (Marzban's `XRAY_SUBSCRIPTION_PATH` when it was not `sub`), e.g.
    /// `["my/sub"]` answers `/my/sub/TOKEN`. Default none (`docs/migration.md`).
    pub old_paths: Vec<String>,
}

impl Default for SubscriptionSettings {
    fn default() -> Self {
        Self {
            title: "Switchyard".to_owned(),
            update_interval_hours: 12,
            support_url: None,
            web_page_url: None,
            announce: None,
            agents: Vec::new(),
            without_hwid: WithoutHwid::Refuse,
            hysteresis_percent: 25,
            fetch_burst: 60,
            fetch_refill_s: 10,
            remote_dns: switchyard_proto::vpn::DEFAULT_REMOTE_DNS.to_owned(),
            routing: Default::default(),
            old_paths: Vec::new(),
        }
    }
}

/// Where nodes dial in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ChannelSettings {
    /// The listener nodes dial (mutual TLS). Default `0.0.0.0:2054`: nodes are on
    /// other machines.
    pub listen: SocketAddr,
    /// The `host:port` nodes dial, written into join tokens. Default: `listen`'s port
    /// on the host of `public_url` (or `listen` itself when that is unset and not the
    /// unspecified address).
    pub address: Option<String>,
    /// How long a join token stays valid, in seconds. 1 hour: enough to paste the
    /// command on the new server, short enough that a leaked one is soon worthless.
    pub join_token_ttl_s: u64,
}

/// Sessions and the login rate limit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthSettings {
    /// A session lasts this long, in seconds. 12 h: a working day.
    pub session_ttl_s: u64,
    /// Failed logins allowed per client address (and per login name, from the
    /// addresses that failed it) before they must wait. 10.
    pub login_burst: u32,
    /// Then one more attempt per this many seconds. 30 s: a guesser gets 120 tries an
    /// hour, an operator who mistyped waits half a minute. The same budget applies to
    /// each login name across addresses, but it holds back only the addresses that
    /// failed that name (`docs/panel.md`, "Logins").
    pub login_refill_s: u64,
    /// Password checks (argon2, about 19 MiB and tens of milliseconds each) run at
    /// most this many at once. 4: the panel's memory for them stays under 80 MiB, and
    /// a login still answers within a fraction of a second on two cores.
    pub max_password_checks: u32,
    /// A password check waits at most this many seconds for its turn, then answers
    /// 503 with `Retry-After`. 5 s: long enough for a burst of honest logins.
    pub password_check_wait_s: u64,
}

impl Default for PanelConfig {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 2053)),
            subscription_listen: None,
            public_url: None,
            data_dir: PathBuf::from("switchyard-data"),
            database_url: None,
            channel: ChannelSettings::default(),
            auth: AuthSettings::default(),
            metrics_without_token: false,
            subscription: SubscriptionSettings::default(),
            tunnels: TunnelSettings::default(),
            http: HttpSettings::default(),
            install: InstallSettings::default(),
            tls: None,
            acme: None,
            webhooks: crate::model::webhook::Thresholds::default(),
        }
    }
}

impl Default for ChannelSettings {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([0, 0, 0, 0], 2054)),
            address: None,
            join_token_ttl_s: 3600,
        }
    }
}

impl Default for AuthSettings {
    fn default() -> Self {
        Self {
            session_ttl_s: 12 * 3600,
            login_burst: 10,
            login_refill_s: 30,
            max_password_checks: 4,
            password_check_wait_s: 5,
        }
    }
}

/// The HTTP listeners (the API's and the subscriptions'): how long a client may take
/// to send a request's headers, how many connections each holds, and which reverse
/// proxies may say who the client is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpSettings {
    /// A connection that has not sent a whole request head (request line and
    /// headers) this many seconds after it opened, or after its previous answer, is
    /// closed. 15 s: ample for a phone on a bad link, short enough that a client that
    /// trickles headers (slowloris) cannot hold connections.
    pub header_read_timeout_s: u64,
    /// Connections each listener holds at once; past it new ones are closed at once.
    /// 1024: far more than the UI, scripts and apps fetching subscriptions need, a few
    /// megabytes at most.
    pub max_connections: u32,
    /// Reverse proxies whose `X-Forwarded-For` is believed, as addresses or CIDR
    /// blocks (`127.0.0.1`, `10.0.0.0/8`, `::1`). Empty (the default): the header is
    /// ignored and the client is the connection's address. When the connection comes
    /// from one of these, the client is the right-most address in `X-Forwarded-For`
    /// that is not one of them.
    pub trusted_proxies: Vec<String>,
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            header_read_timeout_s: 15,
            max_connections: 1024,
            trusted_proxies: Vec::new(),
        }
    }
}

impl PanelConfig {
    /// Reads a TOML file (missing file: defaults), applies the environment, validates.
    pub fn load(path: Option<&Path>) -> Result<Self, PanelConfigError> {
        let mut config = match path {
            Some(p) => {
                let text = std::fs::read_to_string(p)
                    .map_err(|e| PanelConfigError::Parse(format!("{}: {e}", p.display())))?;
                toml::from_str(&text).map_err(|e| {
                    PanelConfigError::Parse(format!("{}: {}", p.display(), e.message()))
                })?
            }
            None => Self::default(),
        };
        config.apply_env(|k| std::env::var(k).ok())?;
        config.validate()?;
        Ok(config)
    }

    /// Applies `SWITCHYARD_PANEL_*` overrides read through `var`.
    pub fn apply_env(
        &mut self,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<(), PanelConfigError> {
        let addr = |field: &str, v: String| {
            v.parse::<SocketAddr>()
                .map_err(|_| invalid(field, format!("{v:?} is not an address:port")))
        };
        if let Some(v) = var("SWITCHYARD_PANEL_LISTEN") {
            self.listen = addr("listen", v)?;
        }
        if let Some(v) = var("SWITCHYARD_PANEL_SUBSCRIPTION_LISTEN") {
            self.subscription_listen = Some(addr("subscription_listen", v)?);
        }
        if let Some(v) = var("SWITCHYARD_PANEL_CHANNEL_LISTEN") {
            self.channel.listen = addr("channel.listen", v)?;
        }
        if let Some(v) = var("SWITCHYARD_PANEL_CHANNEL_ADDRESS") {
            self.channel.address = Some(v);
        }
        if let Some(v) = var("SWITCHYARD_PANEL_PUBLIC_URL") {
            self.public_url = Some(v);
        }
        if let Some(v) = var("SWITCHYARD_PANEL_DATA_DIR") {
            self.data_dir = PathBuf::from(v);
        }
        if let Some(v) = var("SWITCHYARD_PANEL_DATABASE_URL") {
            self.database_url = Some(v);
        }
        Ok(())
    }

    /// Checks the values together.
    pub fn validate(&self) -> Result<(), PanelConfigError> {
        if let Some(url) = &self.public_url
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err(invalid("public_url", "must start with http:// or https://"));
        }
        if let Some(url) = &self.database_url
            && !(url.starts_with("postgres://")
                || url.starts_with("postgresql://")
                || url.starts_with("sqlite://"))
        {
            return Err(invalid(
                "database_url",
                "must be a postgres:// or sqlite:// URL",
            ));
        }
        if self.channel.join_token_ttl_s == 0 {
            return Err(invalid("channel.join_token_ttl_s", "must be at least 1"));
        }
        if self.auth.session_ttl_s == 0 {
            return Err(invalid("auth.session_ttl_s", "must be at least 1"));
        }
        if self.auth.login_burst == 0 || self.auth.login_refill_s == 0 {
            return Err(invalid(
                "auth.login_burst",
                "login_burst and login_refill_s must be at least 1",
            ));
        }
        if self.auth.max_password_checks == 0 || self.auth.password_check_wait_s == 0 {
            return Err(invalid(
                "auth.max_password_checks",
                "max_password_checks and password_check_wait_s must be at least 1",
            ));
        }
        if self.http.header_read_timeout_s == 0 {
            return Err(invalid("http.header_read_timeout_s", "must be at least 1"));
        }
        if self.http.max_connections == 0 {
            return Err(invalid("http.max_connections", "must be at least 1"));
        }
        if let Some(tls) = &self.tls {
            if tls.certificate.as_os_str().is_empty() || tls.key.as_os_str().is_empty() {
                return Err(invalid("tls", "certificate and key must both be files"));
            }
            if tls.reload_s == 0 {
                return Err(invalid("tls.reload_s", "must be at least 1"));
            }
        }
        if let Some(acme) = &self.acme {
            if self.tls.is_some() {
                return Err(invalid("acme", "give either tls (files) or acme, not both"));
            }
            acme.check()
                .map_err(|p| invalid(&format!("acme.{}", p.field), p.problem))?;
            if acme_identifiers(acme, &self.public_base()).is_empty() {
                return Err(invalid(
                    "acme.identifiers",
                    "name the certificate's host (or set public_url)",
                ));
            }
        }
        if self.install.max_downloads == 0 {
            return Err(invalid("install.max_downloads", "must be at least 1"));
        }
        crate::proxies::TrustedProxies::parse(&self.http.trusted_proxies)
            .map_err(|e| invalid(&e.field, e.message))?;
        crate::model::tunnel::check_address("tunnels.reality_dest", &self.tunnels.reality_dest)
            .map_err(|e| invalid(&e.field, e.message))?;
        // The default target of every new REALITY profile, whatever its server: a
        // global one (a profile may still name a private target on a server that
        // allows private destinations).
        crate::model::check_dest("tunnels.reality_dest", &self.tunnels.reality_dest, false)
            .map_err(|e| invalid(&e.field, e.message))?;
        let host = self
            .tunnels
            .reality_dest
            .rsplit_once(':')
            .map_or("", |(h, _)| h);
        if host.starts_with('[') || host.parse::<std::net::IpAddr>().is_ok() {
            return Err(invalid(
                "tunnels.reality_dest",
                "must name the site (host:port): its host is the server name sent",
            ));
        }
        self.webhooks
            .check()
            .map_err(|e| invalid(&e.field, e.message))?;
        self.subscription.validate()
    }

    /// The database URL in force.
    pub fn database(&self) -> String {
        self.database_url
            .clone()
            .unwrap_or_else(|| format!("sqlite://{}", self.data_dir.join("panel.db").display()))
    }

    /// The panel's public base URL (no trailing slash).
    pub fn public_base(&self) -> String {
        let scheme = if self.tls.is_some() || self.acme.is_some() {
            "https"
        } else {
            "http"
        };
        self.public_url
            .clone()
            .unwrap_or_else(|| format!("{scheme}://{}", self.listen))
            .trim_end_matches('/')
            .to_owned()
    }

    /// Whether cookies should be `Secure`.
    pub fn secure_cookies(&self) -> bool {
        self.public_base().starts_with("https://")
    }

    /// The `host:port` that join tokens tell nodes to dial.
    pub fn channel_address(&self, bound: SocketAddr) -> String {
        if let Some(a) = &self.channel.address {
            return a.clone();
        }
        let host = self
            .public_url
            .as_deref()
            .and_then(|u| u.split("://").nth(1))
            .and_then(|rest| rest.split(['/', ':']).next())
            .filter(|h| !h.is_empty())
            .map(str::to_owned);
        match host {
            Some(h) => format!("{h}:{}", bound.port()),
            None if bound.ip().is_unspecified() => format!("127.0.0.1:{}", bound.port()),
            None => bound.to_string(),
        }
    }
}

impl SubscriptionSettings {
    fn validate(&self) -> Result<(), PanelConfigError> {
        let n = self.title.chars().count();
        if self.title.trim().is_empty() || n > 128 || self.title.chars().any(char::is_control) {
            return Err(invalid(
                "subscription.title",
                "must be 1 to 128 characters, no control characters",
            ));
        }
        if !(1..=168).contains(&self.update_interval_hours) {
            return Err(invalid(
                "subscription.update_interval_hours",
                "must be 1 to 168 (a week)",
            ));
        }
        for (field, url) in [
            ("subscription.support_url", &self.support_url),
            ("subscription.web_page_url", &self.web_page_url),
        ] {
            if let Some(u) = url
                && !(u.starts_with("http://")
                    || u.starts_with("https://")
                    || u.starts_with("tg://"))
            {
                return Err(invalid(field, "must start with http://, https:// or tg://"));
            }
        }
        if let Some(a) = &self.announce
            && (a.chars().count() > 200 || a.trim().is_empty())
        {
            return Err(invalid(
                "subscription.announce",
                "must be 1 to 200 characters",
            ));
        }
        if self.hysteresis_percent > 1000 {
            return Err(invalid(
                "subscription.hysteresis_percent",
                "must be 0 to 1000",
            ));
        }
        if !(1..=86_400).contains(&self.fetch_refill_s) {
            return Err(invalid(
                "subscription.fetch_refill_s",
                "must be 1 to 86400 seconds",
            ));
        }
        switchyard_proto::vpn::RemoteDns::parse(&self.remote_dns)
            .map_err(|e| invalid("subscription.remote_dns", e))?;
        if self.old_paths.len() > 8 {
            return Err(invalid("subscription.old_paths", "at most 8 paths"));
        }
        for (i, p) in self.old_paths.iter().enumerate() {
            let ours = ["sub", "api", "ui", "rules", "install", "metrics", "healthz"];
            let first = p.split('/').next().unwrap_or("");
            if p.is_empty()
                || p.len() > 64
                || p.starts_with('/')
                || p.ends_with('/')
                || p.contains("//")
                || !p
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_/.".contains(&b))
                || p.split('/').any(|seg| seg == "." || seg == "..")
            {
                return Err(invalid(
                    &format!("subscription.old_paths[{i}]"),
                    "must be 1 to 64 characters of letters, digits, - _ . and /, \
                     without a leading or trailing /",
                ));
            }
            // `api/…` is free beside the API's own `api/v1` and `api/openapi.json`
            // (Remnawave's links are under `api/sub`).
            let second = p.split('/').nth(1);
            let free_api =
                first == "api" && second.is_some_and(|s| s != "v1" && s != "openapi.json");
            if ours.contains(&first) && !free_api {
                return Err(invalid(
                    &format!("subscription.old_paths[{i}]"),
                    "must not start with a path this panel uses (sub, api (but for \
                     api/NAME), api/v1, api/openapi.json, ui, rules, install, metrics, healthz)",
                ));
            }
        }
        self.routing
            .validate("subscription.routing")
            .map_err(|e| invalid(&e.field, e.message))?;
        check_rules(&self.agents).map_err(|e| invalid(&e.field, e.message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_overrides_the_file_and_errors_name_the_field() {
        let mut c: PanelConfig = toml::from_str("listen = \"127.0.0.1:1\"").unwrap();
        c.apply_env(|k| (k == "SWITCHYARD_PANEL_LISTEN").then(|| "127.0.0.1:9".into()))
            .unwrap();
        assert_eq!(c.listen.port(), 9);
        let e = c
            .clone()
            .apply_env(|k| (k == "SWITCHYARD_PANEL_CHANNEL_LISTEN").then(|| "x".into()))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "panel config: channel.listen: \"x\" is not an address:port"
        );
        assert!(toml::from_str::<PanelConfig>("lisen = \"x\"").is_err());
        let bad = PanelConfig {
            public_url: Some("ftp://x".into()),
            ..PanelConfig::default()
        };
        assert!(
            matches!(bad.validate(), Err(PanelConfigError::Invalid { field, .. }) if field == "public_url")
        );
    }

    #[test]
    fn acme_asks_for_the_public_host_and_refuses_a_second_source_or_plain_http() {
        let acme: AcmeSettings = toml::from_str("").unwrap();
        assert_eq!(acme.directory, LETS_ENCRYPT);
        assert_eq!(acme.renew_days, 30);
        for (url, host) in [
            ("https://panel.example.com:8443/x", "panel.example.com"),
            ("https://panel.example.com", "panel.example.com"),
            ("https://[2001:db8::1]:443/", "2001:db8::1"),
            ("https://192.0.2.7", "192.0.2.7"),
        ] {
            assert_eq!(acme_identifiers(&acme, url), [host], "{url}");
        }
        let field = |c: PanelConfig| match c.validate() {
            Err(PanelConfigError::Invalid { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        let with = |acme: AcmeSettings, tls: Option<TlsFiles>| PanelConfig {
            public_url: Some("https://p.example.org".into()),
            acme: Some(acme),
            tls,
            ..PanelConfig::default()
        };
        assert_eq!(with(acme.clone(), None).validate(), Ok(()));
        assert_eq!(
            with(acme.clone(), None).public_base(),
            "https://p.example.org"
        );
        let files = TlsFiles {
            certificate: "c.pem".into(),
            key: "k.pem".into(),
            reload_s: 60,
        };
        assert_eq!(field(with(acme.clone(), Some(files))), "acme");
        let plain = AcmeSettings {
            directory: "http://acme.example/dir".into(),
            ..acme.clone()
        };
        assert_eq!(field(with(plain, None)), "acme.directory");
        let nameless = PanelConfig {
            public_url: Some("https://".into()),
            acme: Some(acme),
            ..PanelConfig::default()
        };
        assert_eq!(field(nameless), "acme.identifiers");
    }

    #[test]
    fn the_reality_target_is_a_named_host_and_port() {
        let c = PanelConfig::default();
        assert_eq!(c.tunnels.reality_dest, "www.microsoft.com:443");
        assert_eq!(c.validate(), Ok(()));
        let c: PanelConfig =
            toml::from_str("[tunnels]\nreality_dest = \"www.example.org:8443\"").unwrap();
        assert_eq!(c.validate(), Ok(()));
        for bad in [
            "www.example.org",
            "10.0.0.1:443",
            "[2001:db8::1]:443",
            "a b:443",
        ] {
            let c = PanelConfig {
                tunnels: TunnelSettings {
                    reality_dest: bad.into(),
                },
                ..PanelConfig::default()
            };
            assert!(
                matches!(c.validate(), Err(PanelConfigError::Invalid { field, .. }) if field == "tunnels.reality_dest"),
                "{bad}"
            );
        }
    }

    #[test]
    fn join_tokens_name_a_reachable_address() {
        let bound: SocketAddr = "0.0.0.0:2054".parse().unwrap();
        let mut c = PanelConfig::default();
        assert_eq!(c.channel_address(bound), "127.0.0.1:2054");
        c.public_url = Some("https://panel.example.com/".into());
        assert_eq!(c.channel_address(bound), "panel.example.com:2054");
        assert!(c.secure_cookies());
        assert_eq!(c.public_base(), "https://panel.example.com");
        c.channel.address = Some("nodes.example.com:443".into());
        assert_eq!(c.channel_address(bound), "nodes.example.com:443");
    }

    /// The subscription fetch limit's defaults never hold back apps: five devices on
    /// one token, each fetching every minute (the shortest interval apps offer; they
    /// default to hours), for a day.
    #[test]
    fn apps_on_their_intervals_never_wait() {
        use crate::subscription::limit::{FetchLimiter, key};
        let defaults = SubscriptionSettings::default();
        let l = FetchLimiter::new(defaults.fetch_burst, defaults.fetch_refill_s);
        let k = key("household");
        for minute in 0..24 * 60 {
            for device in 0..5 {
                let now = minute * 60_000 + device * 700;
                assert_eq!(l.take(&k, now), Ok(()), "minute {minute}, device {device}");
            }
        }
    }
}
