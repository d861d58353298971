//! `GET /sub/{token}`: a user's subscription, public (the token is the credential).
//!
//! One entry per non-empty route of every cluster the user sees, cluster by cluster,
//! in route order: the inbound the route's balancer chose for this user
//! ([`crate::subscription::choice`]), named after the route (its flag first, made
//! unique in the subscription: [`crate::subscription::names`]) and carrying the
//! route's id, so a client keeps the entry's identity when the balancer moves the
//! user; the choice is remembered per (user, route), so the next fetch keeps it while
//! conditions are similar.
//!
//! Each token may fetch `subscription.fetch_burst` times at once, then once per
//! `fetch_refill_s` ([`crate::subscription::limit`]); past it, `429` with
//! `Retry-After`. The browser page is shown inline with its CSP, `nosniff` and
//! framing headers; every other answer is an attachment, as apps expect.
//!
//! The format: `?format=` wins; else a browser (`Accept: text/html`) gets the HTML
//! page; else the User-Agent decides ([`crate::subscription::agents`], operator rules
//! first). The headers apps read are [`crate::subscription::headers`]'.
//!
//! A user who may not connect (disabled, over the limit, expired), or whose device is
//! one too many, or who has a device limit and whose app sends no `x-hwid` (unless
//! `subscription.without_hwid = "serve"`), gets a valid subscription with no servers
//! whose title says why, so the app shows the reason instead of an error. An unknown
//! token is a plain 404; the token is looked up by its hash and compared in constant
//! time (see the store).
//!
//! Everything but the user and their sticky choices comes from [`super::topology`]'s
//! cache, so a request costs one read (the user with their sticky choices, by the
//! token's hash) plus one write when a choice changes.

use std::collections::HashMap;

use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use switchyard_balance::Settings;
use switchyard_proto::entry::{Entry, EntryProtocol, EntryReality, EntryTls, EntryTransport};
use utoipa::IntoParams;

use super::AppState;
use super::problem::{ApiError, Id, Problem, Query};
use crate::config::WithoutHwid;
use crate::model::{
    Credentials, FieldError, Inbound, InboundSecrets, InboundSecurity, InboundTransport, Protocol,
    Server, TlsCertificate, User, UserStatus,
};
use crate::service::ss_user_key;
use crate::store::{DeviceOutcome, DeviceSeen, Subscriber};
use crate::subscription::agents::{Format, format_for};
use crate::subscription::choice::{Pool, pick, previous};
use crate::subscription::headers::SubscriptionHeaders;
use crate::subscription::page::{Page, PageLink, render};
use crate::subscription::{limit, names};

/// The longest `x-hwid` (and device os/model) taken, in bytes.
const MAX_DEVICE_TEXT: usize = 256;

/// Subscription options.
#[derive(Clone, Debug, Default, Deserialize, IntoParams)]
pub struct SubscriptionQuery {
    /// `sing-box`, `clash`, `xray` or `links` (aliases in `docs/subscriptions.md`);
    /// by default the page for browsers, else chosen by the User-Agent.
    pub format: Option<String>,
}

/// What the request gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wanted {
    /// A config or links for an app.
    Format(Format),
    /// The HTML page for a person.
    Page,
}

/// The answer's kind for this request (see the [module docs](self)).
pub fn negotiate(
    query: Option<&str>,
    headers: &HeaderMap,
    rules: &[crate::subscription::agents::AgentRule],
) -> Result<Wanted, ApiError> {
    if let Some(q) = query {
        return Format::parse(q).map(Wanted::Format).ok_or_else(|| {
            ApiError::field(FieldError::new(
                "format",
                format!("{q:?} is not one of sing-box, clash, xray, links"),
            ))
        });
    }
    let text = |h: header::HeaderName| {
        headers
            .get(h)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned()
    };
    if text(header::ACCEPT).contains("text/html") {
        return Ok(Wanted::Page);
    }
    Ok(Wanted::Format(format_for(&text(header::USER_AGENT), rules)))
}

