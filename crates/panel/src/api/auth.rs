//! Who may call the API: admins with a session cookie (from `POST /api/v1/session`),
//! or scripts with an API token (`Authorization: Bearer sy_...`).
//!
//! - Passwords are argon2id hashes; verifying runs on the blocking pool.
//! - The session cookie is `HttpOnly`, `SameSite=Strict`, `Secure` when the panel is
//!   served over https, and holds a random id whose hash is stored.
//! - A write authenticated by the cookie must carry the session's CSRF token in
//!   `X-CSRF-Token` (returned by the login and by `GET /api/v1/session`): a page on
//!   another site can make the browser send the cookie, never read the token.
//! - Failed logins are limited per source address (a token bucket; see
//!   [`AuthSettings`](crate::config::AuthSettings)).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use axum::Json;
use axum::extract::{ConnectInfo, FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::AppState;
use super::problem::{ApiError, Body, Id};
use crate::model::Admin;
use crate::service::{hash_token, random_token};
use crate::store::ApiToken;

/// The session cookie's name.
pub const COOKIE: &str = "switchyard_session";

/// API tokens start with this, so a leaked one is recognisable (secret scanners).
pub const TOKEN_PREFIX: &str = "sy_";

/// Hashes a password (argon2id, default parameters, random salt). Blocks.
pub fn hash_password(password: &str) -> Result<String, String> {
    let salt = SaltString::generate(&mut rand::rngs::OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| e.to_string())
}

/// Whether `password` matches `hash`. Blocks.
pub fn verify_password(password: &str, hash: &str) -> bool {
    PasswordHash::new(hash).is_ok_and(|h| {
        Argon2::default()
            .verify_password(password.as_bytes(), &h)
            .is_ok()
    })
}

/// Failed logins per source address, as token buckets kept in milliseconds of
/// credit: a failure costs `refill` ms, credit grows with time up to `burst × refill`.
#[derive(Debug)]
pub struct LoginLimiter {
    refill_ms: i64,
    cap_ms: i64,
    buckets: Mutex<HashMap<IpAddr, (i64, i64)>>,
}

/// Source addresses tracked at most; past it the full buckets are forgotten.
const MAX_TRACKED: usize = 10_000;

impl LoginLimiter {
    /// `burst` failures, then one per `refill_s` seconds.
    pub fn new(burst: u32, refill_s: u64) -> Self {
        let refill_ms = i64::try_from(refill_s.saturating_mul(1000)).unwrap_or(i64::MAX / 4);
        Self {
            refill_ms,
            cap_ms: refill_ms.saturating_mul(i64::from(burst)),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    fn credit(&self, entry: Option<&(i64, i64)>, now_ms: i64) -> i64 {
        entry.map_or(self.cap_ms, |(credit, at)| {
            credit.saturating_add((now_ms - at).max(0)).min(self.cap_ms)
        })
    }

    /// Seconds to wait before `ip` may try again (0: it may try now).
    pub fn wait_s(&self, ip: IpAddr, now_ms: i64) -> u64 {
        let buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let credit = self.credit(buckets.get(&ip), now_ms);
        let short = (self.refill_ms - credit).max(0);
        u64::try_from((short + 999) / 1000).unwrap_or(0)
    }

    /// Counts a failed login from `ip`.
    pub fn failed(&self, ip: IpAddr, now_ms: i64) {
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if buckets.len() >= MAX_TRACKED && !buckets.contains_key(&ip) {
            let cap = self.cap_ms;
            buckets.retain(|_, (c, at)| c.saturating_add((now_ms - *at).max(0)) < cap);
        }
        let credit = self.credit(buckets.get(&ip), now_ms);
        buckets.insert(ip, ((credit - self.refill_ms).max(0), now_ms));
    }
}

/// How the request was authenticated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Via {
    /// A session cookie.
    Session,
    /// An API token.
    Token,
}

/// The admin behind a request; rejects with 401 (no or bad credentials) or 403 (a
/// cookie-authenticated write without the CSRF token).
#[derive(Clone, Debug)]
pub struct Authed {
    /// Who.
    pub admin: Admin,
    /// How.
    pub via: Via,
}

fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl FromRequestParts<AppState> for Authed {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let now = state.now();
        if let Some(auth) = parts.headers.get(header::AUTHORIZATION) {
            let token = auth
                .to_str()
                .ok()
                .and_then(|v| v.strip_prefix("Bearer "))
                .ok_or_else(ApiError::unauthorized)?;
            let admin = state
                .store()
                .api_token_admin(&hash_token(token.trim()), now)
                .await?
                .ok_or_else(ApiError::unauthorized)?;
            return Ok(Self {
                admin,
                via: Via::Token,
            });
        }
        let id = cookie(&parts.headers, COOKIE).ok_or_else(ApiError::unauthorized)?;
        let (admin, csrf) = state
            .store()
            .session(&hash_token(&id), now)
            .await?
            .ok_or_else(ApiError::unauthorized)?;
        let safe = matches!(parts.method, Method::GET | Method::HEAD | Method::OPTIONS);
        if !safe {
            let sent = parts
                .headers
                .get("x-csrf-token")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            if !constant_time_eq(sent.as_bytes(), csrf.as_bytes()) {
                return Err(ApiError::new(
                    StatusCode::FORBIDDEN,
                    "a write with a session cookie needs the session's X-CSRF-Token header",
                ));
            }
        }
        Ok(Self {
            admin,
            via: Via::Session,
        })
    }
}

/// The client's address (unspecified when served without one, as in tests).
#[derive(Clone, Copy, Debug)]
pub struct ClientIp(pub IpAddr);

impl<S: Send + Sync> FromRequestParts<S> for ClientIp {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Self(
            parts
                .extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map_or(IpAddr::from([0, 0, 0, 0]), |c| c.0.ip()),
        ))
    }
}

