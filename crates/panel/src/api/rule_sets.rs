//! `GET /rules/sing-box/{file}`, `GET /rules/clash/{file}` and `GET /rules/xray/{file}`:
//! the rule sets users' apps fetch for split tunnelling (`crate::subscription::rule_sets`). Public, like
//! subscriptions (the lists are no secret), with ETags: an app that has the set gets
//! `304`. Answers are built once and kept until a file behind them changes
//! (`crate::subscription::rule_cache`).

use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::AppState;
use super::problem::{ApiError, Problem};
use crate::subscription::geodat;
use crate::subscription::rule_cache::Served;
use crate::subscription::rule_sets::{load, xray_codes};

/// The directory of the operator's additions, under the panel's data directory.
pub const DIR: &str = "rule-sets";

/// A sing-box rule set, source format.
#[utoipa::path(get, path = "/rules/sing-box/{file}", tag = "subscriptions",
    security(()),
    params(("file" = String, Path, description = "`NAME.json`, NAME one of ads, country-ru, blocked-ru, country-ir, blocked-ir, country-cn, blocked-cn")),
    responses(
        (status = 200, description = "The set", content_type = "application/json", body = String),
        (status = 304, description = "Unchanged since the ETag given"),
        (status = 404, description = "No such set", body = Problem),
    ))]
pub async fn singbox(
    State(state): State<AppState>,
    Path(file): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let name = file
        .strip_suffix(".json")
        .ok_or_else(no_such_set)?
        .to_owned();
    let served = state
        .rule_sets()
        .get(&format!("sing-box/{file}"), move |dir| {
            load(dir, &name).map(|s| s.singbox().into_bytes())
        })
        .await
        .ok_or_else(no_such_set)?;
    Ok(answer(&served, "application/json", &headers))
}

/// A mihomo rule provider, text format: `NAME-domain.txt` or `NAME-ip.txt`.
#[utoipa::path(get, path = "/rules/clash/{file}", tag = "subscriptions",
    security(()),
    params(("file" = String, Path, description = "`NAME-domain.txt` or `NAME-ip.txt`")),
    responses(
        (status = 200, description = "The set's domains or networks, one per line", content_type = "text/plain", body = String),
        (status = 304, description = "Unchanged since the ETag given"),
        (status = 404, description = "No such set", body = Problem),
    ))]
pub async fn clash(
    State(state): State<AppState>,
    Path(file): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let stem = file
        .strip_suffix(".txt")
        .ok_or_else(no_such_set)?
        .to_owned();
    let served = state
        .rule_sets()
        .get(&format!("clash/{file}"), move |dir| {
            if let Some(name) = stem.strip_suffix("-domain") {
                load(dir, name).map(|s| s.clash_domains().into_bytes())
            } else if let Some(name) = stem.strip_suffix("-ip") {
                load(dir, name).map(|s| s.clash_cidrs().into_bytes())
            } else {
                None
            }
        })
        .await
        .ok_or_else(no_such_set)?;
    Ok(answer(&served, "text/plain; charset=utf-8", &headers))
}

/// Xray's `geosite.dat` or `geoip.dat` of the panel's sets, under the codes the Xray
/// configs name.
#[utoipa::path(get, path = "/rules/xray/{file}", tag = "subscriptions",
    security(()),
    params(("file" = String, Path, description = "`geosite.dat` or `geoip.dat`")),
    responses(
        (status = 200, description = "The file (protocol buffers)", content_type = "application/octet-stream", body = Vec<u8>),
        (status = 304, description = "Unchanged since the ETag given"),
        (status = 404, description = "No such file", body = Problem),
    ))]
pub async fn xray(
    State(state): State<AppState>,
    Path(file): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let site = match file.as_str() {
        "geosite.dat" => true,
        "geoip.dat" => false,
        _ => return Err(no_such_set()),
    };
    let served = state
        .rule_sets()
        .get(&format!("xray/{file}"), move |dir| {
            let (sites, ips) = xray_codes(dir);
            Some(if site {
                geodat::geosite(&sites)
            } else {
                geodat::geoip(&ips)
            })
        })
        .await
        .ok_or_else(no_such_set)?;
    Ok(answer(&served, "application/octet-stream", &headers))
}

fn no_such_set() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "no such rule set")
}

/// `body` with its ETag, or `304` when the app has it.
fn answer(served: &Served, content_type: &'static str, headers: &HeaderMap) -> Response {
    let tag = &served.etag;
    let fresh = crate::ui::is_fresh(headers, tag);
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        (StatusCode::OK, served.body.clone()).into_response()
    };
    let h = response.headers_mut();
    if !fresh {
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    }
    if let Ok(v) = HeaderValue::from_str(tag) {
        h.insert(header::ETAG, v);
    }
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=3600"),
    );
    response
}