/// The entry for `inbound` on `server` as `user` should use it. A self-signed
/// certificate is pinned in every format that can carry a pin (sing-box, Clash, Xray);
/// share links cannot, so they say `allowInsecure=1`. A REALITY inbound's entry has
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
    };
    let transport = match &inbound.transport {
        InboundTransport::Tcp => EntryTransport::Tcp,
        InboundTransport::Ws { path, host } => EntryTransport::Ws {
            path: path.clone(),
            host: host.clone(),
        },
    };
    let tls = match &inbound.security {
        InboundSecurity::None => None,
        InboundSecurity::Tls { certificate } => {
            let self_signed = *certificate == TlsCertificate::SelfSigned;
            let links = format == Format::Links;
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

/// The entries of `user`'s subscription: every route's choice, from the cached
/// topology; changed choices are remembered.
async fn entries(
    state: &AppState,
    user: &User,
    credentials: &Credentials,
    sticky: &[(i64, i64)],
    format: Format,
) -> Result<Vec<Entry>, ApiError> {
    let now = state.now();
    let view = state.topology().view(now).await?;
    let sticky: HashMap<i64, i64> = sticky.iter().copied().collect();
    let settings = Settings {
        hysteresis: f64::from(state.config().subscription.hysteresis_percent) / 100.0,
    };
    let mut out = Vec::new();
    let mut changed = Vec::new();
    for cluster in view.iter() {
        if let Some(allowed) = &user.clusters
            && !allowed.contains(&cluster.id)
        {
            continue;
        }
        let pool = Pool {
            inbounds: &cluster.inbounds,
            servers: &cluster.servers,
            now_ms: now,
            health: state.health(),
        };
        for route in cluster.routes.iter().filter(|r| !r.inbound_ids.is_empty()) {
            let last = sticky.get(&route.id).copied();
            let prev = previous(last, user.online_ms, now);
            let Some(p) = pick(route, pool, prev, &settings) else {
                continue;
            };
            if last != Some(p.inbound.id) {
                changed.push((route.id, p.inbound.id));
            }
            if let Some(mut e) = entry(p.inbound, p.secrets, p.server, credentials, format) {
                // The entry is the route, whichever inbound stands for it today.
                e.name = names::label(&route.name, route.flag.as_deref());
                e.route = Some(route.id.to_string());
                out.push(e);
            }
        }
    }
    names::make_unique(&mut out);
    if let Err(e) = state.store().put_sticky(user.id, &changed, now).await {
        // The answer is right without it; the next fetch chooses again.
        tracing::warn!(user = user.id, "remembering route choices: {e}");
    }
    Ok(out)
}

/// Why a user gets no servers.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Refusal {
    Status(UserStatus),
    Devices(u32),
    NoHwid,
}

impl Refusal {
    /// Appended to the title.
    fn title(&self) -> &'static str {
        match self {
            Self::Status(UserStatus::Disabled) => "disabled",
            Self::Status(UserStatus::Limited) => "traffic limit reached",
            Self::Status(UserStatus::Expired) => "expired",
            Self::Status(_) => "unavailable",
            Self::Devices(_) => "device limit reached",
            Self::NoHwid => "device not identified",
        }
    }

    /// The `announce` apps show.
    fn announce(&self) -> String {
        match self {
            Self::Status(UserStatus::Disabled) => "Your subscription is disabled.".into(),
            Self::Status(UserStatus::Limited) => {
                "You have used all the traffic of this period.".into()
            }
            Self::Status(UserStatus::Expired) => "Your subscription has expired.".into(),
            Self::Status(_) => "Your subscription is unavailable.".into(),
            Self::Devices(n) => format!(
                "This subscription is already used on {n} device(s), its limit; \
                 ask for a device to be removed."
            ),
            Self::NoHwid => "This app does not identify the device; use an app that sends x-hwid \
                 (Happ, v2RayTun, FlClashX...)."
                .into(),
        }
    }
}

