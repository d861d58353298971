//! `GET /sub/{token}`: a user's subscription, public (the token is the credential).
//!
//! One entry per non-empty route of every cluster the user sees, cluster by cluster,
//! in route order: the inbound the route's balancer chose for this user
//! ([`crate::subscription::choice`], [`crate::subscription::entries`]), named after the route (its flag first, made
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
//! first). The headers apps read are [`crate::subscription::headers`]'. Servers the
//! app cannot run (Hysteria 2 in Xray JSON...) are left out and the announcement
//! says why ([`crate::subscription::support`]).
//!
//! A user who may not connect (disabled, over the limit, expired), or whose device is
//! one too many, or who has a device limit and whose app sends no `x-hwid` (unless
//! `subscription.without_hwid = "serve"`), gets a valid subscription with no servers
//! whose title says why, so the app shows the reason instead of an error. An unknown
//! token is a plain 404; the token is looked up by its hash and compared in constant
//! time (see the store).
//!
//! Everything but the user and their sticky choices comes from
//! [`crate::subscription::topology`]'s cache, so a request costs one read (the user
//! with their sticky choices, by the token's hash) plus one write when a choice
//! changes. The entries are built by [`crate::subscription::entries`], the refusals
//! decided by [`crate::subscription::refusal`]; this handler parses the request and
//! writes the answer.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use switchyard_balance::Settings;
use switchyard_proto::vpn::{RemoteDns, VpnOptions};
use utoipa::IntoParams;

use super::AppState;
use super::problem::{ApiError, Id, Problem, Query};
use crate::config::WithoutHwid;
use crate::import;
use crate::model::FieldError;
use crate::store::{DeviceSeen, Subscriber};
use crate::subscription::agents::{AgentRule, Format, format_for, wants_vpn};
use crate::subscription::body::app_body;
use crate::subscription::entries::{Sources, entries};
use crate::subscription::headers::SubscriptionHeaders;
use crate::subscription::limit;
use crate::subscription::page::{Lang, Page, PageLink, render};
use crate::subscription::refusal::{Refusal, refusal};
use crate::subscription::support::{Lacks, LeftOut};

/// The longest `x-hwid` (and device os/model) taken, in bytes.
const MAX_DEVICE_TEXT: usize = 256;

/// Subscription options.
#[derive(Clone, Debug, Default, Deserialize, IntoParams)]
pub struct SubscriptionQuery {
    /// `sing-box`, `clash`, `xray` or `links` (aliases in `docs/subscriptions.md`);
    /// by default the page for browsers, else chosen by the User-Agent.
    pub format: Option<String>,
    /// The page's language: `en`, `ru` or `fa`; by default the browser's
    /// `Accept-Language`, else English. Apps' formats do not change with it.
    pub lang: Option<String>,
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
    rules: &[AgentRule],
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

/// A header's text, if present; over [`MAX_DEVICE_TEXT`] or not visible ASCII is a
/// 400 naming the header.
fn device_text(headers: &HeaderMap, name: &'static str) -> Result<Option<String>, FieldError> {
    let Some(v) = headers.get(name) else {
        return Ok(None);
    };
    match v.to_str() {
        Ok(s) if s.len() <= MAX_DEVICE_TEXT => {
            let s = s.trim();
            Ok((!s.is_empty()).then(|| s.to_owned()))
        }
        _ => Err(FieldError::new(
            name,
            format!("must be at most {MAX_DEVICE_TEXT} bytes of visible ASCII"),
        )),
    }
}

/// The device the request names: none without `x-hwid`; a bad device header is an
/// error naming it.
fn device(headers: &HeaderMap) -> Result<Option<DeviceSeen>, FieldError> {
    let Some(hwid) = device_text(headers, "x-hwid")? else {
        return Ok(None);
    };
    Ok(Some(DeviceSeen {
        hwid,
        os: device_text(headers, "x-device-os")?,
        model: device_text(headers, "x-device-model")?,
        user_agent: headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(|s| s.chars().take(MAX_DEVICE_TEXT).collect()),
    }))
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
    answer(
        &state,
        &token,
        (q.format.as_deref(), q.lang.as_deref()),
        headers,
    )
    .await
}

/// An imported panel's subscription link with the app's kind in the path
/// (Marzban's `/sub/TOKEN/sing-box`, `clash-meta`, `clash`, `v2ray`, `v2ray-json`;
/// Remnawave's `singbox`, `mihomo`, `stash`, `clash`, `json`, `v2ray-json`;
/// PasarGuard's `sing_box`, `clash_meta`, `clash`, `links`, `links_base64`, `xray`):
/// the same subscription in that format.
#[utoipa::path(get, path = "/sub/{token}/{client}", tag = "subscriptions",
    // Public: the token in the path is the credential.
    security(()),
    params(
        ("token" = String, Path, description = "The user's subscription token, or an imported panel's (docs/migration.md)"),
        ("client" = String, Path, description = "`sing-box`, `singbox` or `sing_box`; `clash`, `clash-meta`, `clash_meta`, `mihomo` or `stash` (Clash YAML); `v2ray`, `links` or `links_base64` (share links); `v2ray-json`, `json` or `xray` (Xray JSON)"),
    ),
    responses(
        (status = 200, description = "sing-box JSON, Clash YAML, Xray JSON or base64 share links",
            content((String = "application/json"), (String = "text/yaml"), (String = "text/plain"))),
        (status = 400, description = "A bad device header", body = Problem),
        (status = 404, description = "No such subscription, or a kind of app this path does not name", body = Problem),
        (status = 429, description = "This token fetched too often; `Retry-After` says when to come back", body = Problem),
    ))]
