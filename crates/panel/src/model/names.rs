//! What text the panel takes in names, flags and notes: no control characters and no
//! Unicode format characters (general category Cf: the bidirectional overrides and
//! isolates such as U+202E and U+2067, zero-width characters such as U+200B, the
//! byte-order mark U+FEFF, soft hyphens, tags …). They are invisible, or reorder
//! what is shown around them, so a name holding one can pass for another in the UI,
//! in a user's app or in a log.
//!
//! Two exceptions, where text needs them: a route's flag keeps the zero-width joiner
//! and tag characters (emoji sequences such as 🏳️‍🌈 and 🏴󠁧󠁢󠁳󠁣󠁴󠁿 are built from them),
//! and a note keeps line breaks and tabs.

use unicode_properties::{GeneralCategory, UnicodeGeneralCategory as _};

use super::FieldError;

/// Whether `c` is a Unicode format character (general category Cf).
pub fn is_format(c: char) -> bool {
    c.general_category() == GeneralCategory::Format
}

/// The first character of `text` a name may not hold: a control or format one.
pub fn hidden_char(text: &str) -> Option<char> {
    text.chars().find(|c| c.is_control() || is_format(*c))
}

/// The error for `c` found in `field`.
fn refused(field: &str, c: char) -> FieldError {
    let kind = if c.is_control() {
        "control"
    } else {
        "invisible format"
    };
    FieldError::new(
        field,
        format!(
            "must not contain {kind} characters (found U+{:04X})",
            u32::from(c)
        ),
    )
}

/// Refuses control and format characters in a name.
pub fn check_visible(field: &str, text: &str) -> Result<(), FieldError> {
    match hidden_char(text) {
        Some(c) => Err(refused(field, c)),
        None => Ok(()),
    }
}

/// Refuses control and format characters in a route's flag, but the zero-width joiner
/// (U+200D) and tag characters (U+E0020 to U+E007F) of emoji flag sequences.
pub fn check_flag(field: &str, flag: &str) -> Result<(), FieldError> {
    let emoji_part = |c: char| c == '\u{200D}' || ('\u{E0020}'..='\u{E007F}').contains(&c);
    match flag
        .chars()
        .find(|c| c.is_control() || (is_format(*c) && !emoji_part(*c)))
    {
        Some(c) => Err(refused(field, c)),
        None => Ok(()),
    }
}

/// Refuses control and format characters in a note, but line breaks and tabs.
pub fn check_note(field: &str, note: &str) -> Result<(), FieldError> {
    match note
        .chars()
        .find(|c| !matches!(c, '\n' | '\r' | '\t') && (c.is_control() || is_format(*c)))
    {
        Some(c) => Err(refused(field, c)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{check_name, check_username};
    use super::*;

    /// The characters of the field test, and more of category Cf and Cc.
    const HIDDEN: [char; 12] = [
        '\u{202E}',  // right-to-left override
        '\u{200B}',  // zero width space
        '\u{2067}',  // right-to-left isolate
        '\u{FEFF}',  // byte-order mark, zero width no-break space
        '\u{200D}',  // zero width joiner
        '\u{00AD}',  // soft hyphen
        '\u{2060}',  // word joiner
        '\u{061C}',  // Arabic letter mark
        '\u{E0001}', // language tag
        '\u{0000}',  // NUL
        '\u{001B}',  // escape
        '\u{0085}',  // next line (C1)
    ];

    #[test]
    fn names_refuse_control_and_format_characters() {
        for c in HIDDEN {
            for name in [
                format!("{c}Paris"),
                format!("Par{c}is"),
                format!("Paris{c}"),
            ] {
                let e = check_name("name", &name).unwrap_err();
                assert_eq!(e.field, "name", "{name:?}");
                assert!(
                    e.message.contains(&format!("U+{:04X}", u32::from(c))),
                    "{name:?}: {e}"
                );
                assert!(check_username("username", &name).is_err(), "{name:?}");
                assert!(check_flag("flag", &name).is_err() || c == '\u{200D}');
            }
        }
        assert_eq!(
            check_name("name", "admin\u{202E}txt.exe")
                .unwrap_err()
                .message,
            "must not contain invisible format characters (found U+202E)"
        );
        assert_eq!(
            check_name("name", "a\u{1b}[31m").unwrap_err().message,
            "must not contain control characters (found U+001B)"
        );
    }

    #[test]
    fn visible_text_passes() {
        for name in ["🇺🇸 New York", "Zürich ✓", "東京", "Москва 2", "Ñandú-1"] {
            assert_eq!(check_name("name", name), Ok(()), "{name:?}");
        }
        // Flags built with the joiner and tags.
        for flag in [
            "🇩🇪",
            "🏳️\u{200D}🌈",
            "🏴\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}",
        ] {
            assert_eq!(check_flag("flag", flag), Ok(()), "{flag:?}");
        }
        assert_eq!(check_flag("flag", "🇩🇪\u{202E}").unwrap_err().field, "flag");
        assert_eq!(
            check_note("note", "line one\nline two\r\n\tindented"),
            Ok(())
        );
        for c in HIDDEN {
            assert_eq!(
                check_note("note", &format!("paid {c}until May"))
                    .unwrap_err()
                    .field,
                "note",
                "{c:?}"
            );
        }
    }
}