/// A header's text, if present; over [`MAX_DEVICE_TEXT`] or not visible ASCII is a
/// 400 naming the header.
fn device_text(headers: &HeaderMap, name: &'static str) -> Result<Option<String>, ApiError> {
    let Some(v) = headers.get(name) else {
        return Ok(None);
    };
    match v.to_str() {
        Ok(s) if s.len() <= MAX_DEVICE_TEXT => {
            let s = s.trim();
            Ok((!s.is_empty()).then(|| s.to_owned()))
        }
        _ => Err(ApiError::field(FieldError::new(
            name,
            format!("must be at most {MAX_DEVICE_TEXT} bytes of visible ASCII"),
        ))),
    }
}

/// Whether this fetch may have servers: the user's status, then their device limit.
async fn refusal(
    state: &AppState,
    user: &User,
    headers: &HeaderMap,
) -> Result<Option<Refusal>, ApiError> {
    if matches!(
        user.status,
        UserStatus::Disabled | UserStatus::Limited | UserStatus::Expired
    ) {
        return Ok(Some(Refusal::Status(user.status)));
    }
    let Some(hwid) = device_text(headers, "x-hwid")? else {
        let refuse = user.device_limit.is_some()
            && state.config().subscription.without_hwid == WithoutHwid::Refuse;
        return Ok(refuse.then_some(Refusal::NoHwid));
    };
    let seen = DeviceSeen {
        hwid,
        os: device_text(headers, "x-device-os")?,
        model: device_text(headers, "x-device-model")?,
        user_agent: headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(|s| s.chars().take(MAX_DEVICE_TEXT).collect()),
    };
    let outcome = state
        .store()
        .register_device(user.id, &seen, user.device_limit, state.now())
        .await?;
    Ok(match (outcome, user.device_limit) {
        (DeviceOutcome::OverLimit, Some(n)) => Some(Refusal::Devices(n)),
        _ => None,
    })
}

/// `429` with `Retry-After` for a token that fetched too often.
fn too_many_fetches(seconds: u64) -> ApiError {
    ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        format!("this subscription was fetched too often; try again in {seconds} s"),
    )
    .retry_after(seconds)
}

/// A user's subscription.
#[utoipa::path(get, path = "/sub/{token}", tag = "subscriptions",
    // Public: the token in the path is the credential.
    security(()),
    params(("token" = String, Path, description = "The user's subscription token"), SubscriptionQuery),
    responses(
        (status = 200, description = "sing-box JSON, Clash YAML, Xray JSON, base64 share links, or the HTML page",
            content((String = "application/json"), (String = "text/yaml"), (String = "text/plain"), (String = "text/html"))),
        (status = 400, description = "A bad query or device header", body = Problem),
        (status = 404, description = "No such subscription", body = Problem),
        (status = 422, description = "Unknown format", body = Problem),
        (status = 429, description = "This token fetched too often; `Retry-After` says when to come back", body = Problem),
    ))]
