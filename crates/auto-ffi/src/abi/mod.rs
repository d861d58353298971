//! The C ABI: an opaque handle to an engine, JSON text in and out.
//!
//! Ownership, for every function: strings passed in are borrowed for the call only;
//! every `char *` returned (outputs, the state, error messages) is the caller's and is
//! freed with `sy_auto_string_free`, never with `free`; a handle from `sy_auto_new` is
//! freed with `sy_auto_free`. `error_out` may be NULL; when not, it is set on every
//! call: to NULL on success, to a message naming the bad argument or field on failure.
//!
//! A handle is not thread-safe: calls on one handle must not overlap (one thread at a
//! time, or a lock). Distinct handles are independent. After a panic (a bug) the
//! handle is spent: every later call but `sy_auto_free` fails with
//! `SY_AUTO_ERR_PANICKED`; start again from the last saved state.

mod boundary;

use core::ffi::{c_char, c_int};
use core::ptr;
use std::ffi::CString;

use switchyard_auto::{Engine, Policy, ServerId, State};

use crate::{output_json, parse_config, parse_event, parse_state, state_json};

use boundary::{
    Failure, catch, clear, code, finish, into_c, text, time, with_engine, with_engine_ref,
};

/// Success.
pub const SY_AUTO_OK: c_int = 0;
/// A pointer argument that must not be NULL was NULL; the message names it.
pub const SY_AUTO_ERR_NULL: c_int = -1;
/// A string argument is not valid UTF-8; the message names it and the byte offset.
pub const SY_AUTO_ERR_UTF8: c_int = -2;
/// A JSON argument is not JSON or not of the expected shape; the message names the
/// field (`event.replies[1].total_ms: missing`).
pub const SY_AUTO_ERR_JSON: c_int = -3;
/// The engine refused a well-formed event (an unknown server or subscription, counters
/// that went back, ...); its state is unchanged.
pub const SY_AUTO_ERR_REFUSED: c_int = -4;
/// `now_ms` is negative: pass milliseconds from a monotonic clock, 0 or later.
pub const SY_AUTO_ERR_TIME: c_int = -5;
/// The engine panicked (a bug), in this call or an earlier one on the same handle.
/// The handle is spent: free it and start again from the last saved state.
pub const SY_AUTO_ERR_PANICKED: c_int = -6;

/// An Auto engine. Opaque: made by `sy_auto_new`, freed by `sy_auto_free`.
pub struct SyAuto {
    engine: Engine,
    /// A call panicked: the engine may be half-way through a change.
    poisoned: bool,
}

/// Makes an engine from its settings and, optionally, the memory saved by
/// `sy_auto_state` at the last run.
///
/// `config_json`: the settings, not NULL; `"{}"` for the defaults, or e.g.
/// `{"platform": "mobile", "method": "url", "probe_timeout": 5}`. `state_json`: a saved
/// state, or NULL to start with an empty memory. Restoring does not turn Auto on: send
/// an `auto_on` event. Both strings are borrowed for the call only.
///
/// Returns a handle to free with `sy_auto_free`, or NULL on failure with `*error_out`
/// set (when `error_out` is not NULL) to a message to free with `sy_auto_string_free`.
///
/// # Safety
///
/// `config_json` and `state_json` are NULL or NUL-terminated strings; `error_out` is
/// NULL or points to writable storage for a `char *`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sy_auto_new(
    config_json: *const c_char,
    state_json: *const c_char,
    error_out: *mut *mut c_char,
) -> *mut SyAuto {
    // SAFETY: `error_out` is NULL or writable (the caller's contract).
    unsafe { clear(error_out) };
    let made = catch(|| {
        // SAFETY: NULL or NUL-terminated (the caller's contract); the text is used
        // during this call only.
        let config = parse_config(unsafe { text("config_json", config_json) }?)?;
        let state = if state_json.is_null() {
            State::default()
        } else {
            // SAFETY: as above.
            parse_state(unsafe { text("state_json", state_json) }?)?
        };
        let handle = SyAuto {
            engine: Engine::with_state(config, state),
            poisoned: false,
        };
        Ok(Box::into_raw(Box::new(handle)))
    });
    // SAFETY: `error_out` is NULL or writable (the caller's contract).
    unsafe { finish(made, error_out) }.unwrap_or(ptr::null_mut())
}