/// A login.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Login {
    /// Login name.
    pub username: String,
    /// Password.
    pub password: String,
}

/// The session in force.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct SessionInfo {
    /// Who is logged in.
    pub admin: Admin,
    /// Send it as `X-CSRF-Token` with every write made with the cookie.
    pub csrf_token: Option<String>,
}

/// Logs in: sets the session cookie and returns the CSRF token.
#[utoipa::path(post, path = "/api/v1/session", tag = "auth", request_body = Login,
    // Public: this is where credentials are first shown.
    security(()),
    responses(
        (status = 200, description = "Logged in; the cookie is set", body = SessionInfo),
        (status = 401, description = "Wrong name or password", body = super::problem::Problem),
        (status = 429, description = "Too many failed logins from this address", body = super::problem::Problem),
        (status = 400, description = "Not JSON", body = super::problem::Problem),
        (status = 415, description = "Not JSON", body = super::problem::Problem),
        (status = 422, description = "A field is missing or wrong", body = super::problem::Problem),
    ))]
pub async fn login(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Body(login): Body<Login>,
) -> Result<Response, ApiError> {
    let now = state.now();
    let wait = state.limiter().wait_s(ip, now);
    if wait > 0 {
        return Err(ApiError::too_many(wait));
    }
    let found = state.store().admin_by_username(&login.username).await?;
    // An unknown name costs the same hashing as a wrong password.
    let hash = found
        .as_ref()
        .map(|(_, h)| h.clone())
        .unwrap_or_else(|| state.dummy_hash().to_owned());
    let password = login.password.clone();
    let ok = tokio::task::spawn_blocking(move || verify_password(&password, &hash))
        .await
        .unwrap_or(false);
    let Some((admin, _)) = found.filter(|_| ok) else {
        state.limiter().failed(ip, now);
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "wrong name or password",
        ));
    };
    let id = random_token(32);
    let csrf = random_token(24);
    let ttl_ms = state.config().auth.session_ttl_s as i64 * 1000;
    state
        .store()
        .create_session(&hash_token(&id), admin.id, &csrf, now, now + ttl_ms)
        .await?;
    let secure = if state.config().secure_cookies() {
        "; Secure"
    } else {
        ""
    };
    let cookie = format!(
        "{COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
        state.config().auth.session_ttl_s
    );
    let mut response = Json(SessionInfo {
        admin,
        csrf_token: Some(csrf),
    })
    .into_response();
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, v);
    }
    Ok(response)
}

/// Who is logged in (and the CSRF token of a session).
#[utoipa::path(get, path = "/api/v1/session", tag = "auth",
    responses(
        (status = 200, description = "The session", body = SessionInfo),
        (status = 401, description = "Not logged in", body = super::problem::Problem),
    ))]
pub async fn session(
    State(state): State<AppState>,
    headers: HeaderMap,
    authed: Authed,
) -> Result<Json<SessionInfo>, ApiError> {
    let csrf = match authed.via {
        Via::Token => None,
        Via::Session => match cookie(&headers, COOKIE) {
            Some(id) => state
                .store()
                .session(&hash_token(&id), state.now())
                .await?
                .map(|(_, c)| c),
            None => None,
        },
    };
    Ok(Json(SessionInfo {
        admin: authed.admin,
        csrf_token: csrf,
    }))
}

/// What the login page tells an operator who has not logged in yet.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct Setup {
    /// Where the panel wrote the first admin's generated password (on the panel's
    /// machine), while that file exists; delete it once the password is kept
    /// elsewhere and the hint goes.
    pub password_file: Option<String>,
    /// Whether this request carries a live session cookie (so the page can skip the
    /// login form without a failing call).
    pub logged_in: bool,
}

/// The first-run hint for the login page (public).
#[utoipa::path(get, path = "/api/v1/setup", tag = "auth", security(()),
    responses((status = 200, description = "The hint", body = Setup)))]
