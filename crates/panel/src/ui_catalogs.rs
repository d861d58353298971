//! The UI's languages, checked against its scripts: every message a script writes
//! (`t("…")`, `msg("…")`) is in every language's catalog and nothing else is; each
//! translation keeps its message's `{placeholders}`; plural forms are the ones the
//! language's plural rules name.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::ASSETS;

fn asset(path: &str) -> &'static str {
    let a = ASSETS.iter().find(|a| a.path == path).unwrap();
    std::str::from_utf8(a.body).unwrap()
}

/// A catalog's object: the JSON after `export default`.
pub(crate) fn catalog(code: &str) -> Map<String, Value> {
    let text = asset(&format!("js/i18n/{code}.js"));
    let body = text.split_once("export default").unwrap().1.trim();
    let body = body.strip_suffix(';').unwrap_or(body);
    match serde_json::from_str(body) {
        Ok(Value::Object(map)) => map,
        other => panic!("js/i18n/{code}.js is not one JSON object: {other:?}"),
    }
}

/// Every message the scripts write, with the first script that writes it.
pub(crate) fn messages() -> BTreeMap<String, &'static str> {
    let mut found = BTreeMap::new();
    for a in ASSETS.iter().filter(|a| a.path.ends_with(".js")) {
        let text = std::str::from_utf8(a.body).unwrap();
        for marker in ["t(\"", "msg(\""] {
            let mut rest = text;
            while let Some(at) = rest.find(marker) {
                let before = rest[..at].chars().next_back();
                rest = &rest[at + marker.len()..];
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.') {
                    continue;
                }
                // The string literal up to its unescaped closing quote.
                let mut end = 0;
                let bytes = rest.as_bytes();
                while bytes[end] != b'"' {
                    end += if bytes[end] == b'\\' { 2 } else { 1 };
                }
                let literal = format!("\"{}\"", &rest[..end]);
                let message: String = serde_json::from_str(&literal)
                    .unwrap_or_else(|e| panic!("{}: {literal}: {e}", a.path));
                found.entry(message).or_insert(a.path);
            }
        }
    }
    found
}

/// The `{name}`s in a text.
fn placeholders(text: &str) -> BTreeSet<&str> {
    text.split('{')
        .skip(1)
        .filter_map(|s| s.split_once('}').map(|(name, _)| name))
        .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .collect()
}

/// The plural forms a language's rules (`Intl.PluralRules`, for whole numbers)
/// choose from.
fn forms(code: &str) -> &'static [&'static str] {
    match code {
        "ru" => &["one", "few", "many", "other"],
        _ => &["one", "other"],
    }
}

fn check_entry(code: &str, message: &str, value: &Value) {
    let want = placeholders(message);
    match value {
        Value::String(s) => assert_eq!(
            placeholders(s),
            want,
            "{code}: {message:?} → {s:?} changes the placeholders"
        ),
        Value::Object(plural) => {
            let keys: BTreeSet<&str> = plural.keys().map(String::as_str).collect();
            let need: BTreeSet<&str> = forms(code).iter().copied().collect();
            assert_eq!(keys, need, "{code}: {message:?}: plural forms");
            for (form, s) in plural {
                let s = s
                    .as_str()
                    .unwrap_or_else(|| panic!("{code}: {message:?}.{form}"));
                assert_eq!(placeholders(s), want, "{code}: {message:?}.{form} → {s:?}");
            }
            assert!(
                want.contains("n"),
                "{code}: {message:?} has forms but no {{n}}"
            );
        }
        other => panic!("{code}: {message:?} → {other}"),
    }
}

#[test]
fn every_message_is_in_every_language() {
    let used = messages();
    assert!(used.len() > 500, "found only {} messages", used.len());
    for code in ["ru", "fa"] {
        let cat = catalog(code);
        let missing: Vec<(&String, &&str)> =
            used.iter().filter(|(m, _)| !cat.contains_key(*m)).collect();
        assert!(missing.is_empty(), "{code} lacks {missing:?}");
        let unused: Vec<&String> = cat.keys().filter(|k| !used.contains_key(*k)).collect();
        assert!(
            unused.is_empty(),
            "{code} has messages no script writes: {unused:?}"
        );
        for (message, value) in &cat {
            check_entry(code, message, value);
        }
    }
    // English's own plural forms, for messages the scripts write.
    for (message, value) in &catalog("en") {
        assert!(
            used.contains_key(message),
            "en: {message:?} is written nowhere"
        );
        assert!(
            value.is_object(),
            "en: {message:?} is only for plural forms"
        );
        check_entry("en", message, value);
    }
}

#[test]
fn persian_is_persian() {
    // A translation the same as its English only where nothing in it is a word to
    // translate (names of formats and apps, or only placeholders and punctuation).
    let same: Vec<String> = catalog("fa")
        .into_iter()
        .filter(|(k, v)| v.as_str() == Some(k.as_str()))
        .map(|(k, _)| k)
        .collect();
    assert!(same.len() < 12, "{same:?}");
    for s in &same {
        let words: String = s
            .split(['{', '}'])
            .enumerate()
            .filter(|(i, _)| i % 2 == 0)
            .map(|(_, p)| p)
            .collect();
        assert!(
            !words.contains(" the ") && !words.contains(" a "),
            "fa keeps an English sentence: {s:?}"
        );
    }
}

#[test]
fn the_webhooks_page_offers_every_event() {
    let text = asset("js/webhooks.js");
    let list = text.split_once("const EVENTS = [").unwrap().1;
    let list = list.split_once("];").unwrap().0;
    let offered: Vec<&str> = list
        .lines()
        .filter_map(|l| l.trim().strip_prefix("[\"")?.split('"').next())
        .collect();
    assert_eq!(offered, crate::model::webhook::EVENTS);
}
