//! The binary's logs: to stdout, filtered by `RUST_LOG` (default `info`), coloured only
//! when stdout is a terminal and `NO_COLOR` is not set (to a non-empty value): files,
//! pipes and journald get plain text, without ANSI escape codes.

use std::ffi::OsString;
use std::io::IsTerminal as _;

/// Starts the logs (once per process).
pub(crate) fn init() {
    let ansi = colour(
        std::io::stdout().is_terminal(),
        std::env::var_os("NO_COLOR"),
    );
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_ansi(ansi)
        .init();
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
