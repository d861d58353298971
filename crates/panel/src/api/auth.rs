//! Who may call the API: admins with a session cookie (from `POST /api/v1/session`),
//! or scripts with an API token (`Authorization: Bearer sy_...`).
//!
//! - Passwords are argon2id hashes; verifying runs on the blocking pool.
//! - The session cookie is `HttpOnly`, `SameSite=Strict`, `Secure` when the panel is
//!   served over https, and holds a random id whose hash is stored.
//! - A write authenticated by the cookie must carry the session's CSRF token in
//!   `X-CSRF-Token` (returned by the login and by `GET /api/v1/session`): a page on
//!   another site can make the browser send the cookie, never read the token.
//! - Failed logins are limited per client address and per login name, and password
//!   checks are bounded in number at once ([`super::login_limit`]).
//! - An API token may expire and may be read-only ([`TokenScope`]): a read-only token's
//!   write is answered 403 naming the scope.

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use axum::Json;
use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::AppState;
pub use super::client::ClientIp;
use super::policy::{self, Access};
use super::problem::{ApiError, Body, Id};
use crate::model::Admin;
use crate::service::random_token;
use crate::store::token_hash::hash_token;
use crate::store::{ApiToken, NewSession, TokenScope};

/// The session cookie's name.
pub const COOKIE: &str = "switchyard_session";

/// API tokens start with this, so a leaked one is recognisable (secret scanners).
pub const TOKEN_PREFIX: &str = "sy_";

/// Why a password could not be hashed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HashError {
    /// argon2 refused the password or its parameters.
    #[error("{0}")]
    Argon2(argon2::password_hash::Error),
}

/// Hashes a password (argon2id, default parameters, random salt). Blocks.
pub fn hash_password(password: &str) -> Result<String, HashError> {
    let salt = SaltString::generate(&mut rand::rngs::OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(HashError::Argon2)
}

pub use crate::model::admin::is_bcrypt;

/// Whether `password` matches `hash` (argon2id, or an imported bcrypt). Blocks.
pub fn verify_password(password: &str, hash: &str) -> bool {
    if is_bcrypt(hash) {
        return bcrypt::verify(password, hash).unwrap_or(false);
    }
    PasswordHash::new(hash).is_ok_and(|h| {
        Argon2::default()
            .verify_password(password.as_bytes(), &h)
            .is_ok()
    })
}

/// How the request was authenticated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Via {
    /// A session cookie.
    Session,
    /// An API token.
    Token,
}

/// Bytes of a `User-Agent` kept with a session.
const USER_AGENT_BYTES: usize = 200;

/// The admin behind a request; rejects with 401 (no or bad credentials) or 403 (a
/// cookie-authenticated write without the CSRF token).
#[derive(Clone, Debug)]
pub struct Authed {
    /// Who.
    pub admin: Admin,
    /// How.
    pub via: Via,
    /// What it may do (a session: everything).
    pub scope: TokenScope,
    /// The session's public id and its id's hash, when authenticated by a session.
    pub session: Option<(String, String)>,
    /// What the admin's role may do on this route ([`super::policy`]).
    pub access: Access,
}

impl Authed {
    /// The reseller whose users alone this request may touch, if it is one's.
    pub fn reseller(&self) -> Option<crate::model::Id> {
        (self.access == Access::OwnUsers).then_some(self.admin.id)
    }
}

