//! A block-style YAML writer for a [`serde_json::Value`], for the Clash config.
//!
//! Why not a crate: `serde_yaml` is archived; its maintained forks (`serde_yaml_ng`,
//! `serde_norway`) carry the same `unsafe-libyaml` translation of libyaml, and
//! `yaml-rust2`/`saphyr` decide per string whether to quote it, by rules whose
//! mistakes would turn a server named `no`, `0x1F` or `- a: b` into something else
//! for mihomo's YAML reader. This writer has no such choice to get wrong: every
//! string, key or value, is double-quoted, with `"`, `\` and every character YAML
//! does not allow as printable escaped (`\uXXXX`), which is valid YAML 1.2 (and
//! 1.1) whatever the text, and numbers, booleans and `null` are written as JSON
//! writes them. The tests read the output back with a YAML parser.

use std::fmt::Write as _;

use serde_json::{Map, Value};

/// `value` as a YAML document: a mapping or sequence in block style, a scalar alone.
pub(crate) fn to_string(value: &Value) -> String {
    let mut out = String::new();
    match value {
        Value::Object(map) if !map.is_empty() => mapping(map, 0, &mut out),
        Value::Array(items) if !items.is_empty() => sequence(items, 0, &mut out),
        scalar => {
            out.push_str(&inline(scalar));
            out.push('\n');
        }
    }
    out
}

fn mapping(map: &Map<String, Value>, indent: usize, out: &mut String) {
    for (key, value) in map {
        push_indent(indent, out);
        out.push_str(&quote(key));
        out.push(':');
        nested(value, indent + 2, out);
    }
}

fn sequence(items: &[Value], indent: usize, out: &mut String) {
    for item in items {
        match item {
            Value::Object(map) if !map.is_empty() => {
                // The first key goes on the dash's line, the rest under it.
                let mut block = String::new();
                mapping(map, indent + 2, &mut block);
                push_indent(indent, out);
                out.push_str("- ");
                out.push_str(&block[indent + 2..]);
            }
            _ => {
                push_indent(indent, out);
                out.push('-');
                nested(item, indent + 2, out);
            }
        }
    }
}

/// What follows a key's colon or a bare dash: a scalar on the same line, or a
/// non-empty collection on the next lines.
fn nested(value: &Value, indent: usize, out: &mut String) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            out.push('\n');
            mapping(map, indent, out);
        }
        Value::Array(items) if !items.is_empty() => {
            out.push('\n');
            sequence(items, indent, out);
        }
        scalar => {
            out.push(' ');
            out.push_str(&inline(scalar));
            out.push('\n');
        }
    }
}

/// A scalar, or an empty collection in flow style.
fn inline(value: &Value) -> String {
    match value {
        Value::String(s) => quote(s),
        Value::Array(_) => "[]".to_owned(),
        Value::Object(_) => "{}".to_owned(),
        // null, booleans and numbers are written alike in JSON and YAML.
        other => other.to_string(),
    }
}

fn push_indent(indent: usize, out: &mut String) {
    out.extend(std::iter::repeat_n(' ', indent));
}

/// A double-quoted YAML scalar holding exactly `text`.
fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if is_printable(c) => out.push(c),
            c => {
                // Not printable in YAML: controls, DEL, C1, surrogates' neighbours.
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
        }
    }
    out.push('"');
    out
}

/// YAML 1.2's `c-printable` less the byte-order mark, tab and line breaks (which a
/// double-quoted scalar would fold).
fn is_printable(c: char) -> bool {
    matches!(c, '\u{20}'..='\u{7e}' | '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fefe}' | '\u{ff00}'..='\u{fffd}' | '\u{10000}'..)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn block_style_with_every_string_quoted() {
        let value = json!({
            "port": 7890,
            "lan": false,
            "list": ["a", 1, { "k": "v", "n": null }, [], {}, ["x"]],
            "map": { "inner": { "deep": "yes" } },
            "empty": [],
        });
        assert_eq!(
            to_string(&value),
            // serde_json's maps keep their keys sorted.
            "\"empty\": []\n\"lan\": false\n\"list\":\n  - \"a\"\n  - 1\n  - \"k\": \"v\"\n    \"n\": null\n  - []\n  - {}\n  -\n    - \"x\"\n\"map\":\n  \"inner\":\n    \"deep\": \"yes\"\n\"port\": 7890\n"
        );
    }

    #[test]
    fn strings_are_escaped() {
        assert_eq!(quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(
            quote("tab\tnl\ndel\u{7f}c1\u{85}"),
            r#""tab\u0009nl\u000adel\u007fc1\u0085""#
        );
        assert_eq!(quote("Tokyo 🇯🇵 #1: 'x'"), "\"Tokyo 🇯🇵 #1: 'x'\"");
        assert_eq!(quote("\u{feff}\u{fffe}"), r#""\ufeff\ufffe""#);
    }
}
