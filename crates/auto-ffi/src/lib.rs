//! # Auto for mobile apps: a C ABI with JSON in and out
//!
//! This crate puts the Auto engine ([`switchyard_auto::Engine`]) behind a small C ABI
//! ([`abi`], header `include/switchyard_auto.h`) for apps that are not written in Rust:
//! an Android app loads the `cdylib` and calls it through a thin JNI layer (or JNA), an
//! iOS app links the `staticlib`. The app stays the driver, exactly like the Rust
//! client: it passes every event with the time it happened, acts on each output, and
//! calls back at the deadline the engine names. Auto decides; the app does the I/O.
//!
//! What crosses the boundary is JSON text: the settings ([`AutoConfig`]), the saved
//! memory ([`State`]), events ([`event`]) and outputs ([`output`]). A JSON error names
//! the field it is about (`event.replies[1].total_ms: missing`).
//!
//! It owns no thread, clock, file or socket, and never panics across the boundary:
//! every exported function catches a panic and reports it as
//! [`SY_AUTO_ERR_PANICKED`](abi::SY_AUTO_ERR_PANICKED) (which needs the default
//! `panic = "unwind"`; a build with `panic = "abort"` would abort instead). The Rust
//! functions behind the JSON ([`parse_event`], [`output_json`], [`parse_config`],
//! [`parse_state`], [`state_json`]) are public too, for tests and Rust callers.
//!
//! `docs/auto-ffi.md` describes the functions, their ownership rules and the JSON.

#![warn(missing_docs)]

// The workspace denies unsafe code. A C ABI can't do without it (raw pointers in,
// `#[no_mangle]` symbols out), so `abi` alone allows it, and each `unsafe` block in it
// says why it is sound.
#[allow(unsafe_code)]
pub mod abi;
pub mod event;
mod fields;
pub mod output;

use switchyard_auto::{AutoConfig, State};

pub use event::{EVENT_TYPES, parse_event};
pub use fields::JsonError;
pub use output::output_json;

/// Reads and validates the settings: `{}` for the defaults, or any of
/// `{"platform": "mobile", "method": "url", "probe_timeout": 5,
/// "probe_rules": {"expected_status": "success", "url_timing": "total"}}`
/// (`probe_timeout` in seconds). Unknown fields are refused.
pub fn parse_config(text: &str) -> Result<AutoConfig, JsonError> {
    let config: AutoConfig = fields::defaulted("config", text)?;
    // The message starts with the field (`probe_timeout: 0 ms is out of range ...`).
    config
        .validate()
        .map_err(|e| JsonError::new("config", e.to_string()))?;
    Ok(config)
}

/// Reads a memory saved with [`state_json`]. Unknown fields are refused; a history
/// longer than five or out of time order is repaired, as in the Rust client.
pub fn parse_state(text: &str) -> Result<State, JsonError> {
    fields::defaulted("state", text)
}

/// The memory as JSON, to save and pass back to [`parse_state`] on the next start.
pub fn state_json(state: &State) -> String {
    serde_json::to_string(state).expect("a state of strings, numbers and maps always serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_reads_defaults_and_names_bad_fields() {
        assert_eq!(parse_config("{}"), Ok(AutoConfig::default()));
        let c = parse_config(r#"{"platform":"mobile","probe_timeout":2}"#).unwrap();
        assert_eq!(c.platform, switchyard_auto::Platform::Mobile);
        // The shapes docs/auto-ffi.md shows.
        let c = parse_config(
            r#"{"method":"tcp","probe_timeout":2.5,"probe_rules":{"expected_status":{"one_of":[204]},"url_timing":"request"}}"#,
        )
        .unwrap();
        assert_eq!(c.method, switchyard_auto::Method::Tcp);
        assert_eq!(c.probe_timeout, core::time::Duration::from_millis(2500));
        assert!(c.probe_rules.expected_status.accepts(204));
        assert!(!c.probe_rules.expected_status.accepts(200));
        let err = parse_config(r#"{"probe_timeout":0}"#).unwrap_err();
        assert!(
            err.to_string().starts_with("config: probe_timeout: "),
            "{err}"
        );
        let err = parse_config(r#"{"platform":"phone"}"#).unwrap_err();
        assert_eq!(err.field, "config.platform");
        assert!(err.problem.contains("phone"), "{err}");
    }

    #[test]
    fn state_round_trips_and_names_bad_fields() {
        let mut state = State {
            auto: Some("main".into()),
            ..State::default()
        };
        state.marks.insert(switchyard_auto::ServerId::new("a"));
        assert_eq!(parse_state(&state_json(&state)), Ok(state));
        let err = parse_state(r#"{"marks":"a"}"#).unwrap_err();
        assert_eq!(err.field, "state.marks");
        let err = parse_state(r#"{"mark":[]}"#).unwrap_err();
        assert_eq!(err.field, "state.mark");
    }
}