pub async fn subscription_as(
    State(state): State<AppState>,
    axum::extract::Path((token, client)): axum::extract::Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    match client_format(&client) {
        Some(format) => answer(&state, &token, (Some(format), None), headers).await,
        // Marzneshin's `/sub/NAME/KEY`: the format by the User-Agent.
        None if import::is_marzneshin_key(&client) => {
            answer(&state, &format!("{token}/{client}"), (None, None), headers).await
        }
        None => Err(ApiError::new(StatusCode::NOT_FOUND, "no such subscription")),
    }
}

/// Marzneshin's subscription link with the app's kind: `/sub/NAME/KEY/KIND`
/// (`links`, `base64-links`, `sing-box`, `xray`, `clash`, `clash-meta`), the
/// subscription of the user an import brought from Marzneshin in that format.
#[utoipa::path(get, path = "/sub/{name}/{key}/{client}", tag = "subscriptions",
    // Public: the key in the path is the credential.
    security(()),
    params(
        ("name" = String, Path, description = "The user's name in Marzneshin"),
        ("key" = String, Path, description = "The user's Marzneshin key (docs/migration.md)"),
        ("client" = String, Path, description = "`links` or `base64-links` (share links), `sing-box`, `xray`, `clash` or `clash-meta`"),
    ),
    responses(
        (status = 200, description = "sing-box JSON, Clash YAML, Xray JSON or base64 share links",
            content((String = "application/json"), (String = "text/yaml"), (String = "text/plain"))),
        (status = 400, description = "A bad device header", body = Problem),
        (status = 404, description = "No such subscription, or a kind of app this path does not name", body = Problem),
        (status = 429, description = "This link fetched too often; `Retry-After` says when to come back", body = Problem),
    ))]
pub async fn subscription_by_key(
    State(state): State<AppState>,
    axum::extract::Path((name, key, client)): axum::extract::Path<(String, String, String)>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let format = match client.as_str() {
        "base64-links" => Some("links"),
        other => client_format(other),
    };
    match format {
        Some(format) if import::is_marzneshin_key(&key) => {
            answer(
                &state,
                &format!("{name}/{key}"),
                (Some(format), None),
                headers,
            )
            .await
        }
        _ => Err(ApiError::new(StatusCode::NOT_FOUND, "no such subscription")),
    }
}

/// The format an imported panel's per-app path names: Marzban's kinds,
/// Remnawave's, PasarGuard's and Marzneshin's.
fn client_format(client: &str) -> Option<&'static str> {
    Some(match client {
        "sing-box" | "singbox" | "sing_box" => "sing-box",
        "clash" | "clash-meta" | "mihomo" | "stash" | "clash_meta" => "clash",
        "v2ray" | "links" | "links_base64" => "links",
        "v2ray-json" | "json" | "xray" => "xray",
        _ => return None,
    })
}