/// Feeds one event that happened at `now_ms`, then acts on it. Fetch the outputs with
/// `sy_auto_poll_output` and the next deadline with `sy_auto_poll_timeout` afterwards.
///
/// `now_ms`: milliseconds on a monotonic clock, 0 or later (a wall clock read once at
/// start plus the time elapsed since). `event_json`: the event, not NULL, borrowed for
/// the call, e.g. `{"type": "traffic", "sent": 1200, "received": 56000}`.
///
/// Returns `SY_AUTO_OK`, or a negative `SY_AUTO_ERR_*` code with `*error_out` set (when
/// `error_out` is not NULL) to a message to free with `sy_auto_string_free`. A refused
/// event leaves the engine unchanged.
///
/// # Safety
///
/// `handle` is NULL or a live handle from `sy_auto_new` that no other call is using;
/// `event_json` is NULL or a NUL-terminated string; `error_out` is NULL or points to
/// writable storage for a `char *`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sy_auto_event(
    handle: *mut SyAuto,
    now_ms: i64,
    event_json: *const c_char,
    error_out: *mut *mut c_char,
) -> c_int {
    // SAFETY: `error_out` is NULL or writable (the caller's contract).
    unsafe { clear(error_out) };
    let feed = |engine: &mut Engine| {
        let now = time(now_ms)?;
        // SAFETY: NULL or NUL-terminated (the caller's contract), used during this call
        // only.
        let event = parse_event(unsafe { text("event_json", event_json) }?)?;
        engine.handle_event(now, event).map_err(Failure::from)
    };
    // SAFETY: `handle` is NULL or live and unshared (the caller's contract).
    let done = unsafe { with_engine(handle, feed) };
    // SAFETY: `error_out` is NULL or writable (the caller's contract).
    code(unsafe { finish(done, error_out) })
}

/// Advances the engine's timers to `now_ms`: call it when the time returned by
/// `sy_auto_poll_timeout` is reached (earlier or later is harmless), then fetch the
/// outputs with `sy_auto_poll_output`.
///
/// Returns `SY_AUTO_OK`, or a negative `SY_AUTO_ERR_*` code with `*error_out` set (when
/// `error_out` is not NULL) to a message to free with `sy_auto_string_free`.
///
/// # Safety
///
/// `handle` is NULL or a live handle from `sy_auto_new` that no other call is using;
/// `error_out` is NULL or points to writable storage for a `char *`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sy_auto_timeout(
    handle: *mut SyAuto,
    now_ms: i64,
    error_out: *mut *mut c_char,
) -> c_int {
    // SAFETY: `error_out` is NULL or writable (the caller's contract).
    unsafe { clear(error_out) };
    // SAFETY: `handle` is NULL or live and unshared (the caller's contract).
    let done = unsafe {
        with_engine(handle, |engine| {
            engine.handle_timeout(time(now_ms)?);
            Ok(())
        })
    };
    // SAFETY: `error_out` is NULL or writable (the caller's contract).
    code(unsafe { finish(done, error_out) })
}

/// The next output to act on, as JSON (e.g. `{"type": "connect", "server": "a",
/// "reason": "auto_on"}`), or NULL when there is none. Call it until it returns NULL
/// after every `sy_auto_event` and `sy_auto_timeout`.
///
/// The string is the caller's: free it with `sy_auto_string_free`. NULL also comes
/// back for a NULL or spent handle (the next `sy_auto_event` says which).
///
/// # Safety
///
/// `handle` is NULL or a live handle from `sy_auto_new` that no other call is using.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sy_auto_poll_output(handle: *mut SyAuto) -> *mut c_char {
    // SAFETY: `handle` is NULL or live and unshared (the caller's contract).
    let next = unsafe {
        with_engine(handle, |engine| {
            Ok(engine.poll_output().map(|output| output_json(&output)))
        })
    };
    match next {
        Ok(Some(json)) => into_c(json),
        Ok(None) | Err(_) => ptr::null_mut(),
    }
}

/// When the engine next wants `sy_auto_timeout` called, in milliseconds on the clock
/// of `now_ms` (a time already past means now), or -1 when it wants no call (and for
/// a NULL or spent handle). Ask again after every `sy_auto_event` and
/// `sy_auto_timeout`: the deadline moves.
///
/// # Safety
///
/// `handle` is NULL or a live handle from `sy_auto_new` that no other call is changing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sy_auto_poll_timeout(handle: *const SyAuto) -> i64 {
    // SAFETY: `handle` is NULL or live and not being changed (the caller's contract).
    let at = unsafe { with_engine_ref(handle, |engine| Ok(engine.poll_timeout())) };
    match at {
        Ok(Some(at)) => at.as_millis().max(0),
        Ok(None) | Err(_) => -1,
    }
}