pub async fn subscription(
    State(state): State<AppState>,
    Id(token): Id<String>,
    Query(q): Query<SubscriptionQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let settings = &state.config().subscription;
    let wanted = negotiate(q.format.as_deref(), &headers, &settings.agents)?;
    state.metrics().subscription(match wanted {
        Wanted::Format(f) => Some(f),
        Wanted::Page => None,
    });
    let now = state.now();
    // A token out of fetches waits without costing a read; unknown tokens never get
    // a bucket (it is taken from once the token is found).
    let key = limit::key(&token);
    if let Some(wait) = state.fetches().waiting(&key, now) {
        return Err(too_many_fetches(wait));
    }
    let Some(Subscriber {
        user,
        credentials,
        sticky,
    }) = state.store().subscriber(&token, now).await?
    else {
        return Err(ApiError::new(StatusCode::NOT_FOUND, "no such subscription"));
    };
    state.fetches().take(&key, now).map_err(too_many_fetches)?;
    let refused = refusal(&state, &user, &headers).await?;
    let format = match wanted {
        Wanted::Format(f) => f,
        Wanted::Page => Format::Links,
    };
    let entries = match &refused {
        None => entries(&state, &user, &credentials, &sticky, format).await?,
        Some(_) => Vec::new(),
    };
    let title = match &refused {
        None => settings.title.clone(),
        Some(r) => format!("{} — {}", settings.title, r.title()),
    };
    let announce = refused
        .as_ref()
        .map(Refusal::announce)
        .or_else(|| settings.announce.clone());
    let url = format!("{}{}", state.config().public_base(), user.subscription_path);
    let (body, content_type, file) = match wanted {
        Wanted::Page => {
            let links: Vec<(String, String)> = entries
                .iter()
                .map(|e| (e.name.clone(), switchyard_proto::share::to_link(e)))
                .collect();
            let links: Vec<PageLink<'_>> = links
                .iter()
                .map(|(name, link)| PageLink { name, link })
                .collect();
            let page = Page {
                title: &title,
                username: &user.username,
                status: user.status.label(),
                status_reason: refused.as_ref().map(Refusal::title),
                subscription_url: &url,
                links: &links,
                used_bytes: user.used_up.saturating_add(user.used_down),
                limit_bytes: user.traffic_limit,
                expires_ms: user.standing().effective_expiry(),
                now_ms: now,
                support_url: settings.support_url.as_deref(),
                announce: announce.as_deref(),
            };
            (render(&page), "text/html; charset=utf-8", "switchyard.html")
        }
        Wanted::Format(Format::SingBox) => {
            let options = switchyard_proto::singbox::SingBoxOptions {
                group_name: settings.title.clone(),
                ..Default::default()
            };
            let config = switchyard_proto::singbox::ClientConfig::new(&entries, &options);
            (
                serde_json::to_string(&config).unwrap_or_default(),
                "application/json; charset=utf-8",
                "switchyard.json",
            )
        }
        Wanted::Format(Format::Clash) => {
            let options = switchyard_proto::clash::ClashOptions {
                group_name: settings.title.clone(),
                ..Default::default()
            };
            (
                switchyard_proto::clash::client_config(&entries, &options),
                "text/yaml; charset=utf-8",
                "switchyard.yaml",
            )
        }
        Wanted::Format(Format::Xray) => {
            let configs = switchyard_proto::xray::client_configs(&entries, &Default::default());
            (
                serde_json::to_string(&configs).unwrap_or_default(),
                "application/json; charset=utf-8",
                "switchyard.json",
            )
        }
        Wanted::Format(Format::Links) => (
            switchyard_proto::share::subscription_base64(&entries),
            "text/plain; charset=utf-8",
            "switchyard.txt",
        ),
    };
    let mut response = (StatusCode::OK, body).into_response();
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    let web_page = settings.web_page_url.clone().unwrap_or_else(|| url.clone());
    let pairs = SubscriptionHeaders {
        title: &title,
        upload: user.used_up,
        download: user.used_down,
        total: user.traffic_limit,
        expire_ms: user.standing().effective_expiry(),
        update_interval_h: settings.update_interval_hours,
        file_name: file,
        support_url: settings.support_url.as_deref(),
        web_page_url: Some(&web_page),
        announce: announce.as_deref(),
    }
    .pairs();
    for (name, value) in pairs {
        // The page is shown, not downloaded: no `attachment` for it.
        if wanted == Wanted::Page && name == "content-disposition" {
            continue;
        }
        if let Ok(v) = HeaderValue::from_str(&value) {
            h.insert(HeaderName::from_static(name), v);
        }
    }
    if wanted == Wanted::Page {
        h.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(crate::subscription::page::policy()),
        );
        h.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
        h.insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        );
    }
    Ok(response)
}
