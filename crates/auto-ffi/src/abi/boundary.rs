//! What every exported function does at the boundary: C strings in and out, the
//! `error_out` protocol, return codes, and catching panics.

use core::ffi::{c_char, c_int};
use core::ptr;
use std::any::Any;
use std::ffi::{CStr, CString};
use std::panic::{self, AssertUnwindSafe};

use switchyard_auto::{Engine, InputError, Timestamp};

use super::{
    SY_AUTO_ERR_JSON, SY_AUTO_ERR_NULL, SY_AUTO_ERR_PANICKED, SY_AUTO_ERR_REFUSED,
    SY_AUTO_ERR_TIME, SY_AUTO_ERR_UTF8, SY_AUTO_OK, SyAuto,
};
use crate::JsonError;

/// Why a call failed: one of the `SY_AUTO_ERR_*` codes and a message.
#[derive(Debug)]
pub(super) struct Failure {
    pub(super) code: c_int,
    pub(super) message: String,
}

impl Failure {
    fn new(code: c_int, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    fn panicked(payload: &(dyn Any + Send)) -> Self {
        let what = payload
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("no message");
        Self::new(
            SY_AUTO_ERR_PANICKED,
            format!(
                "panicked ({what}), a bug: please report it. A handle it happened on is \
                 spent: free it and start again from the last saved state"
            ),
        )
    }
}

impl From<JsonError> for Failure {
    fn from(e: JsonError) -> Self {
        Self::new(SY_AUTO_ERR_JSON, e.to_string())
    }
}

impl From<InputError> for Failure {
    fn from(e: InputError) -> Self {
        Self::new(SY_AUTO_ERR_REFUSED, format!("event refused: {e}"))
    }
}

/// Runs `body`, turning a panic into a failure so that none unwinds into C.
pub(super) fn catch<T>(body: impl FnOnce() -> Result<T, Failure>) -> Result<T, Failure> {
    // The state a panic could leave half-changed is the engine's, and callers that
    // reach one through `with_engine` mark it spent.
    panic::catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|p| Err(Failure::panicked(&*p)))
}

/// Runs `body` on the engine of `handle`, marking the handle spent if it panics.
///
/// # Safety
///
/// `handle` is NULL or a live handle that no other call is using.
pub(super) unsafe fn with_engine<T>(
    handle: *mut SyAuto,
    body: impl FnOnce(&mut Engine) -> Result<T, Failure>,
) -> Result<T, Failure> {
    // SAFETY: NULL or live and unshared (this function's contract).
    let Some(handle) = (unsafe { handle.as_mut() }) else {
        return Err(null("handle"));
    };
    if handle.poisoned {
        return Err(spent());
    }
    let result = catch(|| body(&mut handle.engine));
    if matches!(&result, Err(f) if f.code == SY_AUTO_ERR_PANICKED) {
        handle.poisoned = true;
    }
    result
}

/// Runs `body` on the engine of `handle` without changing it (a panic then leaves the
/// engine as it was).
///
/// # Safety
///
/// `handle` is NULL or a live handle that no other call is changing.
pub(super) unsafe fn with_engine_ref<T>(
    handle: *const SyAuto,
    body: impl FnOnce(&Engine) -> Result<T, Failure>,
) -> Result<T, Failure> {
    // SAFETY: NULL or live and not being changed (this function's contract).
    let Some(handle) = (unsafe { handle.as_ref() }) else {
        return Err(null("handle"));
    };
    if handle.poisoned {
        return Err(spent());
    }
    catch(|| body(&handle.engine))
}

fn null(arg: &str) -> Failure {
    Failure::new(SY_AUTO_ERR_NULL, format!("{arg}: is NULL"))
}

fn spent() -> Failure {
    Failure::new(
        SY_AUTO_ERR_PANICKED,
        "handle: an earlier call panicked, so this handle is spent: free it and start \
         again from the last saved state",
    )
}

pub(super) fn time(now_ms: i64) -> Result<Timestamp, Failure> {
    if now_ms < 0 {
        return Err(Failure::new(
            SY_AUTO_ERR_TIME,
            format!(
                "now_ms: {now_ms} is negative; pass milliseconds from a monotonic clock, 0 or later"
            ),
        ));
    }
    Ok(Timestamp::from_millis(now_ms))
}

/// The UTF-8 text of the C string argument `arg`.
///
/// # Safety
///
/// `p` is NULL or a NUL-terminated string that stays valid and unchanged for `'a`.
pub(super) unsafe fn text<'a>(arg: &str, p: *const c_char) -> Result<&'a str, Failure> {
    if p.is_null() {
        return Err(null(arg));
    }
    // SAFETY: not NULL, NUL-terminated and valid for `'a` (this function's contract).
    let bytes = unsafe { CStr::from_ptr(p) };
    bytes.to_str().map_err(|e| {
        Failure::new(
            SY_AUTO_ERR_UTF8,
            format!("{arg}: not valid UTF-8 (from byte {})", e.valid_up_to()),
        )
    })
}

/// Hands `s` to C; `sy_auto_string_free` takes it back.
pub(super) fn into_c(s: String) -> *mut c_char {
    // JSON escapes NUL, but a message may quote a server id that holds one.
    let s = if s.contains('\0') {
        s.replace('\0', "\\u0000")
    } else {
        s
    };
    CString::new(s).map_or(ptr::null_mut(), CString::into_raw)
}

/// Sets `*error_out` to NULL, so it is NULL after every successful call.
///
/// # Safety
///
/// `error_out` is NULL or points to writable storage for a `char *`.
pub(super) unsafe fn clear(error_out: *mut *mut c_char) {
    if !error_out.is_null() {
        // SAFETY: not NULL and writable (this function's contract).
        unsafe { error_out.write(ptr::null_mut()) };
    }
}

/// The value of a call that succeeded; for one that failed, its code, with the message
/// written to `*error_out` (when not NULL).
///
/// # Safety
///
/// `error_out` is NULL or points to writable storage for a `char *`.
pub(super) unsafe fn finish<T>(
    result: Result<T, Failure>,
    error_out: *mut *mut c_char,
) -> Result<T, c_int> {
    result.map_err(|failure| {
        if !error_out.is_null() {
            // SAFETY: not NULL and writable (this function's contract).
            unsafe { error_out.write(into_c(failure.message)) };
        }
        failure.code
    })
}

/// The return code of a call.
pub(super) fn code(result: Result<(), c_int>) -> c_int {
    result.err().unwrap_or(SY_AUTO_OK)
}