/// The engine's memory as JSON (history, marks, speed results, the server to return
/// to), to save (after every event that changed it, or when the app goes to the
/// background) and pass to `sy_auto_new` at the next start.
///
/// Returns a string to free with `sy_auto_string_free`, or NULL on failure with
/// `*error_out` set (when `error_out` is not NULL) to a message to free the same way.
///
/// # Safety
///
/// `handle` is NULL or a live handle from `sy_auto_new` that no other call is changing;
/// `error_out` is NULL or points to writable storage for a `char *`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sy_auto_state(
    handle: *const SyAuto,
    error_out: *mut *mut c_char,
) -> *mut c_char {
    // SAFETY: `error_out` is NULL or writable (the caller's contract).
    unsafe { clear(error_out) };
    // SAFETY: `handle` is NULL or live and not being changed (the caller's contract).
    let json = unsafe { with_engine_ref(handle, |engine| Ok(state_json(engine.state()))) };
    // SAFETY: `error_out` is NULL or writable (the caller's contract).
    unsafe { finish(json, error_out) }.map_or(ptr::null_mut(), into_c)
}

/// The identity of a server, as the Rust client derives it: a stable key from its
/// protocol (`vless`, `trojan`, `shadowsocks`), host, port and credential (UUID,
/// password), with the credential hashed so a saved state never holds it in clear.
/// Use it as the `id` of servers in events, so history and marks follow a server
/// across subscription updates.
///
/// The strings are borrowed for the call. Returns a string to free with
/// `sy_auto_string_free`, or NULL on failure with `*error_out` set (when `error_out`
/// is not NULL) to a message to free the same way.
///
/// # Safety
///
/// `protocol`, `host` and `credential` are NULL or NUL-terminated strings; `error_out`
/// is NULL or points to writable storage for a `char *`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sy_auto_server_id(
    protocol: *const c_char,
    host: *const c_char,
    port: u16,
    credential: *const c_char,
    error_out: *mut *mut c_char,
) -> *mut c_char {
    // SAFETY: `error_out` is NULL or writable (the caller's contract).
    unsafe { clear(error_out) };
    let id = catch(|| {
        // SAFETY: each is NULL or NUL-terminated (the caller's contract), used during
        // this call only.
        let (protocol, host, credential) = unsafe {
            (
                text("protocol", protocol)?,
                text("host", host)?,
                text("credential", credential)?,
            )
        };
        Ok(ServerId::derive(protocol, host, port, credential)
            .as_str()
            .to_owned())
    });
    // SAFETY: `error_out` is NULL or writable (the caller's contract).
    unsafe { finish(id, error_out) }.map_or(ptr::null_mut(), into_c)
}

/// Frees a string returned by any `sy_auto_*` function. NULL is ignored.
///
/// # Safety
///
/// `s` is NULL or a string returned by a `sy_auto_*` function and not yet freed; it
/// must not be used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sy_auto_string_free(s: *mut c_char) {
    if s.is_null() {
        return;
    }
    // SAFETY: `s` came from `CString::into_raw` in `into_c` and is freed once (the
    // caller's contract).
    let s = unsafe { CString::from_raw(s) };
    let _ = catch(|| {
        drop(s);
        Ok(())
    });
}

/// Frees a handle and everything it holds; save its state first if it is wanted.
/// NULL is ignored. A spent handle (after `SY_AUTO_ERR_PANICKED`) is freed the same way.
///
/// # Safety
///
/// `handle` is NULL or a handle from `sy_auto_new` that is not yet freed and that no
/// other call is using; it must not be used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sy_auto_free(handle: *mut SyAuto) {
    if handle.is_null() {
        return;
    }
    // SAFETY: `handle` came from `Box::into_raw` in `sy_auto_new` and is freed once,
    // with no call using it (the caller's contract).
    let handle = unsafe { Box::from_raw(handle) };
    let _ = catch(|| {
        drop(handle);
        Ok(())
    });
}

#[cfg(test)]
mod tests;
