//! `GET /sub/{token}`: a user's subscription, public (the token is the credential).
//!
//! One entry per non-empty route of every cluster the user sees, cluster by cluster,
//! in route order, named after the chosen inbound. Until balancing lands (its own
//! issue), a route's choice is the first inbound of its pool on a server that is not
//! unavailable (the first inbound when all are). Formats: sing-box JSON (a complete
//! client config) and base64 share links, by `?format=` or else the User-Agent.
//!
//! Everything but the user comes from [`super::topology`]'s cache, so a request costs
//! one query (the user by token); a write shows in the next subscription, a server's
//! health within [`super::topology::MAX_AGE_MS`].
//!
//! A user who is limited, expired or disabled still gets their subscription (their
//! app shows the quota and expiry from `subscription-userinfo`); the nodes refuse
//! them, which is what matters.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use serde::Deserialize;
use switchyard_proto::entry::{Entry, EntryProtocol, EntryTls, EntryTransport};
use utoipa::{IntoParams, ToSchema};

use super::AppState;
use super::problem::{ApiError, Id, Problem, Query};
use crate::model::{
    Credentials, Inbound, InboundSecrets, InboundSecurity, InboundTransport, Protocol, Server,
    ServerState, TlsCertificate, User,
};
use crate::service::ss_user_key;

/// How often apps should fetch the subscription again, in hours.
pub const UPDATE_INTERVAL_H: u32 = 12;

/// A subscription's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, ToSchema)]
pub enum Format {
    /// A complete sing-box client config (JSON).
    #[serde(rename = "sing-box")]
    SingBox,
    /// Share links (`vless://`, `trojan://`, `ss://`), base64 of one per line.
    #[serde(rename = "links")]
    Links,
}

/// Subscription options.
#[derive(Clone, Debug, Default, Deserialize, IntoParams)]
pub struct SubscriptionQuery {
    /// `sing-box` or `links`; by default `sing-box` for sing-box's apps (User-Agent
    /// `sing-box`, `SFA`, `SFI`, `SFM`, `SFT`) and `links` for every other.
    pub format: Option<String>,
}

fn format_of(query: Option<&str>, headers: &HeaderMap) -> Result<Format, ApiError> {
    match query {
        Some("sing-box" | "singbox") => Ok(Format::SingBox),
        Some("links" | "base64") => Ok(Format::Links),
        Some(other) => Err(ApiError::field(crate::model::FieldError::new(
            "format",
            format!("{other:?} is not one of sing-box, links"),
        ))),
        None => {
            let ua = headers
                .get(header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            let sing_box = ["sing-box", "SFA", "SFI", "SFM", "SFT"]
                .iter()
                .any(|p| ua.starts_with(p));
            Ok(if sing_box {
                Format::SingBox
            } else {
                Format::Links
            })
        }
    }
}

/// The entry for `inbound` on `server` as `user` should use it. For a self-signed
/// certificate, sing-box gets the certificate to pin; share links cannot carry one,
/// so they say `allowInsecure=1`.
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
            flow: None,
        },
        Protocol::Trojan => EntryProtocol::Trojan {
            password: credentials.trojan_password.clone(),
        },
        Protocol::Shadowsocks => {
            let method = inbound.method.clone()?;
            let user = ss_user_key(credentials, &method)?;
            EntryProtocol::Shadowsocks {
                password: format!("{}:{user}", secrets.ss_server_key.as_deref()?),
                method,
            }
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
            Some(EntryTls {
                server_name: Some(inbound.sni.clone().unwrap_or_else(|| host.clone())),
                insecure: self_signed && format == Format::Links,
                certificate_pem: if self_signed && format == Format::SingBox {
                    secrets.tls_cert_pem.clone()
                } else {
                    None
                },
                alpn: Vec::new(),
            })
        }
    };
    Some(Entry {
        name: inbound.name.clone(),
        server: host,
        port: inbound.port,
        protocol,
        transport,
        tls,
    })
}