/// [`subscription`] and [`subscription_as`], once the path is read. `token` is ours,
/// or an imported panel's that names a user an import brought (`crate::import`).
async fn answer(
    state: &AppState,
    token: &str,
    (format, lang): (Option<&str>, Option<&str>),
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let settings = &state.config().subscription;
    let lang = Lang::negotiate(
        lang,
        headers
            .get(header::ACCEPT_LANGUAGE)
            .and_then(|v| v.to_str().ok()),
    );
    let wanted = negotiate(format, &headers, &settings.agents)?;
    state.metrics().subscription(match wanted {
        Wanted::Format(f) => Some(f),
        Wanted::Page => None,
    });
    let now = state.now();
    // A token out of fetches waits without costing a read; unknown tokens never get
    // a bucket (it is taken from once the token is found).
    let key = limit::key(token);
    if let Some(wait) = state.fetches().waiting(&key, now) {
        return Err(too_many_fetches(wait));
    }
    let found = match state.store().subscriber(token, now).await? {
        Some(s) => Some(s),
        None => match crate::import::resolve(state.store().as_ref(), token).await? {
            Some(ours) => state.store().subscriber(&ours, now).await?,
            None => None,
        },
    };
    let Some(Subscriber {
        user,
        credentials,
        sticky,
        routing: own_routing,
    }) = found
    else {
        return Err(ApiError::new(StatusCode::NOT_FOUND, "no such subscription"));
    };
    state.fetches().take(&key, now).map_err(too_many_fetches)?;
    let refuse_without_hwid = settings.without_hwid == WithoutHwid::Refuse;
    let store = state.store().as_ref();
    let refused = refusal(store, &user, device(&headers), refuse_without_hwid, now).await?;
    let format = match wanted {
        Wanted::Format(f) => f,
        Wanted::Page => Format::Links,
    };
    // What the app cannot run is left out, and the announcement says so.
    let lacks = match wanted {
        Wanted::Format(f) => {
            let ua = headers
                .get(header::USER_AGENT)
                .and_then(|v| v.to_str().ok());
            Lacks::for_request(f, ua.unwrap_or(""), &settings.agents)
        }
        Wanted::Page => Lacks::of_format(Format::Links),
    };
    let (entries, left_out) = match &refused {
        None => {
            let from = Sources {
                topology: state.topology(),
                store,
                health: state.health(),
                settings: Settings {
                    hysteresis: f64::from(settings.hysteresis_percent) / 100.0,
                },
            };
            entries(from, &user, &credentials, &sticky, (format, &lacks), now).await?
        }
        Some(_) => (Vec::new(), LeftOut::default()),
    };
    let title = match (&refused, wanted) {
        (None, _) => settings.title.clone(),
        (Some(r), Wanted::Page) => format!("{} — {}", settings.title, lang.reason(r)),
        (Some(r), Wanted::Format(_)) => format!("{} — {}", settings.title, r.title()),
    };
    let announce = left_out.announce(
        refused
            .as_ref()
            .map(Refusal::announce)
            .or_else(|| settings.announce.clone()),
    );
    let url = format!("{}{}", state.config().public_base(), user.subscription_path);
    let (body, content_type, file, happ) = match wanted {
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
                status: user.status,
                status_reason: refused.as_ref(),
                subscription_url: &url,
                links: &links,
                used_bytes: user.used_up.saturating_add(user.used_down),
                limit_bytes: user.traffic_limit,
                expires_ms: user.standing().effective_expiry(),
                now_ms: now,
                support_url: settings.support_url.as_deref(),
                announce: announce.as_deref(),
                lang,
            };
            (
                render(&page),
                "text/html; charset=utf-8",
                "switchyard.html",
                None,
            )
        }
        Wanted::Format(f) => {
            let ua = headers
                .get(header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            let vpn = VpnOptions {
                // Checked when the config was read.
                remote_dns: RemoteDns::parse(&settings.remote_dns)
                    .unwrap_or_else(|_| VpnOptions::default().remote_dns),
            };
            let builds_vpn = wants_vpn(ua, &settings.agents, f);
            // The user's own; else the first of their clusters with its own; else the
            // panel's.
            let view = state.topology().view(now).await?;
            let clusters = view
                .iter()
                .filter(|c| user.clusters.as_ref().is_none_or(|a| a.contains(&c.id)))
                .map(|c| (c.id, c.routing.as_ref()));
            let routing =
                crate::model::routing::effective(own_routing.as_ref(), clusters, &settings.routing)
                    .routing(&state.config().public_base());
            let template = state.templates().get(f).await?;
            let b = app_body(
                f,
                &entries,
                &settings.title,
                &vpn,
                builds_vpn,
                &routing,
                template.as_deref(),
            );
            // Happ takes its routing from a profile (with the panel's geo files); it
            // is made anew once a day at most (`LastUpdated`, a day's start).
            let day = u64::try_from(now / 1000).unwrap_or(0) / 86_400 * 86_400;
            let happ = (ua.get(..5).is_some_and(|p| p.eq_ignore_ascii_case("happ/"))
                && !routing.is_global())
            .then(|| routing.happ_link(&settings.title, &vpn.remote_dns, day));
            (b.text, b.content_type, b.file_name, happ)
        }
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
    if let Some(link) = happ.and_then(|l| HeaderValue::from_str(&l).ok()) {
        h.insert(HeaderName::from_static("routing"), link);
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
        // The page's language follows the browser's.
        h.insert(
            header::VARY,
            HeaderValue::from_static("accept, accept-language"),
        );
        h.insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        );
    }
    Ok(response)
}
