//! What an ACME server answers the panel, read by instant-acme's types through
//! serde_json: orders, authorizations, challenges and problem documents from
//! arbitrary bytes. No panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = serde_json::from_slice::<instant_acme::OrderState>(data);
    let _ = serde_json::from_slice::<instant_acme::AuthorizationState>(data);
    let _ = serde_json::from_slice::<instant_acme::Challenge>(data);
    let _ = serde_json::from_slice::<instant_acme::Problem>(data);
});
