//! Every function's error paths: NULL pointers, bad UTF-8, bad JSON (the message names
//! the field), refused events, negative times and panics, none of which may crash.

use std::ffi::CStr;

use super::boundary::catch;
use super::*;

/// A C string from raw bytes (which need not be UTF-8).
fn c(bytes: &[u8]) -> CString {
    CString::new(bytes).unwrap()
}

/// Takes back a string returned by the ABI.
fn take(s: *mut c_char) -> Option<String> {
    if s.is_null() {
        return None;
    }
    // SAFETY: a string from `into_c`, freed below and not used afterwards.
    let text = unsafe { CStr::from_ptr(s) }.to_str().unwrap().to_owned();
    // SAFETY: as above.
    unsafe { sy_auto_string_free(s) };
    Some(text)
}

/// A pointer `*error_out` never holds after a call: shows that the call wrote it.
fn sentinel() -> *mut c_char {
    ptr::dangling_mut()
}

fn new(config: &[u8], state: Option<&[u8]>) -> Result<*mut SyAuto, String> {
    let config = c(config);
    let state = state.map(c);
    let mut err = sentinel();
    // SAFETY: NUL-terminated strings and a writable `err`.
    let handle = unsafe {
        sy_auto_new(
            config.as_ptr(),
            state.as_ref().map_or(ptr::null(), |s| s.as_ptr()),
            &mut err,
        )
    };
    let err = take(err);
    if handle.is_null() {
        Err(err.expect("a failure sets error_out"))
    } else {
        assert_eq!(err, None, "a success sets error_out to NULL");
        Ok(handle)
    }
}

fn event(handle: *mut SyAuto, now_ms: i64, json: &[u8]) -> (c_int, Option<String>) {
    let json = c(json);
    let mut err = sentinel();
    // SAFETY: a live handle or NULL, a NUL-terminated string and a writable `err`.
    let rc = unsafe { sy_auto_event(handle, now_ms, json.as_ptr(), &mut err) };
    (rc, take(err))
}

fn outputs(handle: *mut SyAuto) -> Vec<String> {
    // SAFETY: a live handle.
    std::iter::from_fn(|| take(unsafe { sy_auto_poll_output(handle) })).collect()
}

fn free(handle: *mut SyAuto) {
    // SAFETY: a handle from `sy_auto_new`, not used afterwards.
    unsafe { sy_auto_free(handle) };
}

const SUBS: &[u8] =
    br#"{"type":"subscriptions","subscriptions":[{"name":"m","servers":[{"id":"a"},{"id":"b"}]}]}"#;