/// The entries of `user`'s subscription, from the cached topology.
async fn entries(
    state: &AppState,
    user: &User,
    credentials: &Credentials,
    format: Format,
) -> Result<Vec<Entry>, ApiError> {
    let now = state.now();
    let view = state.topology().view(now).await?;
    let mut out = Vec::new();
    for cluster in view.iter() {
        if let Some(allowed) = &user.clusters
            && !allowed.contains(&cluster.id)
        {
            continue;
        }
        let servers: Vec<Server> = cluster
            .servers
            .iter()
            .map(|s| s.clone().at(now, state.health()))
            .collect();
        let inbounds = &cluster.inbounds;
        for route in cluster.routes.iter().filter(|r| !r.inbound_ids.is_empty()) {
            let pool: Vec<(&Inbound, &InboundSecrets, &Server)> = route
                .inbound_ids
                .iter()
                .filter_map(|id| inbounds.iter().find(|(i, _)| i.id == *id))
                .filter_map(|(i, s)| Some((i, s, servers.iter().find(|x| x.id == i.server_id)?)))
                .collect();
            let chosen = pool
                .iter()
                .find(|(_, _, s)| s.state != ServerState::Unavailable)
                .or(pool.first());
            if let Some((i, s, server)) = chosen
                && let Some(e) = entry(i, s, server, credentials, format)
            {
                out.push(e);
            }
        }
    }
    Ok(out)
}

fn header_value(s: &str) -> HeaderValue {
    HeaderValue::from_str(s).unwrap_or(HeaderValue::from_static(""))
}

/// A user's subscription.
#[utoipa::path(get, path = "/sub/{token}", tag = "subscriptions",
    // Public: the token in the path is the credential.
    security(()),
    params(("token" = String, Path, description = "The user's subscription token"), SubscriptionQuery),
    responses(
        (status = 200, description = "sing-box JSON or base64 share links",
            content((String = "application/json"), (String = "text/plain"))),
        (status = 400, description = "A bad query", body = Problem),
        (status = 404, description = "No such subscription", body = Problem),
        (status = 422, description = "Unknown format", body = Problem),
    ))]
pub async fn subscription(
    State(state): State<AppState>,
    Id(token): Id<String>,
    Query(q): Query<SubscriptionQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let format = format_of(q.format.as_deref(), &headers)?;
    state.metrics().subscription(format);
    let now = state.now();
    let Some((user, credentials)) = state.store().user_by_token(&token, now).await? else {
        return Err(ApiError::new(StatusCode::NOT_FOUND, "no such subscription"));
    };
    let entries = entries(&state, &user, &credentials, format).await?;
    let (body, content_type, file) = match format {
        Format::SingBox => {
            let config = switchyard_proto::singbox::client_config(
                &entries,
                &switchyard_proto::singbox::SingBoxOptions::default(),
            );
            (
                serde_json::to_string_pretty(&config).unwrap_or_default(),
                "application/json; charset=utf-8",
                "switchyard.json",
            )
        }
        Format::Links => (
            switchyard_proto::share::subscription_base64(&entries),
            "text/plain; charset=utf-8",
            "switchyard.txt",
        ),
    };
    let mut response = (StatusCode::OK, body).into_response();
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::CONTENT_DISPOSITION,
        header_value(&format!("attachment; filename=\"{file}\"")),
    );
    h.insert(
        "profile-update-interval",
        HeaderValue::from(UPDATE_INTERVAL_H),
    );
    let title = base64::engine::general_purpose::STANDARD.encode("Switchyard");
    h.insert("profile-title", header_value(&format!("base64:{title}")));
    let expire = user
        .standing()
        .effective_expiry()
        .map_or(0, |ms| ms.max(0) / 1000);
    h.insert(
        "subscription-userinfo",
        header_value(&format!(
            "upload={}; download={}; total={}; expire={expire}",
            user.used_up,
            user.used_down,
            user.traffic_limit.unwrap_or(0),
        )),
    );
    Ok(response)
}
