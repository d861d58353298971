//! Reading a config's text into the typed structure, with errors that name the field
//! (`inbounds[0].listen: invalid IP address syntax (line 13, column 10)`), through
//! `serde_path_to_error` over the TOML and JSON readers. Syntax errors, which belong
//! to no field, give the line and column. A message never repeats the line's text nor
//! a string value the reader refused: either may hold a secret, and errors go to logs
//! and API answers.

use serde::de::DeserializeOwned;

use super::ConfigError;

/// `text` as TOML.
pub(super) fn toml<T: DeserializeOwned>(text: &str) -> Result<T, ConfigError> {
    let de = toml::de::Deserializer::parse(text).map_err(|e| syntax(text, &e))?;
    serde_path_to_error::deserialize(de).map_err(|e| {
        let field = field_of(e.path());
        let inner = e.into_inner();
        let at = inner.span().map(|s| position(text, s.start));
        let problem = redacted(inner.message().trim_end());
        match (field, at) {
            (Some(field), Some((line, column))) => ConfigError::Invalid {
                field,
                problem: format!("{problem} (line {line}, column {column})"),
            },
            (Some(field), None) => ConfigError::Invalid { field, problem },
            (None, Some((line, column))) => {
                ConfigError::Parse(format!("line {line}, column {column}: {problem}"))
            }
            (None, None) => ConfigError::Parse(problem),
        }
    })
}

/// `text` as JSON.
pub(super) fn json<T: DeserializeOwned>(text: &str) -> Result<T, ConfigError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value: T = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let field = field_of(e.path());
        json_error(field, e.inner())
    })?;
    de.end().map_err(|e| json_error(None, &e))?;
    Ok(value)
}

fn json_error(field: Option<String>, e: &serde_json::Error) -> ConfigError {
    // serde_json's text ends with the place; the field names it better.
    let text = e.to_string();
    let place = format!(" at line {} column {}", e.line(), e.column());
    let problem = redacted(text.strip_suffix(&place).unwrap_or(&text));
    match field {
        Some(field) => ConfigError::Invalid { field, problem },
        None => ConfigError::Parse(format!(
            "line {}, column {}: {problem}",
            e.line(),
            e.column()
        )),
    }
}

/// The field's path as the validation names fields (`inbounds[0].listen`); `None` at
/// the top (a syntax error, or a field missing from the top level).
fn field_of(path: &serde_path_to_error::Path) -> Option<String> {
    let text = path.to_string();
    (text != "." && !text.is_empty()).then_some(text)
}

/// A TOML syntax error by line and column, without the line itself.
fn syntax(text: &str, e: &toml::de::Error) -> ConfigError {
    let message = redacted(e.message().trim_end());
    match e.span() {
        Some(s) => {
            let (line, column) = position(text, s.start);
            ConfigError::Parse(format!("line {line}, column {column}: {message}"))
        }
        None => ConfigError::Parse(message),
    }
}

/// The 1-based line and column (in bytes) of byte offset `at` of `text`.
fn position(text: &str, at: usize) -> (usize, usize) {
    let before = &text.as_bytes()[..at.min(text.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let column = before.len()
        - before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1)
        + 1;
    (line, column)
}

/// `message` with the string values serde quotes (`invalid type: string "…"`) left
/// out: a refused string may be a secret put in the wrong field.
fn redacted(message: &str) -> String {
    const QUOTED: &str = "string \"";
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find(QUOTED) {
        out.push_str(&rest[..at]);
        out.push_str("a string");
        let mut chars = rest[at + QUOTED.len()..].char_indices();
        let mut end = None;
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    chars.next();
                }
                '"' => {
                    end = Some(at + QUOTED.len() + i + 1);
                    break;
                }
                _ => {}
            }
        }
        match end {
            Some(end) => rest = &rest[end..],
            None => return out,
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_strings_are_left_out_of_messages() {
        assert_eq!(
            redacted(r#"invalid type: string "hunter2", expected u16"#),
            "invalid type: a string, expected u16"
        );
        assert_eq!(
            redacted(r#"invalid value: string "a\"b", expected x and string "c""#),
            "invalid value: a string, expected x and a string"
        );
        assert_eq!(redacted("unknown field `x`"), "unknown field `x`");
        assert_eq!(redacted(r#"string "unterminated"#), "a string");
    }

    #[test]
    fn positions_count_lines_and_columns_from_one() {
        assert_eq!(position("ab\ncd", 4), (2, 2));
        assert_eq!(position("ab", 0), (1, 1));
        assert_eq!(position("ab", 99), (1, 3));
    }
}