/// Checks the admin's role against the route ([`super::policy`]): 403 naming why, or
/// for a reseller's request naming a user that is not theirs, 404 as for no user.
async fn authorize(parts: &mut Parts, state: &AppState, admin: &Admin) -> Result<Access, ApiError> {
    let pattern = parts
        .extensions
        .get::<axum::extract::MatchedPath>()
        .map(|m| m.as_str().to_owned());
    match policy::access(admin.role, &parts.method, pattern.as_deref()) {
        Access::Denied(why) => Err(ApiError::new(StatusCode::FORBIDDEN, why)),
        Access::OwnUsers => {
            let not_found = || ApiError::new(StatusCode::NOT_FOUND, "user not found");
            // The id as the router read it (a nested router's URI has lost its
            // prefix); a route of a user that cannot be read is nobody's.
            if pattern
                .as_deref()
                .is_some_and(|p| p.starts_with("/api/v1/users/") && p.contains("{id}"))
            {
                let params = axum::extract::RawPathParams::from_request_parts(parts, state)
                    .await
                    .map_err(|_| not_found())?;
                let id = params
                    .iter()
                    .find(|(name, _)| *name == "id")
                    .and_then(|(_, v)| v.parse::<i64>().ok())
                    .ok_or_else(not_found)?;
                let owner = match state.store().user_admin(id).await {
                    Err(crate::store::StoreError::NotFound(_)) => None,
                    other => other?,
                };
                if owner != Some(admin.id) {
                    return Err(not_found());
                }
            }
            Ok(Access::OwnUsers)
        }
        Access::Allowed => Ok(Access::Allowed),
    }
    .inspect(|_| {
        if let Some(actor) = parts.extensions.get::<super::actor::Actor>() {
            actor.set(admin);
        }
    })
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
            let (admin, scope) = state
                .store()
                .token_auth(&hash_token(token.trim()), now)
                .await?
                .ok_or_else(ApiError::unauthorized)?;
            if scope == TokenScope::Read && !matches!(parts.method, Method::GET | Method::HEAD) {
                return Err(ApiError::new(
                    StatusCode::FORBIDDEN,
                    "this API token has the read scope: it may only read (GET, HEAD)",
                ));
            }
            let access = authorize(parts, state, &admin).await?;
            return Ok(Self {
                admin,
                via: Via::Token,
                scope,
                session: None,
                access,
            });
        }
        let id = cookie(&parts.headers, COOKIE).ok_or_else(ApiError::unauthorized)?;
        let id_hash = hash_token(&id);
        let live = state
            .store()
            .live_session(&id_hash, now)
            .await?
            .ok_or_else(ApiError::unauthorized)?;
        let csrf = live.csrf;
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
        if live
            .last_seen_ms
            .is_none_or(|seen| now.saturating_sub(seen) >= crate::store::SEEN_EVERY_MS)
        {
            state.store().session_seen(&id_hash, now).await?;
        }
        let access = authorize(parts, state, &live.admin).await?;
        Ok(Self {
            admin: live.admin,
            via: Via::Session,
            scope: TokenScope::Full,
            session: Some((live.public_id, id_hash)),
            access,
        })
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
    /// A reseller's own quota and what it is used by (`GET` only; absent for the
    /// other roles).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reseller: Option<crate::store::AdminView>,
}

/// Logs in: sets the session cookie and returns the CSRF token.
#[utoipa::path(post, path = "/api/v1/session", tag = "auth", request_body = Login,
    // Public: this is where credentials are first shown.
    security(()),
    responses(
        (status = 200, description = "Logged in; the cookie is set", body = SessionInfo),
        (status = 401, description = "Wrong name or password", body = super::problem::Problem),
        (status = 429, description = "Too many failed logins from this address, or for this name from this address", body = super::problem::Problem),
        (status = 503, description = "Too many password checks at once; try again after Retry-After", body = super::problem::Problem),
        (status = 400, description = "Not JSON", body = super::problem::Problem),
        (status = 415, description = "Not JSON", body = super::problem::Problem),
        (status = 422, description = "A field is missing or wrong", body = super::problem::Problem),
    ))]
pub async fn login(
    State(state): State<AppState>,
    actor: Option<axum::Extension<super::actor::Actor>>,
    ClientIp(ip): ClientIp,
    headers: HeaderMap,
    Body(login): Body<Login>,
) -> Result<Response, ApiError> {
    let now = state.now();
    // The slot is taken before anything is hashed: attempts in flight count.
    let slot = state.limiter().begin(ip, &login.username, now)?;
    let found = match state.store().admin_by_username(&login.username).await {
        Ok(found) => found,
        Err(e) => {
            slot.unchecked();
            return Err(e.into());
        }
    };
    let imported = found.as_ref().is_some_and(|(_, h)| is_bcrypt(h));
    // An unknown name costs the same hashing as a wrong password.
    let hash = found
        .as_ref()
        .map(|(_, h)| h.clone())
        .unwrap_or_else(|| state.dummy_hash().to_owned());
    let ok = match state
        .password_checks()
        .verify(login.password.clone(), hash)
        .await
    {
        Ok(ok) => ok,
        Err(busy) => {
            slot.unchecked();
            return Err(busy.into());
        }
    };
    let Some((admin, _)) = found.filter(|_| ok) else {
        drop(slot);
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "wrong name or password",
        ));
    };
    slot.succeeded();
    if let Some(axum::Extension(actor)) = &actor {
        actor.set(&admin);
    }
    if imported {
        rehash(&state, admin.id, login.password).await?;
    }
    let id = random_token(32);
    let csrf = random_token(24);
    let public_id = random_token(16);
    let ttl_ms = i64::try_from(state.config().auth.session_ttl_s.saturating_mul(1000))
        .unwrap_or(i64::MAX / 2);
    let user_agent = user_agent(&headers);
    state
        .store()
        .open_session(&NewSession {
            id_hash: &hash_token(&id),
            public_id: &public_id,
            admin_id: admin.id,
            csrf: &csrf,
            now_ms: now,
            expires_ms: now.saturating_add(ttl_ms),
            address: &ip.to_string(),
            user_agent: &user_agent,
        })
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
        reseller: None,
    })
    .into_response();
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, v);
    }
    Ok(response)
}