pub async fn setup(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Json<Setup>, ApiError> {
    let file = state.config().data_dir.join(crate::run::PASSWORD_FILE);
    let logged_in = match cookie(&headers, COOKIE) {
        Some(id) => state
            .store()
            .session(&hash_token(&id), state.now())
            .await?
            .is_some(),
        None => false,
    };
    Ok(Json(Setup {
        password_file: file.exists().then(|| file.display().to_string()),
        logged_in,
    }))
}

/// Logs out.
#[utoipa::path(delete, path = "/api/v1/session", tag = "auth",
    responses(
        (status = 204, description = "Logged out"),
        (status = 401, description = "Not logged in", body = super::problem::Problem),
        (status = 403, description = "No CSRF token", body = super::problem::Problem),
    ))]
pub async fn logout(
    State(state): State<AppState>,
    headers: HeaderMap,
    _authed: Authed,
) -> Result<Response, ApiError> {
    if let Some(id) = cookie(&headers, COOKIE) {
        state.store().delete_session(&hash_token(&id)).await?;
    }
    let mut response = StatusCode::NO_CONTENT.into_response();
    response.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static(
            "switchyard_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0",
        ),
    );
    Ok(response)
}

/// A new API token's name.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewToken {
    /// What it is for (`ci`, `backup script`).
    #[schema(
        min_length = 1,
        max_length = 64,
        pattern = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$"
    )]
    pub name: String,
}

/// A new API token, with its secret: shown this once.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct CreatedToken {
    /// The token as listed.
    #[serde(flatten)]
    pub token: ApiToken,
    /// Send as `Authorization: Bearer <secret>`.
    pub secret: String,
}

/// API tokens (without secrets).
#[utoipa::path(get, path = "/api/v1/tokens", tag = "auth",
    responses(
        (status = 200, description = "Tokens", body = [ApiToken]),
        (status = 401, description = "Not logged in", body = super::problem::Problem),
    ))]
pub async fn tokens(
    State(state): State<AppState>,
    _a: Authed,
) -> Result<Json<Vec<ApiToken>>, ApiError> {
    Ok(Json(state.store().api_tokens().await?))
}

/// A new API token.
#[utoipa::path(post, path = "/api/v1/tokens", tag = "auth", request_body = NewToken,
    responses(
        (status = 201, description = "Created; the secret is shown only now", body = CreatedToken),
        (status = 401, description = "Not logged in", body = super::problem::Problem),
        (status = 403, description = "No CSRF token", body = super::problem::Problem),
        (status = 400, description = "Not JSON", body = super::problem::Problem),
        (status = 415, description = "Not JSON", body = super::problem::Problem),
        (status = 422, description = "A field is wrong", body = super::problem::Problem),
    ))]
pub async fn create_token(
    State(state): State<AppState>,
    authed: Authed,
    Body(input): Body<NewToken>,
) -> Result<(StatusCode, Json<CreatedToken>), ApiError> {
    crate::model::check_name("name", &input.name).map_err(ApiError::field)?;
    let secret = format!("{TOKEN_PREFIX}{}", random_token(32));
    let token = state
        .store()
        .create_api_token(
            authed.admin.id,
            &input.name,
            &hash_token(&secret),
            state.now(),
        )
        .await?;
    Ok((StatusCode::CREATED, Json(CreatedToken { token, secret })))
}

/// Deletes an API token.
#[utoipa::path(delete, path = "/api/v1/tokens/{id}", tag = "auth",
    params(("id" = i64, Path, description = "Token id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "Bad id", body = super::problem::Problem),
        (status = 401, description = "Not logged in", body = super::problem::Problem),
        (status = 403, description = "No CSRF token", body = super::problem::Problem),
        (status = 404, description = "No such token", body = super::problem::Problem),
    ))]
pub async fn delete_token(
    State(state): State<AppState>,
    _a: Authed,
    Id(id): Id<i64>,
) -> Result<StatusCode, ApiError> {
    state.store().delete_api_token(id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limiter_lets_a_burst_through_then_one_per_refill() {
        let l = LoginLimiter::new(3, 30);
        let ip = IpAddr::from([10, 0, 0, 1]);
        for _ in 0..3 {
            assert_eq!(l.wait_s(ip, 0), 0);
            l.failed(ip, 0);
        }
        assert_eq!(l.wait_s(ip, 0), 30);
        assert_eq!(l.wait_s(ip, 20_000), 10);
        assert_eq!(l.wait_s(ip, 30_000), 0);
        assert_eq!(l.wait_s(IpAddr::from([10, 0, 0, 2]), 0), 0);
    }

    #[test]
    fn passwords_verify_against_their_hash_only() {
        let h = hash_password("correct horse").unwrap();
        assert!(h.starts_with("$argon2id$"));
        assert!(verify_password("correct horse", &h));
        assert!(!verify_password("wrong", &h));
        assert!(!verify_password("correct horse", "not a hash"));
    }

    #[test]
    fn cookies_are_found_among_others() {
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; switchyard_session=xyz; b=2"),
        );
        assert_eq!(cookie(&h, COOKIE).as_deref(), Some("xyz"));
        assert_eq!(cookie(&h, "c"), None);
    }
}