#[test]
fn new_names_what_is_wrong() {
    let mut err = sentinel();
    // SAFETY: NULL strings are allowed; `err` is writable.
    let handle = unsafe { sy_auto_new(ptr::null(), ptr::null(), &mut err) };
    assert!(handle.is_null());
    assert_eq!(take(err).unwrap(), "config_json: is NULL");
    assert!(
        new(b"{\xff}", None)
            .unwrap_err()
            .starts_with("config_json: not valid UTF-8 (from byte 1)")
    );
    assert!(
        new(b"{", None)
            .unwrap_err()
            .starts_with("config: not valid JSON: ")
    );
    assert!(
        new(br#"{"platform":"tv"}"#, None)
            .unwrap_err()
            .starts_with("config.platform: unknown variant `tv`")
    );
    assert!(
        new(br#"{"probe_timeout":0}"#, None)
            .unwrap_err()
            .starts_with("config: probe_timeout: 0 ms is out of range")
    );
    assert!(
        new(b"{}", Some(b"\xc3"))
            .unwrap_err()
            .starts_with("state_json: not valid UTF-8")
    );
    assert!(
        new(b"{}", Some(br#"{"marks":{}}"#))
            .unwrap_err()
            .starts_with("state.marks: ")
    );
    // Without error_out the failure is still a NULL handle, and nothing is written.
    let config = c(b"[]");
    // SAFETY: a NUL-terminated string; NULL error_out is allowed.
    assert!(unsafe { sy_auto_new(config.as_ptr(), ptr::null(), ptr::null_mut()) }.is_null());
    free(new(b"{}", None).unwrap());
    free(new(br#"{"platform":"mobile"}"#, Some(b"{}")).unwrap());
}

#[test]
fn event_errors_have_codes_and_messages() {
    let h = new(b"{}", None).unwrap();
    let (rc, err) = event(ptr::null_mut(), 0, SUBS);
    assert_eq!(
        (rc, err.as_deref()),
        (SY_AUTO_ERR_NULL, Some("handle: is NULL"))
    );
    let mut err = sentinel();
    // SAFETY: a live handle; a NULL event is allowed; `err` is writable.
    let rc = unsafe { sy_auto_event(h, 0, ptr::null(), &mut err) };
    assert_eq!(
        (rc, take(err).as_deref()),
        (SY_AUTO_ERR_NULL, Some("event_json: is NULL"))
    );
    let (rc, err) = event(h, 0, b"{\"type\":\"\xe2\x82\"}");
    assert_eq!(rc, SY_AUTO_ERR_UTF8);
    assert_eq!(err.unwrap(), "event_json: not valid UTF-8 (from byte 9)");
    let (rc, err) = event(h, 0, br#"{"type":"traffic","sent":1,"received":"2"}"#);
    assert_eq!(rc, SY_AUTO_ERR_JSON);
    assert!(
        err.unwrap()
            .starts_with("event.received: invalid type: string \"2\"")
    );
    let (rc, err) = event(h, 0, br#"{"type":"auto_on","subscription":"x"}"#);
    assert_eq!(rc, SY_AUTO_ERR_REFUSED);
    assert!(
        err.unwrap()
            .starts_with("event refused: subscription \"x\" is not known")
    );
    let (rc, err) = event(h, -1, SUBS);
    assert_eq!(rc, SY_AUTO_ERR_TIME);
    assert!(err.unwrap().starts_with("now_ms: -1 is negative"));
    assert_eq!(event(h, 0, SUBS), (SY_AUTO_OK, None));
    // A NUL inside a quoted server id does not cut the message short.
    let (rc, err) = event(h, 0, br#"{"type":"connect_failed","server":"z\u0000z"}"#);
    assert_eq!(rc, SY_AUTO_ERR_REFUSED);
    assert_eq!(
        err.unwrap(),
        "event refused: server z\\u0000z is in no subscription"
    );
    // Without error_out only the code tells.
    let bad = c(b"nope");
    // SAFETY: a live handle and a NUL-terminated string; NULL error_out is allowed.
    assert_eq!(
        unsafe { sy_auto_event(h, 0, bad.as_ptr(), ptr::null_mut()) },
        SY_AUTO_ERR_JSON
    );
    free(h);
}

#[test]
fn timeout_poll_and_state_refuse_a_null_handle() {
    let mut err = sentinel();
    // SAFETY: NULL handles are allowed; `err` is writable.
    unsafe {
        assert_eq!(
            sy_auto_timeout(ptr::null_mut(), 0, &mut err),
            SY_AUTO_ERR_NULL
        );
        assert_eq!(take(err).as_deref(), Some("handle: is NULL"));
        assert!(sy_auto_poll_output(ptr::null_mut()).is_null());
        assert_eq!(sy_auto_poll_timeout(ptr::null()), -1);
        err = sentinel();
        assert!(sy_auto_state(ptr::null(), &mut err).is_null());
        assert_eq!(take(err).as_deref(), Some("handle: is NULL"));
        sy_auto_string_free(ptr::null_mut());
        sy_auto_free(ptr::null_mut());
    }
    let h = new(b"{}", None).unwrap();
    // SAFETY: a live handle; `err` is writable.
    unsafe {
        err = sentinel();
        assert_eq!(sy_auto_timeout(h, -5, &mut err), SY_AUTO_ERR_TIME);
        assert!(take(err).unwrap().starts_with("now_ms: -5 is negative"));
        err = sentinel();
        assert_eq!(sy_auto_timeout(h, 5, &mut err), SY_AUTO_OK);
        assert_eq!(take(err), None);
        assert_eq!(sy_auto_poll_timeout(h), -1);
        err = sentinel();
        let state = take(sy_auto_state(h, &mut err)).unwrap();
        assert_eq!(take(err), None);
        assert!(state.starts_with(r#"{"history":{}"#), "{state}");
    }
    free(h);
}

#[test]
fn a_round_of_events_and_outputs() {
    let h = new(b"{}", None).unwrap();
    assert_eq!(event(h, 1000, SUBS), (SY_AUTO_OK, None));
    assert_eq!(
        event(h, 1000, br#"{"type":"auto_on","subscription":"m"}"#),
        (SY_AUTO_OK, None)
    );
    assert_eq!(
        outputs(h),
        [r#"{"type":"connect","server":"a","reason":"auto_on"}"#]
    );
    assert_eq!(
        event(h, 1000, br#"{"type":"traffic","sent":0,"received":0}"#),
        (SY_AUTO_OK, None)
    );
    assert_eq!(
        event(h, 2000, br#"{"type":"traffic","sent":100,"received":0}"#),
        (SY_AUTO_OK, None)
    );
    // Data out and nothing back from 2 s: a stall check 5 s later.
    // SAFETY: a live handle.
    let deadline = unsafe { sy_auto_poll_timeout(h) };
    assert_eq!(deadline, 7000);
    // SAFETY: a live handle; NULL error_out is allowed.
    assert_eq!(
        unsafe { sy_auto_timeout(h, deadline, ptr::null_mut()) },
        SY_AUTO_OK
    );
    let out = outputs(h);
    assert!(
        out[0].starts_with(r#"{"type":"probe","check":1,"trigger":"stall","servers":["a","b"]"#),
        "{out:?}"
    );
    free(h);
}

#[test]
fn server_id_matches_the_rust_client_and_names_bad_arguments() {
    let (vless, host, uuid) = (c(b"vless"), c(b"fi.example.org"), c(b"uuid-1"));
    let mut err = sentinel();
    // SAFETY: NUL-terminated strings and a writable `err`.
    let id = take(unsafe {
        sy_auto_server_id(vless.as_ptr(), host.as_ptr(), 443, uuid.as_ptr(), &mut err)
    });
    assert_eq!(take(err), None);
    assert_eq!(
        id.as_deref(),
        Some(ServerId::derive("vless", "fi.example.org", 443, "uuid-1").as_str())
    );
    err = sentinel();
    // SAFETY: as above; NULL is allowed.
    let id =
        unsafe { sy_auto_server_id(vless.as_ptr(), ptr::null(), 443, uuid.as_ptr(), &mut err) };
    assert!(id.is_null());
    assert_eq!(take(err).as_deref(), Some("host: is NULL"));
    let bad = c(b"p\xffw");
    err = sentinel();
    // SAFETY: as above.
    let id = unsafe { sy_auto_server_id(vless.as_ptr(), host.as_ptr(), 1, bad.as_ptr(), &mut err) };
    assert!(id.is_null());
    assert_eq!(
        take(err).as_deref(),
        Some("credential: not valid UTF-8 (from byte 1)")
    );
}

#[test]
fn a_panic_is_caught_and_spends_the_handle() {
    let h = new(b"{}", None).unwrap();
    assert_eq!(event(h, 0, SUBS), (SY_AUTO_OK, None));
    // `parse_event` panics on this type in test builds, inside the engine's call.
    let (rc, err) = event(h, 0, br#"{"type":"test_panic"}"#);
    assert_eq!(rc, SY_AUTO_ERR_PANICKED);
    assert!(err.unwrap().starts_with(
        "panicked (test_panic event), a bug: please report it. A handle it happened on is spent"
    ));
    let (rc, err) = event(h, 0, SUBS);
    assert_eq!(rc, SY_AUTO_ERR_PANICKED);
    assert!(err.unwrap().starts_with("handle: an earlier call panicked"));
    let mut err = sentinel();
    // SAFETY: a live (spent) handle; `err` is writable.
    unsafe {
        assert_eq!(sy_auto_timeout(h, 1, &mut err), SY_AUTO_ERR_PANICKED);
        assert!(take(err).is_some());
        assert!(sy_auto_poll_output(h).is_null());
        assert_eq!(sy_auto_poll_timeout(h), -1);
        err = sentinel();
        assert!(sy_auto_state(h, &mut err).is_null());
        assert!(
            take(err)
                .unwrap()
                .starts_with("handle: an earlier call panicked")
        );
    }
    free(h);
    // A panic's payload of any type still gives a message.
    let f = catch::<()>(|| std::panic::panic_any(7_u8)).unwrap_err();
    assert_eq!(f.code, SY_AUTO_ERR_PANICKED);
    assert!(f.message.contains("(no message)"), "{}", f.message);
}
