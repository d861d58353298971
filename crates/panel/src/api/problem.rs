//! Errors as `application/problem+json` (RFC 9457), naming the field. Internal errors
//! are logged and answered with a fixed text: no database or library message reaches
//! a client.

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::model::FieldError;
use crate::service::ServiceError;
use crate::store::StoreError;

/// The media type of error answers.
pub const MEDIA_TYPE: &str = "application/problem+json";

/// A problem document.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct Problem {
    /// A URI naming the kind of problem (`about:blank` when the status says it all).
    #[serde(rename = "type")]
    pub kind: String,
    /// Short summary of the kind.
    pub title: String,
    /// The HTTP status.
    pub status: u16,
    /// What happened, for a person.
    pub detail: String,
    /// The fields at fault, if any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<FieldError>,
}

/// An error answer.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    detail: String,
    errors: Vec<FieldError>,
    retry_after: Option<u64>,
}

impl ApiError {
    /// An error with `status` and `detail`.
    pub fn new(status: StatusCode, detail: impl Into<String>) -> Self {
        Self {
            status,
            detail: detail.into(),
            errors: Vec::new(),
            retry_after: None,
        }
    }

    /// 422 naming `field`.
    pub fn field(e: FieldError) -> Self {
        Self {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            detail: e.to_string(),
            errors: vec![e],
            retry_after: None,
        }
    }

    /// 401.
    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "log in (POST /api/v1/session) or send an API token as `Authorization: Bearer`",
        )
    }

    /// 429 with `Retry-After`.
    pub fn too_many(seconds: u64) -> Self {
        Self {
            retry_after: Some(seconds),
            ..Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                format!("too many failed logins from this address; try again in {seconds} s"),
            )
        }
    }

    /// The same answer with `Retry-After: seconds`.
    #[must_use]
    pub fn retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    /// 500, logging the cause.
    pub fn internal(cause: &dyn std::fmt::Display) -> Self {
        tracing::error!("internal error: {cause}");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal error; the panel's log has the details",
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let problem = Problem {
            kind: "about:blank".into(),
            title: self.status.canonical_reason().unwrap_or("Error").to_owned(),
            status: self.status.as_u16(),
            detail: self.detail,
            errors: self.errors,
        };
        let body = serde_json::to_vec(&problem).unwrap_or_default();
        let mut response = (self.status, body).into_response();
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(MEDIA_TYPE));
        if let Some(s) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        response
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(what) => {
                Self::new(StatusCode::NOT_FOUND, format!("{what} not found"))
            }
            StoreError::Conflict(f) => Self {
                status: StatusCode::CONFLICT,
                ..Self::field(f)
            },
            StoreError::Refused(f) => Self::field(f),
            StoreError::OverQuota(f) => Self {
                status: StatusCode::FORBIDDEN,
                ..Self::field(f)
            },
            other => Self::internal(&other),
        }
    }
}

impl From<ServiceError> for ApiError {
    fn from(e: ServiceError) -> Self {
        match e {
            ServiceError::Invalid(f) => Self::field(f),
            ServiceError::Store(s) => s.into(),
            ServiceError::TunnelCertificate(_) => Self::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the tunnel's certificate could not be issued",
            ),
            ServiceError::TunnelKeys(_) => Self::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the tunnel's REALITY keys could not be made",
            ),
            other => Self::internal(&other),
        }
    }
}

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> Self {
        let status = match r {
            JsonRejection::MissingJsonContentType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            JsonRejection::JsonSyntaxError(_) => StatusCode::BAD_REQUEST,
            // Reading the body failed: too large (413) or cut off; axum knows which.
            JsonRejection::BytesRejection(_) => r.status(),
            _ => StatusCode::UNPROCESSABLE_ENTITY,
        };
        // serde's message names the field and the position; it holds no internals.
        let text = r.body_text();
        let errors = match status {
            StatusCode::UNPROCESSABLE_ENTITY => json_field(&text)
                .map(|field| vec![FieldError::new(field, json_message(&text))])
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        Self {
            errors,
            ..Self::new(status, text)
        }
    }
}

/// serde's message without axum's preamble.
fn json_message(text: &str) -> &str {
    text.split_once("target type: ").map_or(text, |(_, m)| m)
}

/// The field a JSON body's data error is about, named as validation names it
/// (`port`, `transport.path`): axum reports serde's errors as `path: message` (no
/// path at the top level), and a missing or unknown field names itself in backticks.
fn json_field(text: &str) -> Option<String> {
    let named = |m: &str| {
        (m.starts_with("missing field `") || m.starts_with("unknown field `"))
            .then(|| m.split('`').nth(1).map(str::to_owned))
            .flatten()
    };
    let message = json_message(text);
    if let Some(f) = named(message) {
        return Some(f);
    }
    let (path, rest) = message.split_once(": ")?;
    let is_path = !path.is_empty()
        && path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.[]".contains(&b));
    if !is_path {
        return None;
    }
    // An unknown field's path already ends with it; a missing one's is its parent.
    Some(match named(rest) {
        Some(f) if path != f && !path.ends_with(&format!(".{f}")) => format!("{path}.{f}"),
        _ => path.to_owned(),
    })
}

impl From<PathRejection> for ApiError {
    fn from(r: PathRejection) -> Self {
        Self::new(StatusCode::BAD_REQUEST, r.body_text())
    }
}

impl From<QueryRejection> for ApiError {
    fn from(r: QueryRejection) -> Self {
        Self::new(StatusCode::BAD_REQUEST, r.body_text())
    }
}

/// A JSON body whose rejection is a problem document.
#[derive(Debug, axum::extract::FromRequest)]
#[from_request(via(axum::Json), rejection(ApiError))]
pub struct Body<T>(pub T);

/// A path whose rejection is a problem document.
#[derive(Debug, axum::extract::FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(ApiError))]
pub struct Id<T>(pub T);

/// A query whose rejection is a problem document.
#[derive(Debug, axum::extract::FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub struct Query<T>(pub T);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_errors_name_their_field() {
        let t = |m: &str| {
            json_field(&format!(
                "Failed to deserialize the JSON body into the target type: {m}"
            ))
        };
        assert_eq!(
            t("missing field `name` at line 1 column 2").as_deref(),
            Some("name")
        );
        assert_eq!(
            t("unknown field `colour`, expected `name` at line 1 column 9").as_deref(),
            Some("colour")
        );
        assert_eq!(
            t("colour: unknown field `colour`, expected `name` at line 1 column 9").as_deref(),
            Some("colour")
        );
        assert_eq!(
            t("transport.x: unknown field `x`, expected `path`").as_deref(),
            Some("transport.x")
        );
        assert_eq!(
            t("port: invalid value: integer `70000`, expected u16 at line 1 column 60").as_deref(),
            Some("port")
        );
        assert_eq!(
            t("transport: missing field `path` at line 1 column 30").as_deref(),
            Some("transport.path")
        );
        assert_eq!(
            t("clusters[0]: invalid type: string \"a\", expected i64").as_deref(),
            Some("clusters[0]")
        );
        assert_eq!(
            t("invalid type: sequence, expected struct X at line 1 column 0"),
            None
        );
    }
}
