//! Operators' templates: their own base config for a format, into which the panel
//! puts the servers and the groups it owns.
//!
//! - **sing-box** (JSON): the panel owns `outbounds` (its selector, its urltest group,
//!   one per entry, `direct`); the template owns the rest (`log`, `dns`, `inbounds`,
//!   `route`, `experimental`…), and its rules name the panel's tags (the group,
//!   `direct`). A template without `route.final` gets the group as its final.
//! - **Clash/mihomo** (YAML): the panel owns `proxies` and `proxy-groups`; the
//!   template owns the rest (`rules`, `dns`, `tun`, `rule-providers`…). Without
//!   `rules`, it gets `MATCH` to the group.
//! - **Xray** (JSON, one config per entry): the panel owns `remarks` and the outbound
//!   tagged `proxy` (the entry's), put first; the template owns the rest.
//!
//! A template is read whole before it is kept: a syntax error names its line and
//! column; it must be a mapping at the top; at most [`MAX_TEMPLATE`] bytes, and YAML
//! within the bounded reader's limits.

use serde_json::{Map, Value};

/// The largest template kept, in bytes.
pub const MAX_TEMPLATE: usize = 256 << 10;

/// Why a template was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TemplateError {
    /// Not JSON or YAML; the message names the line and column.
    #[error("{0}")]
    Syntax(String),
    /// The top is not a mapping.
    #[error("the template must be a mapping of the config's sections at the top")]
    NotAMapping,
    /// Larger than [`MAX_TEMPLATE`], or past the YAML reader's bounds.
    #[error("the template is too large (at most {MAX_TEMPLATE} bytes, 32 levels deep)")]
    TooBig,
}

/// Reads a JSON template.
pub fn parse_json(text: &str) -> Result<Value, TemplateError> {
    if text.len() > MAX_TEMPLATE {
        return Err(TemplateError::TooBig);
    }
    let value: Value = serde_json::from_str(text).map_err(|e| {
        TemplateError::Syntax(format!(
            "line {}, column {}: {}",
            e.line(),
            e.column(),
            e.to_string().split(" at line ").next().unwrap_or_default()
        ))
    })?;
    if !value.is_object() {
        return Err(TemplateError::NotAMapping);
    }
    Ok(value)
}

/// Reads a YAML template (the first document), as JSON values.
pub fn parse_yaml(text: &str) -> Result<Value, TemplateError> {
    if text.len() > MAX_TEMPLATE {
        return Err(TemplateError::TooBig);
    }
    let tree = crate::yaml_read::load(text).map_err(|e| match e {
        crate::yaml_read::LoadError::Yaml(m) => TemplateError::Syntax(m),
        _ => TemplateError::TooBig,
    })?;
    let value = to_json(&tree);
    if !value.is_object() {
        return Err(TemplateError::NotAMapping);
    }
    Ok(value)
}

/// A bounded YAML tree as JSON (scalars keep YAML's reading: numbers, booleans).
fn to_json(node: &yaml_rust2::Yaml) -> Value {
    use yaml_rust2::Yaml;
    match node {
        Yaml::Real(r) => r
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or(Value::String(r.clone()), Value::Number),
        Yaml::Integer(i) => Value::from(*i),
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Array(a) => Value::Array(a.iter().map(to_json).collect()),
        Yaml::Hash(h) => {
            let mut m = Map::new();
            for (k, v) in h {
                let key = match k {
                    Yaml::String(s) => s.clone(),
                    Yaml::Integer(i) => i.to_string(),
                    Yaml::Boolean(b) => b.to_string(),
                    Yaml::Real(r) => r.clone(),
                    _ => continue,
                };
                m.insert(key, to_json(v));
            }
            Value::Object(m)
        }
        Yaml::Alias(_) | Yaml::Null | Yaml::BadValue => Value::Null,
    }
}

/// The template with `ours`'s owned `keys` in it.
fn with_owned(template: &Value, ours: &Value, keys: &[&str]) -> Value {
    let mut out = template.clone();
    for key in keys {
        if let Some(v) = ours.get(*key) {
            out[*key] = v.clone();
        }
    }
    out
}

/// A sing-box config from `template` and the panel's config `ours` (its outbounds;
/// `group` is the selector's tag).
pub fn singbox(template: &Value, ours: &Value, group: &str) -> Value {
    let mut out = with_owned(template, ours, &["outbounds"]);
    if out.get("route").is_none_or(|r| r.get("final").is_none()) {
        if !out["route"].is_object() {
            out["route"] = Value::Object(Map::new());
        }
        out["route"]["final"] = Value::String(group.to_owned());
    }
    out
}

/// A Clash config from `template` and the panel's config `ours` (its proxies and
/// groups; `group` is the select group's name).
pub fn clash(template: &Value, ours: &Value, group: &str) -> Value {
    let mut out = with_owned(template, ours, &["proxies", "proxy-groups"]);
    if out.get("rules").is_none() {
        out["rules"] = Value::Array(vec![Value::String(format!("MATCH,{group}"))]);
    }
    out
}

/// One Xray config from `template` and the panel's config of an entry `ours`: its
/// `remarks` and its `proxy` outbound first (the template's outbound of that tag
/// replaced).
pub fn xray(template: &Value, ours: &Value) -> Value {
    let mut out = with_owned(template, ours, &["remarks"]);
    let proxy = ours["outbounds"]
        .as_array()
        .and_then(|o| o.iter().find(|o| o["tag"] == "proxy"))
        .cloned();
    let mut outbounds: Vec<Value> = out["outbounds"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|o| o["tag"] != "proxy")
        .collect();
    if let Some(p) = proxy {
        outbounds.insert(0, p);
    }
    out["outbounds"] = Value::Array(outbounds);
    out
}

#[cfg(test)]
#[path = "template_tests.rs"]
mod tests;
