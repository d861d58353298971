//! Join tokens from arbitrary text, with and without a pinned binary's hash: no
//! panic, and whatever parses encodes back to the same token.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_channel::JoinToken;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let hash = "0a".repeat(32);
    for candidate in [
        text.to_string(),
        format!("syj1.{text}"),
        format!("syj2.{text}"),
        format!("syj2.{hash}.{text}"),
    ] {
        if let Ok(token) = JoinToken::parse(&candidate) {
            assert_eq!(JoinToken::parse(&token.encode()), Ok(token));
        }
    }
});
