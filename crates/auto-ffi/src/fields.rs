//! Reading JSON objects field by field, so every error names the field it is about.
//!
//! A derived `Deserialize` reports a wrong type as "invalid type: string, expected u64
//! at line 1 column 31", which leaves an app developer counting columns. Here each
//! object is taken apart by hand: its fields are looked up by name, each value is
//! deserialized on its own, and the error carries the path to it
//! (`event.replies[1].total_ms`). Unknown fields are refused, like the workspace's
//! config files (`deny_unknown_fields`), so a misspelt field is an error rather than
//! silently left out.

use core::fmt;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// Input JSON that does not have the expected shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonError {
    /// Where: `event`, `event.type`, `event.subscriptions[0].servers[2].id`, `config`,
    /// `state.history`.
    pub field: String,
    /// What is wrong there.
    pub problem: String,
}

impl JsonError {
    pub(crate) fn new(field: impl Into<String>, problem: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            problem: problem.into(),
        }
    }
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.problem)
    }
}

impl std::error::Error for JsonError {}

/// Parses `text` as JSON; the error says it is about `what` (`event`, `config`).
pub(crate) fn parse(what: &str, text: &str) -> Result<Value, JsonError> {
    serde_json::from_str(text).map_err(|e| JsonError::new(what, format!("not valid JSON: {e}")))
}

/// A value of type `T` at `path`.
pub(crate) fn value<T: DeserializeOwned>(path: &str, v: Value) -> Result<T, JsonError> {
    serde_json::from_value(v).map_err(|e| JsonError::new(path, e.to_string()))
}

/// The items of an array at `path`, each with its own path (`path[i]`).
pub(crate) fn items(path: &str, v: Value) -> Result<Vec<(String, Value)>, JsonError> {
    match v {
        Value::Array(items) => Ok(items
            .into_iter()
            .enumerate()
            .map(|(i, v)| (format!("{path}[{i}]"), v))
            .collect()),
        other => Err(JsonError::new(
            path,
            format!("expected an array, got {}", kind(&other)),
        )),
    }
}

/// A JSON object being read field by field.
pub(crate) struct Object {
    path: String,
    map: Map<String, Value>,
}

impl Object {
    /// The object at `path`; anything else is an error.
    pub(crate) fn new(path: impl Into<String>, v: Value) -> Result<Self, JsonError> {
        let path = path.into();
        match v {
            Value::Object(map) => Ok(Self { path, map }),
            other => Err(JsonError::new(
                path,
                format!("expected an object, got {}", kind(&other)),
            )),
        }
    }

    /// The path of the field `key`.
    pub(crate) fn path_of(&self, key: &str) -> String {
        format!("{}.{key}", self.path)
    }

    /// The raw value of a field that must be present (it may be `null`).
    pub(crate) fn take(&mut self, key: &str) -> Result<Value, JsonError> {
        self.map
            .remove(key)
            .ok_or_else(|| JsonError::new(self.path_of(key), "missing"))
    }

    /// A field that must be present, of type `T`.
    pub(crate) fn req<T: DeserializeOwned>(&mut self, key: &str) -> Result<T, JsonError> {
        let v = self.take(key)?;
        value(&self.path_of(key), v)
    }

    /// A field that may be absent or `null`.
    pub(crate) fn opt<T: DeserializeOwned>(&mut self, key: &str) -> Result<Option<T>, JsonError> {
        match self.map.remove(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => value(&self.path_of(key), v).map(Some),
        }
    }

    /// A field that must be present and may be `null` (which means `None`): for values
    /// whose absence means something, so that leaving one out is not mistaken for it.
    pub(crate) fn nullable<T: DeserializeOwned>(
        &mut self,
        key: &str,
    ) -> Result<Option<T>, JsonError> {
        match self.take(key)? {
            Value::Null => Ok(None),
            v => value(&self.path_of(key), v).map(Some),
        }
    }

    /// A nested object.
    pub(crate) fn object(&mut self, key: &str) -> Result<Self, JsonError> {
        let v = self.take(key)?;
        Self::new(self.path_of(key), v)
    }

    /// An array field, its items each with their path.
    pub(crate) fn list(&mut self, key: &str) -> Result<Vec<(String, Value)>, JsonError> {
        let v = self.take(key)?;
        items(&self.path_of(key), v)
    }

    /// Ends the reading: any field left is unknown. `expected` lists the fields of this
    /// kind of object for the message.
    pub(crate) fn finish(self, expected: &str) -> Result<(), JsonError> {
        match self.map.keys().next() {
            None => Ok(()),
            Some(key) => Err(JsonError::new(
                self.path_of(key),
                format!("unknown field; expected {expected}"),
            )),
        }
    }
}

/// The kind of a JSON value, for messages.
pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Deserializes a struct whose fields all have defaults (`#[serde(default)]`, like
/// [`AutoConfig`](switchyard_auto::AutoConfig) and [`State`](switchyard_auto::State)),
/// naming the top-level field of the first error: serde's own message for a wrong type
/// gives only a line and column. Each field is tried alone (the others take their
/// defaults) before the whole.
pub(crate) fn defaulted<T: DeserializeOwned>(what: &str, text: &str) -> Result<T, JsonError> {
    let v = parse(what, text)?;
    let map = match v {
        Value::Object(map) => map,
        other => {
            return Err(JsonError::new(
                what,
                format!("expected an object, got {}", kind(&other)),
            ));
        }
    };
    for (key, field) in &map {
        let alone = Value::Object(Map::from_iter([(key.clone(), field.clone())]));
        if let Err(e) = serde_json::from_value::<T>(alone) {
            return Err(JsonError::new(format!("{what}.{key}"), e.to_string()));
        }
    }
    value(what, Value::Object(map))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_path() {
        let v = parse("event", r#"{"a":{"b":[1,"x"]},"c":5}"#).unwrap();
        let mut o = Object::new("event", v).unwrap();
        let mut a = o.object("a").unwrap();
        let list = a.list("b").unwrap();
        let (path, v) = list.into_iter().nth(1).unwrap();
        let err = value::<u32>(&path, v).unwrap_err();
        assert_eq!(err.field, "event.a.b[1]");
        assert!(err.problem.contains("expected u32"), "{err}");
        assert_eq!(
            o.req::<u32>("missing").unwrap_err().to_string(),
            "event.missing: missing"
        );
        let err = o.finish("a").unwrap_err();
        assert_eq!(err.field, "event.c");
        assert_eq!(kind_of("[]"), "an array");
    }

    fn kind_of(t: &str) -> &'static str {
        kind(&serde_json::from_str::<Value>(t).unwrap())
    }

    #[test]
    fn nullable_needs_the_field_but_accepts_null() {
        let v = parse("r", r#"{"ms":null}"#).unwrap();
        let mut o = Object::new("r", v).unwrap();
        assert_eq!(o.nullable::<u32>("ms").unwrap(), None);
        assert_eq!(o.nullable::<u32>("ms").unwrap_err().field, "r.ms");
    }

    #[test]
    fn defaulted_names_the_top_level_field() {
        let err = switchyard_auto_config(r#"{"platform":"mobile","probe_timeout":"5s"}"#);
        assert_eq!(err.field, "config.probe_timeout");
        let err = switchyard_auto_config(r#"{"probe_timout":5}"#);
        assert_eq!(err.field, "config.probe_timout");
        let err = switchyard_auto_config("[1]");
        assert_eq!(err.to_string(), "config: expected an object, got an array");
    }

    fn switchyard_auto_config(text: &str) -> JsonError {
        defaulted::<switchyard_auto::AutoConfig>("config", text).unwrap_err()
    }
}
