//! The admin's own account: change the password (which ends every other session), see
//! the sessions logged in as them and end one. API tokens (with expiry and scope) are
//! in [`super::auth`].
//!
//! - Changing the password needs the current one; a wrong one counts as a failed login
//!   for the admin's name from the client's address, and the check takes a turn among
//!   the bounded password checks like a login.
//! - API tokens stay valid when the password changes: they are separate credentials,
//!   listed and revoked on their own.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::AppState;
use super::auth::{Authed, ClientIp, hash_password};
use super::problem::{ApiError, Body};
use crate::model::FieldError;
use crate::store::AdminSession;

/// The fewest characters a new password may have.
pub const MIN_PASSWORD_CHARS: usize = 12;
/// The most (argon2 takes any length; a bound keeps the request small).
pub const MAX_PASSWORD_CHARS: usize = 256;

/// A password change.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PasswordChange {
    /// The password in force.
    pub current_password: String,
    /// The new one: 12 to 256 characters, not the current one.
    #[schema(min_length = 12, max_length = 256)]
    pub new_password: String,
}

/// What a password change did.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct PasswordChanged {
    /// Sessions ended (every one but the session that made the change).
    pub sessions_ended: u64,
}

/// Checks a new password (`field` names it): its length, no control characters.
pub fn check_password(field: &str, password: &str) -> Result<(), FieldError> {
    let n = password.chars().count();
    if !(MIN_PASSWORD_CHARS..=MAX_PASSWORD_CHARS).contains(&n) {
        return Err(FieldError::new(
            field,
            format!("must be {MIN_PASSWORD_CHARS} to {MAX_PASSWORD_CHARS} characters"),
        ));
    }
    if password.chars().any(char::is_control) {
        return Err(FieldError::new(
            field,
            "must not contain control characters",
        ));
    }
    Ok(())
}

fn check_new_password(change: &PasswordChange) -> Result<(), FieldError> {
    check_password("new_password", &change.new_password)?;
    if change.new_password == change.current_password {
        return Err(FieldError::new(
            "new_password",
            "must differ from the current password",
        ));
    }
    Ok(())
}

/// Changes the admin's password; every other session of theirs ends.
#[utoipa::path(put, path = "/api/v1/account/password", tag = "account",
    request_body = PasswordChange,
    responses(
        (status = 200, description = "Changed; the other sessions ended", body = PasswordChanged),
        (status = 401, description = "Not logged in", body = super::problem::Problem),
        (status = 403, description = "No CSRF token, or a read-only API token", body = super::problem::Problem),
        (status = 400, description = "Not JSON", body = super::problem::Problem),
        (status = 415, description = "Not JSON", body = super::problem::Problem),
        (status = 422, description = "The current password is wrong, or the new one is not allowed", body = super::problem::Problem),
        (status = 429, description = "Too many failed password checks from this address", body = super::problem::Problem),
        (status = 503, description = "Too many password checks at once", body = super::problem::Problem),
    ))]
pub async fn change_password(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    authed: Authed,
    Body(change): Body<PasswordChange>,
) -> Result<Json<PasswordChanged>, ApiError> {
    check_new_password(&change).map_err(ApiError::field)?;
    let now = state.now();
    let name = authed.admin.username.clone();
    let slot = state.limiter().begin(ip, &name, now)?;
    let stored = match state.store().admin_by_username(&name).await {
        Ok(Some((_, hash))) => hash,
        Ok(None) => {
            slot.unchecked();
            return Err(ApiError::unauthorized());
        }
        Err(e) => {
            slot.unchecked();
            return Err(e.into());
        }
    };
    let ok = match state
        .password_checks()
        .verify(change.current_password, stored)
        .await
    {
        Ok(ok) => ok,
        Err(busy) => {
            slot.unchecked();
            return Err(busy.into());
        }
    };
    if !ok {
        drop(slot);
        return Err(ApiError::field(FieldError::new(
            "current_password",
            "is not your current password",
        )));
    }
    slot.succeeded();
    let new = change.new_password;
    let hash = state
        .password_checks()
        .run(move || hash_password(&new))
        .await?
        .and_then(Result::ok)
        .ok_or_else(|| ApiError::internal(&"hashing the new password failed"))?;
    let keep = authed.session.as_ref().map(|(_, h)| h.as_str());
    let sessions_ended = state
        .store()
        .set_admin_password(authed.admin.id, &hash, keep)
        .await?;
    tracing::info!(
        admin = %authed.admin.username,
        sessions_ended,
        "the admin changed their password"
    );
    Ok(Json(PasswordChanged { sessions_ended }))
}

/// The admin's sessions (never their secrets); the one making the request is marked.
#[utoipa::path(get, path = "/api/v1/sessions", tag = "account",
    responses(
        (status = 200, description = "Live sessions, newest first", body = [AdminSession]),
        (status = 401, description = "Not logged in", body = super::problem::Problem),
    ))]
pub async fn sessions(
    State(state): State<AppState>,
    authed: Authed,
) -> Result<Json<Vec<AdminSession>>, ApiError> {
    let current = authed.session.as_ref().map(|(id, _)| id.as_str());
    Ok(Json(
        state
            .store()
            .admin_sessions(authed.admin.id, current, state.now())
            .await?,
    ))
}

/// Ends one of the admin's sessions (the current one too: that is logging out).
#[utoipa::path(delete, path = "/api/v1/sessions/{id}", tag = "account",
    params(("id" = String, Path, description = "The session's id, as listed")),
    responses(
        (status = 204, description = "Ended"),
        (status = 401, description = "Not logged in", body = super::problem::Problem),
        (status = 403, description = "No CSRF token, or a read-only API token", body = super::problem::Problem),
        (status = 404, description = "No such session", body = super::problem::Problem),
    ))]
pub async fn revoke_session(
    State(state): State<AppState>,
    authed: Authed,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    if id.is_empty() || id.len() > 64 {
        return Err(ApiError::new(StatusCode::NOT_FOUND, "session not found"));
    }
    state.store().revoke_session(authed.admin.id, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_passwords_are_long_enough_and_new() {
        let change = |c: &str, n: &str| PasswordChange {
            current_password: c.into(),
            new_password: n.into(),
        };
        assert_eq!(
            check_new_password(&change("old password!", "short"))
                .unwrap_err()
                .field,
            "new_password"
        );
        assert!(check_new_password(&change("same password", "same password")).is_err());
        assert!(check_new_password(&change("x", "a\u{7}bcdefghijklm")).is_err());
        assert!(check_new_password(&change("x", &"y".repeat(257))).is_err());
        assert_eq!(
            check_new_password(&change("old password", "a new pass phrase")),
            Ok(())
        );
    }
}