/// Replaces an imported admin's bcrypt hash by argon2id at their first login.
async fn rehash(
    state: &AppState,
    admin: crate::model::Id,
    password: String,
) -> Result<(), ApiError> {
    let hash = state
        .password_checks()
        .run(move || hash_password(&password))
        .await?
        .and_then(Result::ok)
        .ok_or_else(|| ApiError::internal(&"hashing the password failed"))?;
    state.store().set_admin_password(admin, &hash, None).await?;
    tracing::info!(admin, "an imported admin's password hash is now argon2id");
    Ok(())
}

/// The request's `User-Agent`, without control characters, cut to a bounded length.
fn user_agent(headers: &HeaderMap) -> String {
    let text = headers
        .get(header::USER_AGENT)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_default();
    let mut out = String::new();
    for c in text.chars().filter(|c| !c.is_control()) {
        if out.len() + c.len_utf8() > USER_AGENT_BYTES {
            break;
        }
        out.push(c);
    }
    out
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
    let reseller = match authed.admin.role {
        crate::model::Role::Reseller => Some(state.store().admin_view(authed.admin.id).await?),
        _ => None,
    };
    Ok(Json(SessionInfo {
        admin: authed.admin,
        csrf_token: csrf,
        reseller,
    }))
}

/// What the login page tells an operator who has not logged in yet.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct Setup {
    /// The name of the file in the panel's data directory where the panel wrote the
    /// first admin's generated password, while that file exists; delete it once the
    /// password is kept elsewhere and the hint goes. Only the name: this answer is
    /// public, and the panel's paths are not the world's business.
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
    let file = state.config().data_dir.join(crate::config::PASSWORD_FILE);
    let logged_in = match cookie(&headers, COOKIE) {
        Some(id) => state
            .store()
            .session(&hash_token(&id), state.now())
            .await?
            .is_some(),
        None => false,
    };
    Ok(Json(Setup {
        password_file: file
            .exists()
            .then(|| crate::config::PASSWORD_FILE.to_owned()),
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

/// A new API token: its name, and optionally when it expires and what it may do.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewToken {
    /// When it stops working (Unix ms, in the future); never when absent.
    #[serde(default)]
    pub expires_ms: Option<i64>,
    /// `full` (the default) or `read` (only `GET` and `HEAD`).
    #[serde(default)]
    pub scope: TokenScope,
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

/// The caller's API tokens (without secrets); each admin sees and deletes only their own.
#[utoipa::path(get, path = "/api/v1/tokens", tag = "auth",
    responses(
        (status = 200, description = "Tokens", body = [ApiToken]),
        (status = 401, description = "Not logged in", body = super::problem::Problem),
    ))]
pub async fn tokens(
    State(state): State<AppState>,
    a: Authed,
) -> Result<Json<Vec<ApiToken>>, ApiError> {
    Ok(Json(state.store().api_tokens(a.admin.id).await?))
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
    let now = state.now();
    if input.expires_ms.is_some_and(|e| e <= now) {
        return Err(ApiError::field(crate::model::FieldError::new(
            "expires_ms",
            "must be in the future",
        )));
    }
    let secret = format!("{TOKEN_PREFIX}{}", random_token(32));
    let token = state
        .store()
        .create_scoped_token(
            authed.admin.id,
            &input.name,
            &hash_token(&secret),
            now,
            input.expires_ms,
            input.scope,
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
    a: Authed,
    Id(id): Id<i64>,
) -> Result<StatusCode, ApiError> {
    state.store().delete_api_token(a.admin.id, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_verify_against_their_hash_only() {
        let h = hash_password("correct horse").unwrap();
        assert!(h.starts_with("$argon2id$"));
        assert!(verify_password("correct horse", &h));
        assert!(!verify_password("wrong", &h));
        assert!(!verify_password("correct horse", "not a hash"));
    }

    #[test]
    fn an_imported_bcrypt_hash_verifies() {
        // Written by Marzban's own passlib context (cost 4 here; 12 there).
        let h = "$2b$04$Apg36plNeAv2IINRnqOR1ubu7DY3Ds5SNrGrzK2.rbUdFq1FKpgUG";
        assert!(is_bcrypt(h));
        assert!(verify_password("old password", h));
        assert!(!verify_password("other", h));
        assert!(!verify_password("old password", "$2b$04$broken"));
        assert!(!is_bcrypt(&hash_password("x").unwrap()));
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
