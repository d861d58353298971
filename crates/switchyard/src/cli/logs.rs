//! The binary's logs: to stdout, filtered by `RUST_LOG` (default `info`). As text,
//! coloured only when stdout is a terminal and `NO_COLOR` is not set (to a non-empty
//! value): files, pipes and journald get plain text, without ANSI escape codes. Or,
//! with `--log-format json`, one JSON object per line (`timestamp`, `level`,
//! `target`, `fields.message` and the event's other fields), for log collectors.

use std::ffi::OsString;
use std::io::IsTerminal as _;
use std::sync::OnceLock;

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormat {
    /// Human-readable lines (coloured on a terminal).
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

static FORMAT: OnceLock<LogFormat> = OnceLock::new();

/// Sets the format [`init`] uses (once, before it).
pub(crate) fn set_format(format: LogFormat) {
    let _ = FORMAT.set(format);
}

/// The arguments that give another process of this binary the same format (an
/// upgrade's new process).
pub(crate) fn format_args() -> Vec<OsString> {
    match FORMAT.get().copied().unwrap_or_default() {
        LogFormat::Text => Vec::new(),
        LogFormat::Json => vec!["--log-format".into(), "json".into()],
    }
}

/// Starts the logs (once per process).
pub(crate) fn init() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    match FORMAT.get().copied().unwrap_or_default() {
        LogFormat::Text => builder
            .with_ansi(colour(
                std::io::stdout().is_terminal(),
                std::env::var_os("NO_COLOR"),
            ))
            .init(),
        LogFormat::Json => builder.json().with_ansi(false).init(),
    }
}

/// Whether logs are coloured: on a terminal, unless `NO_COLOR` is set and not empty
/// (no-color.org).
fn colour(terminal: bool, no_color: Option<OsString>) -> bool {
    terminal && no_color.is_none_or(|v| v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(colour(true, None));
        assert!(colour(true, Some(OsString::new())));
        assert!(!colour(true, Some("1".into())));
        assert!(!colour(false, None));
        assert!(!colour(false, Some("1".into())));
    }
}
