//! Operators' templates: `GET` and `PUT /api/v1/templates/{format}` (`sing-box`,
//! `clash`, `xray`), the base config of a format into which the panel puts its
//! servers and groups (`switchyard_proto::template`). Kept as panel settings
//! (`template:<format>`); `{"template": null}` goes back to the panel's own config.
//! A template is read whole before it is kept: a syntax error is refused with `422`
//! naming its line and column.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use switchyard_proto::template::{TemplateError, parse_json, parse_yaml};
use utoipa::ToSchema;

use super::AppState;
use super::auth::Authed;
use super::problem::{ApiError, Body, Problem};
use crate::model::FieldError;
use crate::store::{Store, StoreError};
use crate::subscription::agents::Format;

/// A format's template.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Template {
    /// The template's text (JSON for sing-box and Xray, YAML for Clash); `null`: the
    /// panel's own config.
    #[schema(max_length = 262144)]
    pub template: Option<String>,
}

/// The formats that take a template.
fn format(name: &str) -> Result<Format, ApiError> {
    match Format::parse(name) {
        Some(f @ (Format::SingBox | Format::Clash | Format::Xray)) => Ok(f),
        _ => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "no such format: sing-box, clash or xray",
        )),
    }
}

fn key(format: Format) -> String {
    format!("template:{}", format.name())
}

/// Reads `text` as `format`'s template.
pub fn parse(format: Format, text: &str) -> Result<Value, TemplateError> {
    match format {
        Format::Clash => parse_yaml(text),
        _ => parse_json(text),
    }
}

/// The template of `format` the operator keeps, read; `None` when there is none (or
/// the stored one no longer reads: logged).
pub async fn load(store: &dyn Store, format: Format) -> Result<Option<Value>, StoreError> {
    if format == Format::Links {
        return Ok(None);
    }
    let Some(text) = store.setting(&key(format)).await?.filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    match parse(format, &text) {
        Ok(v) => Ok(Some(v)),
        Err(e) => {
            tracing::warn!(
                format = format.name(),
                "the stored template does not read: {e}"
            );
            Ok(None)
        }
    }
}

/// A format's template.
#[utoipa::path(get, path = "/api/v1/templates/{format}", tag = "subscriptions",
    params(("format" = String, Path, description = "sing-box, clash or xray")),
    responses((status = 200, body = Template), (status = 401, body = Problem), (status = 404, body = Problem)))]
pub async fn template(
    State(s): State<AppState>,
    _a: Authed,
    Path(name): Path<String>,
) -> Result<Json<Template>, ApiError> {
    let f = format(&name)?;
    let template = s.store().setting(&key(f)).await?.filter(|t| !t.is_empty());
    Ok(Json(Template { template }))
}

/// Sets or clears a format's template; apps get it at their next fetch.
#[utoipa::path(put, path = "/api/v1/templates/{format}", tag = "subscriptions",
    params(("format" = String, Path, description = "sing-box, clash or xray")), request_body = Template,
    responses((status = 200, body = Template), (status = 400, body = Problem), (status = 401, body = Problem), (status = 403, body = Problem),
        (status = 404, body = Problem), (status = 415, body = Problem), (status = 422, body = Problem)))]
pub async fn set_template(
    State(s): State<AppState>,
    _a: Authed,
    Path(name): Path<String>,
    Body(input): Body<Template>,
) -> Result<Json<Template>, ApiError> {
    let f = format(&name)?;
    if let Some(text) = &input.template {
        parse(f, text).map_err(|e| ApiError::field(FieldError::new("template", e.to_string())))?;
    }
    s.store()
        .put_setting(&key(f), input.template.as_deref().unwrap_or(""))
        .await?;
    Ok(Json(input))
}
