//! The web UI's files, embedded in the binary and served by the panel itself: `/`
//! answers the page, `/ui/…` its scripts and styles. The UI is plain ES modules and
//! CSS (`crates/panel/ui/`), no build step; it talks only to the public REST API.
//!
//! Every answer carries a strict Content-Security-Policy (scripts, styles and
//! connections to this origin only; no inline script; no framing), `nosniff` and
//! `no-referrer`. Files are revalidated (`no-cache`) with an `ETag` of their content,
//! so an upgraded panel never serves a stale script from a browser's cache.

use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

/// One embedded file.
struct Asset {
    path: &'static str,
    mime: &'static str,
    body: &'static [u8],
}

macro_rules! assets {
    ($($path:literal => $mime:expr),* $(,)?) => {
        &[$(Asset {
            path: $path,
            mime: $mime,
            body: include_bytes!(concat!("../ui/", $path)),
        }),*]
    };
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file of the UI.
const ASSETS: &[Asset] = assets![
    "index.html" => "text/html; charset=utf-8",
    "app.css" => "text/css; charset=utf-8",
    "favicon.svg" => "image/svg+xml",
    "js/app.js" => JS,
    "js/api.js" => JS,
    "js/dom.js" => JS,
    "js/format.js" => JS,
    "js/i18n.js" => JS,
    "js/i18n/en.js" => JS,
    "js/i18n/ru.js" => JS,
    "js/i18n/fa.js" => JS,
    "js/chart.js" => JS,
    "js/login.js" => JS,
    "js/cluster.js" => JS,
    "js/ssh_install.js" => JS,
    "js/upgrade.js" => JS,
    "js/topology.js" => JS,
    "js/route_form.js" => JS,
    "js/routing_form.js" => JS,
    "js/inbound_form.js" => JS,
    "js/inbound_rules.js" => JS,
    "js/users.js" => JS,
    "js/users_bulk.js" => JS,
    "js/import.js" => JS,
    "js/tunnels.js" => JS,
    "js/account.js" => JS,
    "js/admins.js" => JS,
    "js/audit.js" => JS,
    "js/plans.js" => JS,
    "js/webhooks.js" => JS,
    "js/dashboard.js" => JS,
    "js/templates.js" => JS,
];

/// The policy every UI answer carries.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    img-src 'self' data:; connect-src 'self'; font-src 'self'; form-action 'self'; \
    base-uri 'none'; frame-ancestors 'none'";

/// A strong ETag of `body`: 96 bits of its SHA-256.
pub(crate) fn etag(body: &[u8]) -> String {
    let digest = Sha256::digest(body);
    let hex: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}\"")
}

/// Whether the request's `If-None-Match` names `tag`: the client has the body.
pub(crate) fn is_fresh(headers: &HeaderMap, tag: &str) -> bool {
    headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == tag))
}

fn serve(path: &str, headers: &HeaderMap) -> Response {
    let Some(asset) = ASSETS.iter().find(|a| a.path == path) else {
        return (StatusCode::NOT_FOUND, "no such file\n").into_response();
    };
    let tag = etag(asset.body);
    let fresh = is_fresh(headers, &tag);
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        asset.body.into_response()
    };
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(asset.mime));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(v) = HeaderValue::from_str(&tag) {
        h.insert(header::ETAG, v);
    }
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

/// `GET /`: the page.
pub async fn index(headers: HeaderMap) -> Response {
    serve("index.html", &headers)
}

/// `GET /ui/{*path}`: a script, a style sheet, an icon.
pub async fn file(Path(path): Path<String>, headers: HeaderMap) -> Response {
    serve(&path, &headers)
}

/// `GET /favicon.ico`: the icon, where browsers look for it.
pub async fn favicon(headers: HeaderMap) -> Response {
    serve("favicon.svg", &headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_asset_is_listed_once_and_the_page_loads_only_listed_scripts() {
        let mut paths: Vec<&str> = ASSETS.iter().map(|a| a.path).collect();
        paths.sort_unstable();
        paths.dedup();
        assert_eq!(paths.len(), ASSETS.len());
        // Every module any script imports is served.
        for a in ASSETS.iter().filter(|a| a.path.ends_with(".js")) {
            let text = std::str::from_utf8(a.body).unwrap();
            for line in text.lines().filter(|l| l.starts_with("import ")) {
                let Some(from) = line.split(['"', '\'']).nth(1) else {
                    continue;
                };
                let target = format!("js/{}", from.trim_start_matches("./"));
                assert!(
                    paths.contains(&target.as_str()),
                    "{} imports {from}, which is not served",
                    a.path
                );
            }
        }
    }

    #[test]
    fn an_unchanged_file_is_not_sent_again() {
        let first = serve("js/app.js", &HeaderMap::new());
        assert_eq!(first.status(), StatusCode::OK);
        let tag = first.headers()[header::ETAG].clone();
        let mut h = HeaderMap::new();
        h.insert(header::IF_NONE_MATCH, tag);
        assert_eq!(serve("js/app.js", &h).status(), StatusCode::NOT_MODIFIED);
        assert_eq!(
            serve("../Cargo.toml", &HeaderMap::new()).status(),
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            first.headers()[header::CONTENT_SECURITY_POLICY],
            HeaderValue::from_static(CSP)
        );
    }
}

#[cfg(test)]
#[path = "ui_catalogs.rs"]
mod catalogs;
